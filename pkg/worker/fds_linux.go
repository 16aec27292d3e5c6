package worker

// This file holds only the C constructor that closes a worker's inherited
// descriptors before the Go runtime starts, and the accessor for what it
// did.
//
// A worker holds nothing but stdin, stdout, stderr and its socket. A
// careless parent may leak more (a descriptor opened without close-on-exec
// survives exec). Closing them from Go means listing /proc/self/fd and
// sparing the runtime's own poller, which a race-enabled runtime opens
// before main (0.1-0.2 ms on a cold start, on the path to the first call).
// Before the Go runtime starts, nothing of its own is open yet: one
// close_range(2) above the socket closes every leaked descriptor at once.
// The constructor acts only in a worker (argv[1] is --worker-fd, argv[2]
// its socket); where close_range is missing (Linux before 5.9), ChildMain
// falls back to closeInherited.

/*
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

// 1: the descriptors above the socket were closed; 0: not a worker, or
// close_range failed (rjs_fds_errno says why).
int rjs_fds_closed;
int rjs_fds_errno;
int rjs_fds_socket;

__attribute__((constructor)) static void rjs_close_inherited(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc < 3 || argv == NULL || strcmp(argv[1], "--worker-fd") != 0) {
		return;
	}
	char *end = NULL;
	long fd = strtol(argv[2], &end, 10);
	if (end == argv[2] || *end != 0 || fd < 3 || fd > 1024) {
		return;
	}
	rjs_fds_socket = (int)fd;
	if (syscall(SYS_close_range, (unsigned int)fd + 1, ~0U, 0) == 0) {
		rjs_fds_closed = 1;
	} else {
		rjs_fds_errno = errno;
	}
}
*/
import "C"

// closedEarly reports whether the constructor closed every descriptor
// above socket before the Go runtime started.
func closedEarly(socket int) bool {
	return C.rjs_fds_closed == 1 && socket == int(C.rjs_fds_socket)
}
