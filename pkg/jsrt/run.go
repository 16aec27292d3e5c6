package jsrt

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/buke/quickjs-go"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Spec is one run as the worker received it.
type Spec struct {
	RunID    string
	Code     string
	Input    json.RawMessage // nil: input is undefined
	Catalog  *wire.Catalog   // nil: no tools
	Limits   wire.Limits     // already normalized
	Deadline time.Time       // the run's one deadline, on the monotonic clock
}

// Event is something the parent sent while the program waited.
type Event struct {
	Stop   bool        // a stop was requested
	Result wire.Result // when !Stop: a call's outcome
	// Payload is the result's JSON, for wire.OutcomeOK. If the byte one past
	// its end, within its capacity, is a NUL, it is parsed without a copy.
	Payload []byte
}

// Host is the process around a Runtime. Every method but Stopped is called on
// the runtime's goroutine only.
type Host interface {
	// Send hands one call to the parent. It may buffer; Wait flushes.
	Send(call wire.Call, args []byte) error
	// Output hands console text to the parent; skip is as in wire.Output. It
	// may buffer; Wait flushes.
	Output(text string, skip int64)
	// Wait flushes what is buffered, then blocks until at least one event is
	// ready or the deadline passes. It returns every ready event, or nil at
	// the deadline.
	Wait(deadline time.Time) []Event
	// Stopped reports whether a stop was requested. The interrupt handler
	// calls it every few thousand instructions: it must be cheap, and it may be
	// the only method called while the program runs.
	Stopped() bool
	// Abandon reports e as the run's ending and ends the process, from the
	// watchdog's goroutine: the deadline passed watchdogDelay ago and the
	// engine has not given the runtime's goroutine back (a builtin that never
	// polls the interrupt handler, or a program that keeps catching what the
	// interrupt throws when memory is too short to make it uncatchable). It
	// is called at most once, concurrently with the other methods, which it
	// must exclude; it must not return (the program is still running on the
	// runtime's goroutine). Run never returns once Abandon has been called.
	Abandon(e Report)
}

// Report is how a program ended, as the worker reports it in its end frame
// (the parent's verdict, which may differ, is worker.Ending).
type Report struct {
	Status wire.Status
	// Value is the returned value's JSON, for StatusReturned. It may alias
	// the engine's memory, which stays valid because Run never closes the
	// runtime: write it out, do not keep it past the process's end.
	Value     []byte
	Error     *wire.ErrorInfo
	Unsettled []uint64 // calls sent whose answers the program never took
	NeverSent int      // calls still waiting inside the program
}

// programLineOffset is how many lines the AsyncFunction constructor puts
// before the program's first line.
const programLineOffset = 2

// oomShare: a thrown null, which QuickJS throws when it cannot even allocate
// the out-of-memory error, counts as running out of memory when the process
// grew by at least this share of the memory limit during the run.
const oomShare = 0.75

// watchdogDelay is how long after the deadline the watchdog ends a run the
// engine has not given back: the goal is an ending within 100 ms of the
// deadline whatever the program does; an engine that polls its interrupt
// handler ends well within this by itself.
const watchdogDelay = 50 * time.Millisecond

type loop struct {
	spec Spec
	host Host

	rt  *quickjs.Runtime
	ctx *quickjs.Context

	resolveFn *quickjs.Value
	failFn    *quickjs.Value
	out       *quickjs.Value // the prelude's output waiting for the host
	explainFn *quickjs.Value // the prelude's reader of a value thrown to Go

	// The call record, under mu: the watchdog reads it from its goroutine.
	mu       sync.Mutex
	lastID   uint64              // the id of the last call sent; ids are 1, 2, 3, ...
	inflight map[uint64]struct{} // sent, answer not yet taken by the program
	queued   int                 // calls waiting inside the program
	ended    bool                // Run or the watchdog has taken the ending

	fin         *Report
	interrupted wire.Status // set by the interrupt handler: timed_out or stopped
	baseRSSKiB  int64
}

// Prepared is a runtime made ready before its run is known: the engine,
// the context and the compiled prelude. A worker prepares one while it waits
// for its start frame, so that work is off the path of the run.
type Prepared struct {
	rssKiB  int64 // the process's resident set before the run
	rt      *quickjs.Runtime
	ctx     *quickjs.Context
	factory *quickjs.Value // the prelude's function, not yet called
	err     error          // the prelude failed to load: a bug of ours
}

// Prepare builds a runtime, its context and the prelude. It locks the calling
// goroutine to its OS thread and leaves it locked (QuickJS checks its stack
// limit against the C stack of the thread that created the runtime): the
// same goroutine must call Run, and should do nothing else afterwards but
// report the ending and exit.
func Prepare() *Prepared {
	runtime.LockOSThread()
	def, _ := wire.Limits{}.Normalize()
	p := &Prepared{rt: newRuntime(def)}
	p.ctx = newContext(p.rt)
	p.factory = p.ctx.EvalBytecode(preludeBytecode)
	if p.factory.IsException() {
		p.err = p.ctx.Exception()
	}
	p.rssKiB = rssKiB()
	return p
}

// Run runs one program to its ending under spec's limits, on the goroutine
// that called Prepare, once. It does not close the runtime: the worker
// process exits after one run, which is cheaper and cannot abort on a leaked
// value.
//
// Run never panics on anything the program does; it panics only if the
// prelude itself cannot be set up for a reason other than the limits, which
// is a bug of ours.
func (p *Prepared) Run(spec Spec, host Host) Report {
	l := &loop{spec: spec, host: host, rt: p.rt, ctx: p.ctx, inflight: make(map[uint64]struct{}), baseRSSKiB: p.rssKiB}
	l.rt.SetMemoryLimit(uint64(spec.Limits.MemoryBytes))
	l.rt.SetMaxStackSize(uint64(spec.Limits.StackBytes))
	l.rt.SetInterruptHandler(l.interrupt)
	wd := time.AfterFunc(time.Until(spec.Deadline)+watchdogDelay, l.watchdog)
	e := l.run(p)
	wd.Stop()
	l.mu.Lock()
	if l.ended {
		// The watchdog took the ending and is ending the process.
		l.mu.Unlock()
		select {}
	}
	l.ended = true
	l.mu.Unlock()
	// What the program wrote and the prelude still holds: taken with a
	// little more memory, enough to convert it, since the limit may be what
	// ended the run. No JavaScript runs from here on.
	l.rt.SetMemoryLimit(uint64(spec.Limits.MemoryBytes) + endingSlack)
	l.pullOutput()
	l.record(&e)
	return e
}

// endingSlack is the memory the engine may take beyond the limit, once the
// program has ended, to convert the output it left: at most CAP characters
// (prelude.js), three bytes each.
const endingSlack = 1 << 20

// record copies the call record into e.
func (l *loop) record(e *Report) {
	e.Unsettled = make([]uint64, 0, len(l.inflight))
	for id := range l.inflight {
		e.Unsettled = append(e.Unsettled, id)
	}
	slices.Sort(e.Unsettled)
	e.NeverSent = l.queued
}

// watchdog runs on its own goroutine at the deadline plus watchdogDelay: if
// Run has not taken the ending by then, it reports timed_out with the call
// record as it stands and has the host end the process.
func (l *loop) watchdog() {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.ended = true
	e := l.timedOut()
	l.record(&e)
	l.host.Abandon(e) // does not return; mu stays held so the record cannot change
}

func (l *loop) run(p *Prepared) Report {
	ctx := l.ctx
	if p.err != nil {
		panic(fmt.Sprintf("jsrt: prelude failed to load: %v", p.err))
	}
	api, err := l.prelude(p.factory)
	if err != nil {
		if l.interruptedNow() {
			return l.fromException() // the deadline passed, or a stop came, already
		}
		if e, ok := l.setupEnding(err); ok {
			return e
		}
		panic(fmt.Sprintf("jsrt: prelude failed: %v", err))
	}
	startFn := api.Get("start")
	l.resolveFn = api.Get("resolve")
	l.failFn = api.Get("fail")
	l.out = api.Get("out")
	l.explainFn = api.Get("explain")
	api.Free()

	code := ctx.NewString(l.spec.Code)
	prom := startFn.Execute(ctx.NewUndefined(), code)
	code.Free()
	startFn.Free()
	if prom.IsException() {
		return l.fromException()
	}

	for {
		if ctx.LoopOnce() == -2 {
			return l.fromException()
		}
		if l.fin != nil {
			return l.finished()
		}
		if l.inflightCount() == 0 {
			if prom.IsPromise() && prom.PromiseState() != quickjs.PromisePending {
				// Settled, but the prelude's handler could not report it:
				// only running out of memory does that.
				return l.outOfMemory("the program ended, but its ending could not be built in the memory left")
			}
			return Report{Status: wire.StatusStalled, Error: &wire.ErrorInfo{
				Name:    "Stalled",
				Message: "the program is waiting for a promise that nothing can settle: no tool call is in flight and no job is pending",
			}}
		}
		if !time.Now().Before(l.spec.Deadline) {
			return l.timedOut()
		}
		l.pullOutput() // the parent sees what the program wrote while it waits
		events := l.host.Wait(l.spec.Deadline)
		if events == nil {
			return l.timedOut()
		}
		for i := range events {
			if events[i].Stop {
				return l.stopped()
			}
			e, ok := l.settle(events[i])
			events[i].Payload = nil // let parseResult's FreeOSMemory have it
			if !ok {
				return e
			}
		}
	}
}

// interrupt is QuickJS's interrupt handler: it runs on the runtime's thread
// every few thousand bytecode instructions and regexp steps.
func (l *loop) interrupt() int {
	if l.host.Stopped() {
		l.interrupted = wire.StatusStopped
		return 1
	}
	if !time.Now().Before(l.spec.Deadline) {
		l.interrupted = wire.StatusTimedOut
		return 1
	}
	return 0
}

// settle hands one result to the program. ok is false when the program cannot
// go on, with its ending. The parent has checked a result against the caps;
// what the engine still cannot parse (memory) becomes a ToolFailed.
func (l *loop) settle(ev Event) (Report, bool) {
	res := ev.Result
	l.mu.Lock()
	_, ok := l.inflight[res.ID]
	delete(l.inflight, res.ID)
	l.mu.Unlock()
	if !ok {
		return Report{}, true // not ours: the parent validated ids, so this is a late duplicate
	}
	ctx := l.ctx
	id := ctx.NewInt64(int64(res.ID))
	defer id.Free()
	outcome, code, message := res.Outcome, res.Code, res.Message
	if outcome == wire.OutcomeOK {
		value := l.parseResult(ev.Payload)
		if !value.IsException() {
			ret := l.resolveFn.Execute(ctx.NewUndefined(), id, value)
			value.Free()
			return l.afterCall(ret)
		}
		if l.interruptedNow() {
			return l.fromException(), false
		}
		outcome, code = wire.OutcomeFailed, wire.CodeResultTooLarge
		message = "the call took effect, but its result could not be parsed in the program's memory"
		ex := ctx.TakeException()
		if what, info := l.explain(ex); what == explainedError {
			message += ": " + info.Name + ": " + info.Message
		} else if what == explainedOOM || what == explainedNull {
			message += ": out of memory"
		}
		if ex != nil {
			ex.Free()
		}
	}
	matches := ""
	if len(res.Matches) > 0 {
		b, _ := json.Marshal(res.Matches)
		matches = string(b)
	}
	args := []*quickjs.Value{ctx.NewString(outcome), ctx.NewString(code), ctx.NewString(message), ctx.NewString(matches)}
	ret := l.failFn.Execute(ctx.NewUndefined(), append([]*quickjs.Value{id}, args...)...)
	for _, a := range args {
		a.Free()
	}
	return l.afterCall(ret)
}

// bigResult: after parsing a result at least this large, the Go heap gives
// the frame's memory back to the system at once, so that it and the
// program's heap never add up past the bound (see parseResult).
const bigResult = 1 << 20

// parseResult parses a result's JSON into the program. The text is parsed
// where it lies (a host may end it with a NUL one past its length, see
// Event.Payload), and counts against the program's memory while it is
// parsed: the limit is lowered by its size for the parse. So the worker's
// memory stays within the limit plus a fixed overhead even while a result
// of a third of the limit is in Go and being turned into values; a result
// the program has no room for fails as result_too_large.
func (l *loop) parseResult(payload []byte) *quickjs.Value {
	limit := l.spec.Limits.MemoryBytes
	if n := int64(len(payload)); n >= bigResult && n < limit {
		l.rt.SetMemoryLimit(uint64(limit - n))
		defer func() {
			l.rt.SetMemoryLimit(uint64(limit))
			debug.FreeOSMemory()
		}()
	}
	return l.ctx.ParseJSONBytes(payload) // patch 0013 of third_party/quickjs-ng
}

// afterCall checks what a call into the prelude returned.
func (l *loop) afterCall(ret *quickjs.Value) (Report, bool) {
	if ret.IsException() {
		return l.fromException(), false
	}
	ret.Free()
	return Report{}, true
}

func (l *loop) interruptedNow() bool { return l.interrupted != "" }

func (l *loop) inflightCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.inflight)
}

// finished turns what the prelude reported into the ending.
func (l *loop) finished() Report {
	e := *l.fin
	if !time.Now().Before(l.spec.Deadline) {
		// A builtin that does not poll the interrupt handler ran past the
		// deadline and the program settled after it.
		return l.timedOut()
	}
	return e
}

func (l *loop) timedOut() Report {
	return Report{Status: wire.StatusTimedOut, Error: &wire.ErrorInfo{
		Name:    "TimeoutError",
		Message: fmt.Sprintf("the run's deadline of %s passed", l.spec.Limits.Timeout()),
	}}
}

func (l *loop) stopped() Report {
	return Report{Status: wire.StatusStopped, Error: &wire.ErrorInfo{Name: "Stopped", Message: "the run was stopped"}}
}

func (l *loop) outOfMemory(detail string) Report {
	return Report{Status: wire.StatusOutOfMemory, Error: &wire.ErrorInfo{
		Name:    "OutOfMemory",
		Message: fmt.Sprintf("the program exceeded its memory limit of %s: %s", mib(l.spec.Limits.MemoryBytes), detail),
	}}
}

// nearMemoryLimit reports whether the process grew during the run by most of
// the memory limit: the sign that a thrown null was QuickJS's out-of-memory.
func (l *loop) nearMemoryLimit() bool {
	grown := (PeakRSSKiB() - l.baseRSSKiB) << 10
	return float64(grown) >= oomShare*float64(l.spec.Limits.MemoryBytes)
}

// setupEnding classifies an error of setting up the prelude, before the
// program has run (so the binding's Exception, which reads the error's
// properties, runs nothing of the program's): the input may not fit the
// memory limit. ok is false for anything else, a bug of ours.
func (l *loop) setupEnding(err error) (Report, bool) {
	if qe, ok := err.(*quickjs.Error); ok && qe.Name == "InternalError" && qe.Message == "out of memory" {
		return l.outOfMemory("InternalError: out of memory (the run's input does not fit)"), true
	}
	return Report{}, false
}

// fromException ends the run on an exception that reached Go: the interrupt
// (deadline, stop), which the program cannot catch, or one that broke the
// prelude's own handlers, which catch everything else: the engine ran out of
// memory, or the stack.
func (l *loop) fromException() Report {
	switch l.interrupted {
	case wire.StatusTimedOut:
		return l.timedOut()
	case wire.StatusStopped:
		return l.stopped()
	}
	ex := l.ctx.TakeException()
	if ex != nil {
		defer ex.Free()
	}
	what, info := l.explain(ex)
	switch what {
	case explainedNull:
		// QuickJS throws null when it cannot allocate even its error.
		if l.nearMemoryLimit() {
			return l.outOfMemory("the engine could not allocate even the error")
		}
	case explainedOOM:
		return l.outOfMemory("InternalError: out of memory")
	case explainedError:
		return Report{Status: wire.StatusThrew, Error: clipError(info)}
	}
	return Report{Status: wire.StatusThrew, Error: &wire.ErrorInfo{Name: "Error", Message: "the program threw a value the runtime could not describe"}}
}

// What explain makes of an exception.
const (
	explainedNothing = iota // no exception, or one that could not be read
	explainedNull           // null
	explainedOOM            // the engine's out-of-memory error
	explainedError          // another value, described in info
)

// explain reads an exception that reached Go with the prelude's own explain,
// which reads it as data (no getter of the program's runs). If even that
// fails, the engine is out of memory.
func (l *loop) explain(ex *quickjs.Value) (int, *wire.ErrorInfo) {
	switch {
	case ex == nil || ex.IsUndefined():
		return explainedNothing, nil
	case ex.IsNull():
		return explainedNull, nil
	case l.explainFn == nil:
		return explainedNothing, nil
	}
	r := l.explainFn.Execute(l.ctx.NewUndefined(), ex)
	defer r.Free()
	if r.IsException() {
		if again := l.ctx.TakeException(); again != nil {
			again.Free()
		}
		return explainedOOM, nil
	}
	if r.IsString() {
		return explainedOOM, nil // 'oom'
	}
	field := func(i int64) string {
		v := r.GetIdx(i)
		defer v.Free()
		s, _ := jsString(l.ctx, v)
		return s
	}
	return explainedError, &wire.ErrorInfo{Name: field(0), Message: field(1), Stack: field(2)}
}

// onFinish is host.finish, the prelude's report of the program's own ending:
// ('returned', json), ('threw', name, message, stack, flag) or
// ('unsendable', why); see prelude.js.
func (l *loop) onFinish(args []*quickjs.Value) {
	if l.fin != nil {
		return // reported once; a second report is a bug of ours
	}
	kind, _ := jsString(l.ctx, arg(args, 0))
	switch kind {
	case "returned":
		l.fin = l.returned(arg(args, 1))
		return
	case "unsendable":
		why, _ := jsString(l.ctx, arg(args, 1))
		e := l.outOfMemory("the program returned a value too large to send: " + why + "; return less")
		l.fin = &e
		return
	}
	name, _ := jsString(l.ctx, arg(args, 1))
	message, _ := jsString(l.ctx, arg(args, 2))
	stack, _ := jsString(l.ctx, arg(args, 3))
	switch flag := argInt(args, 4); {
	case name == "InternalError" && message == "out of memory":
		e := l.outOfMemory("InternalError: out of memory")
		l.fin = &e
	case flag == 1 && l.nearMemoryLimit():
		e := l.outOfMemory("the engine could not allocate even the error")
		l.fin = &e
	case flag == 2:
		e := l.outOfMemory("the program threw, and describing what it threw ran out of memory")
		l.fin = &e
	default:
		l.fin = &Report{Status: wire.StatusThrew, Error: clipError(&wire.ErrorInfo{Name: name, Message: message, Stack: stack})}
	}
}

// returned makes the ending of a program that returned text, the JSON the
// prelude made with JSON.stringify. The value goes out as the engine's own
// UTF-8 bytes, without a copy in Go.
func (l *loop) returned(text *quickjs.Value) *Report {
	max := l.spec.Limits.MaxReturnBytes
	tooLarge := func(what string) *Report {
		v, _ := json.Marshal(fmt.Sprintf("[the returned value is %s of JSON, above the cap of %d bytes; return less]", what, max))
		return &Report{Status: wire.StatusReturned, Value: v}
	}
	// A character is at least one byte: a string longer than the cap is
	// over it without converting it.
	if n := strLen(text); n > int64(max) {
		return tooLarge(fmt.Sprintf("%d characters (at least as many bytes)", n))
	}
	b, _, err := jsUTF8(l.ctx, text)
	if err != nil {
		e := l.outOfMemory(fmt.Sprintf("the program returned a value too large to send: its %d characters of JSON could not be encoded within the memory limit; return less", strLen(text)))
		return &e
	}
	// b stays valid: Run never closes the runtime (see Report.Value).
	if len(b) > max {
		return tooLarge(fmt.Sprintf("%d bytes", len(b)))
	}
	return &Report{Status: wire.StatusReturned, Value: b}
}

// maxErrorName bounds a thrown error's name: a name, not a text.
const maxErrorName = 200

// clipError cuts an error's fields to their caps, by wire's one rule.
func clipError(e *wire.ErrorInfo) *wire.ErrorInfo {
	e.Name = wire.Cut(e.Name, maxErrorName)
	e.Message = wire.Cut(e.Message, wire.MaxErrorChars)
	e.Stack = wire.Cut(e.Stack, wire.MaxErrorChars)
	return e
}

func mib(b int64) string {
	if b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d bytes", b)
}
