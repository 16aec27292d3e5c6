package worker

// This file is the ladder by which a worker confines itself, after it has
// prepared its runtime and before it reads its start frame, and the report of
// what it applied, read back from the kernel's own view (/proc/self/status).
//
// The order matters:
//  0. Before the Go runtime started (privileges_linux.go): capabilities
//     dropped, securebits locked, no_new_privs set, on the only thread.
//  1. What needs a file or a new descriptor is done while it still can be:
//     the kept /proc/self/status descriptor (jsrt), glibc's time zone and
//     arena count (libc_linux.go), the Go runtime's poller; then the lowest
//     free descriptor is noted (RLIMIT_NOFILE) and uid_map read.
//  2. Not dumpable (process-wide).
//  3. Landlock, on every thread (its ruleset descriptor is closed at once).
//  4. The worker's rlimits: core, fsize, nofile.
//  5. The SIGSYS reporter, then the seccomp filter on every thread (TSYNC).
//  6. The report, from /proc/self/status through the kept descriptor.
//
// Any binary that runs a worker must keep //go:debug updatemaxprocs=0 and
// containermaxprocs=0 in its main package: otherwise the Go runtime
// re-reads the CPU limit (cgroup files, sched_getaffinity) while it runs,
// and the filter kills the worker for it.

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/run-js-server/run-js-server/pkg/jsrt"
	"github.com/run-js-server/run-js-server/pkg/wire"
)

// layerMask selects layers; tests use it to prove that each layer holds
// alone. The worker itself always applies all.
type layerMask uint

const (
	maskSeccomp layerMask = 1 << iota
	maskLandlock
	maskRlimits
	allLayers = maskSeccomp | maskLandlock | maskRlimits
)

// confine applies the setting's layers and returns the report for hello,
// and whether the worker may go on to read a program: false when the
// setting is strict and a required layer is missing (the report says which).
// It runs on the goroutine that prepared the runtime, once.
func confine(setting Confinement) (*wire.Confinement, bool) {
	return confineLayers(setting, allLayers)
}

func confineLayers(setting Confinement, mask layerMask) (*wire.Confinement, bool) {
	c := &wire.Confinement{Setting: setting.String()}
	if setting == ConfineOff {
		for _, name := range wire.Layers {
			c.Layers = append(c.Layers, wire.Layer{Name: name, How: "off (confinement off): " + notConfined})
		}
		return c, true
	}
	early := readEarlyPrivileges()

	// 1. What must be done while /proc can be read and descriptors made:
	// the kept status descriptor, and the Go runtime's poller, which it
	// starts at its first timer (a garbage collection's scavenger sleeps
	// on one) and could not start once confined.
	statusFD := jsrt.StatusFD()
	prepareLibc()                               // the time zone file, the malloc arena count (libc_linux.go)
	time.AfterFunc(time.Hour, func() {}).Stop() // a func timer enters the heap at once; a channel timer would not
	openFDs := lowestFreeFD()
	ns := namespaceLayer()

	// 2. Process-wide attributes.
	var rl wire.Layer
	rl.Name = wire.LayerRlimits
	dumpErr := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)

	// 3. Landlock.
	ll := wire.Layer{Name: wire.LayerLandlock, How: "not applied (left out by a test)", Missing: "left out by a test"}
	if mask&maskLandlock != 0 {
		ll, c.LandlockABI = applyLandlock()
	}

	// 4. The worker's own rlimits (RLIMIT_NOFILE counts what it now holds).
	if mask&maskRlimits != 0 {
		how, err := applyWorkerRlimits(openFDs)
		if err != nil {
			rl.How, rl.Missing = "not applied", err.Error()
		} else {
			rl.Enforced, rl.How = true, how+"; "+parentRlimitsNote
		}
	} else {
		rl.How, rl.Missing = "not applied (left out by a test)", "left out by a test"
	}

	// 5. seccomp.
	sc := wire.Layer{Name: wire.LayerSeccomp, How: "not applied (left out by a test)", Missing: "left out by a test"}
	if mask&maskSeccomp != 0 {
		sc = applySeccomp(filterFacts{pid: unix.Getpid(), statusFD: statusFD})
	}

	// 6. The kernel's view.
	st := parseStatus(jsrt.ProcStatus())
	if sc.Enforced && st["Seccomp"] != "2" {
		sc.Enforced, sc.Missing = false, fmt.Sprintf("/proc/self/status says Seccomp: %q after the filter was installed", st["Seccomp"])
	}
	c.Layers = []wire.Layer{sc, ll, nnpLayer(early, st, dumpErr), rl, capsLayer(early, st), ns}

	ok := true
	if setting == ConfineStrict {
		for _, l := range c.Layers {
			if !optionalLayers[l.Name] && (!l.Enforced || l.Missing != "") {
				ok = false
			}
		}
	}
	for i := range c.Layers {
		c.Layers[i].How = wire.Cut(c.Layers[i].How, wire.MaxLayerText)
		c.Layers[i].Missing = wire.Cut(c.Layers[i].Missing, wire.MaxLayerText)
	}
	return c, ok
}

// readImpliesExec is the READ_IMPLIES_EXEC personality flag.
const readImpliesExec = 0x0400000

// parentRlimitsNote says which limits the parent adds at start.
const parentRlimitsNote = "as and cpu are set by the parent when the run starts"

// applySeccomp installs the policy's filter, after the SIGSYS reporter.
// seccompAhead is the seccomp filter compiled ahead by prepareConfinement,
// for the facts it was compiled with.
var seccompAhead struct {
	once   sync.Once
	facts  filterFacts
	filter []unix.SockFilter
	err    error
}

// prepareConfinement computes ahead what the ladder does not need to do in
// order: it compiles the seccomp filter for this process (50-90 µs of a
// cold start). ChildMain runs it beside the engine's setup, on the other
// core; confine uses its filter when the facts still hold.
func prepareConfinement() {
	seccompAhead.once.Do(func() {
		if seccompArch == 0 || len(seccompPolicy) == 0 {
			return
		}
		seccompAhead.facts = filterFacts{pid: unix.Getpid(), statusFD: jsrt.StatusFD()}
		seccompAhead.filter, seccompAhead.err = assembleSeccomp(compileSeccomp(seccompPolicy, seccompArch, seccompAhead.facts))
	})
}

// seccompFilter is the filter for facts: the one compiled ahead, or one
// compiled now.
func seccompFilter(facts filterFacts) ([]unix.SockFilter, error) {
	seccompAhead.once.Do(func() {}) // waits for prepareConfinement, if it is under way
	if seccompAhead.facts == facts && (seccompAhead.filter != nil || seccompAhead.err != nil) {
		return seccompAhead.filter, seccompAhead.err
	}
	return assembleSeccomp(compileSeccomp(seccompPolicy, seccompArch, facts))
}

func applySeccomp(facts filterFacts) wire.Layer {
	l := wire.Layer{Name: wire.LayerSeccomp, How: "not applied"}
	if seccompArch == 0 || len(seccompPolicy) == 0 {
		l.Missing = "no seccomp policy is written for this architecture"
		return l
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err == unix.EINVAL {
		l.Missing = "the kernel has no seccomp (CONFIG_SECCOMP_FILTER)"
		return l
	}
	persona, _, _ := unix.RawSyscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	filter, err := seccompFilter(facts)
	if err != nil {
		l.Missing = err.Error()
		return l
	}
	if err := installSigsysReporter(); err != nil {
		l.Missing = err.Error()
		return l
	}
	if err := installSeccomp(filter); err != nil {
		l.Missing = err.Error()
		if errors.Is(err, unix.EINVAL) {
			l.Missing += " (the kernel lacks SECCOMP_FILTER_FLAG_TSYNC, Linux 3.17)"
		}
		return l
	}
	allowed, checked := 0, 0
	for _, r := range seccompPolicy {
		if r.errno == 0 {
			allowed++
		}
		if len(r.allowIf) > 0 || r.killIf != nil {
			checked++
		}
	}
	l.Enforced = true
	l.How = fmt.Sprintf("an allowlist of %d system calls (%d with their arguments checked: no executable memory, clone only for threads, signals only to itself), on every thread (TSYNC); any other call kills the worker (SIGSYS) and ends the run crashed, rule confinement; clone3 answers ENOSYS",
		allowed, checked)
	if raceBuild {
		l.How += fmt.Sprintf("; race-detector build: %d of them only for its runtime", len(raceSyscalls))
	}
	if persona&readImpliesExec != 0 {
		l.Missing = "the process runs with the READ_IMPLIES_EXEC personality, so readable memory is executable despite the PROT_EXEC check"
	}
	return l
}

func nnpLayer(early earlyPrivileges, st map[string]string, dumpErr error) wire.Layer {
	l := wire.Layer{Name: wire.LayerNoNewPrivs}
	switch {
	case st["NoNewPrivs"] == "1":
		l.Enforced = true
		l.How = "no_new_privs set on every thread before the Go runtime started: no execve can gain privileges"
	case !early.ran:
		l.How = "not set"
		l.Missing = "the privilege constructor did not run (it needs glibc, which passes argv to constructors)"
	default:
		l.How = "not set"
		l.Missing = fmt.Sprintf("prctl(PR_SET_NO_NEW_PRIVS): %v", early.nnpErr)
	}
	if dumpErr == nil {
		l.How += "; not dumpable (PR_SET_DUMPABLE 0): no core, no ptrace by the same user"
	} else {
		l.Missing = strings.TrimPrefix(l.Missing+"; ", "; ") + fmt.Sprintf("prctl(PR_SET_DUMPABLE, 0): %v", dumpErr)
	}
	return l
}

func capsLayer(early earlyPrivileges, st map[string]string) wire.Layer {
	l := wire.Layer{Name: wire.LayerCapabilities}
	zero := func(k string) bool {
		v, err := strconv.ParseUint(st[k], 16, 64)
		return err == nil && v == 0
	}
	held := zero("CapEff") && zero("CapPrm") && zero("CapInh") && zero("CapAmb")
	if !held {
		l.How = fmt.Sprintf("still held: CapEff %s, CapPrm %s, CapInh %s, CapAmb %s", st["CapEff"], st["CapPrm"], st["CapInh"], st["CapAmb"])
		l.Missing = "capabilities could not be dropped"
		if !early.ran {
			l.Missing += " (the privilege constructor did not run; it needs glibc)"
		} else if early.capsetErr != nil {
			l.Missing += fmt.Sprintf(" (capset: %v)", early.capsetErr)
		}
		return l
	}
	l.Enforced = true
	if early.held == 0 {
		l.How = "none held: the worker's user has no capabilities"
		if !zero("CapBnd") {
			l.How += " (the bounding set, which only execve would use, cannot be dropped without CAP_SETPCAP)"
		}
		return l
	}
	l.How = fmt.Sprintf("all dropped before the Go runtime started (held %#x): effective, permitted, inheritable, ambient, and %d from the bounding set; securebits locked so uid 0 regains none",
		early.held, early.boundingDropped)
	if !zero("CapBnd") {
		l.Missing = fmt.Sprintf("the bounding set is still %s", st["CapBnd"])
	}
	if early.securebitsErr != nil {
		l.Missing = strings.TrimPrefix(l.Missing+"; ", "; ") + fmt.Sprintf("securebits: %v", early.securebitsErr)
	}
	return l
}

// namespaceLayer reports whether the worker runs in a user namespace of its
// own (the parent creates it and the others at spawn when asked): its
// uid_map then maps a single id.
func namespaceLayer() wire.Layer {
	l := wire.Layer{Name: wire.LayerNamespaces, How: "none: the worker shares the host's namespaces (off by default: each spawn would cost 0.3-0.9 ms)"}
	b, err := readSmallFile("/proc/self/uid_map")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	if len(f) == 3 && !(f[0] == "0" && f[1] == "0" && f[2] == "4294967295") {
		l.Enforced = true
		l.How = fmt.Sprintf("new user, network, IPC, UTS and mount namespaces made at spawn (uid %s inside is uid %s outside; no network interface but a down loopback)", f[0], f[1])
	}
	return l
}

// lowestFreeFD is the lowest descriptor number not in use: RLIMIT_NOFILE
// set to it leaves no number a new descriptor could take (those held above
// a hole stay usable; the limit binds only new ones).
func lowestFreeFD() int {
	fd, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return maxWorkerFiles
	}
	unix.Close(fd)
	return fd
}

func readSmallFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 512)
	n, err := unix.Read(fd, b)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// parseStatus splits /proc/self/status into its fields.
func parseStatus(b []byte) map[string]string {
	m := make(map[string]string, 64)
	for _, line := range bytes.Split(b, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok {
			m[string(k)] = string(bytes.TrimSpace(v))
		}
	}
	return m
}
