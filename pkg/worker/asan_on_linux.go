//go:build linux && asan

package worker

// asanBuild: this worker is built with AddressSanitizer (go build -asan;
// only the tests and the fuzzing in BUILD.md build it), whose runtime
// reserves terabytes of shadow memory and maps its own allocator's regions
// as the heap grows. Such a worker runs without RLIMIT_AS.
const asanBuild = true
