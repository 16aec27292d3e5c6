package worker

// This file holds only the C handler that reports a forbidden system call.
//
// The seccomp filter answers a call outside its policy with SECCOMP_RET_TRAP:
// the kernel does not run the call and sends SIGSYS to the thread that made
// it, with the call's number in siginfo. This handler, installed with
// sigaction before the filter (it replaces the Go runtime's, which would
// print a Go crash without the number and exit with status 2), writes the
// number to stderr and then makes the one call the filter answers with
// SECCOMP_RET_KILL_PROCESS: rt_sigaction on SIGSYS. So the process dies by
// SIGSYS, which the parent recognises, and nothing can replace this handler
// later (that call is what kills). The handler runs on the thread's signal
// stack (every Go thread has one), uses only write(2) and two raw system
// calls, and never returns.
//
// If SIGSYS is blocked or ignored when the kernel traps, the kernel resets
// it to its default action and the process still dies by SIGSYS, without the
// message.

/*
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

static const char rjs_sigsys_prefix[] = "run-js-server worker: forbidden system call ";

static void rjs_on_sigsys(int sig, siginfo_t *info, void *ucontext) {
	(void)sig;
	(void)ucontext;
	char buf[sizeof rjs_sigsys_prefix + 32];
	size_t n = sizeof rjs_sigsys_prefix - 1;
	memcpy(buf, rjs_sigsys_prefix, n);
	if (info != NULL && info->si_code == SYS_SECCOMP) {
		unsigned int nr = (unsigned int)info->si_syscall;
		char digits[12];
		int d = 0;
		do {
			digits[d++] = (char)('0' + nr % 10);
			nr /= 10;
		} while (nr != 0);
		while (d > 0) {
			buf[n++] = digits[--d];
		}
	} else {
		const char *unknown = "(SIGSYS not sent by seccomp)";
		size_t u = strlen(unknown);
		memcpy(buf + n, unknown, u);
		n += u;
	}
	buf[n++] = '\n';
	ssize_t w = write(2, buf, n);
	(void)w;
	syscall(SYS_rt_sigaction, SIGSYS, NULL, NULL, sizeof(unsigned long)); // the filter kills the process here
	syscall(SYS_exit_group, 128 + SIGSYS);                                // no filter: still end
}

// rjs_install_sigsys installs the handler; it returns 0 or an errno.
static int rjs_install_sigsys(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = rjs_on_sigsys;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) != 0) {
		return -1;
	}
	return 0;
}
*/
import "C"

import "errors"

// sigsysReportPrefix starts the line the handler writes to stderr, followed
// by the system call's number.
const sigsysReportPrefix = "run-js-server worker: forbidden system call "

// installSigsysReporter installs the SIGSYS handler. It must run before the
// seccomp filter is installed.
func installSigsysReporter() error {
	if C.rjs_install_sigsys() != 0 {
		return errors.New("sigaction(SIGSYS) failed")
	}
	return nil
}
