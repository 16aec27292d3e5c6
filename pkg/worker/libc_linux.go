package worker

// This file holds only the C calls that make glibc do, before confinement,
// what it would otherwise do lazily by opening a file, which a confined
// worker may not: the seccomp filter would kill it.

/*
#include <malloc.h>
#include <time.h>

static void rjs_prepare_libc(void) {
	// The time zone: the first localtime_r or mktime (a program's Date)
	// reads /etc/localtime. Once read, glibc keeps it (TZ is unset in a
	// worker, so it is never read again).
	tzset();
	// glibc reads /sys/devices/system/cpu/online the first time a thread
	// would need a ninth malloc arena. With a fixed arena count it never
	// does; one arena also spares the 64 MiB of address space each extra
	// arena reserves. The engine allocates from one thread.
	mallopt(M_ARENA_MAX, 1);
}
*/
import "C"

// prepareLibc makes glibc read now what it would read lazily. It must run
// before confinement.
func prepareLibc() { C.rjs_prepare_libc() }
