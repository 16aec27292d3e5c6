package mcpgw

// This file holds a downstream server's session life: starting it in the
// background within its bound (concurrent callers share one attempt),
// reconnecting after a failure or a crash with bounded backoff, the state
// server_info shows, the reasons that say what happened, and closing. The
// stdio process (stdio.go) and its connection (stdioconn.go), the HTTP
// transports (remote.go) and the tool listing (tools.go) sit beside it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/lanes"
	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Limits of a downstream server's session, each with its reason.
const (
	// DefaultStartTimeout bounds one attempt to start a server: spawn (or
	// reach it), initialize and list its tools. A first `npx -y` fetches
	// the package (12.8 s seen on an empty cache, more with three at once);
	// a minute covers that and a slow `uvx` or Docker pull, and the agent
	// never waits for it (runs do, within their own deadline). Settable as
	// limits.startTimeout and per server as startTimeout.
	DefaultStartTimeout = 60 * time.Second
	// MinStartTimeout and MaxStartTimeout bound startTimeout: below a second
	// even a local server fails on a busy host; past ten minutes a server is
	// not starting but stuck.
	MinStartTimeout = time.Second
	MaxStartTimeout = 10 * time.Minute
	// maxAutoAttempts is how many failed starts in a row are retried
	// without being asked (with backoff); after that a call to the server
	// starts the next attempt, so a broken server is not respawned forever.
	maxAutoAttempts = 5
	// shortSession: a session that ends sooner than this after it started
	// counts as a failed start, so a server that dies right after
	// initialize backs off instead of being respawned in a loop.
	shortSession = 10 * time.Second
)

// reconnectMin and reconnectMax bound the backoff between start attempts:
// it doubles from reconnectMin per failure in a row. Mutable for testing
// (a downstream reads them when it is made).
var (
	reconnectMin = time.Second
	reconnectMax = time.Minute
)

// Errors of a downstream server, for callers to branch on with errors.Is.
// Gateway.Call refuses a call (server_unavailable, nothing sent) on any of
// them.
var (
	// ErrGatewayClosed: the gateway was closed; nothing connects any more.
	ErrGatewayClosed = errors.New("gateway closed")
	// ErrServerDisabled: the config disables the server ("disabled": true).
	ErrServerDisabled = errors.New("the server is disabled in the config")
	// ErrServerUnavailable: the server could not be reached, or its
	// connection ended. The error's text is the reason, scrubbed of the
	// server's secrets.
	ErrServerUnavailable = errors.New("server unavailable")
)

// unavailableError is ErrServerUnavailable with its reason. Its text is the
// reason alone: the caller names the server and says it is unavailable.
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string { return e.reason }
func (e *unavailableError) Unwrap() error { return ErrServerUnavailable }

// ServerState is where a downstream server stands.
type ServerState string

// Server states.
const (
	// StateStarting: an attempt to start (or restart) it is under way.
	StateStarting ServerState = "starting"
	StateReady    ServerState = "ready"
	// StateUnavailable: its last attempt failed or its session ended; the
	// reason says why, and the next attempt is scheduled or waits for a call.
	StateUnavailable ServerState = "unavailable"
	StateDisabled    ServerState = "disabled"
)

// downstream is the gateway's client of one downstream MCP server. It owns
// the session and, for stdio, the server's process: the goroutine of an
// attempt (attempt) makes them, awaitSessionEnd waits on them, close ends
// them. Safe for concurrent use.
type downstream struct {
	cfg       ServerConfig
	lane      *lanes.Lane
	log       *slog.Logger
	version   string
	lookupEnv func(string) (string, bool) // the gateway's environment (envpolicy.go)
	sc        *scrubber
	httpCap   int // the most one HTTP event or body may hold

	backoffMin, backoffMax time.Duration // reconnectMin and reconnectMax when made

	stderrLimit, strayLimit *logLimiter
	strays                  atomic.Int64 // stray stdout lines skipped, for server_info

	// onChange is told when the server's tools (tools true) or its state
	// changed; the gateway rebuilds its catalog and run_js's description.
	onChange func(tools bool)

	mu            sync.Mutex
	state         ServerState
	reason        string // why it is not ready (the last failure); "" when ready
	session       *mcp.ClientSession
	proc          *serverProc
	cancelConn    context.CancelFunc // ends the current connection's context
	tools         []wire.Tool
	missing       []string      // allowTools names the server does not have
	listed        bool          // its tools were listed at least once
	toolsGen      uint64        // counts changes of tools, for the gateway's catalog
	attempt       chan struct{} // non-nil while an attempt runs; closed when it ends
	cancelAttempt context.CancelFunc
	attemptStart  time.Time
	sessionStart  time.Time
	attempts      int       // failed attempts in a row, with the one running
	quickEnds     int       // sessions in a row that ended within shortSession
	nextTry       time.Time // the next attempt, when one is scheduled or allowed
	retry         *time.Timer
	closed        bool
	sessions      int // sessions that started, for server_info

	work sync.WaitGroup // attempts running: close waits for them to stop what they started
}

// newDownstream makes a server's client; it does not start anything.
func newDownstream(sc ServerConfig, lane *lanes.Lane, log *slog.Logger, version string, lookupEnv func(string) (string, bool), httpCap int) *downstream {
	if sc.StartTimeout <= 0 {
		sc.StartTimeout = DefaultStartTimeout
	}
	d := &downstream{cfg: sc, lane: lane, log: log, version: version, lookupEnv: lookupEnv, sc: newScrubber(sc), httpCap: httpCap,
		backoffMin: reconnectMin, backoffMax: reconnectMax,
		stderrLimit: newLogLimiter(stderrLinesPerSecond, stderrBurst), strayLimit: newLogLimiter(strayLinesPerSecond, strayBurst),
		state: StateUnavailable, reason: "not started yet (the gateway starts it with Connect)"}
	if sc.Disabled {
		d.state, d.reason = StateDisabled, "disabled in the config"
	}
	return d
}

// scrub takes the server's secrets out of a text before it is logged or
// shown.
func (d *downstream) scrub(s string) string { return d.sc.scrub(s) }

func (d *downstream) countStray() { d.strays.Add(1) }

func (d *downstream) changed(tools bool) {
	if d.onChange != nil {
		d.onChange(tools)
	}
}

// start begins an attempt in the background unless one is running, the
// server is ready, disabled, or the gateway closed. It never blocks.
func (d *downstream) start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.state == StateDisabled || d.state == StateReady || d.attempt != nil {
		return
	}
	d.beginLocked()
}

// beginLocked starts an attempt; d.mu is held.
func (d *downstream) beginLocked() {
	if d.retry != nil {
		d.retry.Stop()
		d.retry = nil
	}
	ch := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	d.attempt, d.cancelAttempt = ch, cancel
	if d.state != StateUnavailable || !d.listed && d.attempts == 0 {
		d.reason = "" // a first start has no reason yet; a restart keeps why it restarts
	}
	d.state = StateStarting
	d.attemptStart = time.Now()
	d.attempts++
	d.work.Add(1)
	go d.run(ctx, ch)
	go d.changed(false)
}

// run is one attempt: dial, then record what came of it. ch is closed as
// soon as the state says how it went, before what failed is stopped.
func (d *downstream) run(ctx context.Context, ch chan struct{}) {
	defer d.work.Done()
	session, proc, cancelConn, tools, missing, err := d.dial(ctx)
	d.mu.Lock()
	d.attempt, d.cancelAttempt = nil, nil
	if err == nil && d.closed {
		err = ErrGatewayClosed
	}
	if err != nil {
		closed := d.closed
		if !closed {
			d.state, d.reason = StateUnavailable, err.Error()
			d.scheduleLocked(d.attempts)
		}
		attempts, next := d.attempts, d.nextTry
		d.mu.Unlock()
		close(ch)
		if session != nil {
			_ = session.Close()
		}
		if cancelConn != nil {
			cancelConn()
		}
		if proc != nil {
			_ = proc.stop()
		}
		if !closed {
			d.log.Warn(fmt.Sprintf("server %s is unavailable: %s", d.cfg.Name, err.Error()), "server", d.cfg.Name, "attempts", attempts, "nextTry", nextTryText(next))
			d.changed(false)
		}
		return
	}
	d.state, d.reason = StateReady, ""
	d.session, d.proc, d.cancelConn = session, proc, cancelConn
	d.tools, d.missing, d.listed = tools, missing, true
	d.toolsGen++
	d.attempts = 0
	d.sessions++
	d.sessionStart = time.Now()
	d.nextTry = time.Time{}
	d.mu.Unlock()
	close(ch)
	if len(missing) > 0 {
		d.log.Warn("allowTools names tools the server does not have", "server", d.cfg.Name, "tools", missing)
	}
	d.log.Info(fmt.Sprintf("server %s is ready with %d tools", d.cfg.Name, len(tools)), "server", d.cfg.Name)
	go d.awaitSessionEnd(session, proc)
	d.changed(true)
}

// scheduleLocked sets the next attempt after the failures-th failure in a
// row: backoff doubling from reconnectMin to reconnectMax; made by itself
// while fewer than maxAutoAttempts failed, else by the next call.
func (d *downstream) scheduleLocked(failures int) {
	backoff := d.backoffMin
	for i := 1; i < failures && backoff < d.backoffMax; i++ {
		backoff *= 2
	}
	backoff = min(backoff, d.backoffMax)
	d.nextTry = time.Now().Add(backoff)
	if failures < maxAutoAttempts {
		d.armLocked(backoff)
	}
}

func (d *downstream) armLocked(after time.Duration) {
	if d.retry != nil {
		d.retry.Stop()
	}
	d.retry = time.AfterFunc(after, d.start)
}

// poke asks for an attempt on behalf of a refused call: at once if the
// backoff has passed, else at its end. It never blocks.
func (d *downstream) poke() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.state != StateUnavailable || d.attempt != nil {
		return
	}
	if wait := time.Until(d.nextTry); wait > 0 {
		if d.retry == nil {
			d.armLocked(wait)
		}
		return
	}
	d.beginLocked()
}

// awaitSessionEnd waits for a session to end, stops its process (with the
// ladder), marks the server unavailable with what happened, and starts a
// new attempt: at once after a session that lived, with backoff after one
// that died young.
func (d *downstream) awaitSessionEnd(session *mcp.ClientSession, proc *serverProc) {
	err := session.Wait()
	why := "its connection closed"
	if proc != nil {
		if stopErr := proc.stop(); stopErr != nil {
			d.log.Error(stopErr.Error(), "server", d.cfg.Name)
		}
		why = "its process " + proc.ended()
	} else if err != nil {
		why += ": " + err.Error()
	}
	why = d.scrub(why)
	d.mu.Lock()
	if d.session != session {
		d.mu.Unlock()
		return
	}
	if d.cancelConn != nil {
		d.cancelConn()
	}
	d.session, d.proc, d.cancelConn = nil, nil, nil
	if d.closed || d.attempt != nil { // closing, or a call has started the next attempt already
		d.mu.Unlock()
		return
	}
	d.state, d.reason = StateUnavailable, why
	if time.Since(d.sessionStart) >= shortSession {
		d.quickEnds = 0
	} else {
		d.quickEnds++
	}
	if d.quickEnds <= 1 {
		d.beginLocked() // a crash is restarted at once; a crash loop backs off
	} else {
		d.scheduleLocked(d.quickEnds - 1)
	}
	d.mu.Unlock()
	d.log.Warn(fmt.Sprintf("server %s: session ended: %s", d.cfg.Name, why), "server", d.cfg.Name)
	d.changed(false)
}

// broken marks a session whose connection failed during a call and closes
// it, so awaitSessionEnd reconnects; a call after it waits for that attempt
// instead of using the dead session.
func (d *downstream) broken(session *mcp.ClientSession, err error) {
	d.mu.Lock()
	mine := d.session == session && !d.closed
	if mine && d.state == StateReady {
		d.state, d.reason = StateUnavailable, "the connection broke: "+d.scrub(err.Error())
	}
	d.mu.Unlock()
	if mine {
		go session.Close()
	}
}

// admit is the check of a call's admission, which must not block: nil when
// the server is ready or starting (the call then waits in ready); for an
// unavailable server an attempt is asked for (poke), and the call is
// refused with the reason unless that attempt starts at once.
func (d *downstream) admit() error {
	d.mu.Lock()
	state, closed := d.state, d.closed
	d.mu.Unlock()
	switch {
	case closed:
		return ErrGatewayClosed
	case state == StateDisabled:
		return ErrServerDisabled
	case state == StateReady || state == StateStarting:
		return nil
	}
	d.poke()
	d.mu.Lock()
	started := d.state == StateStarting // the backoff had passed: the call waits for this attempt
	d.mu.Unlock()
	if started {
		return nil
	}
	return d.unavailable()
}

// unavailable is the refusal for a server that is not ready: its reason
// and when it is tried next.
func (d *downstream) unavailable() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
		return ErrGatewayClosed
	case d.state == StateDisabled:
		return ErrServerDisabled
	case d.state == StateStarting:
		what := fmt.Sprintf("still starting after %s (it may take up to %s)", time.Since(d.attemptStart).Round(100*time.Millisecond), d.cfg.StartTimeout)
		if d.reason != "" && d.attempts > 1 {
			what += "; the attempt before failed: " + d.reason
		}
		return &unavailableError{what}
	}
	what := d.reasonLocked()
	switch {
	case d.attempt != nil:
		what += "; a new attempt is under way"
	case d.retry != nil || time.Now().Before(d.nextTry):
		what += fmt.Sprintf("; next attempt in %s", time.Until(d.nextTry).Round(100*time.Millisecond))
	default:
		what += "; a new attempt starts now"
	}
	return &unavailableError{what}
}

func (d *downstream) reasonLocked() string {
	if d.reason == "" {
		return "no reason known"
	}
	return d.reason
}

// ready returns the session, waiting (within ctx) for an attempt under way.
// Its errors wrap ErrServerDisabled, ErrGatewayClosed or
// ErrServerUnavailable (with the reason).
func (d *downstream) ready(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		d.mu.Lock()
		s, state, ch, closed := d.session, d.state, d.attempt, d.closed
		d.mu.Unlock()
		switch {
		case closed:
			return nil, ErrGatewayClosed
		case state == StateDisabled:
			return nil, ErrServerDisabled
		case state == StateReady && s != nil:
			return s, nil
		}
		if ch == nil {
			d.poke() // at once if the backoff allows: then wait for it
			d.mu.Lock()
			ch = d.attempt
			d.mu.Unlock()
			if ch == nil {
				return nil, d.unavailable()
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, d.unavailable()
		}
	}
}

// firstAttempt is closed when the server's first attempt ends: what a run
// waits for before it takes the catalog. It is nil when there is nothing to
// wait for: the server has listed its tools, or its first attempt is over
// (a retry of a server that failed is not waited for, or every run would
// wait on a broken server).
func (d *downstream) firstAttempt() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.listed || d.attempt == nil || d.attempts != 1 {
		return nil
	}
	return d.attempt
}

// close ends the session, stops a stdio server (the ladder) and any attempt
// under way, and closes the lane. It returns when all of that is done.
func (d *downstream) close() {
	d.mu.Lock()
	d.closed = true
	s, proc, cancel, ch, cancelAttempt := d.session, d.proc, d.cancelConn, d.attempt, d.cancelAttempt
	d.session, d.proc = nil, nil
	if d.retry != nil {
		d.retry.Stop()
		d.retry = nil
	}
	d.mu.Unlock()
	if cancelAttempt != nil {
		cancelAttempt()
	}
	if s != nil {
		_ = s.Close()
	}
	if cancel != nil {
		cancel()
	}
	if proc != nil {
		if err := proc.stop(); err != nil {
			d.log.Error(err.Error(), "server", d.cfg.Name)
		}
	}
	if ch != nil {
		<-ch
	}
	d.work.Wait() // an attempt stops what it started
	d.lane.Close()
}

// nextTryText says when the next attempt is, for logs.
func nextTryText(t time.Time) string {
	if t.IsZero() {
		return "on the next call"
	}
	return "in " + time.Until(t).Round(100*time.Millisecond).String()
}

// snapshot is a server's state for server_info.
func (d *downstream) snapshot() ServerInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	in := ServerInfo{
		Name: d.cfg.Name, Transport: string(d.cfg.Transport), State: d.state, Reason: d.reason,
		StartTimeoutMs: d.cfg.StartTimeout.Milliseconds(), Sessions: d.sessions, SkippedLines: d.strays.Load(),
		Tools: len(d.tools), MissingAllowTools: d.missing, Lane: d.lane.Snapshot(),
	}
	if d.state == StateReady {
		in.Reason = ""
		if d.proc != nil {
			in.PID = d.proc.pid
		}
	}
	if d.state == StateStarting {
		in.StartingMs = max(time.Since(d.attemptStart).Milliseconds(), 1)
		in.Attempts = d.attempts
	}
	if d.state == StateUnavailable {
		in.Attempts = d.attempts
		if d.retry != nil || time.Now().Before(d.nextTry) {
			ms := max(time.Until(d.nextTry).Milliseconds(), 0)
			in.NextTryInMs = &ms
		}
	}
	return in
}

// ServerInfo is one downstream server in server_info.
type ServerInfo struct {
	Name      string      `json:"name"`
	Transport string      `json:"transport"`
	State     ServerState `json:"state"`
	// Reason says why it is not ready: the last failure, kept while a new
	// attempt is under way.
	Reason string `json:"reason,omitempty"`
	// StartingMs is how long the attempt under way has taken so far.
	StartingMs     int64 `json:"startingMs,omitempty"`
	StartTimeoutMs int64 `json:"startTimeoutMs"`
	// Attempts counts the failed attempts in a row, with the one under way.
	Attempts int `json:"attempts,omitempty"`
	// NextTryInMs is when the next attempt starts by itself; absent for an
	// unavailable server, the next call to it starts one.
	NextTryInMs       *int64         `json:"nextTryInMs,omitempty"`
	PID               int            `json:"pid,omitempty"`
	Sessions          int            `json:"sessions"`
	SkippedLines      int64          `json:"skippedStdoutLines,omitempty"`
	Tools             int            `json:"tools"`
	MissingAllowTools []string       `json:"missingAllowTools,omitempty"`
	Lane              lanes.Snapshot `json:"lane"`
}
