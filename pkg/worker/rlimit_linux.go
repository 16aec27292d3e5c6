package worker

// This file is the rlimit policy: one entry per limit, who sets it and why.
// The worker sets the limits that do not depend on its run while it confines
// itself; the parent sets the two that do (from the run's memory and
// deadline) with prlimit(2) on the worker just before it sends the start
// frame, so a spare takes its run's limits when the run starts and one pool
// of spares serves every limit set.

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// asOverhead is the address space a worker needs beside its QuickJS heap.
// Measured on linux/amd64 (Go 1.26, glibc 2.36): an idle worker maps
// 1.49 GiB (VmSize), of which 1.06 GiB are the Go runtime's PROT_NONE
// reservations, 252 MiB glibc's per-thread malloc arenas and 40 MiB thread
// stacks; with a full 2 GiB heap it maps 3.31 GiB. 2 GiB keeps a quarter
// of it as headroom, so the engine's own limit always trips first and
// RLIMIT_AS is only a backstop for memory taken outside it.
const asOverhead = 2 << 30

// cpuStartAllowance is CPU time a worker may have spent before its run
// (exec, the Go runtime, preparing the engine: about 10 ms), with margin.
const cpuStartAllowance = time.Second

// rlimitFacts are what the values depend on.
type rlimitFacts struct {
	openFDs int         // the lowest descriptor number the worker does not use
	limits  wire.Limits // the run's (normalized)
	grace   time.Duration
}

// rlimitRule is one entry of the rlimit policy.
type rlimitRule struct {
	resource int
	name     string
	byParent bool // set by the parent at start (prlimit); else by the worker while confining
	// value is the limit (soft = hard); ok false skips it, saying why.
	value func(f rlimitFacts) (v uint64, ok bool, why string)
	why   string
}

func fixed(v uint64) func(rlimitFacts) (uint64, bool, string) {
	return func(rlimitFacts) (uint64, bool, string) { return v, true, "" }
}

// rlimitPolicy is the whole policy. Soft and hard limits are set equal: the
// worker holds no capability to raise a hard limit again.
var rlimitPolicy = []rlimitRule{
	{resource: unix.RLIMIT_CORE, name: "core", value: fixed(0),
		why: "no core dump: a crash must not write the worker's memory (tool results, arguments) to disk"},
	{resource: unix.RLIMIT_FSIZE, name: "fsize", value: fixed(0),
		why: "the worker writes no file: any write to a regular file fails with EFBIG (the Go runtime ignores SIGXFSZ)"},
	{resource: unix.RLIMIT_NOFILE, name: "nofile", value: func(f rlimitFacts) (uint64, bool, string) {
		return uint64(f.openFDs), true, ""
	}, why: "just above the descriptors it holds (stdio, its socket, the Go poller, /proc/self/status): no number is left for a new one"},
	{resource: unix.RLIMIT_AS, name: "as", byParent: true, value: func(f rlimitFacts) (uint64, bool, string) {
		if raceBuild || asanBuild {
			return 0, false, "not set: a race-detector or AddressSanitizer build maps terabytes of shadow memory"
		}
		return uint64(f.limits.MemoryBytes) + asOverhead, true, ""
	}, why: "a backstop above the engine's heap limit for memory taken outside it: the heap limit plus the runtime's measured 1.5 GiB, with headroom"},
	{resource: unix.RLIMIT_CPU, name: "cpu", byParent: true, value: func(f rlimitFacts) (uint64, bool, string) {
		d := f.limits.Timeout() + f.grace + cpuStartAllowance
		return uint64((d + time.Second - 1) / time.Second), true, ""
	}, why: "a backstop for the interrupt handler and the parent's kill: the run's deadline plus the grace, rounded up to seconds, then SIGKILL"},
}

// maxWorkerFiles caps RLIMIT_NOFILE whatever the worker holds.
const maxWorkerFiles = 64

// applyWorkerRlimits sets the worker's own limits and describes them.
func applyWorkerRlimits(openFDs int) (how string, err error) {
	f := rlimitFacts{openFDs: min(openFDs, maxWorkerFiles)}
	var parts []string
	for _, r := range rlimitPolicy {
		if r.byParent {
			continue
		}
		v, ok, why := r.value(f)
		if !ok {
			parts = append(parts, r.name+" "+why)
			continue
		}
		lim := unix.Rlimit{Cur: v, Max: v}
		if err := unix.Setrlimit(r.resource, &lim); err != nil {
			return "", fmt.Errorf("setrlimit %s %d: %w", r.name, v, err)
		}
		parts = append(parts, fmt.Sprintf("%s %d", r.name, v))
	}
	return "set by the worker: " + strings.Join(parts, ", "), nil
}

// limitRun sets the run's limits on the worker (pid) with prlimit(2) and
// describes them. The worker has not read its start frame yet.
func limitRun(pid int, l wire.Limits, grace time.Duration) (how string, err error) {
	f := rlimitFacts{limits: l, grace: grace}
	var parts []string
	for _, r := range rlimitPolicy {
		if !r.byParent {
			continue
		}
		v, ok, why := r.value(f)
		if !ok {
			parts = append(parts, r.name+" "+why)
			continue
		}
		lim := unix.Rlimit{Cur: v, Max: v}
		if err := unix.Prlimit(pid, r.resource, &lim, nil); err != nil {
			return "", fmt.Errorf("prlimit %s %d on worker %d: %w", r.name, v, pid, err)
		}
		if r.resource == unix.RLIMIT_AS {
			parts = append(parts, fmt.Sprintf("as %s (heap %s + %s)", mib(int64(v)), mib(l.MemoryBytes), mib(asOverhead)))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d s", r.name, v))
		}
	}
	return "set by the parent at start: " + strings.Join(parts, ", "), nil
}

func mib(n int64) string {
	return fmt.Sprintf("%d MiB", n>>20)
}
