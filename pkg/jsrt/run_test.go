package jsrt

import (
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// fakeHost answers every call at once with its arguments, in process.
type fakeHost struct {
	mu        sync.Mutex
	pending   []Event
	output    strings.Builder
	calls     int
	stop      bool
	abandoned chan Report // the watchdog's ending, if it fired
}

func (h *fakeHost) Send(c wire.Call, args []byte) error {
	h.calls++
	h.pending = append(h.pending, Event{
		Result:  wire.Result{ID: c.ID, Outcome: wire.OutcomeOK},
		Payload: []byte(`{"content":[],"structuredContent":` + string(args) + `,"isError":false}`),
	})
	return nil
}
func (h *fakeHost) Output(text string, skip int64) { h.output.WriteString(text) }
func (h *fakeHost) Wait(deadline time.Time) []Event {
	evs := h.pending
	h.pending = nil
	return evs
}
func (h *fakeHost) Stopped() bool { return false }

// Abandon hands the watchdog's ending to runInProcess and ends the
// watchdog's goroutine (the runtime's stays blocked: a test leaks it).
func (h *fakeHost) Abandon(e Report) {
	h.mu.Lock()
	ch := h.abandoned
	h.mu.Unlock()
	if ch != nil {
		ch <- e
	}
	runtime.Goexit()
}

var fakeCatalog = []wire.Tool{{Server: "s", Name: "echo"}}

// runInProcess runs one program on a fresh goroutine (Run locks its thread
// for good) and returns its ending.
func runInProcess(t testing.TB, code string, h Host) Report {
	t.Helper()
	l, err := wire.Limits{}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Report, 1)
	abandoned := make(chan Report, 1)
	if fh, ok := h.(*fakeHost); ok {
		fh.mu.Lock()
		fh.abandoned = abandoned
		fh.mu.Unlock()
	}
	go func() {
		done <- Prepare().Run(Spec{RunID: "r", Code: code, Catalog: mustCatalog(fakeCatalog), Limits: l, Deadline: time.Now().Add(10 * time.Second)}, h)
	}()
	select {
	case e := <-done:
		return e
	case e := <-abandoned:
		return e
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return: the deadline did not hold")
	}
	return Report{}
}

func TestRunInProcess(t *testing.T) {
	h := &fakeHost{}
	e := runInProcess(t, `let s = 0; for (let i = 0; i < 100; i++) s += (await tools.s.echo({i})).structuredContent.i; console.log('sum', s); return s`, h)
	if e.Status != wire.StatusReturned || string(e.Value) != "4950" || h.calls != 100 || h.output.String() != "sum 4950\n" {
		b, _ := json.Marshal(e)
		t.Fatalf("ending %s, calls %d, output %q", b, h.calls, h.output.String())
	}
}

func BenchmarkSequentialCalls(b *testing.B) {
	for b.Loop() {
		runInProcess(b, `for (let i = 0; i < 1000; i++) await tools.s.echo({i})`, &fakeHost{})
	}
}

func BenchmarkEmptyRun(b *testing.B) {
	for b.Loop() {
		runInProcess(b, `return 1`, &fakeHost{})
	}
}

func mustCatalog(tools []wire.Tool) *wire.Catalog {
	c, err := wire.NewCatalog(tools, nil)
	if err != nil {
		panic(err)
	}
	return c
}
