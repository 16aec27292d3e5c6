package jsrt

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/buke/quickjs-go"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// preludeSource is evaluated with the binding's Eval, which sends any source
// containing the words import, export or await through JS_DetectModule: a
// second JSRuntime with no memory limit and no interrupt handler. The prelude
// never contains them (TestPreludeAvoidsModuleDetection), and the program is
// compiled by the AsyncFunction constructor from inside the prelude, never by
// Eval.
//
//go:embed prelude.js
var preludeSource string

// preludeBytecode is preludeSource compiled by this engine: loading it costs
// a tenth of compiling the source (0.17 ms against 1.7 ms on the reference
// machine). TestPreludeBytecodeIsCurrent fails when it is stale; rebuild it
// with `go test ./pkg/jsrt -run TestPreludeBytecodeIsCurrent -update`.
//
//go:embed prelude.bc
var preludeBytecode []byte

// preludeFile is the file name prelude frames carry; ProgramStack drops them.
const preludeFile = "prelude.js"

// prelude runs the prelude's function with the host functions. It returns
// the {start, resolve, fail, out} object.
//
// Every host function is called only by the prelude, with the arguments the
// prelude passes: strings it built, numbers, never a value of the program's.
// Each converts its strings with jsUTF8 (crossing.go).
func (l *loop) prelude(factory *quickjs.Value) (*quickjs.Value, error) {
	ctx := l.ctx
	defer factory.Free()

	limitsJSON, err := json.Marshal(map[string]int{
		"maxInFlight": l.spec.Limits.MaxInFlight,
		"maxArgBytes": l.spec.Limits.MaxArgBytes,
		"outputHead":  wire.OutputHeadChars,
		"outputTail":  wire.OutputTailChars,
	})
	if err != nil {
		return nil, err
	}

	host := ctx.NewObject()
	host.Set("send", ctx.NewFunction(l.jsSend))
	host.Set("queued", ctx.NewFunction(func(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
		l.mu.Lock()
		l.queued = int(argInt(args, 0))
		l.mu.Unlock()
		return c.NewUndefined()
	}))
	host.Set("emit", ctx.NewFunction(func(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
		l.emit(arg(args, 0), argInt(args, 1))
		return c.NewUndefined()
	}))
	host.Set("stack", ctx.NewFunction(func(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
		s, _ := jsString(c, arg(args, 0))
		return c.NewString(ProgramStack(s, programLineOffset))
	}))
	host.Set("catalog", ctx.NewFunction(l.jsCatalog))
	host.Set("lookup", ctx.NewFunction(l.jsLookup))
	host.Set("servers", ctx.NewFunction(func(c *quickjs.Context, _ *quickjs.Value, _ []*quickjs.Value) *quickjs.Value {
		return c.NewString(namesJSON(l.spec.Catalog.ServerNames()))
	}))
	host.Set("tools", ctx.NewFunction(func(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
		server, _ := jsString(c, arg(args, 0))
		names, _ := l.spec.Catalog.ToolNames(server)
		return c.NewString(namesJSON(names))
	}))
	host.Set("finish", ctx.NewFunction(func(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
		l.onFinish(args)
		return c.NewUndefined()
	}))
	limits := ctx.ParseJSON(string(limitsJSON))
	input := ctx.NewUndefined()
	if len(l.spec.Input) > 0 {
		input = ctx.ParseJSONBytes(l.spec.Input) // one copy in Go, not two
	}
	defer func() {
		for _, v := range []*quickjs.Value{host, limits, input} {
			v.Free()
		}
	}()
	for _, v := range []*quickjs.Value{limits, input} {
		if v.IsException() {
			return nil, ctx.Exception()
		}
	}
	api := factory.Execute(ctx.NewUndefined(), host, limits, input)
	if api.IsException() {
		return nil, ctx.Exception()
	}
	if !api.IsObject() {
		api.Free()
		return nil, errors.New("prelude did not return its entry points")
	}
	return api, nil
}

// jsSend is host.send(server, tool, argsJSON, fromQueue). It returns the
// call's id, a number, when the call went to the parent, or "code\nmessage"
// when it was refused here. The host owns ids: a refused call takes none, so
// the ids the parent sees are 1, 2, 3, ... whatever the program does. A call
// fromQueue leaves the count of calls waiting in the program here, with its
// send, under mu.
func (l *loop) jsSend(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
	server, _ := jsString(c, arg(args, 0))
	tool, _ := jsString(c, arg(args, 1))
	fromQueue := argInt(args, 3) != 0
	refuse := func(code, msg string) *quickjs.Value {
		if fromQueue {
			l.mu.Lock()
			l.queued--
			l.mu.Unlock()
		}
		return c.NewString(code + "\n" + "tools." + server + "." + tool + ": " + msg + "; nothing was sent")
	}
	if l.host.Stopped() {
		return refuse(wire.CodeRunStopping, "the run is stopping")
	}
	payload, release, err := jsUTF8(c, arg(args, 2))
	defer release()
	if err != nil {
		return refuse(wire.CodeArgsTooLarge, "the arguments could not be encoded in the memory left")
	}
	if err := l.spec.Limits.CheckArgs(payload); err != nil {
		code := wire.CodeInvalidArguments
		if errors.Is(err, wire.ErrTooLarge) {
			code = wire.CodeArgsTooLarge
		}
		return refuse(code, err.Error())
	}
	// The record changes with the frame, under mu: the watchdog's ending
	// lists exactly the calls the parent was sent.
	l.mu.Lock()
	id := l.lastID + 1
	if err := l.host.Send(wire.Call{RunID: l.spec.RunID, ID: id, Server: server, Tool: tool}, payload); err != nil {
		l.mu.Unlock()
		return refuse(wire.CodeRunStopping, "the parent is gone")
	}
	l.lastID = id
	l.inflight[id] = struct{}{}
	if fromQueue {
		l.queued--
	}
	l.mu.Unlock()
	return c.NewInt64(int64(id))
}

// emit hands text the prelude wrote to the host; skip is as in wire.Output.
func (l *loop) emit(text *quickjs.Value, skip int64) {
	b, release, err := jsUTF8(l.ctx, text)
	defer release()
	if err != nil {
		// No room left for the UTF-8 copy: the text is cut, and counted.
		l.host.Output("", skip+strLen(text))
		return
	}
	l.host.Output(string(b), skip)
}

// pullOutput takes what waits in the prelude's out object (text written
// after the head, not yet sent) and hands it to the host. It runs no
// JavaScript: out is the prelude's own null-prototype object with data
// properties, so it is safe after an interrupt or with the heap exhausted.
func (l *loop) pullOutput() {
	if l.out == nil {
		return
	}
	text := l.out.Get("text")
	skip := l.out.Get("skip")
	defer text.Free()
	defer skip.Free()
	n := skip.ToInt64()
	if !text.IsString() || (n == 0 && strLen(text) == 0) {
		return
	}
	l.out.Set("text", l.ctx.NewString(""))
	l.out.Set("skip", l.ctx.NewInt64(0))
	l.emit(text, n)
}

// ToolsHost is a Host that can fetch ALL_TOOLS's JSON when the program
// reads it, for a catalog that came without it (wire.Catalog.HasAll): a
// worker holds only the names of a catalog until its program asks for
// more. AllTools may wait for the parent, until the deadline.
type ToolsHost interface {
	AllTools(deadline time.Time) ([]byte, error)
}

// jsCatalog is host.catalog(): ALL_TOOLS's JSON, from the catalog or, when
// it came without it, from the host (read once: the prelude keeps what it
// parsed).
func (l *loop) jsCatalog(c *quickjs.Context, _ *quickjs.Value, _ []*quickjs.Value) *quickjs.Value {
	cat := l.spec.Catalog
	if cat.HasAll() {
		return c.NewString(string(cat.AllJSON()))
	}
	th, ok := l.host.(ToolsHost)
	if !ok {
		return c.NewString("[]")
	}
	all, err := th.AllTools(l.spec.Deadline)
	if err != nil {
		return c.ThrowError(fmt.Errorf("ALL_TOOLS could not be read: %v", err))
	}
	return c.NewString(string(all))
}

// jsLookup is host.lookup(server, tool): 2 when the catalog has the tool,
// 1 when it has the server (and not the tool, or tool is ""), 0 when it
// has neither, and "state\nreason" for a configured server that is not
// ready (the program's call is refused server_unavailable with it).
func (l *loop) jsLookup(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
	server, _ := jsString(c, arg(args, 0))
	tool, _ := jsString(c, arg(args, 1))
	cat := l.spec.Catalog
	if _, ok := cat.ToolNames(server); ok {
		if tool != "" && cat.Has(server, tool) {
			return c.NewInt32(2)
		}
		return c.NewInt32(1)
	}
	if st, ok := cat.Unready(server); ok {
		return c.NewString(st.State + "\n" + st.Reason)
	}
	return c.NewInt32(0)
}

// namesJSON is names as a JSON array of strings.
func namesJSON(names []string) string {
	b, err := json.Marshal(names)
	if err != nil || names == nil {
		return "[]"
	}
	return string(b)
}

// arg returns args[i], or nil when the prelude passed fewer (a bug of ours;
// the conversions below treat nil as empty).
func arg(args []*quickjs.Value, i int) *quickjs.Value {
	if i < len(args) {
		return args[i]
	}
	return nil
}

func argInt(args []*quickjs.Value, i int) int64 {
	if v := arg(args, i); v != nil {
		return v.ToInt64()
	}
	return 0
}

// strLen is a string's length in UTF-16 code units, 0 for anything else.
func strLen(v *quickjs.Value) int64 {
	if v == nil || !v.IsString() {
		return 0
	}
	n := v.Get("length")
	defer n.Free()
	return n.ToInt64()
}
