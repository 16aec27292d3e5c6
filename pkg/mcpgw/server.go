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
	// MaxSearchResults: search_tools returns at most this many declarations
	// (its limit argument's most); an agent reads them all.
	MaxSearchResults = 50
	// DefaultSearchResults: search_tools' limit when the call gives none;
	// the best few matches are what an agent needs to write a call.
	DefaultSearchResults = 10
	// maxSearchQueryBytes bounds a search query: words, not a document.
	maxSearchQueryBytes = 1000
	// maxNameBytes bounds a tool name or script id an agent sends.
	maxNameBytes = 1000
)

// errorStatuses are the endings that set isError on run_js's result.
var errorStatuses = map[wire.Status]bool{
	wire.StatusThrew: true, wire.StatusStalled: true, wire.StatusTimedOut: true,
	wire.StatusOutOfMemory: true, wire.StatusCrashed: true,
}

// serverInstructions tells an agent, at initialization, how to use code
// mode: three sentences.
const serverInstructions = "This server runs code: instead of calling tools one at a time, write one JavaScript or TypeScript program " +
	"that calls them with await tools.SERVER.TOOL(args), combines their results, and returns only what you need, and send it to run_js. " +
	"Find tools and their exact TypeScript declarations (arguments and result types) with search_tools before you write the program, " +
	"and see the limits in force with server_info. " +
	"A program still running after yield_ms comes back with a scriptId: wait_js waits for its ending, stop_js stops it, and list_js lists them."

// runJSIntro teaches the API at the top of run_js's description. Its numbers
// are the limits' own.
var runJSIntro = `Run a JavaScript or TypeScript program that calls the downstream MCP tools as async functions, and get back only what it returns.

The code is the body of an async function: use await at top level; ` + "`return`" + ` gives the result (as JSON).
- await tools.SERVER.TOOL(args) calls a tool (tools["my-server"]["my-tool"](args) when a name is not an identifier) and gives {content, structuredContent, isError}; structuredContent is null when the tool gave none.
- Calls run concurrently with Promise.all (at most ` + strconv.Itoa(wire.DefaultMaxInFlight) + ` in flight; more wait, never refused for it).
- A refused call (unknown tool, invalid arguments, server unavailable, lane full) throws ToolRefused: nothing was sent, safe to retry. A call that was sent but gave no usable answer throws ToolFailed (mayHaveRun: true).
- ALL_TOOLS lists every tool with its schemas; input is the run's input; console.log/print write output (head and tail kept).
- No file system, network, timers or modules: only the tools.
- TypeScript: pass language: "typescript"; types are stripped, not checked, and errors point to the TypeScript's lines.
- A program still running after yield_ms (default ` + DefaultYield.String() + `) returns a scriptId and goes on; wait_js, stop_js and list_js reach it.
- The answer starts with the ending and the call counts; every line the program wrote or returned (value, error, stack, output) starts with "` + worker.ProgramLinePrefix + `", and the gateway's own lines never do.
Use search_tools for exact argument and result types (TypeScript declarations a program may begin with).`

// ownTool is one of the gateway's tools: what the agent is shown, its
// arguments (from which its inputSchema is made), and its handler, which
// gets the arguments checked.
type ownTool struct {
	name, description string
	annotations       *mcp.ToolAnnotations
	args              []argSpec
	handle            func(context.Context, *mcp.CallToolRequest, toolArgs) (*mcp.CallToolResult, error)
}

// NewServer returns the MCP server an agent talks to over the gateway, with
// six tools: run_js, wait_js, stop_js and list_js (programs, scripts.go),
// search_tools and server_info, and instructions on code mode.
func NewServer(g *Gateway) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "run-js-server", Version: g.opts.Version}, &mcp.ServerOptions{Instructions: serverInstructions})
	search := &searchCache{}
	desc := g.runJSDescription()
	for _, t := range g.ownTools(search, desc) {
		addOwnTool(s, t)
	}
	g.watch.add(s, desc) // run_js is given anew when the tools change (catalogwatch.go)
	return s
}

// addOwnTool adds one of our tools to s: its schema and its argument check
// come from one table (toolargs.go). Adding a tool s already has replaces it.
func addOwnTool(s *mcp.Server, t ownTool) {
	s.AddTool(&mcp.Tool{Name: t.name, Description: t.description, Annotations: t.annotations, InputSchema: inputSchema(t.args)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args, err := checkArgs(t.name, t.args, req.Params.Arguments)
			if err != nil {
				return textResult(true, err.Error(), nil), nil
			}
			return t.handle(ctx, req, args)
		})
}

// ownTools are the six tools, their arguments from the limits in force;
// runJSDesc is run_js's description (runJSDescription).
func (g *Gateway) ownTools(search *searchCache, runJSDesc string) []ownTool {
	yes, no := true, false
	scriptID := argSpec{name: "scriptId", kind: argString, required: true, nonEmpty: true, maxBytes: maxNameBytes,
		doc: "the scriptId run_js returned"}
	return []ownTool{
		g.runJSTool(runJSDesc),
		{
			name:        "search_tools",
			description: "Find downstream tools, best match first, and get their TypeScript declarations (exact names, argument and result types) for use in run_js. The answer is TypeScript a program may begin with.",
			annotations: &mcp.ToolAnnotations{Title: "Search tools", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
			args: []argSpec{
				{name: "query", kind: argString, maxBytes: maxSearchQueryBytes, doc: "words to look for in tool names, descriptions and parameter names; ranked by relevance"},
				{name: "server", kind: argString, maxBytes: maxNameBytes, doc: "only this server's tools"},
				{name: "names", kind: argStringList, maxItems: MaxSearchResults, maxBytes: maxNameBytes, doc: "exact tool names, as tool or server.tool; unknown ones are reported"},
				{name: "limit", kind: argInteger, min: 1, max: MaxSearchResults, def: DefaultSearchResults, doc: "how many tools to return at most"},
			},
			handle: func(ctx context.Context, req *mcp.CallToolRequest, a toolArgs) (*mcp.CallToolResult, error) {
				return g.handleSearchTools(search, a), nil
			},
		},
		{
			name:        "wait_js",
			description: "Wait for a program that run_js left running: returns its ending, or after yield_ms its output since the last return and its calls so far.",
			// It changes nothing outside; each piece of output is returned once.
			annotations: &mcp.ToolAnnotations{Title: "Wait for a program", ReadOnlyHint: true, OpenWorldHint: &no},
			args:        []argSpec{scriptID, g.yieldArg()}, handle: g.handleWaitJS,
		},
		{
			name:        "stop_js",
			description: "Stop a program that run_js left running, and get its ending (its calls still in flight are named).",
			annotations: &mcp.ToolAnnotations{Title: "Stop a program", DestructiveHint: &yes, IdempotentHint: true, OpenWorldHint: &no},
			args:        []argSpec{scriptID}, handle: g.handleStopJS,
		},
		{
			name:        "list_js",
			description: "List this session's programs: id, state, age, calls made, and the start of a failure.",
			annotations: &mcp.ToolAnnotations{Title: "List programs", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
			handle:      g.handleListJS,
		},
		{
			name:        "server_info",
			description: "The gateway's version, the limits in force, downstream servers with their state and lanes, and which protections are enforced.",
			annotations: &mcp.ToolAnnotations{Title: "Server info", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
			handle:      g.handleServerInfo,
		},
	}
}

// runJSTool is run_js with the description desc (runJSDescription), which
// names the tools callable now.
func (g *Gateway) runJSTool(desc string) ownTool {
	yes := true
	return ownTool{
		name: "run_js", description: desc,
		// It calls any downstream tool: it may change and reach anything they do.
		annotations: &mcp.ToolAnnotations{Title: "Run a program", DestructiveHint: &yes, OpenWorldHint: &yes},
		args:        g.runJSArgs(), handle: g.handleRunJS,
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

// runJSArgs are run_js's arguments, with the ranges of this gateway's
// config (whose maxima may be below the limits' own).
func (g *Gateway) runJSArgs() []argSpec {
	run := g.runLimits()
	langs := make([]string, len(Languages))
	for i, l := range Languages {
		langs[i] = string(l)
	}
	return []argSpec{
		{name: "code", kind: argString, required: true, nonEmpty: true, maxBytes: wire.MaxCodeBytes,
			doc: "the program: the body of an async function (await at top level; return gives the result)"},
		{name: "language", kind: argString, enum: langs,
			doc: "the program's language: typescript has its types stripped (not checked) first; default javascript"},
		{name: "input", kind: argAny, maxBytes: wire.MaxInputBytes, doc: "any JSON, given to the program as the global input"},
		{name: "timeout_ms", kind: argInteger, unit: "ms", human: humanMs,
			min: wire.MinTimeout.Milliseconds(), max: g.cfg.MaxTimeout.Milliseconds(), def: run.TimeoutMs,
			doc: "the run's deadline in milliseconds"},
		{name: "memory_mb", kind: argInteger, unit: "MiB", human: humanMiB,
			min: (wire.MinMemory + 1<<20 - 1) >> 20, max: g.cfg.MaxMemory >> 20, def: run.MemoryBytes >> 20,
			doc: "the program's memory limit in MiB"},
		g.yieldArg(),
	}
}

// yieldArg is yield_ms, of run_js and wait_js.
func (g *Gateway) yieldArg() argSpec {
	return argSpec{name: "yield_ms", kind: argInteger, unit: "ms", human: humanMs,
		min: MinYield.Milliseconds(), max: MaxYield.Milliseconds(), def: DefaultYield.Milliseconds(),
		doc: "return after this long with a scriptId if the program is still running (it goes on until its timeout)"}
}

// runLimits are the run limits in force: the config's, every field filled.
func (g *Gateway) runLimits() wire.Limits {
	run, err := g.cfg.Limits.Normalize()
	if err != nil {
		return g.cfg.Limits // not reached: the config was checked against the same bounds
	}
	return run
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

func (g *Gateway) handleRunJS(ctx context.Context, req *mcp.CallToolRequest, args toolArgs) (*mcp.CallToolResult, error) {
	code := args.str("code")
	lang, err := ParseLanguage(args.str("language"))
	if err != nil {
		return textResult(true, "run_js: "+err.Error(), nil), nil // not reached: checked against the enum
	}
	id := newScriptID()
	var ts *TSProgram
	if lang == TypeScript {
		var syntax *TSSyntaxError
		ts, err = CompileTS(code)
		switch {
		case errors.As(err, &syntax):
			e := syntax.Ending(id)
			return textResult(true, e.Text(), e), nil
		case err != nil:
			return textResult(true, "run_js: "+err.Error(), nil), nil
		}
		code = ts.JS
	}
	if err := g.scripts.room(req.Session); err != nil {
		return textResult(true, "run_js: "+err.Error(), nil), nil
	}
	// The program does not run on the request's context: a cancelled or
	// finished request ends the wait, not the program (stop_js does that).
	r, err := g.Start(context.Background(), RunRequest{
		ID: id, Code: code, Input: args["input"],
		Timeout: time.Duration(args.integer("timeout_ms", 0)) * time.Millisecond, Memory: args.integer("memory_mb", 0) << 20,
	})
	if err != nil {
		if errors.Is(err, worker.ErrBadRequest) || errors.Is(err, ErrBusy) {
			return textResult(true, "run_js: "+err.Error(), nil), nil
		}
		return nil, err
	}
	sc := &script{run: r, started: time.Now(), ts: ts}
	if ts == nil {
		sc.source = code
	}
	if err := g.scripts.add(req.Session, sc); err != nil {
		r.Stop("refused: too many programs in this session")
		r.Wait()
		return textResult(true, "run_js: "+err.Error(), nil), nil
	}
	return g.waitForEnding(ctx, req, sc, yieldOf(args)), nil
}

// serverInfoReport is what server_info reports.
type serverInfoReport struct {
	Version    string        `json:"version"`
	Limits     limitsReport  `json:"limits"`
	Servers    []ServerInfo  `json:"servers"` // each with its lane's caps in force
	Tools      int           `json:"tools"`
	Unchecked  []toolProblem `json:"toolsWithoutArgumentValidation,omitempty"`
	Protection []protection  `json:"protections"`
	// BreachesAfterEnding counts the rules workers broke after their run's
	// ending had been given (a frame after the end frame): logged, counted
	// here, and the worker killed; the ending stands.
	BreachesAfterEnding int64    `json:"workerBreachesAfterEnding"`
	Warnings            []string `json:"warnings,omitempty"`
}

// limitsReport is the limits in force, each as a number in the unit its
// name says: a run's (every field filled), the ranges run_js accepts, and
// the gateway's caps.
type limitsReport struct {
	Run            wire.Limits `json:"run"`
	MinTimeoutMs   int64       `json:"minTimeoutMs"`
	MaxTimeoutMs   int64       `json:"maxTimeoutMs"`
	MinMemoryBytes int64       `json:"minMemoryBytes"`
	MaxMemoryBytes int64       `json:"maxMemoryBytes"`
	MaxCodeBytes   int         `json:"maxCodeBytes"`
	MaxInputBytes  int         `json:"maxInputBytes"`
	MaxErrorChars  int         `json:"maxErrorChars"`
	MaxWorkerFrame int         `json:"maxWorkerFrame"`
	OutputChars    int         `json:"outputKeptChars"`
	OutputHead     int         `json:"outputHeadChars"`
	OutputTail     int         `json:"outputTailChars"`
	UnseenListed   int         `json:"maxUnseenCallsListed"`
	LedgerArgChars int         `json:"maxLedgerArgChars"`
	StopGraceMs    int64       `json:"stopGraceMs"`
	Confinement    string      `json:"confinement"`
	SpareWorkers   int         `json:"spareWorkers"`
	MaxRunning     int         `json:"maxRunningPrograms"`
	PerSession     int         `json:"maxRunningPerSession"`
	KeptEndings    int         `json:"keptEndingsPerSession"`
	MinYieldMs     int64       `json:"minYieldMs"`
	DefaultYieldMs int64       `json:"defaultYieldMs"`
	MaxYieldMs     int64       `json:"maxYieldMs"`
	StartMs        int64       `json:"startTimeoutMs"`
	ToolsPerServer int         `json:"maxToolsPerServer"`
	SearchResults  int         `json:"maxSearchResults"`
	SearchDefault  int         `json:"defaultSearchResults"`
	DeclBytes      int         `json:"maxDeclarationBytes"`
	// HTTP is serving over Streamable HTTP's limits; absent on stdio.
	HTTP *httpLimitsReport `json:"http,omitempty"`
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

// engineProtections are what the gateway and the engine enforce on every
// host: true of this build by construction.
var engineProtections = []protection{
	{"tool allowlist", true, "a program reaches only the catalog's tools (allowTools), through the parent, which checks every call"},
	{"argument validation", true, "arguments are checked against each tool's inputSchema before sending (tools whose schema does not compile are listed)"},
	{"memory limit", true, "QuickJS heap limit per run"},
	{"deadline", true, "interrupt handler in the engine, and SIGKILL of the worker's process group after the grace"},
	{"fresh process per run", true, "each run gets a worker process nothing ran in before; empty environment, private directory, own process group, only its socket"},
	{"no host APIs", true, "no std/os modules, module loader, timers, file system or network inside the engine"},
}

// protections is engineProtections followed by one line per layer of OS
// confinement, each enforced only as the workers reported it (never from
// the setting alone): "OS: seccomp", "OS: landlock", ...
func (g *Gateway) protections() []protection {
	out := append([]protection(nil), engineProtections...)
	for _, p := range g.launcher.Protections() {
		out = append(out, protection{Protection: "OS: " + p.Name, Enforced: p.Enforced, How: p.How})
	}
	return out
}

func (g *Gateway) info() serverInfoReport {
	catalog, _, problems := g.catalogState()
	in := serverInfoReport{
		Version: g.opts.Version,
		Limits: limitsReport{
			Run:          g.runLimits(), // every field, not zero for "the default"
			MinTimeoutMs: wire.MinTimeout.Milliseconds(), MaxTimeoutMs: g.cfg.MaxTimeout.Milliseconds(),
			MinMemoryBytes: wire.MinMemory, MaxMemoryBytes: g.cfg.MaxMemory,
			MaxCodeBytes: wire.MaxCodeBytes, MaxInputBytes: wire.MaxInputBytes, MaxErrorChars: wire.MaxErrorChars,
			MaxWorkerFrame: wire.MaxWorkerFrame, OutputChars: wire.OutputHeadChars + wire.OutputTailChars,
			OutputHead: wire.OutputHeadChars, OutputTail: wire.OutputTailChars,
			UnseenListed: worker.MaxUnseenListed, LedgerArgChars: worker.MaxLedgerArgChars,
			StopGraceMs: g.launcher.Grace().Milliseconds(), Confinement: g.opts.Worker.Confinement.String(), SpareWorkers: g.opts.Worker.Spares, MaxRunning: g.slots.max,
			PerSession: MaxRunningPerSession, KeptEndings: KeptEndingsPerSession,
			MinYieldMs: MinYield.Milliseconds(), DefaultYieldMs: DefaultYield.Milliseconds(), MaxYieldMs: MaxYield.Milliseconds(),
			StartMs: g.cfg.StartTimeout.Milliseconds(), ToolsPerServer: MaxToolsPerServer,
			SearchResults: MaxSearchResults, SearchDefault: DefaultSearchResults, DeclBytes: MaxTSDeclBytes,
			HTTP: g.httpLimits.Load(),
		},
		Servers: g.Servers(), Tools: len(catalog), Protection: g.protections(), Warnings: g.cfg.Warnings,
		BreachesAfterEnding: g.launcher.BreachesAfterEnding(),
	}
	for _, p := range problems {
		in.Unchecked = append(in.Unchecked, toolProblem{Tool: p.Server + "." + p.Tool, Reason: p.Reason})
	}
	sort.Slice(in.Unchecked, func(i, j int) bool { return in.Unchecked[i].Tool < in.Unchecked[j].Tool })
	return in
}

func (g *Gateway) handleServerInfo(context.Context, *mcp.CallToolRequest, toolArgs) (*mcp.CallToolResult, error) {
	in := g.info()
	b, _ := json.MarshalIndent(in, "", "  ")
	return textResult(false, string(b), in), nil
}
