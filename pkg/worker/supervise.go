package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// stderrKeep is how much of the start and of the end of a worker's stderr
// is kept for a crash report: a Go crash's reason and its last frames, or a
// C assertion.
const stderrKeep = 2 << 10

// exitWait bounds the wait for a process after SIGKILL to its group. SIGKILL
// cannot be caught; only a process stuck in the kernel outlives this.
const exitWait = 5 * time.Second

// handlerWait bounds waiting, at the end of a run, for its cancelled calls
// to return.
const handlerWait = time.Second

// drainWait bounds reading what an exited worker left in its socket.
const drainWait = time.Second

// lifeEvent is what the reader tells the supervising goroutine: the end
// frame arrived, a rule was broken, or the stream ended.
type lifeEvent struct {
	end       *endMsg
	at        time.Time // when the end frame had been checked
	violation *violation
	readErr   error
}

// supervisor is the parent's side of one run.
//
// Who owns what: run (one goroutine: launch, then loop) owns the process's
// lifecycle: the timers, stop, kill, the verdict, giving the ending (at the
// end frame) and the reaping. The reader goroutine reads every frame,
// checks it and, for a call, admits it (Request.Admit, called there so calls
// are admitted in the order they arrived): an outcome decided at once is
// queued from the reader, which writes its batch when nothing more is
// buffered, without blocking; any other call gets a goroutine that performs
// it and writes its result back (the hot path of a downstream call: one hop
// from the socket to the handler and back). The protocol state they share
// (checker, ledger, output) sits under mu, which is held briefly and never
// across I/O. Writes to the worker go through out (outbox.go), bounded by
// the hard deadline.
type supervisor struct {
	ctx   context.Context
	cfg   Config
	req   Request
	p     *proc
	stopc <-chan string

	started  time.Time
	deadline time.Time // the run's deadline
	hard     time.Time // deadline + grace: the parent's own, enforced by SIGKILL

	events chan lifeEvent
	exited chan error
	stderr chan string

	callCtx     context.Context
	cancelCalls context.CancelFunc

	mu      sync.Mutex
	check   *checker
	ledger  *ledger
	output  *outputKeeper
	live    bool // results and output still go through: no end, stop or kill yet
	dropped int  // calls made after a stop: never sent

	out      *outbox        // frames to the worker, written in batches (outbox.go)
	handlers sync.WaitGroup // calls being performed on goroutines of their own
	busy     atomic.Int64   // how many of them
	idle     chan struct{}  // signalled when busy falls to 0

	// onEnding, if set, is given the ending as soon as it is known: at a
	// valid end frame (with no call still being performed), before the
	// worker is reaped. Called once, from run's goroutine.
	onEnding func(*Ending)
	// onBreach, if set, is told of a rule broken after the ending was
	// given: it can no longer change the ending, so it is logged and
	// counted instead.
	onBreach func(runID string, v *violation)

	// onHello, if set, is given the worker's hello once it has passed the
	// checks, with what the parent applied itself (confine_parent.go).
	onHello     func(h *wire.Hello, parentLimits string)
	limitsNote  string // the rlimits set on the worker at start
	limitsError error  // setting them failed
	// heldStart is the start frame, held back under strict confinement
	// until the worker's hello has shown it confined (under mu).
	heldStart [][]byte

	// Owned by run.
	end        *endMsg
	verdict    *Ending
	fromEnd    bool // the verdict is the end frame's
	published  bool // onEnding has been given the ending
	killed     bool
	exitedSeen bool // the process has exited (not yet reaped)
	readDone   bool // the reader has stopped
}

func newSupervisor(ctx context.Context, cfg Config, req Request, p *proc, stopc <-chan string) *supervisor {
	s := &supervisor{
		ctx: ctx, cfg: cfg, req: req, p: p, stopc: stopc,
		started: time.Now(),
		events:  make(chan lifeEvent, 4), // the reader sends at most end, a violation and its last error
		idle:    make(chan struct{}, 1),
		exited:  make(chan error, 1),
		stderr:  make(chan string, 1),
		check:   newChecker(req.RunID, req.Limits, req.Tools),
		ledger:  newLedger(),
		output:  newOutputKeeper(wire.OutputHeadChars, wire.OutputTailChars),
		live:    true,
	}
	s.check.setting = cfg.Confinement
	s.out = newOutbox(p.conn)
	s.deadline = s.started.Add(req.Limits.Timeout())
	s.hard = s.deadline.Add(cfg.Grace)
	s.callCtx, s.cancelCalls = context.WithDeadline(context.Background(), s.deadline)
	return s
}

// run supervises the worker until it has exited and been reaped, and
// returns the ending. Every wait in it is bounded by a timer.
func (s *supervisor) run() *Ending {
	defer s.cancelCalls()
	s.launch()
	return s.loop()
}

// launch fixes the socket's deadlines, starts the exit waiter and the stderr
// drain, sends the start frame and starts the reader.
func (s *supervisor) launch() {
	// Both deadlines are fixed for the run: set once, not per frame.
	_ = s.p.conn.SetReadDeadline(s.hard.Add(s.cfg.Grace))
	_ = s.p.conn.SetWriteDeadline(s.hard)
	go s.wait()
	go s.drainStderr()

	// The run's own rlimits, on the worker before its program is sent.
	s.limitRun()
	// The payload is the catalog's sections, as prepared once for every
	// run, and the code: written from where they lie, not copied.
	// A spare that holds the run's catalog is not sent it again.
	// ALL_TOOLS is not sent: the worker asks for it if its program reads it.
	cat := s.req.Tools
	names := cat.Names()
	sc := wire.StartCatalog{Version: cat.Version(), Names: len(names), Servers: cat.Servers()}
	if s.p.catalog == cat && cat != nil {
		names = nil
		sc = wire.StartCatalog{Version: cat.Version(), Held: true}
	}
	start := wire.Start{
		Protocol: wire.ProtocolVersion,
		RunID:    s.req.RunID,
		Limits:   s.req.Limits,
		Catalog:  sc,
		Input:    s.req.Input,
	}
	head, err := wire.AppendFrameHead(nil, wire.TypeStart, start, len(names)+len(s.req.Code))
	pieces := [][]byte{head, names, []byte(s.req.Code)}
	if s.limitsError != nil {
		s.crash(ruleConfinement, s.limitsError.Error())
	} else if err != nil {
		s.crash(ruleUnexpected, fmt.Sprintf("cannot encode the start frame: %v", err))
	} else if s.cfg.Confinement == ConfineStrict {
		s.mu.Lock()
		s.heldStart = pieces // sent by onFrame once hello has passed the strict check
		s.mu.Unlock()
	} else {
		// Queued first, so the start goes out before any result can.
		s.out.putPieces(pieces)
		go s.out.drain()
	}
	go s.read()
}

// lifeTimers are the timers loop arms as the run goes: a nil channel is a
// timer not armed.
type lifeTimers struct {
	grace <-chan time.Time // the worker's grace after a stop or its end
	stuck <-chan time.Time // exitWait after SIGKILL
	drain <-chan time.Time // drainWait to read the socket of an exited worker
}

// loop is the lifecycle: it waits on the reader's events, the exit, stops
// and the timers until the worker has exited and its socket is read, and
// returns the ending.
func (s *supervisor) loop() *Ending {
	handshake := time.NewTimer(handshakeTimeout)
	defer handshake.Stop()
	hard := time.NewTimer(time.Until(s.hard))
	defer hard.Stop()
	var t lifeTimers
	ctxDone := s.ctx.Done()

	for !(s.exitedSeen && s.readDone) {
		select {
		case ev := <-s.events:
			s.onEvent(ev)
		case <-s.exited:
			s.onExit()
			t.drain = time.After(drainWait)
		case <-t.drain:
			s.readDone = true
		case <-t.stuck:
			return s.giveUp()
		case <-handshake.C:
			s.onHandshakeTimeout()
		case <-hard.C:
			s.onHardDeadline()
		case reason := <-s.stopc:
			if s.stop(reason) {
				t.grace = time.After(s.cfg.Grace)
			}
		case <-ctxDone:
			ctxDone = nil
			if s.stop("the caller cancelled the run") {
				t.grace = time.After(s.cfg.Grace)
			}
		case <-t.grace:
			t.grace = nil
			s.onGraceOver()
		case <-s.idle:
		}
		s.arm(&t)
		s.publishEarly()
	}
	return s.finish(true)
}

// publishEarly gives the ending as soon as the worker's end frame has
// passed its checks and no call is still being performed (a call cancelled
// at the end may yet report that it was never sent): the answer does not
// wait for the worker's exit, its reaping, its stderr or the removal of its
// directory, which go on here after it. A frame after the end is then a
// breach reported to onBreach, no longer a change of the ending.
func (s *supervisor) publishEarly() {
	if s.published || !s.fromEnd || s.onEnding == nil || s.busy.Load() != 0 {
		return
	}
	s.published = true
	s.onEnding(s.ending(""))
}

// arm starts the timers the run's state now needs: exitWait once the worker
// is killed, and the grace once it has ended (to exit by itself).
func (s *supervisor) arm(t *lifeTimers) {
	if s.killed && t.stuck == nil && !s.exitedSeen {
		t.stuck = time.After(exitWait)
	}
	if s.end != nil && t.grace == nil && !s.killed {
		t.grace = time.After(s.cfg.Grace)
	}
}

// onExit: the worker has exited. Frames it wrote before exiting may still be
// in the socket: loop reads them to the end (the whole group is dead now, so
// the stream ends), within drainWait.
func (s *supervisor) onExit() {
	s.exitedSeen = true
	killGroup(s.p.cmd.Process.Pid)
}

// giveUp: SIGKILL did not end the worker within exitWait (stuck in the
// kernel). The run ends crashed; a goroutine reaps the process whenever it
// goes.
func (s *supervisor) giveUp() *Ending {
	s.decide(&Ending{Status: wire.StatusCrashed, Error: &wire.ErrorInfo{Name: "WorkerCrashed",
		Message: fmt.Sprintf("worker pid %d did not exit within %s of SIGKILL", s.p.cmd.Process.Pid, exitWait)}})
	go s.p.cmd.Wait()
	return s.finish(false)
}

// onHandshakeTimeout crashes a run whose worker has not said hello.
func (s *supervisor) onHandshakeTimeout() {
	s.mu.Lock()
	hello := s.check.hello
	s.mu.Unlock()
	if !hello {
		s.crash(ruleNoHandshake, fmt.Sprintf("no hello within %s of spawning", handshakeTimeout))
	}
}

// onHardDeadline: the deadline and the grace after it have passed; the
// worker is killed with its group.
func (s *supervisor) onHardDeadline() {
	s.decide(&Ending{Status: wire.StatusTimedOut, Error: &wire.ErrorInfo{
		Name: "TimeoutError",
		Message: fmt.Sprintf("the run's deadline of %s passed and the worker did not end within the %s grace after it (a builtin that never checks the deadline, such as sorting a huge array); its process group was killed",
			s.req.Limits.Timeout(), s.cfg.Grace),
	}})
	s.kill()
}

// onGraceOver: the grace after a stop or the end has passed; a worker still
// there is killed with its group (stopped, if it never ended).
func (s *supervisor) onGraceOver() {
	if s.end == nil {
		s.decide(&Ending{Status: wire.StatusStopped, Error: &wire.ErrorInfo{
			Name:    "Stopped",
			Message: fmt.Sprintf("the run was stopped; the worker did not end within the %s grace, so its process group was killed", s.cfg.Grace),
		}})
	}
	s.kill()
}

func (s *supervisor) onEvent(ev lifeEvent) {
	switch {
	case ev.end != nil:
		s.end = ev.end
		e := &Ending{Status: ev.end.Status, Error: ev.end.Error, PeakMemoryKiB: ev.end.PeakRSSKiB, EndFrameAt: ev.at}
		if ev.end.Status == wire.StatusReturned {
			e.Value = ev.end.Value
		}
		s.decide(e)
		s.fromEnd = s.verdict == e
	case ev.violation != nil:
		s.crash(ev.violation.Rule, ev.violation.Detail)
	case ev.readErr != nil:
		s.readDone = true
		if ev.readErr == io.EOF || s.killed {
			return // the worker closed its socket (its exit follows), or we killed it
		}
		if v := readError(ev.readErr); v != nil {
			s.crash(v.Rule, v.Detail)
		} else if s.end == nil {
			s.crash(ruleUndecodable, ev.readErr.Error())
		}
	}
}

// decide sets the run's ending, once; only a crash may replace an ending the
// worker reported (it broke the protocol after its end).
func (s *supervisor) decide(e *Ending) {
	if s.verdict == nil || (e.Status == wire.StatusCrashed && s.verdict.Status != wire.StatusCrashed && s.end != nil) {
		s.verdict = e
		s.fromEnd = false
	}
}

func (s *supervisor) crash(rule Rule, detail string) {
	v := &violation{Rule: rule, Detail: detail}
	if s.published {
		s.breach(v)
		s.kill()
		return
	}
	s.decide(&Ending{
		Status: wire.StatusCrashed,
		Error:  &wire.ErrorInfo{Name: "WorkerCrashed", Message: v.Error()},
		Crash:  &Crash{Rule: rule, Detail: detail},
	})
	s.kill()
}

// kill sends SIGKILL to the worker's process group, once. The exit waiter
// then reports the exit, and finish reaps.
func (s *supervisor) kill() {
	if !s.killed {
		s.killed = true
		s.setLive(false)
		killGroup(s.p.cmd.Process.Pid)
	}
}

func (s *supervisor) setLive(v bool) {
	s.mu.Lock()
	s.live = v
	s.mu.Unlock()
}

// stop sends the worker a stop frame, once, unless the run already ended. It
// reports whether it did.
func (s *supervisor) stop(reason string) bool {
	s.mu.Lock()
	live := s.live
	s.live = false
	s.mu.Unlock()
	if !live || s.end != nil || s.killed {
		return false
	}
	s.cancelCalls()
	if buf, err := wire.AppendFrame(nil, wire.TypeStop, wire.Stop{Reason: reason}, nil); err == nil {
		s.out.put(buf)
		go s.out.drain() // never block the lifecycle on the worker's socket
	}
	return true
}

// breach reports a rule the worker broke after its ending was given.
func (s *supervisor) breach(v *violation) {
	if s.onBreach != nil {
		s.onBreach(s.req.RunID, v)
	}
}

// read is the reader goroutine: it reads and checks every frame from the
// worker until the stream ends, breaks, or breaks a rule.
//
// Results decided on the reader (Admission.Outcome: a refusal, an
// in-process tool) are queued as they come and written when the reader has
// nothing more buffered, in one write, without blocking (outbox.tryDrain).
// The end is handed to run only once every frame that arrived with it has
// been checked, so a frame sent right behind the end still crashes the run.
func (s *supervisor) read() {
	r := wire.NewReader(s.p.conn, wire.MaxWorkerFrame)
	var end *endMsg
	var endAt time.Time
	for {
		if !r.HasFrame() {
			s.out.tryDrain()
			if end != nil {
				s.events <- lifeEvent{end: end, at: endAt}
				end = nil
			}
		}
		f, err := r.Next()
		if err != nil {
			if end != nil {
				s.events <- lifeEvent{end: end, at: endAt}
			}
			s.events <- lifeEvent{readErr: err}
			return
		}
		m, v := s.onFrame(f)
		if v != nil {
			s.events <- lifeEvent{violation: v}
			return
		}
		if m != nil {
			end, endAt = m, time.Now()
		}
	}
}

// onFrame checks one frame and acts on it: a call is answered at once or
// starts its goroutine, output is kept, the end is returned (for read to
// hand to run).
func (s *supervisor) onFrame(f wire.Frame) (*endMsg, *violation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg, v := s.check.check(f)
	if v != nil {
		return nil, v
	}
	switch m := msg.(type) {
	case *wire.Hello:
		if s.onHello != nil {
			s.onHello(m, s.limitsNote)
		}
		if pieces := s.heldStart; pieces != nil && s.live {
			s.heldStart = nil
			s.out.putPieces(pieces) // before any result can be: none is due yet
		}
	case *callMsg:
		if !s.live {
			s.dropped++
			s.check.answered()
			return nil, nil
		}
		s.ledger.add(m.Call, m.Args)
		c := Call{RunID: m.RunID, ID: m.ID, Server: m.Server, Tool: m.Tool, Args: m.Args}
		// Here, on the reader: calls are admitted in the order they arrived.
		do, now := s.admit(c)
		if do == nil {
			s.answerLocked(c, now) // decided at once: no goroutine
			return nil, nil
		}
		s.handlers.Add(1)
		s.busy.Add(1)
		go func() {
			defer s.handlers.Done()
			s.perform(c, do)
			if s.busy.Add(-1) == 0 {
				select {
				case s.idle <- struct{}{}:
				default:
				}
			}
		}()
	case *toolsRequestMsg:
		// The program read ALL_TOOLS: its JSON, as prepared once, written
		// with the reader's batch.
		all := s.req.Tools.AllJSON()
		head, err := wire.AppendFrameHead(nil, wire.TypeCatalog, wire.StartCatalog{Version: s.req.Tools.Version(), All: len(all)}, len(all))
		if err == nil && s.live {
			s.out.putPieces([][]byte{head, all})
		}
	case *outputMsg:
		if !s.live {
			return nil, nil
		}
		if m.Skip > 0 {
			s.output.Skip(int(m.Skip))
		}
		s.output.Append(string(m.Text))
	case *endMsg:
		s.live = false
		s.cancelCalls()
		return m, nil
	}
	return nil, nil
}

func refuseAll(_ context.Context, c Call) Outcome {
	return Refuse(wire.CodeUnknownTool, fmt.Sprintf("tools.%s.%s: no tool answers calls in this run", c.Server, c.Tool))
}

// admit is the ordered step of a call: it runs on the reader goroutine, in
// the order the calls arrived. It gives either what perform then calls on
// the call's own goroutine, or (do nil) the outcome decided at once, which
// the reader writes back itself. With Request.Admit it admits the call now
// (a lane place taken, or the outcome decided: a refusal, an in-process
// tool); otherwise the whole of Request.Call runs later, on the call's
// goroutine, since it may block.
func (s *supervisor) admit(c Call) (do func(context.Context) Outcome, now Outcome) {
	if s.req.Admit != nil {
		a := s.req.Admit(s.callCtx, c)
		if a.Perform != nil {
			return a.Perform, Outcome{}
		}
		return nil, a.Outcome
	}
	fn := s.req.Call
	if fn == nil {
		return nil, refuseAll(s.callCtx, c)
	}
	return func(ctx context.Context) Outcome { return fn(ctx, c) }, Outcome{}
}

// perform runs one call's handler (do, from admit) on the call's own
// goroutine and writes its checked outcome to the worker, unless the run
// has moved on (ended, stopping, past its deadline: then the program never
// sees it and the ledger keeps it in flight).
func (s *supervisor) perform(c Call, do func(context.Context) Outcome) {
	o := checkOutcome(do(s.callCtx), s.req.Limits)
	head := resultHead(c.ID, &o)
	s.mu.Lock()
	if !s.record(c, o) {
		s.mu.Unlock()
		return
	}
	s.out.putPieces(append([][]byte{head}, o.resultPieces()...))
	s.mu.Unlock()
	s.out.drain()
}

// answerLocked queues the outcome decided on the reader; read writes it
// with the others of the batch once nothing more is buffered. Under mu.
func (s *supervisor) answerLocked(c Call, o Outcome) {
	o = checkOutcome(o, s.req.Limits)
	head := resultHead(c.ID, &o)
	if !s.record(c, o) {
		return
	}
	s.out.putPieces(append([][]byte{head}, o.resultPieces()...))
}

// record enters a call's outcome in the ledger, or reports false when the
// program will never see it. Under mu.
func (s *supervisor) record(c Call, o Outcome) bool {
	if !s.live || !time.Now().Before(s.deadline) {
		if o.Kind == wire.OutcomeRefused {
			s.ledger.notSent(c.ID) // e.g. still queued in its lane when the run ended
		}
		return false
	}
	s.ledger.answer(c.ID, o)
	s.check.answered()
	return true
}

// resultHead is the head of o's result frame (its payload, o.Result, is
// written from where it lies); an outcome that cannot be framed (past the
// 32-bit length) becomes a failure, and o says so.
func resultHead(id uint64, o *Outcome) []byte {
	hdr := wire.Result{ID: id, Outcome: o.Kind, Code: o.Code, Message: o.Message, Matches: o.Matches}
	head, err := wire.AppendFrameHead(make([]byte, 0, 64+len(o.Message)), wire.TypeResult, hdr, o.resultLen())
	if err != nil {
		*o = Fail(wire.CodeCallFailed, "the result could not be framed: "+err.Error())
		head, _ = wire.AppendFrameHead(nil, wire.TypeResult, wire.Result{ID: id, Outcome: o.Kind, Code: o.Code, Message: o.Message}, 0)
	}
	return head
}

// checkOutcome makes sure what reaches a program is what the protocol
// promises: a result is a JSON object within the result caps.
func checkOutcome(o Outcome, l wire.Limits) Outcome {
	switch o.Kind {
	case wire.OutcomeOK:
		if o.spliced != nil {
			return checkSpliced(o, l)
		}
		if err := l.CheckResult(o.Result); errors.Is(err, wire.ErrTooLarge) {
			return Fail(wire.CodeResultTooLarge, "the call took effect, but its result cannot enter the program: "+err.Error())
		} else if err != nil {
			return Fail(wire.CodeCallFailed, "the call was sent, but the answer is unusable: "+err.Error())
		}
		return o
	case wire.OutcomeRefused, wire.OutcomeFailed:
		o.Result, o.spliced = nil, nil
		return o
	}
	return Fail(wire.CodeCallFailed, fmt.Sprintf("the call's handler returned an unknown outcome %s", quote(o.Kind)))
}

// checkSpliced is checkOutcome's check of a result made by AnswerSpliced:
// the same caps as CheckResult's, over its members as they lie.
func checkSpliced(o Outcome, l wire.Limits) Outcome {
	r := o.spliced
	if n := o.resultLen(); int64(n) > l.MaxResultBytes {
		return Fail(wire.CodeResultTooLarge, fmt.Sprintf("the call took effect, but its result cannot enter the program: %v: the result is %d bytes of JSON, above this run's cap of %d (at most its memory / %d)",
			wire.ErrTooLarge, n, l.MaxResultBytes, wire.ResultMemoryShare))
	}
	for _, m := range []struct {
		name string
		json []byte
	}{{"content", r.content}, {"structuredContent", r.structured}} {
		// One level less: each sits inside the result object.
		if _, err := wire.ScanJSON(m.json, 0, l.MaxJSONDepth-1); errors.Is(err, wire.ErrTooDeep) {
			return Fail(wire.CodeResultTooLarge, fmt.Sprintf("the call took effect, but its result cannot enter the program: the result's %s: %v (cap %d levels)", m.name, err, l.MaxJSONDepth))
		} else if err != nil {
			return Fail(wire.CodeCallFailed, fmt.Sprintf("the call was sent, but the answer is unusable: the result's %s: %v", m.name, err))
		}
	}
	if c := bytes.TrimLeft(r.content, " \t\r\n"); len(c) == 0 || c[0] != '[' {
		return Fail(wire.CodeCallFailed, "the call was sent, but the answer is unusable: the result's content is not a JSON array")
	}
	return o
}

// finish runs after the worker exited: it sweeps the process group, reaps,
// collects stderr, removes the private directory and builds the ending. When
// the ending was already given (publishEarly), what it finds that would have
// changed it (a forbidden system call on the way out) is a breach, reported.
func (s *supervisor) finish(exited bool) *Ending {
	how := "the worker did not exit"
	if exited {
		killGroup(s.p.cmd.Process.Pid) // strays of the group, if any; harmless when empty
		_ = s.p.cmd.Wait()             // reaps; returns at once, the process has exited
		how = "the worker ended: " + s.p.cmd.ProcessState.String()
	}
	s.setLive(false)
	s.p.conn.Close()
	// Let the calls cancelled at the end report how they ended (a call still
	// queued downstream was never sent), within a bound: a CallFunc must
	// return soon after its context ends.
	s.cancelCalls()
	handlersDone := make(chan struct{})
	go func() { s.handlers.Wait(); close(handlersDone) }()
	select {
	case <-handlersDone:
	case <-time.After(handlerWait):
	}
	var stderr string
	select {
	case stderr = <-s.stderr:
	case <-time.After(time.Second):
		// A descendant outside the group holds the pipe; do not wait for it.
	}
	s.p.stderr.Close()
	_ = removeAll(s.p.dir)

	if exited {
		if detail, ok := forbiddenCall(s.p.cmd.ProcessState, stderr); ok {
			v := &violation{Rule: ruleConfinement, Detail: detail}
			if s.published {
				s.breach(v)
			}
			s.decide(&Ending{
				Status: wire.StatusCrashed,
				Error:  &wire.ErrorInfo{Name: "WorkerCrashed", Message: v.Error()},
				Crash:  &Crash{Rule: ruleConfinement, Detail: detail},
			})
		}
	}
	if s.verdict == nil {
		s.decide(&Ending{
			Status: wire.StatusCrashed,
			Error:  &wire.ErrorInfo{Name: "WorkerCrashed", Message: (&violation{Rule: ruleExitBeforeEnd, Detail: how}).Error()},
			Crash:  &Crash{Rule: ruleExitBeforeEnd, Detail: how},
		})
	}
	return s.ending(stderr)
}

// ending builds the ending from the verdict, the call record and the
// output kept. Owned by run's goroutine.
func (s *supervisor) ending(stderr string) *Ending {
	e := *s.verdict
	if e.Crash != nil {
		c := *e.Crash
		c.Stderr = stderr
		e.Crash = &c
	}
	e.RunID = s.req.RunID
	if len(e.Value) == 0 {
		e.Value = []byte("null")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	neverSent := s.dropped
	if s.end != nil && e.Status != wire.StatusCrashed {
		s.ledger.unseen(s.end.Unsettled)
		neverSent += s.end.NeverSent
	}
	e.Calls = s.ledger.record(neverSent)
	e.Output = s.output.TakeText()
	e.DurationMs = time.Since(s.started).Milliseconds()
	return &e
}

func (s *supervisor) calls() Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledger.record(s.dropped)
}

func (s *supervisor) outputChars() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.output.Total()
}

func (s *supervisor) progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Progress{Output: s.output.TakeText(), Calls: s.ledger.record(s.dropped)}
}

// wait is the exit waiter: it reports the worker's exit without reaping it,
// so that its process group id stays reserved until finish has swept it.
func (s *supervisor) wait() {
	s.exited <- waitExit(s.p.cmd.Process.Pid)
}

// drainStderr keeps the first and the last stderrKeep bytes of the worker's
// stderr: a Go crash says why in its first lines and where in its last.
func (s *supervisor) drainStderr() {
	var head, tail []byte
	cut := 0
	buf := make([]byte, 4096)
	for {
		n, err := s.p.stderr.Read(buf)
		b := buf[:n]
		if room := stderrKeep - len(head); room > 0 {
			k := min(room, len(b))
			head = append(head, b[:k]...)
			b = b[k:]
		}
		tail = append(tail, b...)
		if len(tail) > stderrKeep {
			cut += len(tail) - stderrKeep
			tail = append(tail[:0], tail[len(tail)-stderrKeep:]...)
		}
		if err != nil {
			break
		}
	}
	out := string(head)
	if cut > 0 {
		out += fmt.Sprintf("\n[… %d bytes cut …]\n", cut)
	}
	s.stderr <- out + string(tail)
}
