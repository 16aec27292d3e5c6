package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// countingListener accepts and counts connections until the test ends.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func listen(t *testing.T, network, addr string) *countingListener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &countingListener{Listener: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return c
}

// attackTargets are what the attacks aim at: a secret file, a TCP listener
// and an abstract unix listener, all the test's.
type attackTargets struct {
	secret, secretPath string
	tcp, abstract      *countingListener
	abstractName       string
}

func newTargets(t *testing.T) *attackTargets {
	var b [16]byte
	_, _ = rand.Read(b[:])
	tg := &attackTargets{secret: "secret-" + hex.EncodeToString(b[:])}
	tg.secretPath = filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(tg.secretPath, []byte(tg.secret), 0o644); err != nil {
		t.Fatal(err)
	}
	tg.tcp = listen(t, "tcp4", "127.0.0.1:0")
	tg.abstractName = "run-js-test-" + hex.EncodeToString(b[:4])
	tg.abstract = listen(t, "unix", "@"+tg.abstractName)
	return tg
}

func (tg *attackTargets) input(attack string) json.RawMessage {
	in := attackInput{Attack: attack, Secret: tg.secretPath, TCP: tg.tcp.Addr().String(),
		TCPPort: tg.tcp.Addr().(*net.TCPAddr).Port, Abstract: tg.abstractName, Parent: os.Getpid()}
	b, _ := json.Marshal(in)
	return b
}

// attackCase is one attack and what must come of it: "crash:NAME" (the
// seccomp filter killed the worker and the parent named the call),
// "crash:" (killed without a number), or "errno:NAME" (the call failed).
type attackCase struct {
	name    string
	mode    string // attack-all, attack-landlock, attack-rlimits, attack-none
	attack  string
	want    string
	noRace  bool // RLIMIT_AS is not set in race-detector builds
	minABI  int  // Landlock ABI the expectation needs
	control bool // no confinement: the attack must work (the test can fail)
}

var attackCases = []attackCase{
	// Everything on, as every worker runs: the seccomp filter answers first.
	{name: "open a real file", mode: "attack-all", attack: "open", want: "crash:open"},
	{name: "openat a real file", mode: "attack-all", attack: "openat", want: "crash:openat"},
	{name: "create a file in its directory", mode: "attack-all", attack: "create-in-cwd", want: "crash:openat"},
	{name: "socket AF_INET", mode: "attack-all", attack: "socket-inet", want: "crash:socket"},
	{name: "socket AF_INET6", mode: "attack-all", attack: "socket-inet6", want: "crash:socket"},
	{name: "socket AF_UNIX", mode: "attack-all", attack: "socket-unix", want: "crash:socket"},
	{name: "socket AF_NETLINK", mode: "attack-all", attack: "socket-netlink", want: "crash:socket"},
	{name: "connect to the test's listener", mode: "attack-all", attack: "connect-tcp", want: "crash:socket"},
	{name: "connect its own socket elsewhere", mode: "attack-all", attack: "connect-own-socket", want: "crash:connect"},
	{name: "execve /bin/sh", mode: "attack-all", attack: "execve", want: "crash:execve"},
	{name: "fork", mode: "attack-all", attack: "fork", want: "crash:fork"},
	{name: "clone a process", mode: "attack-all", attack: "clone-process", want: "crash:clone"},
	{name: "clone3 (answered, so glibc falls back to clone)", mode: "attack-all", attack: "clone3", want: "errno:ENOSYS"},
	{name: "ptrace the parent", mode: "attack-all", attack: "ptrace-parent", want: "crash:ptrace"},
	{name: "kill the parent", mode: "attack-all", attack: "kill-parent", want: "crash:kill"},
	{name: "tgkill the parent", mode: "attack-all", attack: "tgkill-parent", want: "crash:tgkill"},
	{name: "process_vm_readv of the parent", mode: "attack-all", attack: "process-vm-readv", want: "crash:process_vm_readv"},
	{name: "mmap with PROT_EXEC", mode: "attack-all", attack: "mmap-exec", want: "crash:mmap"},
	{name: "mprotect to PROT_EXEC", mode: "attack-all", attack: "mprotect-exec", want: "crash:mprotect"},
	{name: "io_uring_setup", mode: "attack-all", attack: "io_uring_setup", want: "crash:io_uring_setup"},
	{name: "bpf", mode: "attack-all", attack: "bpf", want: "crash:bpf"},
	{name: "userfaultfd", mode: "attack-all", attack: "userfaultfd", want: "crash:userfaultfd"},
	{name: "keyctl", mode: "attack-all", attack: "keyctl", want: "crash:keyctl"},
	{name: "unshare a user namespace", mode: "attack-all", attack: "unshare", want: "crash:unshare"},
	{name: "setns", mode: "attack-all", attack: "setns", want: "crash:setns"},
	{name: "mount", mode: "attack-all", attack: "mount", want: "crash:mount"},
	{name: "personality READ_IMPLIES_EXEC", mode: "attack-all", attack: "personality", want: "crash:personality"},
	{name: "prctl to become dumpable", mode: "attack-all", attack: "prctl-dumpable", want: "crash:prctl"},
	{name: "replace the SIGSYS handler", mode: "attack-all", attack: "replace-sigsys-handler", want: "crash:"},
	{name: "pread another descriptor", mode: "attack-all", attack: "pread-other-fd", want: "crash:pread64"},
	{name: "setsockopt other than a timeout", mode: "attack-all", attack: "setsockopt-other", want: "crash:setsockopt"},
	{name: "dup a descriptor", mode: "attack-all", attack: "dup-past-nofile", want: "crash:dup"},
	{name: "not an attack: new threads, a collection, a timer", mode: "attack-all", attack: "go-runtime", want: "errno:ok"},
	{name: "write past RLIMIT_FSIZE", mode: "attack-all", attack: "write-past-fsize", want: "errno:EFBIG"},
	{name: "allocate past RLIMIT_AS", mode: "attack-all", attack: "allocate-past-as", want: "errno:ENOMEM", noRace: true},

	// Landlock alone (no seccomp filter): it must hold by itself.
	{name: "landlock alone: read a real file", mode: "attack-landlock", attack: "read-secret", want: "errno:EACCES", minABI: 1},
	{name: "landlock alone: create a file in its directory", mode: "attack-landlock", attack: "create-in-cwd", want: "errno:EACCES", minABI: 1},
	{name: "landlock alone: connect to the test's TCP listener", mode: "attack-landlock", attack: "connect-tcp", want: "errno:EACCES", minABI: 4},
	{name: "landlock alone: connect to an abstract unix socket", mode: "attack-landlock", attack: "connect-abstract", want: "errno:EPERM", minABI: 6},
	{name: "landlock alone: signal the parent", mode: "attack-landlock", attack: "signal-parent", want: "errno:EPERM", minABI: 6},

	// rlimits alone.
	{name: "rlimits alone: write past RLIMIT_FSIZE", mode: "attack-rlimits", attack: "write-past-fsize", want: "errno:EFBIG"},
	{name: "rlimits alone: a descriptor past RLIMIT_NOFILE", mode: "attack-rlimits", attack: "dup-past-nofile", want: "errno:EMFILE"},
	{name: "rlimits alone: allocate past RLIMIT_AS", mode: "attack-rlimits", attack: "allocate-past-as", want: "errno:ENOMEM", noRace: true},

	// Controls, unconfined: the same code does reach its targets, so the
	// rows above can fail.
	{name: "control: read a real file", mode: "attack-none", attack: "read-secret", want: "read:", control: true},
	{name: "control: connect to a TCP listener", mode: "attack-none", attack: "connect-tcp", want: "ok", control: true},
	{name: "control: write to a held file", mode: "attack-none", attack: "write-past-fsize", want: "ok", control: true},
}

// TestAttacks runs native code in confined workers that tries, once
// confined, what an escape from the engine would try. Each must fail or end
// the run crashed by the seccomp filter, with the call named; the test's
// listeners are never connected and its secret never leaves the file.
func TestAttacks(t *testing.T) {
	targets := newTargets(t)
	control := newTargets(t)
	abi, _ := llsys.LandlockGetABIVersion()
	var endings []string
	for _, tc := range attackCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noRace && (raceBuild || asanBuild) {
				t.Skip("RLIMIT_AS is not set in race-detector or ASan builds (their shadow memory takes terabytes); the row runs in plain go test")
			}
			if abi < tc.minABI {
				t.Skipf("needs Landlock ABI %d; the kernel has %d", tc.minABI, abi)
			}
			tg := targets
			if tc.control {
				tg = control
			}
			e := runWith(t, testConfig(tc.mode), Request{Input: tg.input(tc.attack), Limits: wire.Limits{TimeoutMs: 20_000}})
			b, _ := json.Marshal(e)
			if !tc.control {
				endings = append(endings, string(b))
			}
			checkAttack(t, tc, e, tg)
		})
	}
	for _, ending := range endings {
		if strings.Contains(ending, targets.secret) {
			t.Fatalf("the secret left its file: %s", ending)
		}
	}
	if n := targets.tcp.accepted.Load(); n != 0 {
		t.Fatalf("the TCP listener accepted %d connections from confined workers", n)
	}
	if n := targets.abstract.accepted.Load(); n != 0 {
		t.Fatalf("the abstract unix listener accepted %d connections from confined workers", n)
	}
	// The parent is unaffected: it runs the next program as usual.
	wantStatus(t, runProgram(t, Request{Code: "return 1 + 1"}), wire.StatusReturned)
}

func checkAttack(t *testing.T, tc attackCase, e *Ending, tg *attackTargets) {
	t.Helper()
	b, _ := json.MarshalIndent(e, "", "  ")
	kind, arg, _ := strings.Cut(tc.want, ":")
	switch kind {
	case "crash":
		if e.Status != wire.StatusCrashed || e.Crash == nil || e.Crash.Rule != ruleConfinement {
			t.Fatalf("want crashed, rule confinement; ending:\n%s", b)
		}
		if arg == "" {
			if !strings.Contains(e.Crash.Detail, "could not say which") {
				t.Fatalf("want a death by SIGSYS without the call's number; detail %q", e.Crash.Detail)
			}
			return
		}
		if !strings.Contains(e.Crash.Detail, "forbids, "+arg+" (") {
			t.Fatalf("the crash does not name %s: %q", arg, e.Crash.Detail)
		}
	case "errno", "ok", "read":
		wantStatus(t, e, wire.StatusReturned)
		var got string
		_ = json.Unmarshal(e.Value, &got)
		want := arg
		switch kind {
		case "ok":
			want = "ok"
		case "read":
			want = "read:" + tg.secret
		}
		if got != want {
			t.Fatalf("the call returned %q, want %q", got, want)
		}
	default:
		t.Fatalf("bad expectation %q", tc.want)
	}
}

// TestConfinedWorkerStatus reads, from the parent, what the kernel says of
// a worker while its program runs a loop: every thread has no_new_privs,
// the seccomp filter and no capabilities; the limits are set.
func TestConfinedWorkerStatus(t *testing.T) {
	inLoop := make(chan struct{})
	call := func(ctx context.Context, c Call) Outcome {
		close(inLoop)
		return Answer(json.RawMessage(`{"content":[],"isError":false}`))
	}
	r, err := Start(context.Background(), testConfig(""), Request{
		Code:    `await tools.issues.list_issues({}); let a = []; while (true) { a.push([1, 2, 3].map(x => x * 2)); if (a.length > 1000) a = []; }`,
		Catalog: testCatalog, Call: call, Limits: wire.Limits{TimeoutMs: 60_000, MemoryBytes: 64 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		r.Stop("test done")
		r.Wait()
	}()
	select {
	case <-inLoop:
	case <-time.After(20 * time.Second):
		t.Fatal("the program never reached its loop")
	}
	proc := "/proc/" + strconv.Itoa(r.PID())
	tasks, err := os.ReadDir(proc + "/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile(proc + "/task/" + task.Name() + "/status")
		if err != nil {
			t.Fatal(err)
		}
		st := parseStatus(b)
		for k, want := range map[string]string{"NoNewPrivs": "1", "Seccomp": "2", "CapEff": "0000000000000000",
			"CapPrm": "0000000000000000", "CapInh": "0000000000000000", "CapAmb": "0000000000000000"} {
			if st[k] != want {
				t.Errorf("thread %s: %s is %q, want %q", task.Name(), k, st[k], want)
			}
		}
		if os.Geteuid() == 0 && st["CapBnd"] != "0000000000000000" {
			t.Errorf("thread %s: CapBnd is %s; a worker started by root drops its bounding set", task.Name(), st["CapBnd"])
		}
	}
	status, _ := os.ReadFile(proc + "/status")
	limits, err := os.ReadFile(proc + "/limits")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d threads\n%s\n%s", len(tasks), grepLines(string(status), "NoNewPrivs", "Seccomp", "Cap"), limits)
	lim := parseLimits(string(limits))
	if lim["Max file size"] != "0" {
		t.Errorf("RLIMIT_FSIZE is %q, want 0", lim["Max file size"])
	}
	if lim["Max core file size"] != "0" {
		t.Errorf("RLIMIT_CORE is %q, want 0", lim["Max core file size"])
	}
	if n, err := strconv.Atoi(lim["Max open files"]); err != nil || n > maxWorkerFiles {
		t.Errorf("RLIMIT_NOFILE is %q, want at most %d", lim["Max open files"], maxWorkerFiles)
	}
	cpu := (60*time.Second + testConfig("").Grace + cpuStartAllowance + time.Second - 1) / time.Second
	if lim["Max cpu time"] != strconv.Itoa(int(cpu)) {
		t.Errorf("RLIMIT_CPU is %q, want %d (deadline + grace + start allowance, rounded up)", lim["Max cpu time"], cpu)
	}
	wantAS := strconv.Itoa(64<<20 + asOverhead)
	if raceBuild || asanBuild {
		wantAS = "unlimited"
	}
	if lim["Max address space"] != wantAS {
		t.Errorf("RLIMIT_AS is %q, want %s", lim["Max address space"], wantAS)
	}
}

func crashStderr(e *Ending) string {
	if e.Crash == nil {
		return ""
	}
	return e.Crash.Stderr
}

func grepLines(s string, prefixes ...string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// parseLimits reads /proc/<pid>/limits: the name, then the soft limit.
func parseLimits(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if len(line) < 26 {
			continue
		}
		name := strings.TrimSpace(line[:26])
		f := strings.Fields(line[26:])
		if len(f) > 0 {
			m[name] = f[0]
		}
	}
	return m
}

// TestStrictConfinement: strict accepts a fully confined worker and refuses,
// with the layer named, one that could not apply a layer or reports none.
func TestStrictConfinement(t *testing.T) {
	strict := func(mode string) Config {
		c := testConfig(mode)
		c.Confinement = ConfineStrict
		return c
	}
	wantStatus(t, runWith(t, strict(""), Request{Code: "return 1"}), wire.StatusReturned)

	e := runWith(t, strict("attack-landlock"), Request{Input: json.RawMessage(`{"attack":"open"}`)})
	if e.Crash == nil || e.Crash.Rule != ruleConfinement || !strings.Contains(e.Crash.Detail, "could not apply seccomp") {
		b, _ := json.MarshalIndent(e, "", "  ")
		t.Fatalf("a worker without its seccomp layer was not refused, naming it:\n%s", b)
	}
	// A worker that reports nothing is refused, and never gets the program:
	// under strict, the start frame waits for a hello that passes.
	const program = "return 'the program'"
	e = runWith(t, strict("attack-liar"), Request{Code: program})
	if e.Crash == nil || e.Crash.Rule != ruleConfinement || !strings.Contains(e.Crash.Detail, "reports no confinement") {
		b, _ := json.MarshalIndent(e, "", "  ")
		t.Fatalf("a worker whose hello reports nothing was not refused:\n%s", b)
	}
	if strings.Contains(e.Crash.Stderr, "the program") {
		t.Fatalf("the program reached a worker that was refused: %q", e.Crash.Stderr)
	}
	// Control: under best-effort the same worker is given the program.
	e = runWith(t, testConfig("attack-liar"), Request{Code: program})
	if !strings.Contains(crashStderr(e), "received the program: "+program) {
		b, _ := json.MarshalIndent(e, "", "  ")
		t.Fatalf("control: the liar did not receive the program under best-effort:\n%s", b)
	}
}

// TestProtections: what a Launcher reports comes from its workers. Before
// a run nothing is enforced; after Probe every layer but namespaces is, on
// this machine; with confinement off nothing is.
func TestProtections(t *testing.T) {
	l, err := NewLauncher(testConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, p := range l.Protections() {
		if p.Enforced {
			t.Fatalf("%s is reported enforced before any worker reported", p.Name)
		}
	}
	ps, err := l.Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		t.Logf("%-13s %-5v %s", p.Name, p.Enforced, p.How)
		if p.Name != wire.LayerNamespaces && !p.Enforced {
			t.Errorf("%s is not enforced: %s", p.Name, p.How)
		}
	}
	rl := ps[3]
	if rl.Name != wire.LayerRlimits || !strings.Contains(rl.How, "set by the parent at start") {
		t.Errorf("the rlimits layer does not say what the parent set: %+v", rl)
	}

	off := testConfig("")
	off.Confinement = ConfineOff
	lo, err := NewLauncher(off)
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	ps, err = lo.Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Enforced || !strings.Contains(p.How, "off") {
			t.Errorf("with confinement off, %s says %v: %s", p.Name, p.Enforced, p.How)
		}
	}
}

// TestNamespaces: with Config.Namespaces the worker runs in namespaces of
// its own, reports them, and runs programs as usual.
func TestNamespaces(t *testing.T) {
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		t.Skip("no namespaces here")
	}
	cfg := testConfig("")
	cfg.Namespaces = true
	l, err := NewLauncher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	inCall := make(chan struct{})
	r, err := l.Start(context.Background(), Request{Code: `await tools.issues.list_issues({}); return 7`, Catalog: testCatalog,
		Call: func(ctx context.Context, c Call) Outcome {
			close(inCall)
			<-ctx.Done()
			return Fail(wire.CodeTimeout, "done")
		}, Limits: wire.Limits{TimeoutMs: 20_000}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-inCall:
	case <-time.After(20 * time.Second):
		t.Fatal("the program's call never arrived")
	}
	for _, ns := range []string{"user", "net", "ipc", "uts", "mnt"} {
		mine, _ := os.Readlink("/proc/self/ns/" + ns)
		its, err := os.Readlink("/proc/" + strconv.Itoa(r.PID()) + "/ns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		if mine == its {
			t.Errorf("the worker shares the %s namespace %s", ns, its)
		}
	}
	r.Stop("test done")
	r.Wait()
	ns := l.Protections()[5]
	if ns.Name != wire.LayerNamespaces || !ns.Enforced {
		t.Fatalf("the namespaces layer is not reported: %+v", ns)
	}
}

// TestAddressSpaceLimitIsABackstop: with RLIMIT_AS set, a program that
// allocates without end still ends out_of_memory by the engine's own limit,
// at the smallest and a large heap: the backstop never trips first.
func TestAddressSpaceLimitIsABackstop(t *testing.T) {
	if raceBuild || asanBuild {
		t.Skip("RLIMIT_AS is not set in race-detector or ASan builds")
	}
	for _, mem := range []int64{wire.MinMemory, 512 << 20} {
		e := runProgram(t, Request{Code: `const a = []; while (true) a.push("x".repeat(4096) + a.length);`,
			Limits: wire.Limits{MemoryBytes: mem, TimeoutMs: 60_000}})
		wantStatus(t, e, wire.StatusOutOfMemory)
	}
}

// TestConfinedWorkerRunsPrograms runs programs that reach the C library's
// and the Go runtime's lazy paths (a first local-time conversion reads the
// time zone file; big reallocations; a collection) in confined workers:
// each must end as it would unconfined, not killed by the filter.
func TestConfinedWorkerRunsPrograms(t *testing.T) {
	for _, tc := range []struct{ name, code, want string }{
		{"local time", `const d = new Date(0); return [typeof d.toString(), d.getTimezoneOffset() === d.getTimezoneOffset(), new Date(2020, 1, 1).getMonth(), typeof d.toLocaleString()].join()`, `"string,true,1,string"`},
		{"date parsing", `return Date.parse("2020-01-02T03:04:05") > 0 && !isNaN(new Date("March 7, 2021").getTime())`, `true`},
		{"growing strings and arrays", `let s = ""; for (let i = 0; i < 2e5; i++) s += "x"; const a = []; for (let i = 0; i < 1e6; i++) a.push(i); return s.length + a.length`, `1200000`},
		{"sorting, regexps, JSON", `const a = Array.from({length: 5e4}, (_, i) => (i * 7919) % 5e4); a.sort((x, y) => x - y); return /^(\d+,){3}/.test(a.join()) && JSON.parse(JSON.stringify(a)).length`, `50000`},
		{"garbage", `for (let i = 0; i < 50; i++) { let t = []; for (let j = 0; j < 2e4; j++) t.push({j}); } return "done"`, `"done"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := runProgram(t, Request{Code: tc.code, Limits: wire.Limits{TimeoutMs: 30_000}})
			wantStatus(t, e, wire.StatusReturned)
			if string(e.Value) != tc.want {
				t.Fatalf("returned %s, want %s", e.Value, tc.want)
			}
		})
	}
}
