package jsrt

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/buke/quickjs-go"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Spec is one run as the worker received it.
type Spec struct {
	RunID    string
	Code     string
	Input    json.RawMessage // nil: input is undefined
	Catalog  []wire.Tool
	Limits   wire.Limits // already normalized
	Deadline time.Time   // the run's one deadline, on the monotonic clock
}

// Event is something the parent sent while the program waited.
type Event struct {
	Stop    bool        // a stop was requested
	Result  wire.Result // when !Stop: a call's outcome
	Payload []byte      // the result's JSON, for wire.OutcomeOK
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
}

// Ending is how a program ended, as the worker reports it.
type Ending struct {
	Status    wire.Status
	Value     []byte // the returned value's JSON, for StatusReturned
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

type loop struct {
	spec Spec
	host Host

	rt  *quickjs.Runtime
	ctx *quickjs.Context

	resolveFn *quickjs.Value
	failFn    *quickjs.Value

	inflight    map[uint64]struct{}
	queued      int
	fin         *Ending
	interrupted wire.Status // set by the interrupt handler: timed_out or stopped
	baseRSSKiB  int64
	catalogJSON string
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

// Run runs one program to its ending: Prepare, then Prepared.Run.
func Run(spec Spec, host Host) Ending { return Prepare().Run(spec, host) }

// Run runs one program to its ending under spec's limits, on the goroutine
// that called Prepare, once. It does not close the runtime: the worker
// process exits after one run, which is cheaper and cannot abort on a leaked
// value.
//
// Run never panics on anything the program does; it panics only if the
// prelude itself cannot be set up for a reason other than the limits, which
// is a bug of ours.
func (p *Prepared) Run(spec Spec, host Host) Ending {
	l := &loop{spec: spec, host: host, rt: p.rt, ctx: p.ctx, inflight: make(map[uint64]struct{}), baseRSSKiB: p.rssKiB}
	l.rt.SetMemoryLimit(uint64(spec.Limits.MemoryBytes))
	l.rt.SetMaxStackSize(uint64(spec.Limits.StackBytes))
	l.rt.SetInterruptHandler(l.interrupt)
	e := l.run(p)
	e.Unsettled = make([]uint64, 0, len(l.inflight))
	for id := range l.inflight {
		e.Unsettled = append(e.Unsettled, id)
	}
	slices.Sort(e.Unsettled)
	e.NeverSent = l.queued
	return e
}

func (l *loop) run(p *Prepared) Ending {
	ctx := l.ctx
	if p.err != nil {
		panic(fmt.Sprintf("jsrt: prelude failed to load: %v", p.err))
	}
	api, err := l.prelude(p.factory)
	if err != nil {
		if e, ok := l.limitEnding(err); ok {
			return e
		}
		panic(fmt.Sprintf("jsrt: prelude failed: %v", err))
	}
	startFn := api.Get("start")
	l.resolveFn = api.Get("resolve")
	l.failFn = api.Get("fail")
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
		if len(l.inflight) == 0 {
			if prom.PromiseState() != quickjs.PromisePending {
				// Settled, but the prelude's handler could not report it:
				// only running out of memory does that.
				return l.outOfMemory("the program ended, but its ending could not be built in the memory left")
			}
			return Ending{Status: wire.StatusStalled, Error: &wire.ErrorInfo{
				Name:    "Stalled",
				Message: "the program is waiting for a promise that nothing can settle: no tool call is in flight and no job is pending",
			}}
		}
		if !time.Now().Before(l.spec.Deadline) {
			return l.timedOut()
		}
		events := l.host.Wait(l.spec.Deadline)
		if events == nil {
			return l.timedOut()
		}
		for _, ev := range events {
			if ev.Stop {
				return l.stopped()
			}
			if e, ok := l.settle(ev); !ok {
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
func (l *loop) settle(ev Event) (Ending, bool) {
	res := ev.Result
	if _, ok := l.inflight[res.ID]; !ok {
		return Ending{}, true // not ours: the parent validated ids, so this is a late duplicate
	}
	delete(l.inflight, res.ID)
	ctx := l.ctx
	id := ctx.NewFloat64(float64(res.ID))
	defer id.Free()
	outcome, code, message := res.Outcome, res.Code, res.Message
	if outcome == wire.OutcomeOK {
		value := ctx.ParseJSON(string(ev.Payload))
		if !value.IsException() {
			ret := l.resolveFn.Execute(ctx.NewUndefined(), id, value)
			value.Free()
			return l.afterCall(ret)
		}
		if l.interruptedNow() {
			return l.fromException(), false
		}
		outcome, code = wire.OutcomeFailed, wire.CodeResultTooLarge
		message = "the call took effect, but its result could not be parsed in the program's memory: " + ctx.Exception().Error()
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

// afterCall checks what a call into the prelude returned.
func (l *loop) afterCall(ret *quickjs.Value) (Ending, bool) {
	if ret.IsException() {
		return l.fromException(), false
	}
	ret.Free()
	return Ending{}, true
}

func (l *loop) interruptedNow() bool { return l.interrupted != "" }

// finished turns what the prelude reported into the ending.
func (l *loop) finished() Ending {
	e := *l.fin
	if !time.Now().Before(l.spec.Deadline) {
		// A builtin that does not poll the interrupt handler ran past the
		// deadline and the program settled after it.
		return l.timedOut()
	}
	return e
}

func (l *loop) timedOut() Ending {
	return Ending{Status: wire.StatusTimedOut, Error: &wire.ErrorInfo{
		Name:    "TimeoutError",
		Message: fmt.Sprintf("the run's deadline of %s passed", l.spec.Limits.Timeout()),
	}}
}

func (l *loop) stopped() Ending {
	return Ending{Status: wire.StatusStopped, Error: &wire.ErrorInfo{Name: "Stopped", Message: "the run was stopped"}}
}

func (l *loop) outOfMemory(detail string) Ending {
	return Ending{Status: wire.StatusOutOfMemory, Error: &wire.ErrorInfo{
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

// limitEnding classifies an error that escaped the prelude's own handlers:
// the interrupt (deadline, stop) and running out of memory. ok is false for
// anything else.
func (l *loop) limitEnding(err error) (Ending, bool) {
	switch l.interrupted {
	case wire.StatusTimedOut:
		return l.timedOut(), true
	case wire.StatusStopped:
		return l.stopped(), true
	}
	if qe, ok := err.(*quickjs.Error); ok {
		if qe.Name == "InternalError" && qe.Message == "out of memory" {
			return l.outOfMemory("InternalError: out of memory"), true
		}
		return Ending{}, false
	}
	// Not an Error object: QuickJS throws null when it cannot allocate one.
	if l.nearMemoryLimit() {
		return l.outOfMemory("the engine could not allocate even the error"), true
	}
	return Ending{}, false
}

// fromException ends the run on an exception that reached Go: one the program
// cannot catch (interrupt), or one that broke the prelude's handlers.
func (l *loop) fromException() Ending {
	err := l.ctx.Exception()
	if e, ok := l.limitEnding(err); ok {
		return e
	}
	info := &wire.ErrorInfo{Name: "Error", Message: "the program threw a value the runtime could not describe"}
	if qe, ok := err.(*quickjs.Error); ok {
		info = &wire.ErrorInfo{Name: qe.Name, Message: qe.Message, Stack: ProgramStack(qe.Stack, programLineOffset)}
	}
	return Ending{Status: wire.StatusThrew, Error: clipError(info)}
}

// onFinish is the prelude's report of the program's own ending.
func (l *loop) onFinish(kind, a, b, c string, threwNull bool) {
	switch kind {
	case "returned":
		v := []byte(a)
		if len(v) > l.spec.Limits.MaxReturnBytes {
			v, _ = json.Marshal(fmt.Sprintf("[the returned value is %d bytes of JSON, above the cap of %d; return less]", len(v), l.spec.Limits.MaxReturnBytes))
		}
		l.fin = &Ending{Status: wire.StatusReturned, Value: v}
	default:
		switch {
		case a == "InternalError" && b == "out of memory":
			e := l.outOfMemory("InternalError: out of memory")
			l.fin = &e
		case threwNull && l.nearMemoryLimit():
			e := l.outOfMemory("the engine could not allocate even the error")
			l.fin = &e
		default:
			l.fin = &Ending{Status: wire.StatusThrew, Error: clipError(&wire.ErrorInfo{Name: a, Message: b, Stack: c})}
		}
	}
}

func clipError(e *wire.ErrorInfo) *wire.ErrorInfo {
	e.Name = clip(e.Name, 200)
	e.Message = clip(e.Message, wire.MaxErrorChars)
	e.Stack = clip(e.Stack, wire.MaxErrorChars)
	return e
}

// clip cuts s to at most n bytes on a rune boundary, saying how much it cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d bytes cut]", len(s)-cut)
}

func mib(b int64) string {
	if b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d bytes", b)
}
