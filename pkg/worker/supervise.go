package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// stderrTail is how much of a worker's stderr is kept for a crash report: a
// Go panic's first lines or a C assertion.
const stderrTail = 4 << 10

// exitWait bounds the wait for a process after SIGKILL to its group. SIGKILL
// cannot be caught; only a process stuck in the kernel outlives this.
const exitWait = 5 * time.Second

type frameEvent struct {
	f   wire.Frame
	err error
}

type callDone struct {
	id uint64
	o  Outcome
}

// supervisor is the parent's side of one run. Its run method is the only
// goroutine that touches its state; the reader, the writer, the exit waiter,
// the stderr drain and the call goroutines talk to it through channels.
type supervisor struct {
	ctx   context.Context
	cfg   Config
	req   Request
	p     *proc
	stopc <-chan string

	started  time.Time
	deadline time.Time // the run's deadline
	hard     time.Time // deadline + grace: the parent's own, enforced by SIGKILL

	frames  chan frameEvent
	results chan callDone
	exited  chan error
	outq    chan []byte
	quit    chan struct{}
	stderr  chan string

	callCtx     context.Context
	cancelCalls context.CancelFunc

	check      *checker
	ledger     *ledger
	output     *Output
	end        *endMsg
	verdict    *Ending
	stopping   bool
	killed     bool
	exitedSeen bool // the process has exited (not yet reaped)
	readDone   bool // the reader hit the end of the stream or an error
	dropped    int  // calls made after a stop: never sent
}

func newSupervisor(ctx context.Context, cfg Config, req Request, p *proc, stopc <-chan string) *supervisor {
	s := &supervisor{
		ctx: ctx, cfg: cfg, req: req, p: p, stopc: stopc,
		started: time.Now(),
		frames:  make(chan frameEvent),
		results: make(chan callDone, req.Limits.MaxInFlight),
		exited:  make(chan error, 1),
		outq:    make(chan []byte, req.Limits.MaxInFlight+2),
		quit:    make(chan struct{}),
		stderr:  make(chan string, 1),
		check:   newChecker(req.RunID, req.Limits, req.Catalog),
		ledger:  newLedger(),
		output:  NewOutput(wire.OutputHeadChars, wire.OutputTailChars),
	}
	s.deadline = s.started.Add(req.Limits.Timeout())
	s.hard = s.deadline.Add(cfg.Grace)
	s.callCtx, s.cancelCalls = context.WithDeadline(context.Background(), s.deadline)
	return s
}

// run supervises the worker until it has exited and been reaped, and
// returns the ending. Every wait in it is bounded by a timer.
func (s *supervisor) run() *Ending {
	defer s.cancelCalls()
	_ = s.p.conn.SetReadDeadline(s.hard.Add(s.cfg.Grace))
	go s.read()
	go s.write()
	go s.wait()
	go s.drainStderr()

	start := wire.Start{
		Protocol: wire.ProtocolVersion,
		RunID:    s.req.RunID,
		Limits:   s.req.Limits,
		Catalog:  s.req.Catalog,
		Input:    s.req.Input,
	}
	if buf, err := wire.AppendFrame(nil, wire.TypeStart, start, []byte(s.req.Code)); err != nil {
		s.crash(RuleUnexpected, fmt.Sprintf("cannot encode the start frame: %v", err))
	} else {
		s.outq <- buf
	}

	handshake := time.NewTimer(handshakeTimeout)
	defer handshake.Stop()
	hard := time.NewTimer(time.Until(s.hard))
	defer hard.Stop()
	var grace <-chan time.Time
	ctxDone := s.ctx.Done()

	var stuck, drain <-chan time.Time
loop:
	for {
		select {
		case ev := <-s.frames:
			s.onFrame(ev)
		case d := <-s.results:
			s.onResult(d)
		case <-s.exited:
			// Frames it wrote before exiting may still be in the socket:
			// read them to the end (the whole group is dead now, so the
			// stream ends), within a bound.
			s.exitedSeen = true
			killGroup(s.p.cmd.Process.Pid)
			drain = time.After(time.Second)
		case <-drain:
			break loop
		case <-stuck:
			// SIGKILL did not end it: stuck in the kernel. Give up waiting;
			// a goroutine reaps it whenever it goes.
			s.decide(&Ending{Status: wire.StatusCrashed, Error: &wire.ErrorInfo{Name: "WorkerCrashed",
				Message: fmt.Sprintf("worker pid %d did not exit within %s of SIGKILL", s.p.cmd.Process.Pid, exitWait)}})
			go s.p.cmd.Wait()
			return s.finish(false)
		case <-handshake.C:
			if !s.check.hello {
				s.crash(RuleNoHandshake, fmt.Sprintf("no hello within %s of spawning", handshakeTimeout))
			}
		case <-hard.C:
			s.decide(&Ending{Status: wire.StatusTimedOut, Error: &wire.ErrorInfo{
				Name: "TimeoutError",
				Message: fmt.Sprintf("the run's deadline of %s passed and the worker did not end within the %s grace after it (a builtin that never checks the deadline, such as sorting a huge array); its process group was killed",
					s.req.Limits.Timeout(), s.cfg.Grace),
			}})
			s.kill()
		case reason := <-s.stopc:
			s.stop(reason)
			grace = time.After(s.cfg.Grace)
		case <-ctxDone:
			ctxDone = nil
			s.stop("the caller cancelled the run")
			grace = time.After(s.cfg.Grace)
		case <-grace:
			grace = nil
			if s.end == nil {
				s.decide(&Ending{Status: wire.StatusStopped, Error: &wire.ErrorInfo{
					Name:    "Stopped",
					Message: fmt.Sprintf("the run was stopped; the worker did not end within the %s grace, so its process group was killed", s.cfg.Grace),
				}})
			}
			s.kill()
		}
		if s.exitedSeen && s.readDone {
			break
		}
		if s.killed && stuck == nil && !s.exitedSeen {
			stuck = time.After(exitWait)
		}
		if s.end != nil && grace == nil && !s.killed {
			// Ended: the worker has the grace to exit by itself.
			grace = time.After(s.cfg.Grace)
		}
	}
	return s.finish(true)
}

// decide sets the run's ending, once; only a crash may replace an ending the
// worker reported (it broke the protocol after its end).
func (s *supervisor) decide(e *Ending) {
	if s.verdict == nil || (e.Status == wire.StatusCrashed && s.verdict.Status != wire.StatusCrashed && s.end != nil) {
		s.verdict = e
	}
}

func (s *supervisor) crash(rule Rule, detail string) {
	v := &Violation{Rule: rule, Detail: detail}
	s.decide(&Ending{
		Status: wire.StatusCrashed,
		Error:  &wire.ErrorInfo{Name: "WorkerCrashed", Message: v.Error()},
		Crash:  &Crash{Rule: rule, Detail: detail},
	})
	s.kill()
}

// kill sends SIGKILL to the worker's process group. The exit waiter then
// reports the exit, and finish reaps.
func (s *supervisor) kill() {
	if !s.killed {
		s.killed = true
		killGroup(s.p.cmd.Process.Pid)
	}
}

func (s *supervisor) stop(reason string) {
	if s.stopping || s.end != nil || s.killed {
		return
	}
	s.stopping = true
	s.cancelCalls()
	buf, err := wire.AppendFrame(nil, wire.TypeStop, wire.Stop{Reason: reason}, nil)
	if err == nil {
		s.outq <- buf // room: outq holds MaxInFlight results, start and one stop
	}
}

func (s *supervisor) onFrame(ev frameEvent) {
	if ev.err != nil {
		s.readDone = true
		if ev.err == io.EOF {
			return // the worker closed its socket: its exit follows
		}
		if v := readError(ev.err); v != nil {
			s.crash(v.Rule, v.Detail)
			return
		}
		if s.end == nil && !s.killed {
			s.crash(RuleUndecodable, ev.err.Error())
		}
		return
	}
	msg, v := s.check.check(ev.f)
	if v != nil {
		s.crash(v.Rule, v.Detail)
		return
	}
	switch m := msg.(type) {
	case *callMsg:
		if s.stopping || s.killed {
			s.dropped++
			s.check.answered()
			return
		}
		s.ledger.add(m.Call, m.Args)
		call := Call{RunID: m.RunID, ID: m.ID, Server: m.Server, Tool: m.Tool, Args: m.Args}
		fn := s.req.Call
		if fn == nil {
			fn = refuseAll
		}
		go func() { s.results <- callDone{id: call.ID, o: fn(s.callCtx, call)} }()
	case *outputMsg:
		if s.stopping {
			return
		}
		if m.Skip > 0 {
			s.output.Skip(int(m.Skip))
		}
		s.output.Append(string(m.Text))
	case *endMsg:
		s.end = m
		s.cancelCalls()
		e := &Ending{Status: m.Status, Error: m.Error, PeakMemoryKiB: m.PeakRSSKiB}
		if m.Status == wire.StatusReturned {
			e.Value = m.Value
		}
		s.decide(e)
	}
}

func refuseAll(_ context.Context, c Call) Outcome {
	return Refuse(wire.CodeUnknownTool, fmt.Sprintf("tools.%s.%s: no tool answers calls in this run", c.Server, c.Tool))
}

// onResult hands a call's outcome to the worker, after checking it.
func (s *supervisor) onResult(d callDone) {
	if s.end != nil || s.stopping || s.killed || !time.Now().Before(s.deadline) {
		// The program will never see it (past the deadline, the worker is
		// ending the run as timed out); the ledger keeps it in flight.
		return
	}
	o := d.o
	switch o.Kind {
	case wire.OutcomeOK:
		if err := s.req.Limits.CheckResult(o.Result); errors.Is(err, wire.ErrTooLarge) {
			o = Fail(wire.CodeResultTooLarge, "the call took effect, but its result cannot enter the program: "+err.Error())
		} else if err != nil {
			o = Fail(wire.CodeCallFailed, "the call was sent, but the answer is unusable: "+err.Error())
		}
	case wire.OutcomeRefused, wire.OutcomeFailed:
		o.Result = nil
	default:
		o = Fail(wire.CodeCallFailed, fmt.Sprintf("the call's handler returned an unknown outcome %s", quote(o.Kind)))
	}
	hdr := wire.Result{ID: d.id, Outcome: o.Kind, Code: o.Code, Message: o.Message, Matches: o.Matches}
	buf, err := wire.AppendFrame(nil, wire.TypeResult, hdr, o.Result)
	if err != nil {
		o = Fail(wire.CodeCallFailed, "the result could not be framed: "+err.Error())
		buf, _ = wire.AppendFrame(nil, wire.TypeResult, wire.Result{ID: d.id, Outcome: o.Kind, Code: o.Code, Message: o.Message}, nil)
	}
	s.ledger.answer(d.id, o)
	s.check.answered()
	s.outq <- buf // room: one slot per call in flight
}

// finish runs after the worker exited: it sweeps the process group, reaps,
// collects stderr, removes the private directory and builds the ending.
func (s *supervisor) finish(exited bool) *Ending {
	how := "the worker did not exit"
	if exited {
		killGroup(s.p.cmd.Process.Pid) // strays of the group, if any; harmless when empty
		_ = s.p.cmd.Wait()             // reaps; returns at once, the process has exited
		how = "the worker " + s.p.cmd.ProcessState.String()
	}
	close(s.quit)
	close(s.outq)
	s.p.conn.Close()
	var stderr string
	select {
	case stderr = <-s.stderr:
	case <-time.After(time.Second):
		// A descendant outside the group holds the pipe; do not wait for it.
	}
	s.p.stderr.Close()
	_ = removeAll(s.p.dir)

	if s.verdict == nil {
		s.decide(&Ending{
			Status: wire.StatusCrashed,
			Error:  &wire.ErrorInfo{Name: "WorkerCrashed", Message: (&Violation{Rule: RuleExitBeforeEnd, Detail: how}).Error()},
			Crash:  &Crash{Rule: RuleExitBeforeEnd, Detail: how},
		})
	}
	e := s.verdict
	if e.Crash != nil {
		e.Crash.Stderr = stderr
	}
	e.RunID = s.req.RunID
	if len(e.Value) == 0 {
		e.Value = []byte("null")
	}
	neverSent := s.dropped
	if s.end != nil && e.Status != wire.StatusCrashed {
		s.ledger.unseen(s.end.Unsettled)
		neverSent += s.end.NeverSent
	}
	e.Calls = s.ledger.record(neverSent)
	text, cut := s.output.Take()
	e.Output = OutputText{Text: text, CutChars: cut}
	e.DurationMs = time.Since(s.started).Milliseconds()
	return e
}

// read is the reader goroutine: it reads frames until the stream ends or
// breaks, and hands each to run. It stops when run is done.
func (s *supervisor) read() {
	r := wire.NewReader(s.p.conn, wire.MaxWorkerFrame)
	for {
		f, err := r.Next()
		select {
		case s.frames <- frameEvent{f, err}:
		case <-s.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

// write is the writer goroutine: it writes queued frames, each bounded by the
// run's hard deadline. After a failed write it drops the rest: the worker is
// gone or not reading, and its exit or the deadline ends the run.
func (s *supervisor) write() {
	failed := false
	for buf := range s.outq {
		if failed {
			continue
		}
		_ = s.p.conn.SetWriteDeadline(s.hard)
		if _, err := s.p.conn.Write(buf); err != nil {
			failed = true
		}
	}
}

// wait is the exit waiter: it reports the worker's exit without reaping it,
// so that its process group id stays reserved until finish has swept it.
func (s *supervisor) wait() {
	s.exited <- waitExit(s.p.cmd.Process.Pid)
}

// drainStderr keeps the last stderrTail bytes of the worker's stderr.
func (s *supervisor) drainStderr() {
	var tail []byte
	buf := make([]byte, 4096)
	for {
		n, err := s.p.stderr.Read(buf)
		tail = append(tail, buf[:n]...)
		if len(tail) > stderrTail {
			tail = append(tail[:0], tail[len(tail)-stderrTail:]...)
		}
		if err != nil {
			break
		}
	}
	s.stderr <- string(tail)
}
