package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Config says how runs start their workers. The zero value is ready to use.
type Config struct {
	// Command is the worker's program and arguments, used as is. Default:
	// run-js-worker (WorkerBinary) when it sits beside this executable, else
	// this executable, with --worker-fd 3.
	Command []string
	// TempDir is where each worker's private directory is made; "" is
	// os.TempDir().
	TempDir string
	// Grace is how long a worker has to end after a stop, and to exit after
	// its end, before its process group is killed. Zero is DefaultGrace.
	Grace time.Duration
	// Spares is how many fresh workers a Launcher keeps spawned ahead of
	// need (0 to MaxSpares). The package-level Start and Execute spawn per
	// run and ignore it.
	Spares int
	// Confinement is how far each worker confines itself before it reads a
	// program (seccomp, Landlock, no_new_privs, rlimits, capabilities).
	// The zero value is ConfineBestEffort. It reaches the worker on its
	// command line, so a spare is confined before any program reaches it.
	Confinement Confinement
	// Namespaces puts each worker in new user, network, IPC, UTS and mount
	// namespaces at spawn, where unprivileged user namespaces are allowed.
	// Off by default: it adds 0.3-0.9 ms to each spawn (BENCHMARKS.md), and
	// seccomp and Landlock already deny what the namespaces would hide.
	Namespaces bool
	// OnBreach, if set, is told of each rule a worker broke after its run's
	// ending was given (Run.Done closes at the end frame; see
	// Launcher.BreachesAfterEnding): the run's id, the rule and what was
	// seen. It must not block.
	OnBreach func(runID, rule, detail string)
}

// DefaultGrace is Config.Grace when it is zero: a worker that checks its
// stop flag ends within milliseconds, so two seconds is only ever spent on
// one stuck in a builtin that does not poll the interrupt handler.
const DefaultGrace = 2 * time.Second

// handshakeTimeout bounds the wait for a worker's hello: far above a cold
// start on a loaded host (a few ms), far below any deadline worth having.
var handshakeTimeout = 5 * time.Second // mutable for testing

// Request is one run.
type Request struct {
	RunID   string          // "" picks a random one
	Code    string          // the program: the body of an async function
	Input   json.RawMessage // the global `input`; nil leaves it undefined
	Catalog []wire.Tool     // the tools the program may call, checked and prepared per run; see Tools
	// Tools, when set, is the catalog prepared once (wire.NewCatalog) and
	// takes the place of Catalog: a gateway prepares it once per change of
	// its catalog, so that a run's cost does not grow with it. It also names
	// the configured servers that have no tools and are not ready, so that
	// a call to one is refused server_unavailable with its reason.
	Tools  *wire.Catalog
	Limits wire.Limits // zero fields are defaults
	Call   CallFunc    // performs calls; nil refuses every call
	// Admit, when set, takes the place of Call: see AdmitFunc.
	Admit AdmitFunc
}

// Call is one tool call the parent accepted from a program.
type Call struct {
	RunID  string
	ID     uint64
	Server string
	Tool   string
	Args   json.RawMessage // a JSON object within the run's caps
}

// CallFunc performs one call. It runs on its own goroutine, at most
// Limits.MaxInFlight at once per run. ctx carries the run's deadline and is
// cancelled when the run ends; a CallFunc must return soon after. Its Outcome
// is checked (a result must be a JSON object within the result caps) before
// the program sees it.
type CallFunc func(ctx context.Context, c Call) Outcome

// AdmitFunc is a call's handler in two steps, for handlers that must see a
// program's calls in the order its worker sent them (a downstream server's
// FIFO lane). The run calls it on its reader goroutine, once per accepted
// call, strictly in the order the frames arrived, so it must not block: it
// decides at once (refuse, or take the call's place in a queue) and leaves
// the waiting to the Admission's Perform, which the run calls on a goroutine
// of its own. It must not call back into the Run. ctx is as for CallFunc.
type AdmitFunc func(ctx context.Context, c Call) Admission

// Admission is what an AdmitFunc decided for one call: Perform, to be called
// once on its own goroutine with the run's call context, or, when Perform is
// nil, the Outcome known at once (a refusal: nothing was sent). Either way
// the outcome goes through the same checks as a CallFunc's.
type Admission struct {
	Outcome Outcome
	Perform func(ctx context.Context) Outcome
}

// Outcome is what a CallFunc returns. Build it with Answer, Refuse or Fail.
type Outcome struct {
	Kind    string // wire.OutcomeOK, wire.OutcomeRefused or wire.OutcomeFailed
	Code    string
	Message string
	Matches []string
	Result  json.RawMessage
	Queued  time.Duration // how long the call waited (in a lane) before it was sent; for the ledger
	// spliced, set by AnswerSpliced, is the result as its members' JSON,
	// where they lie; Result is nil then.
	spliced *splicedResult
}

// splicedResult is {"content": content, "structuredContent": structured,
// "isError": isError} as its members.
type splicedResult struct {
	content, structured json.RawMessage
	isError             bool
}

// pieces is the result's JSON as the pieces it is written in.
func (r *splicedResult) pieces() [][]byte {
	end := []byte(`,"isError":false}`)
	if r.isError {
		end = []byte(`,"isError":true}`)
	}
	return [][]byte{[]byte(`{"content":`), r.content, []byte(`,"structuredContent":`), r.structured, end}
}

// AnswerSpliced is Answer for the result {"content": content,
// "structuredContent": structured, "isError": isError}, given as its
// members' JSON where they lie: the run writes the result to the worker
// from them and never joins them, so that a large result spliced from a
// server's answer is not copied again. content must be a JSON array and
// structured JSON (null for none); the run checks them as it checks
// Answer's result (size, nesting, validity).
func AnswerSpliced(content, structured json.RawMessage, isError bool) Outcome {
	if len(structured) == 0 {
		structured = json.RawMessage("null")
	}
	return Outcome{Kind: wire.OutcomeOK, spliced: &splicedResult{content: content, structured: structured, isError: isError}}
}

// ResultJSON is the outcome's result as one JSON text (joined, for one
// made by AnswerSpliced).
func (o Outcome) ResultJSON() json.RawMessage {
	if o.spliced == nil {
		return o.Result
	}
	var b []byte
	for _, p := range o.spliced.pieces() {
		b = append(b, p...)
	}
	return b
}

// resultPieces is what the result frame's payload is written from.
func (o Outcome) resultPieces() [][]byte {
	if o.spliced != nil {
		return o.spliced.pieces()
	}
	return [][]byte{o.Result}
}

// resultLen is the length of the result's JSON.
func (o Outcome) resultLen() int {
	n := 0
	for _, p := range o.resultPieces() {
		n += len(p)
	}
	return n
}

// Answer is the tool's result: {content, structuredContent, isError}.
func Answer(result json.RawMessage) Outcome { return Outcome{Kind: wire.OutcomeOK, Result: result} }

// Refuse says the call was refused before anything was sent.
func Refuse(code, message string, matches ...string) Outcome {
	return Outcome{Kind: wire.OutcomeRefused, Code: code, Message: message, Matches: matches}
}

// Fail says the call was sent but gave no usable answer: it may have taken
// effect.
func Fail(code, message string) Outcome {
	return Outcome{Kind: wire.OutcomeFailed, Code: code, Message: message}
}

// ErrBadRequest wraps every reason Start refuses a Request before spawning.
var ErrBadRequest = errors.New("bad run request")

// Run is one running program and its worker process. A Run owns its process
// and is the only thing that waits on it.
type Run struct {
	id     string
	pid    int
	s      *supervisor
	stopc  chan string
	done   chan struct{}
	reaped chan struct{}
	ending *Ending
}

// Progress is what a run has done so far.
type Progress struct {
	Output OutputText `json:"output"` // produced since the last Progress
	Calls  Calls      `json:"calls"`  // the record so far; calls in flight are listed as unseen
}

// Progress takes the output the program produced since the last Progress,
// and the call record so far. Each piece of output is returned once: the
// ending carries only what no Progress took. Safe to call at any time,
// concurrently with the run; after the ending, the output is empty.
func (r *Run) Progress() Progress { return r.s.progress() }

// Calls is the call record so far, without taking any output.
func (r *Run) Calls() Calls { return r.s.calls() }

// OutputChars is how many characters of output the program has produced
// since the last Progress, without taking them.
func (r *Run) OutputChars() int64 { return r.s.outputChars() }

// Start starts one run in a freshly spawned worker: NewLauncher without
// spares, then Launcher.Start. See Launcher.Start.
func Start(ctx context.Context, cfg Config, req Request) (*Run, error) {
	cfg.Spares = 0
	l, err := NewLauncher(cfg)
	if err != nil {
		return nil, err
	}
	return l.Start(ctx, req)
}

// Execute runs one program to its ending: Start, then Wait.
func Execute(ctx context.Context, cfg Config, req Request) (*Ending, error) {
	r, err := Start(ctx, cfg, req)
	if err != nil {
		return nil, err
	}
	return r.Wait(), nil
}

// ID is the run's id.
func (r *Run) ID() string { return r.id }

// PID is the worker's process id (and process group id). After Done it may
// belong to another process.
func (r *Run) PID() int { return r.pid }

// Stop asks the run to stop: the worker gets a stop frame, and is killed with
// its process group if it has not ended within the grace. It does not block;
// later or concurrent calls do nothing.
func (r *Run) Stop(reason string) {
	select {
	case r.stopc <- reason:
	default:
	}
}

// Done is closed when the run's ending is known: when the worker's end
// frame has passed the parent's checks (and no call is still being
// performed), or when the run was ended otherwise. The worker's exit, its
// reaping and the removal of its directory may still be under way: Reaped
// says when they are done.
func (r *Run) Done() <-chan struct{} { return r.done }

// Reaped is closed once the worker process has exited and been reaped, and
// its private directory removed (after Done; bounded by the grace after the
// end, then the kill).
func (r *Run) Reaped() <-chan struct{} { return r.reaped }

// Ending is the run's ending, or nil before Done is closed.
func (r *Run) Ending() *Ending {
	select {
	case <-r.done:
		return r.ending
	default:
		return nil
	}
}

// Wait blocks until the run's ending is known (Done) and returns it. The
// wait is bounded: by the run's deadline plus the grace, then the kill.
func (r *Run) Wait() *Ending {
	<-r.done
	return r.ending
}

// newRunID returns a random, unguessable run id.
func newRunID() string {
	var b [9]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return "run-" + hex.EncodeToString(b[:])
}

func checkRequest(req *Request) error {
	if len(req.Code) > wire.MaxCodeBytes {
		return fmt.Errorf("the program is %d bytes, above the cap of %d", len(req.Code), wire.MaxCodeBytes)
	}
	if !utf8.ValidString(req.Code) {
		return errors.New("the program is not valid UTF-8 text")
	}
	if len(req.Input) > 0 {
		if err := req.Limits.CheckInput(req.Input); err != nil {
			return err
		}
	}
	if req.Tools == nil {
		cat, err := wire.NewCatalog(req.Catalog, nil)
		if err != nil {
			return err
		}
		req.Tools = cat
	}
	return nil
}
