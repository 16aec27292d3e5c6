package jsrt

import (
	_ "embed"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf16"

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

// toolView is one ALL_TOOLS entry: every field present, null when absent.
type toolView struct {
	Server       string          `json:"server"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
}

func orNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("null")
	}
	return m
}

// prelude runs the prelude's function with the host functions. It returns
// the {start, resolve, fail} object.
func (l *loop) prelude(factory *quickjs.Value) (*quickjs.Value, error) {
	ctx := l.ctx
	defer factory.Free()

	names := make(map[string][]string)
	for _, t := range l.spec.Catalog {
		names[t.Server] = append(names[t.Server], t.Name)
	}
	namesJSON, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
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
		l.queued = int(argInt(args, 0))
		return c.NewUndefined()
	}))
	host.Set("emit", ctx.NewFunction(func(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
		l.host.Output(jsString(arg(args, 0)), argInt(args, 1))
		return c.NewUndefined()
	}))
	host.Set("stack", ctx.NewFunction(func(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
		return c.NewString(ProgramStack(jsString(arg(args, 0)), programLineOffset))
	}))
	host.Set("catalog", ctx.NewFunction(func(c *quickjs.Context, _ *quickjs.Value, _ []*quickjs.Value) *quickjs.Value {
		return c.NewString(l.catalog())
	}))
	host.Set("finish", ctx.NewFunction(func(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
		l.onFinish(jsString(arg(args, 0)), jsString(arg(args, 1)), jsString(arg(args, 2)), jsString(arg(args, 3)), argInt(args, 4) != 0)
		return c.NewUndefined()
	}))
	limits := ctx.ParseJSON(string(limitsJSON))
	namesV := ctx.ParseJSON(string(namesJSON))
	input := ctx.NewUndefined()
	if len(l.spec.Input) > 0 {
		input = ctx.ParseJSON(string(l.spec.Input))
	}
	defer func() {
		for _, v := range []*quickjs.Value{host, limits, namesV, input} {
			v.Free()
		}
	}()
	for _, v := range []*quickjs.Value{limits, namesV, input} {
		if v.IsException() {
			return nil, ctx.Exception()
		}
	}
	api := factory.Execute(ctx.NewUndefined(), host, limits, namesV, input)
	if api.IsException() {
		return nil, ctx.Exception()
	}
	if !api.IsObject() {
		api.Free()
		return nil, errors.New("prelude did not return its entry points")
	}
	return api, nil
}

// jsSend is host.send(id, server, tool, argsJSON): it returns "" when the call
// went to the parent, or "code\nmessage" when it was refused here.
func (l *loop) jsSend(c *quickjs.Context, _ *quickjs.Value, args []*quickjs.Value) *quickjs.Value {
	id := uint64(argInt(args, 0))
	// Names come from the catalog (the parent refuses names with NUL) and
	// JSON.stringify escapes NUL, so the binding's NUL-terminated ToString is
	// exact for all three.
	server, tool := argString(args, 1), argString(args, 2)
	payload := []byte(argString(args, 3))
	refuse := func(code, msg string) *quickjs.Value {
		return c.NewString(code + "\n" + "tools." + server + "." + tool + ": " + msg + "; nothing was sent")
	}
	if l.host.Stopped() {
		return refuse(wire.CodeRunStopping, "the run is stopping")
	}
	if err := l.spec.Limits.CheckArgs(payload); err != nil {
		code := wire.CodeInvalidArguments
		if errors.Is(err, wire.ErrTooLarge) {
			code = wire.CodeArgsTooLarge
		}
		return refuse(code, err.Error())
	}
	if err := l.host.Send(wire.Call{RunID: l.spec.RunID, ID: id, Server: server, Tool: tool}, payload); err != nil {
		return refuse(wire.CodeRunStopping, "the parent is gone")
	}
	l.inflight[id] = struct{}{}
	return c.NewString("")
}

func (l *loop) catalog() string {
	if l.catalogJSON == "" {
		views := make([]toolView, len(l.spec.Catalog))
		for i, t := range l.spec.Catalog {
			views[i] = toolView{t.Server, t.Name, t.Description, orNull(t.InputSchema), orNull(t.OutputSchema), orNull(t.Annotations)}
		}
		b, err := json.Marshal(views)
		if err != nil {
			b = []byte("[]") // the parent sent these schemas as valid JSON
		}
		l.catalogJSON = string(b)
	}
	return l.catalogJSON
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

func argString(args []*quickjs.Value, i int) string {
	if v := arg(args, i); v != nil {
		return v.ToString()
	}
	return ""
}

// jsString converts a JS string to Go exactly: through UTF-16, so that a NUL
// does not end it (the binding's ToString stops at the first NUL) and a lone
// surrogate becomes U+FFFD.
func jsString(v *quickjs.Value) string {
	if v == nil {
		return ""
	}
	u, err := v.ToStringUTF16()
	if err != nil {
		return ""
	}
	var b strings.Builder
	b.Grow(len(u))
	for _, r := range utf16.Decode(u) {
		b.WriteRune(r)
	}
	return b.String()
}
