// The test binary doubles as the worker: started with --worker-fd 3 it runs
// ChildMain, or, with --mode NAME after that, a worker that breaks the
// protocol in one named way (badworker_test.go).

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package worker

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == "--parent-of-worker" {
		parentOfWorker()
	}
	if len(os.Args) >= 3 && os.Args[1] == "--worker-fd" {
		if len(os.Args) >= 5 && os.Args[3] == "--mode" {
			if strings.HasPrefix(os.Args[4], "attack-") {
				attackWorker(os.Args[4]) // attack_linux_test.go
			}
			badWorker(os.Args[4])
			os.Exit(0)
		}
		ChildMain(WorkerFD)
	}
	os.Exit(m.Run())
}

// testConfig runs workers from this test binary.
func testConfig(mode string) Config {
	cmd := []string{os.Args[0], "--worker-fd", "3"}
	if mode != "" {
		cmd = append(cmd, "--mode", mode)
	}
	return Config{Command: cmd, Grace: 500 * time.Millisecond}
}

// testCatalog has two servers: "issues" (list, get, comment) and "my-srv"
// (a name that needs bracket access).
var testCatalog = []wire.Tool{
	{Server: "issues", Name: "list_issues", Description: "List issues", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Server: "issues", Name: "get_issue", Description: "Get one issue", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}}}`)},
	{Server: "issues", Name: "add_comment", Description: "Comment on an issue"},
	{Server: "my-srv", Name: "echo-back"},
}

// echoCall answers every call with its arguments as structuredContent.
func echoCall(_ context.Context, c Call) Outcome {
	return Answer(json.RawMessage(`{"content":[{"type":"text","text":"ok"}],"structuredContent":` + string(c.Args) + `,"isError":false}`))
}

// runProgram runs code in a real worker of this binary, with a watchdog that
// names the guard that failed to end the run.
func runProgram(t testing.TB, req Request) *Ending {
	t.Helper()
	return runWith(t, testConfig(""), req)
}

func runWith(t testing.TB, cfg Config, req Request) *Ending {
	t.Helper()
	if req.Catalog == nil {
		req.Catalog = testCatalog
	}
	r, err := Start(context.Background(), cfg, req)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	limits, _ := req.Limits.Normalize()
	watchdog := limits.Timeout() + 2*cfg.Grace + 10*time.Second
	select {
	case <-r.Done():
	case <-time.After(watchdog):
		t.Fatalf("run did not end within %s: the deadline/grace/kill ladder failed", watchdog)
	}
	e := r.Ending()
	if e == nil {
		t.Fatal("Done closed but Ending is nil")
	}
	// The ending is given at the end frame; the tests that look at the
	// process, its directory or its descriptors afterwards need it reaped.
	select {
	case <-r.Reaped():
	case <-time.After(watchdog):
		t.Fatalf("run's worker was not reaped within %s of its ending", watchdog)
	}
	if r.Ending() != e {
		t.Fatal("the ending changed after Done")
	}
	return e
}

// wantStatus fails the test unless e ended with status, printing the ending.
func wantStatus(t *testing.T, e *Ending, status wire.Status) {
	t.Helper()
	if e.Status != status {
		b, _ := json.MarshalIndent(e, "", "  ")
		t.Fatalf("status %s, want %s; ending:\n%s", e.Status, status, b)
	}
}

func wantErrorContains(t *testing.T, e *Ending, parts ...string) {
	t.Helper()
	if e.Error == nil {
		t.Fatalf("no error in ending; want one containing %q", parts)
	}
	all := e.Error.Name + ": " + e.Error.Message + "\n" + e.Error.Stack
	for _, p := range parts {
		if !strings.Contains(all, p) {
			t.Fatalf("error %q does not contain %q", all, p)
		}
	}
}

func mustCatalog(tools []wire.Tool) *wire.Catalog {
	c, err := wire.NewCatalog(tools, nil)
	if err != nil {
		panic(err)
	}
	return c
}
