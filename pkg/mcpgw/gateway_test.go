// The test binary doubles as a worker (--worker-fd) and as downstream MCP
// servers over stdio (--downstream MODE): the demo tracker, and servers that
// hang, crash, flood or lie.

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "--worker-fd" {
		worker.ChildMain(worker.WorkerFD)
	}
	if len(os.Args) >= 3 && os.Args[1] == "--downstream" {
		downstreamMode(os.Args[2])
		os.Exit(0)
	}
	if len(os.Args) >= 2 && os.Args[1] == "--lingering-worker" {
		lingeringWorker()
	}
	os.Exit(m.Run())
}

// lingeringWorker is a worker that ends its run at once and then does not
// exit: its process is still there, being reaped, after its ending was
// given, until the grace runs out and the parent kills it.
func lingeringWorker() {
	f := os.NewFile(worker.WorkerFD, "parent")
	if wire.WriteFrame(f, wire.TypeHello, wire.Hello{Protocol: wire.ProtocolVersion, PID: os.Getpid()}, nil) != nil {
		os.Exit(9)
	}
	r := wire.NewReader(f, wire.MaxStartFrame)
	var start wire.Start
	for {
		fr, err := r.Next()
		if err != nil {
			os.Exit(8)
		}
		if fr.Type == wire.TypeStart && fr.Decode(&start) == nil {
			break
		}
	}
	if wire.WriteFrame(f, wire.TypeEnd, wire.End{RunID: start.RunID, Status: wire.StatusReturned}, []byte("1")) != nil {
		os.Exit(9)
	}
	time.Sleep(time.Hour)
	os.Exit(0)
}

// TestRunningCapCountsWorkersBeingReaped: the ending is given at the end
// frame, before the worker is reaped; a worker still exiting counts against
// the cap of running programs, and a run that finds the cap reached only by
// such workers waits for one to be reaped instead of being refused. So
// never more workers of runs exist than the cap.
func TestRunningCapCountsWorkersBeingReaped(t *testing.T) {
	cfg, err := ParseConfig("test", []byte(`{"mcpServers": {}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{Version: "test", Log: slog.New(slog.DiscardHandler),
		Worker: worker.Config{Command: []string{os.Args[0], "--lingering-worker"}, Confinement: worker.ConfineOff, Grace: 400 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	g.slots.max = 1
	a, err := g.Start(context.Background(), RunRequest{Code: "return 1"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the first run's ending was not given within 20 s of its end frame")
	}
	if e := a.Ending(); e.Status != wire.StatusReturned {
		t.Fatalf("first run: %s", e.Text())
	}
	b, err := g.Start(context.Background(), RunRequest{Code: "return 2"})
	if err != nil {
		t.Fatalf("a run at the cap reached only by a worker being reaped was refused: %v", err)
	}
	select {
	case <-a.Reaped():
	default:
		t.Fatal("the second run's worker was started while the first's still existed: more workers than the cap")
	}
	if err := syscall.Kill(a.PID(), 0); err == nil {
		t.Fatalf("the first worker (pid %d) still exists after it was reaped", a.PID())
	}
	select {
	case <-b.Reaped():
	case <-time.After(20 * time.Second):
		t.Fatal("the second run's worker was not reaped within 20 s")
	}
}

// downstreamMode serves one test downstream on stdio.
func downstreamMode(mode string) {
	ctx := context.Background()
	switch mode {
	case "demo":
		_ = NewDemoServer("test").Run(ctx, &mcp.StdioTransport{})
	case "garbage":
		fmt.Println("this is not JSON-RPC")
		time.Sleep(time.Minute)
	case "misbehaving":
		s := mcp.NewServer(&mcp.Implementation{Name: "misbehaving", Version: "test"}, nil)
		var raw func(name string, h func() (*mcp.CallToolResult, error))
		raw = func(name string, h func() (*mcp.CallToolResult, error)) {
			s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return h()
			})
		}
		raw("hang", func() (*mcp.CallToolResult, error) { time.Sleep(time.Hour); return nil, nil })
		raw("crash", func() (*mcp.CallToolResult, error) { os.Exit(3); return nil, nil })
		raw("huge", func() (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 50<<20)}}}, nil
		})
		raw("image", func() (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///r.txt", MIMEType: "text/plain", Text: "hello"}},
			}}, nil
		})
		raw("grow", func() (*mcp.CallToolResult, error) {
			// A new tool: the SDK tells clients with notifications/tools/list_changed.
			raw("grown", func() (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new"}}}, nil
			})
			return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
		})
		raw("tool_error", func() (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}, IsError: true}, nil
		})
		_ = s.Run(ctx, &mcp.StdioTransport{})
	case "many-tools":
		s := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "test"}, nil)
		for i := 0; i < 5000; i++ {
			s.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%04d", i), Description: fmt.Sprintf("Tool number %d.", i),
				InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
				})
		}
		_ = s.Run(ctx, &mcp.StdioTransport{})
	case "people":
		peopleServer(ctx)
	case "stubborn":
		// Ignores SIGTERM, has a child in its group, and outlives its stdin.
		signal.Ignore(syscall.SIGTERM, syscall.SIGPIPE)
		child := exec.Command("sleep", "1000")
		_ = child.Start()
		fmt.Fprintf(os.Stderr, "child pid %d\n", child.Process.Pid)
		_ = NewDemoServer("test").Run(ctx, &mcp.StdioTransport{})
		time.Sleep(time.Hour)
	case "exit-message":
		// What a server missing its token does: a message on stderr, exit 1.
		fmt.Fprintln(os.Stderr, "Starting GitHub MCP server...")
		fmt.Fprintln(os.Stderr, "Error: GITHUB_PERSONAL_ACCESS_TOKEN not set (got "+os.Getenv("TOKEN")+")")
		os.Exit(1)
	default:
		fmt.Fprintf(os.Stderr, "unknown downstream mode %q\n", mode)
		os.Exit(2)
	}
}

// peopleServer behaves as servers people run do (downstream_people_test.go
// has the tests): it waits for $GATE to exist before it speaks (a slow npx),
// exits at start with a message while $FAIL exists, prints a banner and a
// JSON log line on stdout before speaking JSON-RPC, and has tools that print
// stray lines, show its environment and record the order calls arrive in.
func peopleServer(ctx context.Context) {
	if gate := os.Getenv("GATE"); gate != "" {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(gate); err == nil {
				break
			}
		}
	}
	if fail := os.Getenv("FAIL"); fail != "" {
		if _, err := os.Stat(fail); err == nil {
			fmt.Fprintln(os.Stderr, "Error: cannot reach the database (port 5432)")
			os.Exit(2)
		}
	}
	fmt.Println("Starting people server v1.2.3 on stdio...")
	fmt.Println(`{"level":"info","msg":"listening"}`)
	s := mcp.NewServer(&mcp.Implementation{Name: "people", Version: "test"}, nil)
	tool := func(name string, h func(args map[string]any) (*mcp.CallToolResult, error)) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return h(args)
		})
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	var mu sync.Mutex
	var order []any
	tool("echo", func(args map[string]any) (*mcp.CallToolResult, error) { return text(fmt.Sprint(args["s"])), nil })
	tool("stray", func(map[string]any) (*mcp.CallToolResult, error) {
		for _, l := range []string{
			"progress: 50%",                             // not JSON
			`{"jsonrpc":"2.0","id":`,                    // truncated JSON
			`{"hello":"world"}`,                         // JSON, not JSON-RPC
			`{"jsonrpc":"2.0","id":987654,"result":{}}`, // an answer to nothing
		} {
			fmt.Println(l)
		}
		return text("after the strays"), nil
	})
	tool("env", func(map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"env": os.Environ()}}, nil
	})
	tool("record", func(args map[string]any) (*mcp.CallToolResult, error) {
		mu.Lock()
		order = append(order, args["i"])
		mu.Unlock()
		return text("ok"), nil
	})
	tool("recorded", func(map[string]any) (*mcp.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		r := &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"order": order}}
		order = nil
		return r, nil
	})
	_ = s.Run(ctx, &mcp.StdioTransport{})
}

// testServer is a stdio server config running this binary in a mode.
func testServer(name, mode string) ServerConfig {
	return ServerConfig{Name: name, Transport: TransportStdio, Command: os.Args[0], Args: []string{"--downstream", mode}}
}

// newTestGateway builds and connects a gateway whose workers are this binary.
func newTestGateway(t *testing.T, servers ...ServerConfig) *Gateway {
	t.Helper()
	cfg, err := ParseConfig("test", []byte(`{"mcpServers": {}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers = servers
	g, err := New(cfg, Options{Version: "test", Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Worker: worker.Config{Command: []string{os.Args[0], "--worker-fd", "3"}, Grace: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.Connect(ctx)
	g.Settle(ctx) // these tests want each server's first attempt over
	return g
}

func run(t *testing.T, g *Gateway, code string, timeout time.Duration) *worker.Ending {
	t.Helper()
	e, err := g.Run(context.Background(), RunRequest{Code: code, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func wantStatus(t *testing.T, e *worker.Ending, s wire.Status) {
	t.Helper()
	if e.Status != s {
		b, _ := json.MarshalIndent(e, "", "  ")
		t.Fatalf("status %s, want %s:\n%s", e.Status, s, b)
	}
}

// TestProgramOverDemoServer runs a program that fans out over the demo
// tracker through real MCP stdio traffic.
func TestProgramOverDemoServer(t *testing.T) {
	g := newTestGateway(t, testServer("demo", "demo"))
	e := run(t, g, `
		const {structuredContent: list} = await tools.demo.list_issues({label: 'bug'})
		const details = await Promise.all(list.issues.map(i => tools.demo.get_issue({id: i.id})))
		const busiest = details.map(d => d.structuredContent).map(d => ({id: d.issue.id, comments: d.comments.length})).sort((a, b) => b.comments - a.comments)[0]
		console.log('open bugs:', list.total)
		return {bugs: list.total, busiest}`, 0)
	wantStatus(t, e, wire.StatusReturned)
	var v struct {
		Bugs    int `json:"bugs"`
		Busiest struct{ ID, Comments int }
	}
	if err := json.Unmarshal(e.Value, &v); err != nil || v.Bugs != 6 || v.Busiest.ID == 0 {
		t.Fatalf("value %s (%v)", e.Value, err)
	}
	if e.Calls.Total != 7 || e.Calls.Answered != 7 || e.Calls.ByTool["demo.get_issue"] != 6 {
		t.Fatalf("ledger %+v", e.Calls)
	}
}

// TestInvalidArgumentsAreRefusedWithPaths: the schema check happens before
// anything is sent, and names the path in the arguments.
func TestInvalidArgumentsAreRefusedWithPaths(t *testing.T) {
	g := newTestGateway(t, testServer("demo", "demo"))
	e := run(t, g, `
		const out = []
		try { await tools.demo.add_comment({id: 'one', body: 'x'}) } catch (e) { out.push([e.name, e.code, e.message]) }
		const after = await tools.demo.get_issue({id: 101})
		out.push(after.structuredContent.comments.length)
		return out`, 0)
	wantStatus(t, e, wire.StatusReturned)
	var out []any
	_ = json.Unmarshal(e.Value, &out)
	if len(out) != 2 {
		t.Fatalf("value %s", e.Value)
	}
	first := out[0].([]any)
	if first[0] != "ToolRefused" || first[1] != "invalid_arguments" || !strings.Contains(first[2].(string), "/id") {
		t.Fatalf("refusal %v", first)
	}
	if out[1].(float64) != 0 {
		t.Fatalf("the refused comment reached the server: issue 101 has %v comments", out[1])
	}
}

// TestMisbehavingDownstream: a server that hangs, crashes mid-call, floods
// or errors costs only its own calls, each with a clear outcome.
func TestMisbehavingDownstream(t *testing.T) {
	bad := testServer("bad", "misbehaving")
	bad.CallTimeout = 300 * time.Millisecond
	junk := testServer("junk", "garbage") // a stray line, then silence
	junk.StartTimeout = 2 * time.Second
	g := newTestGateway(t, bad, testServer("big", "misbehaving"), testServer("demo", "demo"), junk)
	e := run(t, g, `
		const out = {}
		const note = async (k, f) => { try { const r = await f(); out[k] = ['ok', r.isError, r.content.map(c => c.type)] } catch (e) { out[k] = [e.name, e.code, e.mayHaveRun] } }
		await note('hang', () => tools.bad.hang({}))
		await note('huge', () => tools.big.huge({}))
		await note('image', () => tools.bad.image({}))
		await note('tool_error', () => tools.bad.tool_error({}))
		await note('crash', () => tools.bad.crash({}))
		await note('after_crash', () => tools.bad.image({}))
		await note('demo', () => tools.demo.list_issues({}))
		return out`, 90*time.Second) // the 50 MiB answer is slow to make and check under -race
	wantStatus(t, e, wire.StatusReturned)
	var out map[string][]any
	if err := json.Unmarshal(e.Value, &out); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"hang":        `["ToolFailed","timeout",true]`,
		"huge":        `["ToolFailed","result_too_large",true]`,
		"image":       `["ok",false,["image","resource"]]`,
		"tool_error":  `["ok",true,["text"]]`,
		"crash":       `["ToolFailed","call_failed",true]`,
		"after_crash": `["ok",false,["image","resource"]]`,
		"demo":        `["ok",false,["text"]]`,
	}
	for k, w := range want {
		got, _ := json.Marshal(out[k])
		if string(got) != w {
			t.Errorf("%s: got %s, want %s", k, got, w)
		}
	}
	// The garbage server's line was skipped, and it never answered: it is
	// unavailable (or trying again), with the reason.
	for _, s := range g.Servers() {
		if s.Name == "junk" && (s.State == StateReady || !strings.Contains(s.Reason, "did not answer initialize within 2s") || s.SkippedLines == 0) {
			t.Errorf("junk server: %+v", s)
		}
	}
}

// TestLaneLimits: a fan-out past the lane's outstanding cap is refused
// (lane_full), never queued without bound.
func TestLaneLimits(t *testing.T) {
	bad := testServer("bad", "misbehaving")
	bad.Lane.MaxActive, bad.Lane.MaxOutstanding = 2, 4
	bad.CallTimeout = 500 * time.Millisecond
	g := newTestGateway(t, bad)
	e := run(t, g, `
		const r = await Promise.allSettled(Array.from({length: 10}, () => tools.bad.hang({})))
		const codes = {}
		for (const x of r) { const c = x.reason.code; codes[c] = (codes[c] || 0) + 1 }
		return codes`, 20*time.Second)
	wantStatus(t, e, wire.StatusReturned)
	var codes map[string]int
	_ = json.Unmarshal(e.Value, &codes)
	if codes["lane_full"] != 6 || codes["timeout"] != 4 {
		t.Fatalf("codes %v: want 4 sent (2 active, 2 queued) and 6 refused lane_full", codes)
	}
	// The two queued calls waited for the first two's 500 ms timeouts, and
	// their own timeouts started only when they left the queue.
	if e.Calls.QueuedMs < 2*400 {
		t.Fatalf("calls queued %d ms in all; want the two queued calls' waits (about 1000 ms)", e.Calls.QueuedMs)
	}
}

// TestManyTools: 5,000 tools list (paginated), search and stay callable;
// run_js's description stays bounded.
func TestManyTools(t *testing.T) {
	g := newTestGateway(t, testServer("many", "many-tools"))
	catalog := g.Catalog()
	if len(catalog) != 5000 {
		t.Fatalf("catalog has %d tools, want 5000", len(catalog))
	}
	if d := g.toolList(); len(d) > MaxToolsInDescription+200 || !strings.Contains(d, "search_tools") {
		t.Fatalf("description of %d bytes, not bounded or not pointing to search_tools", len(d))
	}
	e := run(t, g, `return (await tools.many.tool_4999({n: 1})).content[0].text`, 0)
	wantStatus(t, e, wire.StatusReturned)
}

// TestMCPServerEndToEnd talks to the gateway as an agent would, through the
// go-sdk client.
func TestMCPServerEndToEnd(t *testing.T) {
	g := newTestGateway(t, testServer("demo", "demo"))
	ctx := context.Background()
	cs := mcpClient(t, g)

	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.Name == "run_js" && !strings.Contains(tool.Description, "tools.demo.list_issues") {
			t.Errorf("run_js description does not list the tools:\n%s", tool.Description)
		}
	}
	if strings.Join(names, ",") != "list_js,run_js,search_tools,server_info,stop_js,wait_js" {
		t.Fatalf("tools %v", names)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{
		"code": `const r = await tools.demo.get_issue({id: input.id}); console.log(r.structuredContent.issue.title); return r.structuredContent.issue.state`, "input": map[string]any{"id": 102}}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError || !strings.HasPrefix(text, "returned") || !strings.Contains(text, `"open"`) {
		t.Fatalf("run_js result (isError %v):\n%s", res.IsError, text)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(sc), `"status":"returned"`) || !strings.Contains(string(sc), `"demo.get_issue":1`) {
		t.Fatalf("structuredContent %s", sc)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"code": `throw new TypeError('nope')`}})
	if err != nil || !res.IsError {
		t.Fatalf("a throwing program: err %v, isError %v", err, res != nil && res.IsError)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "comment"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "add_comment") || strings.Contains(text, "list_issues") {
		t.Fatalf("search_tools:\n%s", text)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "server_info"})
	if err != nil {
		t.Fatal(err)
	}
	var info serverInfoReport
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &info); err != nil || len(info.Servers) != 1 || info.Servers[0].State != StateReady || info.Tools != 3 {
		t.Fatalf("server_info %s (%v)", b, err)
	}
	// The OS layers are what the workers reported (a program has run), one
	// line each, never the setting alone.
	reported := map[string]worker.Protection{}
	for _, p := range g.launcher.Protections() {
		reported["OS: "+p.Name] = p
	}
	osLines := 0
	for _, p := range info.Protection {
		w, ok := reported[p.Protection]
		if !strings.HasPrefix(p.Protection, "OS: ") {
			continue
		}
		osLines++
		if !ok || w.Enforced != p.Enforced || w.How != p.How || strings.Contains(p.How, "no worker has reported") {
			t.Errorf("server_info protection %+v; the workers reported %+v", p, w)
		}
	}
	if osLines != len(wire.Layers) || info.Limits.Confinement != worker.ConfineBestEffort.String() {
		t.Errorf("server_info lists %d OS layers (want %d) with confinement %q", osLines, len(wire.Layers), info.Limits.Confinement)
	}
	// Every run limit is reported as in force, none as 0 for "the default".
	if l := info.Limits.Run; l.StackBytes != wire.DefaultStack || l.MaxInFlight != wire.DefaultMaxInFlight || l.MaxJSONDepth != wire.DefaultMaxJSONDepth ||
		l.MaxResultBytes != l.MemoryBytes/wire.ResultMemoryShare || l.MaxArgValues != wire.DefaultMaxArgValues || info.Limits.StopGraceMs <= 0 || info.Limits.MaxRunning != MaxRunningPrograms {
		t.Fatalf("server_info limits %+v", info.Limits)
	}
}

// TestReconnectAfterExit: a stdio server that dies is reconnected on a later
// call.
func TestReconnectAfterExit(t *testing.T) {
	g := newTestGateway(t, testServer("bad", "misbehaving"))
	e := run(t, g, `try { await tools.bad.crash({}) } catch (e) {} return (await tools.bad.tool_error({})).isError`, 20*time.Second)
	wantStatus(t, e, wire.StatusReturned)
	if string(e.Value) != "true" {
		t.Fatalf("after the crash the next call got %s", e.Value)
	}
	var sessions atomic.Int32
	for _, s := range g.Servers() {
		if s.State == StateReady {
			sessions.Add(1)
		}
	}
	if sessions.Load() != 1 {
		t.Fatalf("server not ready after reconnect: %+v", g.Servers())
	}
}

// TestRunEndDropsQueuedCalls: when a run ends, the calls still queued in a
// lane are dropped and counted as never sent; the one in flight is named.
func TestRunEndDropsQueuedCalls(t *testing.T) {
	bad := testServer("bad", "misbehaving")
	bad.Lane.MaxActive, bad.Lane.MaxOutstanding = 1, 10
	g := newTestGateway(t, bad, testServer("demo", "demo"))
	// The demo call's round trip gives the first hang call time to go out.
	e := run(t, g, `for (let i = 0; i < 3; i++) tools.bad.hang({i}); await tools.demo.list_issues({}); return 'left'`, 10*time.Second)
	wantStatus(t, e, wire.StatusReturned)
	c := e.Calls
	// Calls enter their lane in the order the program made them (ordered
	// admission), so the first hang call is the one in flight.
	if c.Total != 4 || c.Answered != 1 || c.NeverSent != 2 || len(c.Unseen) != 1 || c.Unseen[0].State != worker.CallInFlight ||
		c.Unseen[0].Tool != "bad.hang" || c.Unseen[0].Args != `{"i":0}` {
		t.Fatalf("ledger %+v: want 1 hang call in flight named, 2 never sent", c)
	}
}

// TestToolListChanged: a server that adds a tool tells the gateway, and the
// next run can call it.
func TestToolListChanged(t *testing.T) {
	g := newTestGateway(t, testServer("bad", "misbehaving"))
	e := run(t, g, `await tools.bad.grow({}); return 1`, 0)
	wantStatus(t, e, wire.StatusReturned)
	deadline := time.Now().Add(10 * time.Second)
	for {
		catalog := g.Catalog()
		found := false
		for _, tool := range catalog {
			found = found || tool.Name == "grown"
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new tool never reached the catalog: notifications/tools/list_changed was not honoured")
		}
		time.Sleep(20 * time.Millisecond)
	}
	e = run(t, g, `return (await tools.bad.grown({})).content[0].text`, 0)
	wantStatus(t, e, wire.StatusReturned)
	if string(e.Value) != `"new"` {
		t.Fatalf("value %s", e.Value)
	}
}

// TestAllowTools: only the listed tools reach the catalog; a listed name the
// server lacks is reported.
func TestAllowTools(t *testing.T) {
	demo := testServer("demo", "demo")
	demo.AllowTools = []string{"get_issue", "delete_everything"}
	g := newTestGateway(t, demo)
	catalog := g.Catalog()
	if len(catalog) != 1 || catalog[0].Name != "get_issue" {
		t.Fatalf("catalog %+v, want only get_issue", catalog)
	}
	if s := g.Servers()[0]; len(s.MissingAllowTools) != 1 || s.MissingAllowTools[0] != "delete_everything" {
		t.Fatalf("server info %+v: the missing allowTools name is not reported", s)
	}
	e := run(t, g, `try { await tools.demo.add_comment({id: 101, body: 'x'}) } catch (e) { return [e.name, e.code] }`, 0)
	if string(e.Value) != `["ToolRefused","unknown_tool"]` {
		t.Fatalf("a tool outside allowTools: %s", e.Value)
	}
}

// TestRunningCap: past the cap of running programs, a run is refused at once
// and no worker is started.
func TestRunningCap(t *testing.T) {
	g := newTestGateway(t, testServer("bad", "misbehaving"))
	g.slots.max = 1
	first := make(chan *worker.Ending)
	go func() {
		e, _ := g.Run(context.Background(), RunRequest{Code: `await tools.bad.hang({})`, Timeout: 2 * time.Second})
		first <- e
	}()
	deadline := time.Now().Add(5 * time.Second)
	for g.slots.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first run never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := g.Run(context.Background(), RunRequest{Code: `return 1`}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second run: %v, want ErrBusy", err)
	}
	if e := <-first; e == nil || e.Status != wire.StatusTimedOut {
		t.Fatalf("first run: %+v", e)
	}
	e := run(t, g, `return 2`, 0)
	wantStatus(t, e, wire.StatusReturned)
}

// mcpClient connects a go-sdk client, as an agent, to g's MCP server.
func mcpClient(t *testing.T, g *Gateway) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := NewServer(g).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls one of the gateway's tools and returns its text and
// structured content.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (text string, structured map[string]any, isError bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text = res.Content[0].(*mcp.TextContent).Text
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &structured)
	return text, structured, res.IsError
}

// TestLongRunningScripts: a program that outlives yield_ms keeps running;
// wait_js returns each piece of output once and then the ending; stop_js
// stops a program mid-call and names the call; one watcher at a time; the
// per-session cap; list_js; unknown and foreign ids.
func TestLongRunningScripts(t *testing.T) {
	slow := testServer("bad", "misbehaving")
	// The hang call ends (timed out) well after yield_ms however slow the
	// machine, so the first return finds the program running.
	slow.CallTimeout = 3 * time.Second
	g := newTestGateway(t, slow, testServer("stuck", "misbehaving"))
	cs := mcpClient(t, g)

	// Yields, then ends: output split across returns, nothing lost or
	// repeated. Where the split falls depends on how far the program got in
	// yield_ms; together the pieces are the whole output, once.
	text, st, _ := callTool(t, cs, "run_js", map[string]any{"yield_ms": 150,
		"code": `console.log('one'); try { await tools.bad.hang({}) } catch (e) {} console.log('two'); return 'done'`})
	if st["status"] != "running" {
		t.Fatalf("run_js did not yield: %s", text)
	}
	first, _ := st["output"].(map[string]any)
	id := st["scriptId"].(string)
	if !strings.HasPrefix(id, "js-"+processTag+"-") {
		t.Fatalf("script id %q does not carry the process tag", id)
	}
	text, st, _ = callTool(t, cs, "wait_js", map[string]any{"scriptId": id, "yield_ms": 30_000})
	out, _ := st["output"].(map[string]any)
	if st["status"] != "returned" || fmt.Sprint(first["text"])+fmt.Sprint(out["text"]) != "one\ntwo\n" {
		t.Fatalf("wait_js (first piece %q): %s", first["text"], text)
	}
	if st["runId"] != id {
		t.Fatalf("the ending's runId %v is not the script id %s: one program, one id", st["runId"], id)
	}
	text, st, _ = callTool(t, cs, "wait_js", map[string]any{"scriptId": id})
	out, _ = st["output"].(map[string]any)
	if st["status"] != "returned" || out["text"] != "" {
		t.Fatalf("wait_js after the end must not repeat output: %s", text)
	}

	// Stopped mid-call: the ledger names the call in flight.
	_, st, _ = callTool(t, cs, "run_js", map[string]any{"yield_ms": 100, "code": `await tools.stuck.hang({why: 'forever'})`})
	stuckID := st["scriptId"].(string)

	// One watcher at a time: while a wait_js waits, another wait_js and a
	// stop_js are refused. The first watcher is known to wait once a second
	// one is refused; cancelling its request ends the wait, not the program.
	waitCtx, cancelWait := context.WithCancel(context.Background())
	waiting := make(chan error, 1)
	go func() {
		// A probe below may hold the script for a moment: then this wait is
		// refused, and tries again.
		for {
			res, err := cs.CallTool(waitCtx, &mcp.CallToolParams{Name: "wait_js", Arguments: map[string]any{"scriptId": stuckID, "yield_ms": 60_000}})
			if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "already waiting") {
				waiting <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		text, _, isErr := callTool(t, cs, "wait_js", map[string]any{"scriptId": stuckID, "yield_ms": 1})
		if isErr && strings.Contains(text, "already waiting") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a second wait_js was never refused while the first waited: %s", text)
		}
	}
	if text, _, isErr := callTool(t, cs, "stop_js", map[string]any{"scriptId": stuckID}); !isErr || !strings.Contains(text, "already waiting") {
		t.Fatalf("a second watcher was not refused: %s", text)
	}
	cancelWait()
	select {
	case <-waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("cancelling wait_js did not end the wait")
	}

	// The per-session cap (the stuck script is one of three).
	var extra []string
	for i := 0; i < MaxRunningPerSession-1; i++ {
		_, st, _ := callTool(t, cs, "run_js", map[string]any{"yield_ms": 50, "code": `await tools.stuck.hang({})`})
		extra = append(extra, st["scriptId"].(string))
	}
	if text, _, isErr := callTool(t, cs, "run_js", map[string]any{"code": `return 1`}); !isErr || !strings.Contains(text, "already runs 3 programs") {
		t.Fatalf("the fourth running script was not refused: %s", text)
	}

	text, _, _ = callTool(t, cs, "list_js", nil)
	if !strings.Contains(text, stuckID+" running") || !strings.Contains(text, id+" returned") {
		t.Fatalf("list_js:\n%s", text)
	}

	text, st, _ = callTool(t, cs, "stop_js", map[string]any{"scriptId": stuckID})
	calls, _ := st["calls"].(map[string]any)
	unseen, _ := calls["unseen"].([]any)
	if st["status"] != "stopped" || len(unseen) != 1 || !strings.Contains(fmt.Sprint(unseen[0]), "forever") {
		t.Fatalf("stop_js: %s", text)
	}
	for _, x := range extra {
		callTool(t, cs, "stop_js", map[string]any{"scriptId": x})
	}

	if text, _, isErr := callTool(t, cs, "wait_js", map[string]any{"scriptId": "js-000000-abc"}); !isErr || !strings.Contains(text, "earlier run of this server") {
		t.Fatalf("a foreign id: %s", text)
	}
	if text, _, isErr := callTool(t, cs, "wait_js", map[string]any{"scriptId": "js-" + processTag + "-nope"}); !isErr || !strings.Contains(text, "no script") {
		t.Fatalf("an unknown id: %s", text)
	}
}

// TestCloseStopsScripts: closing the gateway stops every running program and
// reaps its worker.
func TestCloseStopsScripts(t *testing.T) {
	g := newTestGateway(t, testServer("bad", "misbehaving"))
	cs := mcpClient(t, g)
	_, st, _ := callTool(t, cs, "run_js", map[string]any{"yield_ms": 50, "code": `while (true) {}`})
	all := g.scripts.all()
	if len(all) != 1 || all[0].id() != st["scriptId"] {
		t.Fatalf("scripts %v, want the one run_js started", all)
	}
	sc := all[0]
	pid := sc.run.PID()
	g.Close()
	if e := sc.run.Ending(); e == nil || e.Status != wire.StatusStopped {
		t.Fatalf("after Close the script ended %+v, want stopped", e)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("worker %d still exists after Close", pid)
	}
}

// TestProgressCancelAndSessionClose: progress notifications reach a real
// client while it waits; cancelling the request ends the wait, not the
// program; closing the session stops its programs.
func TestProgressCancelAndSessionClose(t *testing.T) {
	slow := testServer("bad", "misbehaving")
	slow.CallTimeout = 1500 * time.Millisecond
	g := newTestGateway(t, slow)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := NewServer(g).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	var notes atomic.Int32
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "test"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if strings.Contains(req.Params.Message, "calls made") {
				notes.Add(1)
			}
		},
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}

	params := &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"yield_ms": 5000,
		"code": `try { await tools.bad.hang({}) } catch (e) {} return 'ok'`}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("run_js: %v %+v", err, res)
	}
	if notes.Load() < 1 || notes.Load() > 3 {
		t.Fatalf("%d progress notifications during a 1.5 s wait; want 1 to 3 (one a second)", notes.Load())
	}

	// Cancel the request: the wait ends, the program goes on.
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"yield_ms": 60000, "code": `while (true) {}`}})
	if err == nil {
		t.Fatal("a cancelled run_js returned no error to its client")
	}
	deadline := time.Now().Add(5 * time.Second)
	var running *script
	for running == nil {
		for _, sc := range g.scripts.all() {
			if sc.run.Ending() == nil {
				running = sc
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled request's program is not listed as running")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if running.run.Ending() != nil {
		t.Fatalf("cancelling the request ended the program: %+v", running.run.Ending())
	}

	// Closing the session stops it.
	cs.Close()
	ss.Wait()
	select {
	case <-running.run.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the program outlived its MCP session")
	}
	if e := running.run.Ending(); e.Status != wire.StatusStopped {
		t.Fatalf("after the session closed the program ended %s, want stopped", e.Status)
	}
}

// TestEndingsExpire: a session keeps its KeptEndingsPerSession latest
// endings; older ones are gone, with a clear error.
func TestEndingsExpire(t *testing.T) {
	g := newTestGateway(t)
	cs := mcpClient(t, g)
	var first string
	for i := 0; i <= KeptEndingsPerSession; i++ {
		callTool(t, cs, "run_js", map[string]any{"code": `return 1`})
		if i == 0 {
			_, st, _ := callTool(t, cs, "list_js", nil)
			first = st["scripts"].([]any)[0].(map[string]any)["scriptId"].(string)
		}
	}
	_, st, _ := callTool(t, cs, "list_js", nil)
	if n := len(st["scripts"].([]any)); n != KeptEndingsPerSession {
		t.Fatalf("list_js lists %d scripts, want the %d latest", n, KeptEndingsPerSession)
	}
	if text, _, isErr := callTool(t, cs, "wait_js", map[string]any{"scriptId": first}); !isErr || !strings.Contains(text, "expired") {
		t.Fatalf("the oldest ending did not expire: %s", text)
	}
}
