package worker

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// testFacts are the process facts the policy is compiled with in these tests.
var testFacts = filterFacts{pid: 4242, statusFD: 7}

// seccompData builds a struct seccomp_data for x/net/bpf's VM. The VM loads
// 32-bit words big-endian, so each word is stored big-endian at the offset
// the kernel uses on a little-endian machine (an argument's low half first):
// the program sees the values the kernel would show it.
func seccompData(arch uint32, nr uintptr, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[dataNr:], uint32(nr))
	binary.BigEndian.PutUint32(b[dataArch:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[dataArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[dataArgs+8*i+4:], uint32(a>>32))
	}
	return b
}

type verdict uint32

func (v verdict) String() string {
	switch uint32(v) &^ 0xffff {
	case retAllow:
		return "allow"
	case retTrap:
		return "trap"
	case retKillProcess:
		return "kill"
	case retErrno:
		return "errno " + unix.ErrnoName(unix.Errno(uint32(v)&0xffff))
	}
	return fmt.Sprintf("%#x", uint32(v))
}

const (
	allow  = verdict(retAllow)
	trap   = verdict(retTrap)
	kill   = verdict(retKillProcess)
	enosys = verdict(retErrno | uint32(unix.ENOSYS))
)

// threadClone are the flags glibc's pthread_create passes to clone.
const threadClone = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
	unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID

// policyCase is one system call with arguments and the verdict it must get.
type policyCase struct {
	name string
	arch uint32
	nr   uintptr
	args []uint64
	want verdict
}

// checkedCases cover every entry whose arguments are checked, on both sides
// of each check.
var checkedCases = []policyCase{
	{name: "mmap read-write", nr: unix.SYS_MMAP, args: []uint64{0, 4096, unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS}, want: allow},
	{name: "mmap no access (a reservation)", nr: unix.SYS_MMAP, args: []uint64{0, 4096, unix.PROT_NONE}, want: allow},
	{name: "mmap executable", nr: unix.SYS_MMAP, args: []uint64{0, 4096, unix.PROT_READ | unix.PROT_EXEC}, want: trap},
	{name: "mmap exec only", nr: unix.SYS_MMAP, args: []uint64{0, 4096, unix.PROT_EXEC}, want: trap},
	{name: "mmap PROT_EXEC with high bits set", nr: unix.SYS_MMAP, args: []uint64{0, 4096, 0xffffffff00000000 | unix.PROT_EXEC}, want: trap},
	{name: "mmap with high bits only", nr: unix.SYS_MMAP, args: []uint64{0, 4096, 0xffffffff00000000 | unix.PROT_READ}, want: allow},
	{name: "mprotect read-write", nr: unix.SYS_MPROTECT, args: []uint64{0, 4096, unix.PROT_READ | unix.PROT_WRITE}, want: allow},
	{name: "mprotect guard page", nr: unix.SYS_MPROTECT, args: []uint64{0, 4096, unix.PROT_NONE}, want: allow},
	{name: "mprotect executable", nr: unix.SYS_MPROTECT, args: []uint64{0, 4096, unix.PROT_READ | unix.PROT_EXEC}, want: trap},
	{name: "clone a thread (pthread_create)", nr: unix.SYS_CLONE, args: []uint64{threadClone}, want: allow},
	{name: "clone a process (fork)", nr: unix.SYS_CLONE, args: []uint64{uint64(unix.SIGCHLD)}, want: trap},
	{name: "clone a thread into a new user namespace", nr: unix.SYS_CLONE, args: []uint64{threadClone | unix.CLONE_NEWUSER}, want: trap},
	{name: "clone a thread into a new network namespace", nr: unix.SYS_CLONE, args: []uint64{threadClone | unix.CLONE_NEWNET}, want: trap},
	{name: "clone a traced thread", nr: unix.SYS_CLONE, args: []uint64{threadClone | unix.CLONE_PTRACE}, want: trap},
	{name: "clone with CLONE_THREAD but not CLONE_VM", nr: unix.SYS_CLONE, args: []uint64{unix.CLONE_THREAD | unix.CLONE_SIGHAND}, want: trap},
	{name: "clone vfork", nr: unix.SYS_CLONE, args: []uint64{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)}, want: trap},
	{name: "clone3, any arguments", nr: unix.SYS_CLONE3, args: []uint64{0x1234, 88}, want: enosys},
	{name: "tgkill own thread", nr: unix.SYS_TGKILL, args: []uint64{4242, 4243, uint64(unix.SIGURG)}, want: allow},
	{name: "tgkill another process", nr: unix.SYS_TGKILL, args: []uint64{1, 1, uint64(unix.SIGKILL)}, want: trap},
	{name: "tgkill own pid in the low half only", nr: unix.SYS_TGKILL, args: []uint64{0x100000000 | 4242, 4242, 9}, want: allow}, // the kernel reads an int
	{name: "kill itself", nr: unix.SYS_KILL, args: []uint64{4242, uint64(unix.SIGABRT)}, want: allow},
	{name: "kill the parent", nr: unix.SYS_KILL, args: []uint64{4241, uint64(unix.SIGKILL)}, want: trap},
	{name: "kill every process (-1)", nr: unix.SYS_KILL, args: []uint64{0xffffffff, uint64(unix.SIGKILL)}, want: trap},
	{name: "kill its process group (0)", nr: unix.SYS_KILL, args: []uint64{0, uint64(unix.SIGKILL)}, want: trap},
	{name: "rt_sigaction SIGURG", nr: unix.SYS_RT_SIGACTION, args: []uint64{uint64(unix.SIGURG), 0, 0, 8}, want: allow},
	{name: "rt_sigaction SIGABRT (abort)", nr: unix.SYS_RT_SIGACTION, args: []uint64{uint64(unix.SIGABRT), 0, 0, 8}, want: allow},
	{name: "rt_sigaction SIGSYS", nr: unix.SYS_RT_SIGACTION, args: []uint64{uint64(unix.SIGSYS), 0, 0, 8}, want: kill},
	{name: "pread64 the status descriptor", nr: unix.SYS_PREAD64, args: []uint64{7, 0, 8192, 0}, want: allow},
	{name: "pread64 another descriptor", nr: unix.SYS_PREAD64, args: []uint64{3, 0, 8192, 0}, want: trap},
	{name: "setsockopt SO_RCVTIMEO", nr: unix.SYS_SETSOCKOPT, args: []uint64{3, unix.SOL_SOCKET, unix.SO_RCVTIMEO, 0, 16}, want: allow},
	{name: "setsockopt SO_SNDTIMEO", nr: unix.SYS_SETSOCKOPT, args: []uint64{3, unix.SOL_SOCKET, unix.SO_SNDTIMEO, 0, 16}, want: allow},
	{name: "setsockopt SO_SNDBUF", nr: unix.SYS_SETSOCKOPT, args: []uint64{3, unix.SOL_SOCKET, unix.SO_SNDBUF, 0, 4}, want: trap},
	{name: "setsockopt TCP level", nr: unix.SYS_SETSOCKOPT, args: []uint64{3, unix.IPPROTO_TCP, unix.SO_RCVTIMEO, 0, 16}, want: trap},

	{name: "another architecture (i386 int 0x80)", arch: 0x40000003, nr: unix.SYS_WRITE, want: kill},
	{name: "an x32 call", nr: 0x40000000 | unix.SYS_WRITE, want: kill},
	{name: "a number no kernel has", nr: 4000, want: trap},
}

// TestSeccompPolicy runs the compiled filter, in x/net/bpf's VM, on every
// entry of the policy: each unchecked entry is allowed whatever its
// arguments, each checked one as checkedCases say, and every call the policy
// denies on purpose traps.
func TestSeccompPolicy(t *testing.T) {
	if len(seccompPolicy) == 0 {
		t.Skip("no seccomp policy for this architecture")
	}
	prog := compileSeccomp(seccompPolicy, seccompArch, testFacts)
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("the compiled filter does not validate: %v", err)
	}
	var cases []policyCase
	checked := map[uintptr]bool{}
	for _, c := range checkedCases {
		checked[c.nr] = true
	}
	for _, r := range seccompPolicy {
		if len(r.allowIf) > 0 || r.killIf != nil || r.errno != 0 {
			if !checked[r.nr] {
				t.Errorf("%s has checked arguments but no row in checkedCases", r.name)
			}
			continue
		}
		for _, args := range [][]uint64{{0, 0, 0, 0, 0, 0}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}, {3, 1, 2}} {
			cases = append(cases, policyCase{name: fmt.Sprintf("%s %x", r.name, args[0]), nr: r.nr, args: args, want: allow})
		}
	}
	for _, r := range deniedOnPurpose {
		cases = append(cases, policyCase{name: "denied on purpose: " + r.name, nr: r.nr, args: []uint64{0, 0, 0}, want: trap})
	}
	cases = append(cases, checkedCases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			arch := c.arch
			if arch == 0 {
				arch = seccompArch
			}
			got, err := vm.Run(seccompData(arch, c.nr, c.args...))
			if err != nil {
				t.Fatal(err)
			}
			if verdict(got) != c.want {
				t.Fatalf("%s(%x): %v, want %v\nprogram:\n%s", c.name, c.args, verdict(got), c.want, disassemble(prog))
			}
		})
	}
}

func disassemble(prog []bpf.Instruction) string {
	var b strings.Builder
	for i, ins := range prog {
		fmt.Fprintf(&b, "%3d %v\n", i, ins)
	}
	return b.String()
}

// TestSeccompPolicyIsDocumented: every entry says why, none is listed twice,
// and nothing denied on purpose is allowed.
func TestSeccompPolicyIsDocumented(t *testing.T) {
	allowed := map[uintptr]string{}
	for _, r := range seccompPolicy {
		if len(r.why) < 20 {
			t.Errorf("%s: the reason %q does not say why", r.name, r.why)
		}
		if other, dup := allowed[r.nr]; dup {
			t.Errorf("%s and %s are the same call", r.name, other)
		}
		allowed[r.nr] = r.name
	}
	for _, r := range deniedOnPurpose {
		if name, ok := allowed[r.nr]; ok {
			t.Errorf("%s is denied on purpose but the policy allows it (as %s)", r.name, name)
		}
		if r.why == "" {
			t.Errorf("%s is denied without a reason", r.name)
		}
	}
}

// TestSeccompCompilerRejectsMalformedPolicy: a malformed policy is our bug,
// and the compiler says so at once.
func TestSeccompCompilerRejectsMalformedPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy []sysRule
	}{
		{"a call listed twice", []sysRule{{nr: 1, name: "write"}, {nr: 1, name: "write again"}}},
		{"an argument that does not exist", []sysRule{{nr: 1, name: "write", allowIf: []argCheck{{arg: 6, values: []uint32{0}}}}}},
		{"a check without values", []sysRule{{nr: 1, name: "write", allowIf: []argCheck{{arg: 0}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("compileSeccomp accepted it")
				}
			}()
			compileSeccomp(tc.policy, auditArchX8664, testFacts)
		})
	}
}

// TestSeccompFilterAssembles: the kernel's form of the filter, as installed.
func TestSeccompFilterAssembles(t *testing.T) {
	if len(seccompPolicy) == 0 {
		t.Skip("no seccomp policy for this architecture")
	}
	f, err := assembleSeccomp(compileSeccomp(seccompPolicy, seccompArch, testFacts))
	if err != nil {
		t.Fatal(err)
	}
	if len(f) > 4096 { // BPF_MAXINSNS
		t.Fatalf("%d instructions; the kernel takes at most 4096", len(f))
	}
	t.Logf("%d system calls in %d instructions", len(seccompPolicy), len(f))
}
