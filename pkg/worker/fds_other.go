//go:build !linux

package worker

// closedEarly: only Linux workers close inherited descriptors before the Go
// runtime starts (fds_linux.go).
func closedEarly(int) bool { return false }
