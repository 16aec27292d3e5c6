package worker

// This file is the Landlock layer: no file system access, no TCP bind or
// connect, abstract unix sockets and signals scoped to the worker's own
// domain, down to what the kernel's Landlock ABI supports.

import (
	"errors"
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// landlockConfig handles every access right go-landlock knows (V11) and
// grants none; BestEffort drops what the running kernel lacks.
var landlockConfig = landlock.V11.BestEffort()

// landlockMaxABI is the newest ABI landlockConfig knows.
const landlockMaxABI = 11

// landlockFullABI is the first ABI with every right the issue asks for:
// files (1), TCP bind and connect (4), abstract unix socket and signal
// scoping (6). Strict confinement requires it.
const landlockFullABI = 6

// landlockABI is the ABI the ruleset is built for: the kernel's, capped at
// what go-landlock knows, and 5 on a kernel whose ABI 6 signal scoping has
// the known bug (go-landlock downgrades the same way).
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	if v >= 6 {
		if errata, err := llsys.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			v = 5
		}
	}
	return min(v, landlockMaxABI)
}

// applyLandlock restricts every thread of the process and returns the
// layer's report and the ABI applied. go-landlock builds the ruleset (and
// drops what the kernel's ABI lacks); its libpsx call enforces it on each
// thread. That is go-landlock's Restrict less its no_new_privs round, which
// the constructor made needless (privileges_linux.go): each libpsx round
// signals every thread, about 100 µs here.
//
// Before ABI 8 the ruleset has one rule: reading the directory
// /proc/<pid>/task, which libpsx lists after the call to find the threads,
// and kills the process if it cannot (go-landlock issue 39; Restrict adds
// the same rule). Reading any file stays denied, and the seccomp filter
// installed next denies opening anything at all. From ABI 8 the kernel
// applies the ruleset to every thread itself (TSYNC), with no rule at all.
func applyLandlock() (wire.Layer, int) {
	l := wire.Layer{Name: wire.LayerLandlock}
	abi := landlockABI()
	if abi == 0 {
		l.How = "not applied"
		l.Missing = "the kernel has no Landlock (CONFIG_SECURITY_LANDLOCK with landlock in the lsm= boot list, Linux 5.13+)"
		return l, 0
	}
	var rules []landlock.Rule
	if abi < 8 {
		rules = append(rules, landlock.PathAccess(llsys.AccessFSReadDir, fmt.Sprintf("/proc/%d/task", os.Getpid())))
	}
	fd, flags, err := landlockConfig.NewRulesetFD(rules...)
	if err == nil && fd < 0 {
		err = errors.New("go-landlock made no ruleset")
	}
	if err == nil {
		if abi >= 8 {
			// The kernel enforces it on every thread itself (Linux 7.0):
			// no libpsx round, no rule for it.
			err = llsys.LandlockRestrictSelf(fd, flags|llsys.FlagRestrictSelfTSync)
		} else {
			err = llsys.AllThreadsLandlockRestrictSelf(fd, flags)
		}
		unix.Close(fd)
	}
	if err != nil {
		l.How = "not applied"
		l.Missing = fmt.Sprintf("landlock_restrict_self failed: %v", err)
		return l, 0
	}
	l.Enforced = true
	l.How = fmt.Sprintf("Landlock ABI %d: no file may be opened, created, read or written", abi)
	if abi < 8 {
		l.How += " (only /proc/<pid>/task may be listed, for libpsx)"
	}
	var missing []string
	if abi >= 4 {
		l.How += "; no TCP bind or connect"
	} else {
		missing = append(missing, "TCP bind and connect are not restricted (needs Landlock ABI 4, Linux 6.7)")
	}
	if abi >= 6 {
		l.How += "; abstract unix sockets and signals scoped to the worker itself"
	} else {
		missing = append(missing, "abstract unix sockets and signals are not scoped (needs Landlock ABI 6, Linux 6.12)")
	}
	if abi >= 10 {
		l.How += "; no UDP bind or send"
	}
	for i, m := range missing {
		if i > 0 {
			l.Missing += "; "
		}
		l.Missing += m
	}
	return l, abi
}
