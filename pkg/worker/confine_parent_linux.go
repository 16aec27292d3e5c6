package worker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// forbiddenCall recognises a worker killed by SIGSYS (the seccomp filter's
// verdict on a forbidden system call) and says which call, from the line the
// worker's SIGSYS handler wrote to stderr (sigsys_linux.go).
func forbiddenCall(ps *os.ProcessState, stderr string) (string, bool) {
	if ps == nil {
		return "", false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		return "", false
	}
	const unknown = "the worker made a system call its seccomp policy forbids and was killed (SIGSYS); it could not say which"
	i := strings.LastIndex(stderr, sigsysReportPrefix)
	if i < 0 {
		return unknown, true
	}
	said, _, _ := strings.Cut(stderr[i+len(sigsysReportPrefix):], "\n")
	nr, err := strconv.Atoi(said)
	if err != nil {
		return unknown + fmt.Sprintf(" (its handler said %s)", quote(said)), true
	}
	detail := fmt.Sprintf("the worker made a system call its seccomp policy forbids, %s, and was killed (SIGSYS)", syscallName(nr))
	if r, ok := policyRule(seccompPolicy, nr); ok {
		detail += fmt.Sprintf("; %s is allowed only with other arguments: %s", r.name, r.why)
	} else if r, ok := policyRule(deniedOnPurpose, nr); ok {
		detail += "; " + r.why
	}
	return detail, true
}

// syscallName names a system call the policy knows, with its number.
func syscallName(nr int) string {
	for _, table := range [][]sysRule{seccompPolicy, deniedOnPurpose} {
		if r, ok := policyRule(table, nr); ok {
			return fmt.Sprintf("%s (%d)", r.name, nr)
		}
	}
	return fmt.Sprintf("system call %d", nr)
}
