package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// Bounds of what the agent reads, each with its reason.
const (
	// MaxToolsInDescription: run_js's description lists callable tools up to
	// this many characters; past it, it points to search_tools (a long list
	// costs the agent's context on every turn).
	MaxToolsInDescription = 4000
	// MaxSearchResults: search_tools returns at most this many declarations.
	MaxSearchResults = 50
)

// errorStatuses are the endings that set isError on run_js's result.
var errorStatuses = map[wire.Status]bool{
	wire.StatusThrew: true, wire.StatusStalled: true, wire.StatusTimedOut: true,
	wire.StatusOutOfMemory: true, wire.StatusCrashed: true,
}

// runJSIntro teaches the API at the top of run_js's description. Its numbers
// are the limits' own.
var runJSIntro = `Run a JavaScript program that calls the downstream MCP tools as async functions, and get back only what it returns.

The code is the body of an async function: use await at top level; ` + "`return`" + ` gives the result (as JSON).
- await tools.SERVER.TOOL(args) calls a tool (tools["my-server"]["my-tool"](args) when a name is not an identifier) and gives {content, structuredContent, isError}.
- Calls run concurrently with Promise.all (at most ` + strconv.Itoa(wire.DefaultMaxInFlight) + ` in flight; more wait, never refused for it).
- A refused call (unknown tool, invalid arguments, server unavailable, lane full) throws ToolRefused: nothing was sent, safe to retry. A call that was sent but gave no usable answer throws ToolFailed (mayHaveRun: true).
- ALL_TOOLS lists every tool with its schemas; input is the run's input; console.log/print write output (head and tail kept).
- No file system, network, timers or modules: only the tools.
- A program still running after yield_ms (default ` + DefaultYield.String() + `) returns a scriptId and goes on; wait_js, stop_js and list_js reach it.
Use search_tools for exact argument and result types.`

// yieldBounds is yield_ms's default and cap, for the tools' schemas.
var yieldBounds = fmt.Sprintf("default %d, at most %d", DefaultYield.Milliseconds(), MaxYield.Milliseconds())

// NewServer returns the MCP server an agent talks to over the gateway, with
// six tools: run_js, wait_js, stop_js and list_js (programs, scripts.go),
// search_tools and server_info.
func NewServer(g *Gateway) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "run-js-server", Version: g.opts.Version}, nil)
	desc := g.runJSDescription()
	s.AddTool(g.runJSTool(desc), g.handleRunJS)
	s.AddTool(&mcp.Tool{
		Name:        "search_tools",
		Description: "Find downstream tools and get their TypeScript declarations (exact names, argument and result types) for use in run_js.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"query":{"type":"string","description":"words to match in tool names and descriptions"},
			"server":{"type":"string","description":"only this server's tools"},
			"names":{"type":"array","items":{"type":"string"},"description":"exact tool names, as tool or server.tool"}},
			"additionalProperties":false}`),
	}, g.handleSearchTools)
	s.AddTool(&mcp.Tool{
		Name:        "wait_js",
		Description: "Wait for a program that run_js left running: returns its ending, or after yield_ms its output since the last return and its calls so far.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"scriptId":{"type":"string"},
			"yield_ms":{"type":"integer","minimum":1,"description":"` + yieldBounds + `"}},
			"required":["scriptId"],"additionalProperties":false}`),
	}, g.handleWaitJS)
	s.AddTool(&mcp.Tool{
		Name:        "stop_js",
		Description: "Stop a program that run_js left running, and get its ending (its calls still in flight are named).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"scriptId":{"type":"string"}},"required":["scriptId"],"additionalProperties":false}`),
	}, g.handleStopJS)
	s.AddTool(&mcp.Tool{
		Name:        "list_js",
		Description: "List this session's programs: id, state, age, calls made, and the start of a failure.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
	}, g.handleListJS)
	s.AddTool(&mcp.Tool{
		Name:        "server_info",
		Description: "The gateway's version, limits, downstream servers and their state, and which protections are enforced.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
	}, g.handleServerInfo)
	g.watch.add(s, desc) // run_js is given anew when the tools change (catalogwatch.go)
	return s
}

// runJSTool is run_js with the description desc (runJSDescription), which
// names the tools callable now.
func (g *Gateway) runJSTool(desc string) *mcp.Tool {
	return &mcp.Tool{
		Name:        "run_js",
		Description: desc,
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"code":{"type":"string","description":"the program: the body of an async function"},
			"input":{"description":"any JSON, given to the program as the global input"},
			"timeout_ms":{"type":"integer","minimum":1,"description":"the run's deadline in milliseconds"},
			"memory_mb":{"type":"integer","minimum":1,"description":"the program's memory limit in MiB"},
			"yield_ms":{"type":"integer","minimum":1,"description":"return after this long (` + yieldBounds + `) with a scriptId if the program is still running; it goes on until its timeout"}},
			"required":["code"],"additionalProperties":false}`),
	}
}

// runJSDescription is run_js's description now: the API, the tools
// callable now, and the servers that are not ready (whose tools a program
// cannot call yet).
func (g *Gateway) runJSDescription() string {
	desc := runJSIntro + "\n\n" + g.toolList()
	var waiting []string
	for _, s := range g.Servers() {
		if s.State == StateStarting || s.State == StateUnavailable {
			waiting = append(waiting, s.Name+" ("+string(s.State)+")")
		}
	}
	if len(waiting) > 0 {
		desc += "\nNot ready now (server_info says why; their tools appear here when they are): " + strings.Join(waiting, ", ") + "."
	}
	return desc
}

// toolList is the part of run_js's description that names the tools.
func (g *Gateway) toolList() string {
	catalog := g.Catalog()
	if len(catalog) == 0 {
		return "No downstream tools are available; programs can still compute."
	}
	var b strings.Builder
	b.WriteString("Tools:\n")
	for i, t := range catalog {
		line := toolKey(t) + "\n"
		if b.Len()+len(line) > MaxToolsInDescription {
			fmt.Fprintf(&b, "... and %d more: use search_tools.\n", len(catalog)-i)
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

func textResult(isError bool, text string, structured any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured, IsError: isError}
}

// decodeArgs decodes a tool's arguments strictly into v.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (g *Gateway) handleRunJS(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Code      string          `json:"code"`
		Input     json.RawMessage `json:"input"`
		TimeoutMs int64           `json:"timeout_ms"`
		MemoryMB  int64           `json:"memory_mb"`
		YieldMs   int64           `json:"yield_ms"`
	}
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return textResult(true, "run_js: bad arguments: "+err.Error()+"; pass {code, input?, timeout_ms?, memory_mb?, yield_ms?}", nil), nil
	}
	if strings.TrimSpace(args.Code) == "" {
		return textResult(true, "run_js: code is empty; pass the program as code", nil), nil
	}
	if err := g.scripts.room(req.Session); err != nil {
		return textResult(true, "run_js: "+err.Error(), nil), nil
	}
	// The program does not run on the request's context: a cancelled or
	// finished request ends the wait, not the program (stop_js does that).
	r, err := g.Start(context.Background(), RunRequest{
		ID: newScriptID(), Code: args.Code, Input: args.Input,
		Timeout: time.Duration(args.TimeoutMs) * time.Millisecond, Memory: args.MemoryMB << 20,
	})
	if err != nil {
		if errors.Is(err, worker.ErrBadRequest) || errors.Is(err, ErrBusy) {
			return textResult(true, "run_js: "+err.Error(), nil), nil
		}
		return nil, err
	}
	sc := &script{run: r, started: time.Now()}
	if err := g.scripts.add(req.Session, sc); err != nil {
		r.Stop("refused: too many programs in this session")
		r.Wait()
		return textResult(true, "run_js: "+err.Error(), nil), nil
	}
	return g.waitForEnding(ctx, req, sc, yieldOf(args.YieldMs)), nil
}

func (g *Gateway) handleSearchTools(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Query  string   `json:"query"`
		Server string   `json:"server"`
		Names  []string `json:"names"`
	}
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return textResult(true, "search_tools: bad arguments: "+err.Error()+"; pass {query?, server?, names?}", nil), nil
	}
	catalog := g.Catalog()
	words := strings.Fields(strings.ToLower(args.Query))
	names := map[string]bool{}
	for _, n := range args.Names {
		names[n] = true
	}
	var found []wire.Tool
	for _, t := range catalog {
		if args.Server != "" && t.Server != args.Server {
			continue
		}
		if len(names) > 0 && !names[t.Name] && !names[t.Server+"."+t.Name] {
			continue
		}
		hay := strings.ToLower(t.Server + " " + t.Name + " " + t.Description)
		match := true
		for _, w := range words {
			if !strings.Contains(hay, w) {
				match = false
				break
			}
		}
		if match {
			found = append(found, t)
		}
	}
	var b strings.Builder
	if len(found) == 0 {
		b.WriteString("No tool matches.")
		if len(catalog) > 0 {
			fmt.Fprintf(&b, " %d tools exist; try fewer words or no server.", len(catalog))
		}
	}
	for i, t := range found {
		if i == MaxSearchResults {
			fmt.Fprintf(&b, "// ... and %d more: narrow the query.\n", len(found)-i)
			break
		}
		b.WriteString(TSDecl(t))
		b.WriteString("\n\n")
	}
	return textResult(false, strings.TrimRight(b.String(), "\n"), nil), nil
}

// serverInfoReport is what server_info reports.
type serverInfoReport struct {
	Version    string        `json:"version"`
	Limits     limitsReport  `json:"limits"`
	Servers    []ServerInfo  `json:"servers"`
	Tools      int           `json:"tools"`
	Unchecked  []toolProblem `json:"toolsWithoutArgumentValidation,omitempty"`
	Protection []protection  `json:"protections"`
	Warnings   []string      `json:"warnings,omitempty"`
}

// limitsReport is the limits in force.
type limitsReport struct {
	Run            wire.Limits `json:"run"`
	MaxTimeoutMs   int64       `json:"maxTimeoutMs"`
	MaxMemoryBytes int64       `json:"maxMemoryBytes"`
	MaxWorkerFrame int         `json:"maxWorkerFrame"`
	OutputChars    int         `json:"outputKeptChars"`
	StopGraceMs    int64       `json:"stopGraceMs"`
	SpareWorkers   int         `json:"spareWorkers"`
	MaxRunning     int         `json:"maxRunningPrograms"`
	PerSession     int         `json:"maxRunningPerSession"`
	KeptEndings    int         `json:"keptEndingsPerSession"`
	DefaultYieldMs int64       `json:"defaultYieldMs"`
	MaxYieldMs     int64       `json:"maxYieldMs"`
}

// toolProblem names a tool whose schema could not be compiled.
type toolProblem struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// protection says whether one protection is enforced.
type protection struct {
	Protection string `json:"protection"`
	Enforced   bool   `json:"enforced"`
	How        string `json:"how"`
}

// protections is what server_info claims, and only what is true of this
// build: no OS confinement is applied, and it says so.
var protections = []protection{
	{"tool allowlist", true, "a program reaches only the catalog's tools (allowTools), through the parent, which checks every call"},
	{"argument validation", true, "arguments are checked against each tool's inputSchema before sending (tools whose schema does not compile are listed)"},
	{"memory limit", true, "QuickJS heap limit per run"},
	{"deadline", true, "interrupt handler in the engine, and SIGKILL of the worker's process group after the grace"},
	{"fresh process per run", true, "each run gets a worker process nothing ran in before; empty environment, private directory, own process group, only its socket"},
	{"no host APIs", true, "no std/os modules, module loader, timers, file system or network inside the engine"},
	{"OS sandbox (seccomp, namespaces)", false, "not applied: the worker is a process of the host's user, so an engine escape reaches what that user can"},
}

func (g *Gateway) info() serverInfoReport {
	catalog, _, problems := g.catalogState()
	run, err := g.cfg.Limits.Normalize() // every field, not zero for "the default"
	if err != nil {
		run = g.cfg.Limits // not reached: the config was checked against the same bounds
	}
	in := serverInfoReport{
		Version: g.opts.Version,
		Limits: limitsReport{
			Run: run, MaxTimeoutMs: g.cfg.MaxTimeout.Milliseconds(), MaxMemoryBytes: g.cfg.MaxMemory,
			MaxWorkerFrame: wire.MaxWorkerFrame, OutputChars: wire.OutputHeadChars + wire.OutputTailChars,
			StopGraceMs: g.launcher.Grace().Milliseconds(), SpareWorkers: g.opts.Worker.Spares, MaxRunning: g.slots.max,
			PerSession: MaxRunningPerSession, KeptEndings: KeptEndingsPerSession,
			DefaultYieldMs: DefaultYield.Milliseconds(), MaxYieldMs: MaxYield.Milliseconds(),
		},
		Servers: g.Servers(), Tools: len(catalog), Protection: protections, Warnings: g.cfg.Warnings,
	}
	for _, p := range problems {
		in.Unchecked = append(in.Unchecked, toolProblem{Tool: p.Server + "." + p.Tool, Reason: p.Reason})
	}
	sort.Slice(in.Unchecked, func(i, j int) bool { return in.Unchecked[i].Tool < in.Unchecked[j].Tool })
	return in
}

func (g *Gateway) handleServerInfo(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in := g.info()
	b, _ := json.MarshalIndent(in, "", "  ")
	return textResult(false, string(b), in), nil
}
