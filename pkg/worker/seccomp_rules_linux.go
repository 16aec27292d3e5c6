package worker

// This file is the seccomp policy's vocabulary and its compiler to classic
// BPF (golang.org/x/net/bpf). The policy itself is data: seccomp_policy_*.go.

import (
	"cmp"
	"fmt"
	"slices"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// sysRule is one entry of the seccomp policy: a system call, when it is
// allowed, and why the worker needs it.
type sysRule struct {
	nr   uintptr
	name string
	// allowIf: the call is allowed when every check holds; otherwise it is
	// trapped like a call outside the policy. None: always allowed.
	allowIf []argCheck
	// killIf, checked first: when it holds, the process is killed at once
	// (SECCOMP_RET_KILL_PROCESS).
	killIf *argCheck
	// errno, if set: the call is answered with this error and not run.
	errno unix.Errno
	why   string
}

// argCheck tests one argument: its low 32 bits, masked, must equal one of
// the values. Every argument the policy checks is one the kernel reads as a
// 32-bit int (a pid, a descriptor, a signal, a socket option, mmap's and
// mprotect's prot) or of which it reads only the low 32 bits (clone's
// flags), so the high half cannot change what the kernel does.
type argCheck struct {
	arg    int    // 0 to 5
	mask   uint32 // 0: all bits
	values []uint32
	// dyn, if set, supplies the values when the filter is built: facts of
	// the process known only then.
	dyn dynValue
}

// dynValue names a fact of the worker process that a check compares with.
type dynValue int

const (
	dynNone     dynValue = iota
	dynPID               // the worker's own process id
	dynStatusFD          // the descriptor of /proc/self/status kept open for peak RSS
)

// filterFacts are the values of the dynValues for one process.
type filterFacts struct {
	pid      int
	statusFD int // -1 when none is kept
}

// The actions the filter returns (linux/seccomp.h).
const (
	retKillProcess = 0x80000000 // SECCOMP_RET_KILL_PROCESS: the process dies by SIGSYS
	retTrap        = 0x00030000 // SECCOMP_RET_TRAP: SIGSYS to the thread; the call does not run
	retErrno       = 0x00050000 // SECCOMP_RET_ERRNO | errno
	retAllow       = 0x7fff0000 // SECCOMP_RET_ALLOW
)

// Offsets in struct seccomp_data, for a little-endian machine: an argument's
// low 32 bits come first.
const (
	dataNr   = 0
	dataArch = 4
	dataArgs = 16
)

// x32SyscallBit marks an x32 system call on x86-64: same arch token, other
// numbers. Calls with it set are killed.
const x32SyscallBit = 0x40000000

// compileSeccomp turns a policy into a classic BPF program for seccomp:
//
//	check the architecture (anything else: kill the process)
//	a binary search on the call's number, down to runs of a few rules;
//	a matching rule's block always returns; no match: SECCOMP_RET_TRAP
//
// The search keeps every path short: the kernel runs the program on each
// call it does not answer from its cache (calls allowed whatever their
// arguments are cached), and emulates it for every call number when the
// filter is installed, which a linear chain made four times slower.
//
// It panics on a malformed policy (a duplicate system call, an argument out
// of range, a check with no values, a block too long for a jump): that is a
// bug of ours, never the environment's.
func compileSeccomp(policy []sysRule, arch uint32, facts filterFacts) []bpf.Instruction {
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: dataArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: retKillProcess},
		bpf.LoadAbsolute{Off: dataNr, Size: 4},
	}
	if arch == auditArchX8664 {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1},
			bpf.RetConstant{Val: retKillProcess})
	}
	seen := make(map[uintptr]string, len(policy))
	for _, r := range policy {
		if other, dup := seen[r.nr]; dup {
			panic(fmt.Sprintf("seccomp policy: %s (%d) is listed twice (also as %s)", r.name, r.nr, other))
		}
		seen[r.nr] = r.name
	}
	sorted := slices.Clone(policy)
	slices.SortFunc(sorted, func(a, b sysRule) int { return cmp.Compare(a.nr, b.nr) })
	return append(prog, searchTree(sorted, facts)...)
}

// searchLeaf is how many rules a leaf of the search compares one by one.
const searchLeaf = 4

// searchTree is the search over rules (sorted by number), with the call's
// number in the accumulator. Every path ends in a return.
func searchTree(rules []sysRule, facts filterFacts) []bpf.Instruction {
	if len(rules) <= searchLeaf {
		var code []bpf.Instruction
		for _, r := range rules {
			block := ruleBlock(r, facts)
			if len(block) > 255 {
				panic(fmt.Sprintf("seccomp policy: the block for %s is %d instructions; a jump spans at most 255", r.name, len(block)))
			}
			code = append(code, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(r.nr), SkipFalse: uint8(len(block))})
			code = append(code, block...)
		}
		return append(code, bpf.RetConstant{Val: retTrap})
	}
	mid := len(rules) / 2
	left, right := searchTree(rules[:mid], facts), searchTree(rules[mid:], facts)
	if len(left) > 255 {
		panic(fmt.Sprintf("seccomp policy: a branch of %d instructions; a jump spans at most 255", len(left)))
	}
	code := []bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(rules[mid].nr), SkipTrue: uint8(len(left))}}
	return append(append(code, left...), right...)
}

// ruleBlock is the code run when the call's number matches r. It always ends
// in a return on every path.
func ruleBlock(r sysRule, facts filterFacts) []bpf.Instruction {
	if r.errno != 0 {
		return []bpf.Instruction{bpf.RetConstant{Val: retErrno | uint32(r.errno)}}
	}
	var b []bpf.Instruction
	if r.killIf != nil {
		// load; [and]; jeq v → kill (each value); else fall through to the checks
		k := checkCode(*r.killIf, facts)
		vals := checkValues(*r.killIf, facts)
		b = append(b, k...)
		for i, v := range vals {
			// true: jump over the remaining compares and the jump to the checks, onto the kill
			b = append(b, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(vals) - 1 - i + 1)})
		}
		b = append(b, bpf.Jump{Skip: 1}, bpf.RetConstant{Val: retKillProcess})
	}
	for _, c := range r.allowIf {
		vals := checkValues(c, facts)
		b = append(b, checkCode(c, facts)...)
		for i, v := range vals {
			// true: skip the remaining compares and the trap
			b = append(b, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(vals) - 1 - i + 1)})
		}
		b = append(b, bpf.RetConstant{Val: retTrap})
	}
	return append(b, bpf.RetConstant{Val: retAllow})
}

// checkCode loads the argument's low half and masks it.
func checkCode(c argCheck, _ filterFacts) []bpf.Instruction {
	if c.arg < 0 || c.arg > 5 {
		panic(fmt.Sprintf("seccomp policy: argument %d does not exist", c.arg))
	}
	code := []bpf.Instruction{bpf.LoadAbsolute{Off: uint32(dataArgs + 8*c.arg), Size: 4}}
	if c.mask != 0 {
		code = append(code, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: c.mask})
	}
	return code
}

// checkValues is what the argument must equal: the literal values, or the
// process's fact.
func checkValues(c argCheck, facts filterFacts) []uint32 {
	vals := c.values
	switch c.dyn {
	case dynPID:
		vals = []uint32{uint32(facts.pid)}
	case dynStatusFD:
		if facts.statusFD < 0 {
			vals = []uint32{0xffffffff} // no descriptor kept: matches no real descriptor
		} else {
			vals = []uint32{uint32(facts.statusFD)}
		}
	}
	if len(vals) == 0 || len(vals) > 16 {
		panic(fmt.Sprintf("seccomp policy: a check on argument %d has %d values; want 1 to 16", c.arg, len(vals)))
	}
	return vals
}

// assembleSeccomp assembles the program for the kernel, after checking it
// with x/net/bpf's own validator (every jump in range, a return at the end).
func assembleSeccomp(prog []bpf.Instruction) ([]unix.SockFilter, error) {
	if _, err := bpf.NewVM(prog); err != nil {
		return nil, fmt.Errorf("seccomp: the compiled filter is invalid: %w", err)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble the filter: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// policyRule finds the rule for nr, for messages about a trapped call.
func policyRule(policy []sysRule, nr int) (sysRule, bool) {
	for _, r := range policy {
		if int(r.nr) == nr {
			return r, true
		}
	}
	return sysRule{}, false
}
