package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

func newTestLauncher(t *testing.T, spares int) *Launcher {
	t.Helper()
	cfg := testConfig("")
	cfg.Spares = spares
	l, err := NewLauncher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// waitSpares waits until the launcher holds n spares.
func waitSpares(t *testing.T, l *Launcher, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		var pids []int
		for _, p := range l.spares {
			pids = append(pids, p.cmd.Process.Pid)
		}
		l.mu.Unlock()
		if len(pids) == n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("launcher holds %d spares after 10s, want %d: refilling failed", len(pids), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSparesAreNeverReused: every run gets a process nothing ran in before,
// whether it came from the spares or not.
func TestSparesAreNeverReused(t *testing.T) {
	l := newTestLauncher(t, 2)
	spares := waitSpares(t, l, 2)
	seen := map[int]bool{}
	for i := 0; i < 6; i++ {
		r, err := l.Start(context.Background(), Request{Code: `globalThis.mark = (globalThis.mark || 0) + 1; return mark`, Catalog: testCatalog})
		if err != nil {
			t.Fatal(err)
		}
		e := r.Wait()
		wantStatus(t, e, wire.StatusReturned)
		if string(e.Value) != "1" {
			t.Fatalf("run %d saw state of an earlier run: mark = %s", i, e.Value)
		}
		if seen[r.PID()] {
			t.Fatalf("pid %d ran two programs", r.PID())
		}
		seen[r.PID()] = true
	}
	if !seen[spares[0]] {
		t.Errorf("the first run did not take the first spare (pid %d); runs used %v", spares[0], seen)
	}
}

// TestDeadSpareIsSkipped: a spare killed from outside is not handed a run.
func TestDeadSpareIsSkipped(t *testing.T) {
	l := newTestLauncher(t, 1)
	pids := waitSpares(t, l, 1)
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	e, err := l.Start(context.Background(), Request{Code: `return 2`})
	if err != nil {
		t.Fatal(err)
	}
	r := e.Wait()
	wantStatus(t, r, wire.StatusReturned)
	if e.PID() == pids[0] {
		t.Fatal("the run was given the dead spare")
	}
}

func TestLauncherClose(t *testing.T) {
	l := newTestLauncher(t, 2)
	pids := waitSpares(t, l, 2)
	l.Close()
	l.Close() // a second Close does nothing
	for _, pid := range pids {
		deadline := time.Now().Add(5 * time.Second)
		for !processGone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("spare %d still alive after Close", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := l.Start(context.Background(), Request{Code: "1"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
}

func TestLauncherConfig(t *testing.T) {
	for _, n := range []int{-1, MaxSpares + 1} {
		if _, err := NewLauncher(Config{Spares: n}); err == nil {
			t.Errorf("Spares %d accepted", n)
		}
	}
	// A relative command is resolved before the worker starts in its own
	// private directory.
	l, err := NewLauncher(Config{Command: []string{"./worker-binary", "--worker-fd", "3"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.cfg.Command[0][0] != '/' {
		t.Fatalf("command %q was not made absolute", l.cfg.Command[0])
	}
}

func TestCommandBeside(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "run-js-server")
	if got := commandBeside(exe); got[0] != exe {
		t.Fatalf("without a worker binary: %v, want the executable itself", got)
	}
	w := filepath.Join(dir, WorkerBinary)
	if err := os.WriteFile(w, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := commandBeside(exe); got[0] != exe {
		t.Fatalf("with a worker file that is not executable: %v", got)
	}
	if err := os.Chmod(w, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := commandBeside(exe); got[0] != w || got[1] != "--worker-fd" {
		t.Fatalf("with the worker binary beside: %v, want it", got)
	}
}

// waitSpareHolding waits until the launcher holds a spare that holds cat.
func waitSpareHolding(t *testing.T, l *Launcher, cat *wire.Catalog) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		n, holding := len(l.spares), 0
		for _, p := range l.spares {
			if p.catalog == cat {
				holding++
			}
		}
		l.mu.Unlock()
		if holding > 0 && holding == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s, %d of %d spares hold the catalog: SetCatalog did not replace them", holding, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSparesHoldTheCatalog: spares are sent the current catalog ahead of
// their run, and a run with it starts without it; a catalog that changes
// replaces the spares; a run with another catalog than its spare holds
// gets its own in its start frame. Either way the program sees exactly its
// run's catalog.
func TestSparesHoldTheCatalog(t *testing.T) {
	l := newTestLauncher(t, 1)
	first := mustCatalog(testCatalog)
	second := mustCatalog([]wire.Tool{{Server: "other", Name: "only", Description: "the second catalog"}})
	code := `return [Object.keys(tools), ALL_TOOLS.map(t => t.server + '.' + t.name), Object.keys(tools[Object.keys(tools)[0]]),
		await tools[Object.keys(tools)[0]][Object.keys(tools[Object.keys(tools)[0]])[0]]({n: 7}).then(r => r.structuredContent.n)]`
	run := func(cat *wire.Catalog) string {
		t.Helper()
		r, err := l.Start(context.Background(), Request{Code: code, Tools: cat, Call: echoCall})
		if err != nil {
			t.Fatal(err)
		}
		e := r.Wait()
		wantStatus(t, e, wire.StatusReturned)
		return string(e.Value)
	}
	const firstWant = `[["issues","my-srv"],["issues.list_issues","issues.get_issue","issues.add_comment","my-srv.echo-back"],["list_issues","get_issue","add_comment"],7]`
	const secondWant = `[["other"],["other.only"],["only"],7]`

	l.SetCatalog(first)
	waitSpareHolding(t, l, first)
	if got := run(first); got != firstWant {
		t.Fatalf("a spare holding the run's catalog: %s", got)
	}
	l.SetCatalog(second)
	waitSpareHolding(t, l, second)
	if got := run(second); got != secondWant {
		t.Fatalf("a spare holding the new catalog: %s", got)
	}
	waitSpareHolding(t, l, second)
	if got := run(first); got != firstWant {
		t.Fatalf("a run whose catalog its spare does not hold: %s", got)
	}
}
