// Package quickjsng holds the pin of the JavaScript engine that run-js-server
// embeds: quickjs-ng as bundled by github.com/buke/quickjs-go.
//
// The package has no code. The directory contains PIN (the pinned binding
// version, engine version and SHA-256 of the engine's C sources), README.md
// (provenance, patch policy, how to bump) and pin_test.go, which fails when
// the module that go.mod actually binds differs from PIN. Run it with
// scripts/check-pin.sh.
package quickjsng
