//go:build linux && race

package worker

// raceBuild: this worker is built with the race detector, whose runtime
// (ThreadSanitizer) maps terabytes of shadow memory and makes calls of its
// own. Such a worker runs without RLIMIT_AS and with raceSyscalls added to
// its seccomp policy. Only tests build it (go test -race).
const raceBuild = true

// raceSyscalls extends the seccomp policy for the race detector's runtime.
var raceSyscalls = []sysRule{}
