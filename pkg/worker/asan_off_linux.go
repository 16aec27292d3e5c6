//go:build linux && !asan

package worker

// asanBuild: see asan_on_linux.go.
const asanBuild = false
