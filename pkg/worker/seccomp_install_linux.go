package worker

// This file holds only the system call that installs the seccomp filter (the
// package's one use of unsafe).

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// installSeccomp installs filter on every thread of the process at once
// (SECCOMP_FILTER_FLAG_TSYNC): threads the Go runtime starts later inherit
// it. The calling thread must have no_new_privs set (the constructor in
// privileges_linux.go sets it on every thread). With TSYNC, a positive
// return is the id of a thread that could not be synchronised.
func installSeccomp(filter []unix.SockFilter) error {
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER, TSYNC): %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER, TSYNC): thread %d could not take the filter", r)
	}
	return nil
}
