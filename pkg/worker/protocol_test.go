package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// blockingCall never answers until the run ends: it keeps calls in flight.
func blockingCall(ctx context.Context, _ Call) Outcome {
	<-ctx.Done()
	return Fail(wire.CodeTimeout, "cancelled")
}

// TestBadWorkers runs a worker that breaks one rule per mode and checks that
// the parent ends the run as crashed, naming that rule.
func TestBadWorkers(t *testing.T) {
	t.Cleanup(setHandshakeTimeout(time.Second))
	tests := []struct {
		name string
		mode string
		rule Rule
		want string // in the crash detail
	}{
		{name: "garbage bytes", mode: "garbage", rule: ruleFrameTooLarge},
		{name: "length 0xFFFFFFFF", mode: "huge-frame", rule: ruleFrameTooLarge, want: "4294967295"},
		{name: "unknown frame type", mode: "unknown-type", rule: ruleUndecodable, want: "unknown"},
		{name: "wrong protocol version", mode: "bad-hello", rule: ruleHandshake, want: "protocol 99"},
		{name: "never says hello", mode: "no-hello", rule: ruleNoHandshake},
		{name: "call before hello", mode: "call-before-hello", rule: ruleHandshake, want: "not hello"},
		{name: "exits before end", mode: "exit-before-end", rule: ruleExitBeforeEnd, want: "exit status 0"},
		{name: "exits mid-frame", mode: "exit-mid-frame", rule: ruleUndecodable, want: "unexpected EOF"},
		{name: "dies by signal", mode: "crash-signal", rule: ruleExitBeforeEnd, want: "signal: killed"},
		{name: "reuses a call id", mode: "reused-call-id", rule: ruleCallIDOutOfOrder, want: "call id 1 after 1"},
		{name: "skips a call id", mode: "skipped-call-id", rule: ruleCallIDOutOfOrder},
		{name: "calls an unknown tool", mode: "unknown-tool", rule: ruleUnknownTool, want: "delete_everything"},
		{name: "names another run", mode: "unknown-run", rule: ruleUnknownRun, want: "run-someone-else"},
		{name: "arguments past 4 MiB", mode: "args-too-large", rule: ruleArgsTooLarge},
		{name: "arguments past 100,000 values", mode: "args-too-many-values", rule: ruleArgsTooLarge, want: "values"},
		{name: "arguments not an object", mode: "args-not-object", rule: ruleBadArguments},
		{name: "arguments not JSON", mode: "args-invalid-json", rule: ruleBadArguments},
		{name: "17 calls in flight", mode: "too-many-calls", rule: ruleTooManyCalls, want: "cap is 16"},
		{name: "frame after end", mode: "frame-after-end", rule: ruleAfterEnd},
		{name: "asks for ALL_TOOLS twice", mode: "tools-request-twice", rule: ruleUnexpected, want: "a second tools request"},
		{name: "a tools request with a payload", mode: "tools-request-with-payload", rule: ruleUndecodable, want: "tools request"},
		{name: "end claims crashed", mode: "end-claims-crashed", rule: ruleBadEnd},
		{name: "end value not JSON", mode: "end-invalid-value", rule: ruleBadEnd},
		{name: "end names a call never sent", mode: "end-unsettled-unknown", rule: ruleBadEnd, want: "never sent"},
		{name: "sends a parent-only frame", mode: "sends-result", rule: ruleUnexpected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := runWith(t, testConfig(tt.mode), Request{Code: "return 1", Call: blockingCall, Limits: wire.Limits{TimeoutMs: 10_000}})
			wantStatus(t, e, wire.StatusCrashed)
			if e.Crash == nil || e.Crash.Rule != tt.rule {
				b, _ := json.MarshalIndent(e, "", "  ")
				t.Fatalf("crash rule: want %s; ending:\n%s", tt.rule, b)
			}
			if !strings.Contains(e.Crash.Detail+e.Error.Message, tt.want) {
				t.Fatalf("crash %q does not say %q", e.Crash.Detail, tt.want)
			}
			if e.DurationMs > 5_000 {
				t.Fatalf("took %d ms: a broken worker must end its run at once, not at the deadline", e.DurationMs)
			}
		})
	}
}

// TestFrameAfterTheAnswerIsCounted: the ending is given at the end frame, so
// a frame that comes after it can no longer change it; the parent logs and
// counts it (Config.OnBreach, Launcher.BreachesAfterEnding), kills the
// worker, and the ending stays the one the end frame gave. (A frame that
// arrives in the same read as the end still crashes the run: TestBadWorkers.)
func TestFrameAfterTheAnswerIsCounted(t *testing.T) {
	t.Parallel()
	cfg := testConfig("frame-after-end-later")
	breaches := make(chan string, 4)
	cfg.OnBreach = func(runID, rule, detail string) { breaches <- rule + ": " + detail }
	l, err := NewLauncher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := l.Start(context.Background(), Request{Code: "1", Catalog: testCatalog})
	if err != nil {
		t.Fatal(err)
	}
	var e *Ending
	select {
	case <-r.Done():
		e = r.Ending()
	case <-time.After(20 * time.Second):
		t.Fatal("no ending within 20 s")
	}
	select {
	case <-r.Reaped():
	case <-time.After(20 * time.Second):
		t.Fatal("the worker that sent a frame after its end was not reaped within 20 s")
	}
	if e.Status == wire.StatusCrashed {
		// The machine was slow enough that the late frame came in the
		// same read as the end: the other path, still a breach caught.
		if e.Crash == nil || e.Crash.Rule != ruleAfterEnd {
			t.Fatalf("crashed, but not for the frame after end: %+v", e.Crash)
		}
		return
	}
	wantStatus(t, e, wire.StatusReturned)
	select {
	case b := <-breaches:
		if !strings.Contains(b, string(ruleAfterEnd)) || !strings.Contains(b, "output frame after end") {
			t.Fatalf("breach reported as %q", b)
		}
	default:
		t.Fatal("the frame after the end was not reported to OnBreach")
	}
	if n := l.BreachesAfterEnding(); n != 1 {
		t.Fatalf("BreachesAfterEnding = %d, want 1", n)
	}
	if r.Ending() != e {
		t.Fatal("the ending changed after it was given")
	}
}

func TestStopIgnoredIsKilledAfterGrace(t *testing.T) {
	t.Parallel()
	cfg := testConfig("ignore-stop")
	r, err := Start(context.Background(), cfg, Request{Code: "1", Catalog: testCatalog})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	begin := time.Now()
	r.Stop("test")
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a worker that ignores stop was not killed: the grace/SIGKILL step failed")
	}
	e := r.Ending()
	wantStatus(t, e, wire.StatusStopped)
	wantErrorContains(t, e, "killed")
	// The ladder waits the whole grace before SIGKILL (the watchdog above
	// bounds it from above).
	if d := time.Since(begin); d < cfg.Grace {
		t.Fatalf("stopped after %s, before the grace of %s was over", d, cfg.Grace)
	}
}

func TestEndedWorkerThatLingersIsKilled(t *testing.T) {
	t.Parallel()
	e := runWith(t, testConfig("end-then-linger"), Request{Code: "1"})
	wantStatus(t, e, wire.StatusReturned)
	if string(e.Value) != `"done"` {
		t.Fatalf("value %s", e.Value)
	}
}

func TestDeadlineKillsAWorkerThatIgnoresIt(t *testing.T) {
	t.Parallel()
	cfg := testConfig("ignore-stop")
	e := runWith(t, cfg, Request{Code: "1", Limits: wire.Limits{TimeoutMs: 300}})
	wantStatus(t, e, wire.StatusTimedOut)
	wantErrorContains(t, e, "process group was killed")
}

// TestProcessGroupIsKilled: a worker that leaves a process behind and dies
// must not leave it running.
func TestProcessGroupIsKilled(t *testing.T) {
	t.Parallel()
	e := runWith(t, testConfig("grandchild"), Request{Code: "1"})
	wantStatus(t, e, wire.StatusCrashed)
	pid, err := strconv.Atoi(strings.TrimSpace(e.Output.Text))
	if err != nil {
		t.Fatalf("grandchild pid not reported: output %q", e.Output.Text)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still alive after the run: the process group was not killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// A zombie waiting for init to reap it is dead too.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// TestSpawnGivesNothing checks what a worker process gets from the parent:
// an empty environment, a fresh private directory (removed afterwards), its
// own process group, and no descriptor but 0, 1, 2 and the socket, even when
// the parent has a descriptor open without close-on-exec.
func TestSpawnGivesNothing(t *testing.T) {
	leaked, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0) // no O_CLOEXEC: inherited by exec
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leaked)
	t.Setenv("RUN_JS_SECRET", "must-not-reach-the-worker")

	e := runWith(t, testConfig("report-env"), Request{Code: "1"})
	wantStatus(t, e, wire.StatusReturned)
	var rep struct {
		Env  []string `json:"env"`
		Cwd  string   `json:"cwd"`
		FDs  []string `json:"fds"`
		Pgid int      `json:"pgid"`
	}
	if err := json.Unmarshal([]byte(e.Output.Text), &rep); err != nil {
		t.Fatalf("report %q: %v", e.Output.Text, err)
	}
	if len(rep.Env) != 0 {
		t.Errorf("worker environment is %q, want empty", rep.Env)
	}
	if !strings.HasPrefix(filepath.Base(rep.Cwd), "run-js-") {
		t.Errorf("worker directory %q is not a private run-js- directory", rep.Cwd)
	}
	if _, err := os.Stat(rep.Cwd); !os.IsNotExist(err) {
		t.Errorf("private directory %s still exists after the run (err %v)", rep.Cwd, err)
	}
	if rep.Pgid == syscall.Getpgrp() {
		t.Errorf("worker shares the parent's process group %d", rep.Pgid)
	}
	// At exec, descriptors the parent opened without O_CLOEXEC are there too
	// (exec cannot prevent it); ChildMain closes them first thing, which
	// TestWorkerHoldsOnlyItsSocket checks on a real worker.
	if !slices.ContainsFunc(rep.FDs, func(fd string) bool { return strings.HasPrefix(fd, "3=socket:") }) {
		t.Errorf("descriptor 3 is not the socket: %v", rep.FDs)
	}
}

// TestWorkerHoldsOnlyItsSocket looks into a real worker, mid-run, from
// outside: it must hold descriptors 0-3 only, although the parent has one
// open without close-on-exec.
func TestWorkerHoldsOnlyItsSocket(t *testing.T) {
	leaked, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leaked)
	inCall := make(chan struct{})
	var fds []string
	call := func(ctx context.Context, c Call) Outcome {
		close(inCall)
		<-ctx.Done()
		return Fail(wire.CodeTimeout, "done")
	}
	r, err := Start(context.Background(), testConfig(""), Request{Code: `await tools.issues.list_issues({})`, Catalog: testCatalog, Call: call})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-inCall:
	case <-time.After(10 * time.Second):
		t.Fatal("the program's call never arrived")
	}
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(r.PID()) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		target, _ := os.Readlink("/proc/" + strconv.Itoa(r.PID()) + "/fd/" + e.Name())
		fds = append(fds, e.Name()+"="+target)
	}
	r.Stop("test done")
	wantStatus(t, r.Wait(), wire.StatusStopped)
	// Beyond 0-3, only the Go runtime's own poller descriptors, made after
	// the worker closed everything: never a file, pipe or socket.
	for _, fd := range fds {
		n, _ := strconv.Atoi(strings.SplitN(fd, "=", 2)[0])
		if n == WorkerFD && !strings.Contains(fd, "socket:") {
			t.Errorf("descriptor 3 is %s, not the socket", fd)
		}
		// And /proc/<pid>/status, kept open before confinement for peak RSS.
		if n > WorkerFD && !strings.Contains(fd, "anon_inode:[event") && !strings.HasSuffix(fd, "="+"/proc/"+strconv.Itoa(r.PID())+"/status") {
			t.Errorf("worker holds descriptor %s (all: %v)", fd, fds)
		}
	}
}

// parentOfWorker is a parent process for TestWorkerDiesWithItsParent: it
// starts a worker in an endless loop, prints its pid, and waits to be killed.
func parentOfWorker() {
	r, err := Start(context.Background(), testConfig(""), Request{Code: `while (true) {}`, Limits: wire.Limits{TimeoutMs: 60_000}})
	if err != nil {
		os.Exit(5)
	}
	fmt.Println(r.PID())
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestWorkerDiesWithItsParent kills a parent with SIGKILL (no chance to clean
// up) and checks that its worker, busy in a loop, does not outlive it.
func TestWorkerDiesWithItsParent(t *testing.T) {
	t.Parallel()
	parent := exec.Command(os.Args[0], "--parent-of-worker")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Wait()
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		parent.Process.Kill()
		t.Fatalf("parent did not report its worker: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // the worker is in its loop
	if processGone(pid) {
		t.Fatal("the worker is gone before its parent died")
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("worker %d outlived its parent by 3 s: neither the parent-death signal nor the socket's end stopped it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
