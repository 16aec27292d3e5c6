// Package quickjsng holds the JavaScript engine run-js-server builds:
// quickjs-ng 0.15.1 as bundled by github.com/buke/quickjs-go v0.7.7, vendored
// under quickjs-go/ (a nested Go module that go.mod's replace binds), plus
// our patches under patches/.
//
// The package has no code. PIN records the pristine module (its go.sum hash
// and the SHA-256 of every one of its files), the engine version and the
// ordered patches; pin_test.go proves that the vendored tree is exactly the
// pristine module plus the patches and that the build compiles it. Run it
// with scripts/check-pin.sh. README.md says how the directory is laid out;
// BUILD.md says how to add a patch and how to bump the engine.
package quickjsng
