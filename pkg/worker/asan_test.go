//go:build asan

package worker

// asanEnabled: this test binary, and so its workers, are built with
// AddressSanitizer (go test -asan; BUILD.md).
const asanEnabled = true
