package worker

// This file holds only the C constructor that drops a worker's privileges
// before the Go runtime starts, and the accessor for what it did.
//
// Capabilities (all five sets), the securebits and no_new_privs belong to
// each thread, and a new thread copies them from the thread that creates it.
// By the time Go code runs there are already several threads, and changing
// them all means a signal round trip per system call per thread (libpsx:
// about 70 µs a round here, and dropping the bounding set takes 41 rounds).
// A C constructor runs before the Go runtime starts its first thread, so
// setting these attributes there sets them on every thread the process will
// ever have, in about 45 system calls. (runc's nsenter uses the same moment
// for the same reason.) glibc passes argc and argv to constructors; the
// constructor acts only in a worker (argv[1] is --worker-fd) whose setting is
// not off. The Go side (confine_linux.go) checks the result in the kernel's
// own view (/proc/self/status) and reports it.

/*
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

// What the constructor did, read by Go once (after it, nothing writes it).
struct rjs_privileges {
	int ran;                   // 1: a worker whose setting is not off
	unsigned long long held;   // effective|permitted|inheritable before, as one mask
	int bounding_dropped;      // capabilities dropped from the bounding set
	int bounding_errno;        // errno of the first failed PR_CAPBSET_DROP (EINVAL ends the loop and is not an error)
	int securebits_errno;
	int ambient_errno;
	int capset_errno;
	int nnp_errno;
	long long nanos;           // how long it took
};

struct rjs_privileges rjs_privileges;

// The securebits that keep uid 0 from regaining capabilities (by execve, by
// changing uids, or by raising ambient ones), each locked; set only when
// CAP_SETPCAP is held. KEEP_CAPS itself stays off (and locked off).
#define RJS_SECUREBITS 0xef // NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, each with its lock; KEEP_CAPS_LOCKED

__attribute__((constructor)) static void rjs_drop_privileges(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc < 3 || argv == NULL || strcmp(argv[1], "--worker-fd") != 0) {
		return;
	}
	for (int i = 3; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--confinement") == 0 && strcmp(argv[i + 1], "off") == 0) {
			return;
		}
	}
	rjs_privileges.ran = 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);

	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capget, &hdr, data) == 0) {
		for (int i = 0; i < 2; i++) {
			rjs_privileges.held |= ((unsigned long long)(data[i].effective | data[i].permitted | data[i].inheritable)) << (32 * i);
		}
	}
	int setpcap = (data[0].effective >> CAP_SETPCAP) & 1;

	if (setpcap) {
		if (prctl(PR_SET_SECUREBITS, RJS_SECUREBITS, 0, 0, 0) != 0) {
			rjs_privileges.securebits_errno = errno;
		}
		// Up to the kernel's last capability: EINVAL marks the end.
		for (int cap = 0; cap < 64; cap++) {
			if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) {
				rjs_privileges.bounding_dropped++;
			} else {
				if (errno != EINVAL) {
					rjs_privileges.bounding_errno = errno;
				}
				break;
			}
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
		rjs_privileges.ambient_errno = errno;
	}
	if (rjs_privileges.held != 0) {
		memset(data, 0, sizeof data);
		if (syscall(SYS_capset, &hdr, data) != 0) {
			rjs_privileges.capset_errno = errno;
		}
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		rjs_privileges.nnp_errno = errno;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	rjs_privileges.nanos = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
}
*/
import "C"

import (
	"syscall"
	"time"
)

// earlyPrivileges is what the constructor did.
type earlyPrivileges struct {
	ran             bool
	held            uint64 // capabilities held before (effective|permitted|inheritable)
	boundingDropped int
	boundingErr     error
	securebitsErr   error
	ambientErr      error
	capsetErr       error
	nnpErr          error
	took            time.Duration
}

func readEarlyPrivileges() earlyPrivileges {
	p := C.rjs_privileges
	errOf := func(e C.int) error {
		if e == 0 {
			return nil
		}
		return syscall.Errno(e)
	}
	return earlyPrivileges{
		ran:             p.ran != 0,
		held:            uint64(p.held),
		boundingDropped: int(p.bounding_dropped),
		boundingErr:     errOf(p.bounding_errno),
		securebitsErr:   errOf(p.securebits_errno),
		ambientErr:      errOf(p.ambient_errno),
		capsetErr:       errOf(p.capset_errno),
		nnpErr:          errOf(p.nnp_errno),
		took:            time.Duration(p.nanos),
	}
}
