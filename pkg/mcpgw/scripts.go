package mcpgw

// This file holds long-running programs: run_js returns after yield_ms with
// a script id while the program goes on; wait_js, stop_js and list_js reach
// it later in the same MCP session.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// Limits of long-running programs, each with its reason.
const (
	// DefaultYield: how long run_js and wait_js wait for an ending before
	// giving the agent its turn back.
	DefaultYield = 10 * time.Second
	// MinYield is the shortest wait: 1 ms hands the turn back at once with
	// a scriptId (0 is refused, as a value that means nothing).
	MinYield = time.Millisecond
	// MaxYield bounds a wait: an agent's turn should not hang on one call.
	MaxYield = 120 * time.Second
	// MaxRunningPerSession: one agent cannot hold every worker of the host.
	MaxRunningPerSession = 3
	// KeptEndingsPerSession: endings kept for wait_js after the program
	// ended; older ones expire.
	KeptEndingsPerSession = 8
	// maxListedFailure: list_js shows this much of a failure.
	maxListedFailure = 300
	// progressInterval: while a call waits on a program and carries a
	// progress token, a notification goes out at most this often.
	progressInterval = time.Second
)

// processTag marks every script id of this process, so that an id from
// before a restart is recognised as such, never taken for a new script.
var processTag = func() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// id is the script's id: its run's.
func (sc *script) id() string { return sc.run.ID() }

// newScriptID makes the id of a program run_js starts, used as its run's id.
func newScriptID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "js-" + processTag + "-" + hex.EncodeToString(b[:])
}

// script is one program an agent started with run_js. Its script id is its
// run's id (worker.Run.ID), so the scriptId an agent holds is the runId of
// the ending it gets.
type script struct {
	run      *worker.Run
	started  time.Time
	ts       *TSProgram  // a TypeScript program's positions; nil for JavaScript
	source   string      // a JavaScript program, for the hint when it does not parse as such
	watching atomic.Bool // one wait_js or stop_js at a time
	endSeen  atomic.Bool // the ending's output was returned once
}

// scriptTable holds each MCP session's scripts. Safe for concurrent use.
type scriptTable struct {
	mu        sync.Mutex
	bySession map[*mcp.ServerSession][]*script // oldest first
}

// running counts a session's scripts still running. Call with t.mu held.
func (t *scriptTable) runningLocked(ss *mcp.ServerSession) int {
	n := 0
	for _, x := range t.bySession[ss] {
		if x.run.Ending() == nil {
			n++
		}
	}
	return n
}

// room says whether the session may start another script: checked before a
// worker is taken, so a refused run starts nothing.
func (t *scriptTable) room(ss *mcp.ServerSession) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.runningLocked(ss); n >= MaxRunningPerSession {
		return fmt.Errorf("%w: this session already runs %d programs, its cap; nothing was started: wait for one (wait_js) or stop one (stop_js)", ErrBusy, n)
	}
	return nil
}

// add registers a running script, unless the session already runs
// MaxRunningPerSession; it drops the oldest endings past KeptEndingsPerSession.
func (t *scriptTable) add(ss *mcp.ServerSession, sc *script) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bySession == nil {
		t.bySession = map[*mcp.ServerSession][]*script{}
	}
	list, known := t.bySession[ss]
	if !known && ss != nil {
		// A closed session stops its scripts.
		go func() { _ = ss.Wait(); t.closeSession(ss) }()
	}
	running := t.runningLocked(ss)
	ended := len(list) - running
	if running >= MaxRunningPerSession { // lost a race with room: rare
		return fmt.Errorf("%w: this session already runs %d programs, its cap: wait for one (wait_js) or stop one (stop_js)", ErrBusy, running)
	}
	for ended >= KeptEndingsPerSession { // drop the oldest ended
		for i, x := range list {
			if x.run.Ending() != nil {
				list = append(list[:i:i], list[i+1:]...)
				ended--
				break
			}
		}
	}
	t.bySession[ss] = append(list, sc)
	return nil
}

// closeSession stops a session's scripts, waits for them, and forgets them.
func (t *scriptTable) closeSession(ss *mcp.ServerSession) {
	t.mu.Lock()
	list := t.bySession[ss]
	delete(t.bySession, ss)
	t.mu.Unlock()
	stopScripts(list, "the MCP session closed")
}

// find returns a session's script by id, or an error that says why not.
func (t *scriptTable) find(ss *mcp.ServerSession, id string) (*script, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, x := range t.bySession[ss] {
		if x.id() == id {
			return x, nil
		}
	}
	if strings.HasPrefix(id, "js-") && !strings.HasPrefix(id, "js-"+processTag+"-") {
		return nil, fmt.Errorf("script %q is from an earlier run of this server (it restarted): its program is gone", id)
	}
	return nil, fmt.Errorf("no script %q in this session: unknown, or its ending expired (the %d latest are kept); list_js lists them", id, KeptEndingsPerSession)
}

func (t *scriptTable) list(ss *mcp.ServerSession) []*script {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*script(nil), t.bySession[ss]...)
}

// all returns every script of every session.
func (t *scriptTable) all() []*script {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*script
	for _, l := range t.bySession {
		out = append(out, l...)
	}
	return out
}

// stopAll stops every running script and waits for each to be reaped.
func (t *scriptTable) stopAll(reason string) { stopScripts(t.all(), reason) }

func stopScripts(list []*script, reason string) {
	var wg sync.WaitGroup
	for _, sc := range list {
		wg.Add(1)
		go func() { defer wg.Done(); sc.run.Stop(reason); <-sc.run.Reaped() }()
	}
	wg.Wait()
}

// yieldOf is the checked yield_ms argument as a duration, DefaultYield
// when absent.
func yieldOf(args toolArgs) time.Duration {
	return time.Duration(args.integer("yield_ms", DefaultYield.Milliseconds())) * time.Millisecond
}

// runningReport is what run_js and wait_js return while the program goes on.
type runningReport struct {
	Status   string            `json:"status"` // "running"
	ScriptID string            `json:"scriptId"`
	AgeMs    int64             `json:"ageMs"`
	Output   worker.OutputText `json:"output"` // since the last return
	Calls    worker.Calls      `json:"calls"`  // so far
}

// waitForEnding waits for sc's ending for at most yield (or until ctx ends: that
// ends the wait, not the program) and renders what the agent gets. When the
// request carries a progress token, it reports progress meanwhile.
func (g *Gateway) waitForEnding(ctx context.Context, req *mcp.CallToolRequest, sc *script, yield time.Duration) *mcp.CallToolResult {
	if !sc.watching.CompareAndSwap(false, true) {
		return textResult(true, fmt.Sprintf("script %s: another call is already waiting on it; nothing changed", sc.id()), nil)
	}
	defer sc.watching.Store(false)
	t := time.NewTimer(yield)
	defer t.Stop()
	var tick <-chan time.Time
	token := req.Params.GetProgressToken()
	if token != nil && req.Session != nil {
		ticker := time.NewTicker(progressInterval)
		defer ticker.Stop()
		tick = ticker.C
	}
wait:
	for {
		select {
		case <-sc.run.Done():
			break wait
		case <-t.C:
			break wait
		case <-ctx.Done():
			break wait
		case <-tick:
			calls := sc.run.Calls()
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: float64(calls.Total),
				Message: fmt.Sprintf("script %s: %d calls made (%d answered), %d characters of new output, %s", sc.id(),
					calls.Total, calls.Answered, sc.run.OutputChars(), time.Since(sc.started).Round(time.Second)),
			})
		}
	}
	if e := sc.run.Ending(); e != nil {
		return g.endingResult(sc, e)
	}
	p := sc.run.Progress()
	if sc.ts != nil {
		p.Output.Text = sc.ts.MapText(p.Output.Text)
	}
	r := runningReport{Status: "running", ScriptID: sc.id(), AgeMs: time.Since(sc.started).Milliseconds(), Output: p.Output, Calls: p.Calls}
	var b strings.Builder
	fmt.Fprintf(&b, "running: script %s is still running after %s; wait_js {scriptId} waits for more, stop_js stops it.\n", sc.id(), time.Since(sc.started).Round(time.Millisecond))
	b.WriteString(p.Text())
	return textResult(false, b.String(), r)
}

// endingResult renders an ending once with its output; later, without. A
// TypeScript program's positions point into its TypeScript.
func (g *Gateway) endingResult(sc *script, e *worker.Ending) *mcp.CallToolResult {
	if g.opts.OnEnding != nil {
		g.opts.OnEnding(e)
	}
	if sc.endSeen.Swap(true) {
		again := *e
		again.Output = worker.OutputText{}
		e = &again
	}
	if sc.ts != nil {
		e = sc.ts.MapEnding(e)
	}
	return textResult(errorStatuses[e.Status], e.Text()+typeScriptHint(sc.source, e), e)
}

// typeScriptHint is a line of the gateway's for a JavaScript program that
// did not parse but parses as TypeScript: it says to pass language
// "typescript".
func typeScriptHint(source string, e *worker.Ending) string {
	if source == "" || !ParsesAsTypeScript(source, e) {
		return ""
	}
	return "hint: this program is not JavaScript but parses as TypeScript: run it again with language: \"typescript\"\n"
}

func (g *Gateway) sessionScript(req *mcp.CallToolRequest, raw string) (*script, *mcp.CallToolResult) {
	sc, err := g.scripts.find(req.Session, raw)
	if err != nil {
		return nil, textResult(true, err.Error(), nil)
	}
	return sc, nil
}

// handleWaitJS, handleStopJS and handleListJS get their arguments checked
// against their specs (server.go: ownTools).
func (g *Gateway) handleWaitJS(ctx context.Context, req *mcp.CallToolRequest, args toolArgs) (*mcp.CallToolResult, error) {
	sc, bad := g.sessionScript(req, args.str("scriptId"))
	if bad != nil {
		return bad, nil
	}
	return g.waitForEnding(ctx, req, sc, yieldOf(args)), nil
}

func (g *Gateway) handleStopJS(_ context.Context, req *mcp.CallToolRequest, args toolArgs) (*mcp.CallToolResult, error) {
	sc, bad := g.sessionScript(req, args.str("scriptId"))
	if bad != nil {
		return bad, nil
	}
	if !sc.watching.CompareAndSwap(false, true) {
		return textResult(true, fmt.Sprintf("script %s: another call is already waiting on it; nothing changed", sc.id()), nil), nil
	}
	defer sc.watching.Store(false)
	sc.run.Stop("stop_js")
	return g.endingResult(sc, sc.run.Wait()), nil // bounded: the grace, then SIGKILL
}

// scriptEntry is one entry of list_js.
type scriptEntry struct {
	ScriptID string `json:"scriptId"`
	State    string `json:"state"` // running, or the ending's status
	AgeMs    int64  `json:"ageMs"`
	Calls    int    `json:"calls"`
	Failure  string `json:"failure,omitempty"`
}

func (g *Gateway) handleListJS(_ context.Context, req *mcp.CallToolRequest, _ toolArgs) (*mcp.CallToolResult, error) {
	var out []scriptEntry
	var b strings.Builder
	for _, sc := range g.scripts.list(req.Session) {
		in := scriptEntry{ScriptID: sc.id(), State: "running", AgeMs: time.Since(sc.started).Milliseconds(), Calls: sc.run.Calls().Total}
		if e := sc.run.Ending(); e != nil {
			in.State = string(e.Status)
			if e.Error != nil && e.Status != wire.StatusReturned {
				in.Failure = wire.CutChars(e.Error.Name+": "+e.Error.Message, maxListedFailure)
			}
		}
		out = append(out, in)
		fmt.Fprintf(&b, "%s %s %s, %d calls", in.ScriptID, in.State, time.Duration(in.AgeMs)*time.Millisecond, in.Calls)
		if in.Failure != "" {
			b.WriteString(": " + in.Failure)
		}
		b.WriteString("\n")
	}
	if len(out) == 0 {
		b.WriteString("No scripts in this session.")
	}
	return textResult(false, b.String(), map[string]any{"scripts": append([]scriptEntry{}, out...)}), nil
}
