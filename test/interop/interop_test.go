// Package interop tests run-js-server against real Node MCP peers: the
// TypeScript SDK's client drives the gateway over stdio (client.mjs), and
// @modelcontextprotocol/server-everything serves it as a downstream over
// stdio, Streamable HTTP and legacy SSE, beside the built-in demo server.
//
// The tests need node on PATH and this directory's node_modules; without
// them they skip, naming the command to run: (cd test/interop && npm ci).
// With RUN_JS_SERVER_INTEROP=required in the environment, a missing
// prerequisite fails the tests instead (for CI, where a skip would hide them).
package interop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bounds of every wait in these tests, each naming what it waits for.
const (
	buildTimeout  = 10 * time.Minute // go build of the gateway (the first build compiles QuickJS-ng)
	listenTimeout = 30 * time.Second // a server-everything HTTP server accepting connections
	clientTimeout = 2 * time.Minute  // client.mjs: start the gateway, list tools, one run_js, close
	stopTimeout   = 10 * time.Second // a killed process group's leader being reaped
	termGrace     = 5 * time.Second  // between SIGTERM and SIGKILL for the client's group
)

// requiredEnv, set to "required", turns a skip for missing prerequisites
// into a failure.
const requiredEnv = "RUN_JS_SERVER_INTEROP"

const npmHint = "run (cd test/interop && npm ci)"

// everythingEntry is server-everything's bin (dist/index.js), relative to
// this directory. Its first argument picks the transport: stdio (the
// default), sse or streamableHttp; the HTTP ones listen on $PORT.
var everythingEntry = filepath.Join("node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")

// env is what a test needs: the tools, the built gateway, and a config that
// reaches every downstream server.
type env struct {
	node    string // absolute path of node
	dir     string // absolute path of test/interop
	gateway string // the built run-js-server
	config  string // the config file naming the five servers
}

// setup checks the prerequisites (skipping without them), builds the
// gateway, starts server-everything over Streamable HTTP and legacy SSE,
// and writes the config.
func setup(t *testing.T) *env {
	t.Helper()
	e := &env{node: requireNode(t), dir: testDir(t)}
	if !fileExists(filepath.Join(e.dir, "node_modules")) {
		prerequisite(t, "test/interop/node_modules is missing; "+npmHint)
	}
	for _, f := range []string{everythingEntry, filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json")} {
		if !fileExists(filepath.Join(e.dir, f)) {
			prerequisite(t, fmt.Sprintf("test/interop/node_modules is incomplete (no %s); %s", f, npmHint))
		}
	}
	e.gateway = buildGateway(t, e.dir)

	httpPort, ssePort := freePort(t), freePort(t)
	for ssePort == httpPort { // both were free at once; the kernel may hand one out twice
		ssePort = freePort(t)
	}
	startEverything(t, e, "streamableHttp", httpPort)
	startEverything(t, e, "sse", ssePort)

	entry := filepath.Join(e.dir, everythingEntry)
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"stdio_everything": map[string]any{"command": e.node, "args": []string{entry, "stdio"}},
			"http_everything":  map[string]any{"type": "http", "url": fmt.Sprintf("http://127.0.0.1:%d/mcp", httpPort)},
			"sse_everything":   map[string]any{"type": "sse", "url": fmt.Sprintf("http://127.0.0.1:%d/sse", ssePort)},
			// No type: the gateway tries Streamable HTTP, which the SSE server
			// refuses, and must fall back to legacy SSE.
			"auto_everything": map[string]any{"url": fmt.Sprintf("http://127.0.0.1:%d/sse", ssePort)},
			"demo":            map[string]any{"command": e.gateway, "args": []string{"demo-server"}},
		},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	e.config = filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(e.config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("config %s:\n%s", e.config, b)
	return e
}

func prerequisite(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(requiredEnv) == "required" {
		t.Fatalf("%s (and %s=required)", why, requiredEnv)
	}
	t.Skip(why)
}

func requireNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		prerequisite(t, "node is not on PATH; install Node.js 20 or later, then "+npmHint)
	}
	node, err = filepath.Abs(node)
	if err != nil {
		t.Fatal(err)
	}
	return node
}

// testDir is test/interop, where go test runs this package.
func testDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "client.mjs")); err != nil {
		t.Fatalf("the working directory %s is not test/interop (no client.mjs): %v", dir, err)
	}
	return dir
}

// goBinary is the go command of the toolchain running the tests.
func goBinary(t *testing.T) string {
	t.Helper()
	if root := runtime.GOROOT(); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: runtime.GOROOT() is %q and go is not on PATH", runtime.GOROOT())
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// buildGateway builds ./cmd/run-js-server into a temporary directory.
func buildGateway(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join(dir, "..", "..")
	if !fileExists(filepath.Join(root, "go.mod")) || !fileExists(filepath.Join(root, "cmd", "run-js-server")) {
		t.Fatalf("%s is not the module root (no go.mod or cmd/run-js-server)", root)
	}
	bin := filepath.Join(t.TempDir(), "run-js-server")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBinary(t), "build", "-o", bin, "./cmd/run-js-server")
	cmd.Dir = root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = stopTimeout
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("go build ./cmd/run-js-server did not finish within %s; output:\n%s", buildTimeout, out)
	}
	if err != nil {
		t.Fatalf("go build ./cmd/run-js-server: %v; output:\n%s", err, out)
	}
	t.Logf("built %s in %s", bin, time.Since(start).Round(time.Millisecond))
	return bin
}

// freePort picks a free loopback port: listen on port 0, note it, close.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("no free loopback port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a process a test started, in its own process group.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when Wait returns
	err  error         // Wait's error, once done is closed
	log  string        // file holding its stdout and stderr (for servers)
}

// start starts cmd in its own process group and kills that group in
// t.Cleanup: SIGTERM, then SIGKILL after grace (0: SIGKILL at once).
func start(t *testing.T, name string, cmd *exec.Cmd, grace time.Duration) *proc {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t, grace) })
	return p
}

func (p *proc) stop(t *testing.T, grace time.Duration) {
	pgid := p.cmd.Process.Pid
	if grace > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
	}
	// The leader may have exited while others in its group live on: kill the
	// group whatever the leader did.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Errorf("%s (pid %d) was not reaped within %s of SIGKILL to its process group", p.name, pgid, stopTimeout)
	}
}

func (p *proc) output() string {
	if p.log == "" {
		return ""
	}
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.log, err)
	}
	return string(b)
}

// startEverything starts server-everything with the given transport on
// 127.0.0.1:port and waits until it accepts connections. loopback.mjs binds
// its listener to 127.0.0.1 (server-everything itself listens on every
// interface).
func startEverything(t *testing.T, e *env, transport string, port int) {
	t.Helper()
	name := fmt.Sprintf("server-everything %s on 127.0.0.1:%d", transport, port)
	log, err := os.Create(filepath.Join(t.TempDir(), "everything-"+transport+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() // the child has its own copy
	cmd := exec.Command(e.node, "--import", "./loopback.mjs", everythingEntry, transport)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = log, log
	p := start(t, name, cmd, 0)
	p.log = log.Name()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})

	deadline := time.Now().Add(listenTimeout)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before accepting connections; output:\n%s", name, p.err, p.output())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not accept connections within %s (last dial: %v); output:\n%s", name, listenTimeout, err, p.output())
		}
	}
}

// callToolResult is the client's stdout: run_js's CallToolResult.
type callToolResult struct {
	Content           []contentBlock `json:"content"`
	StructuredContent *ending        `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

type contentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

// ending is run_js's structuredContent.
type ending struct {
	RunID  string          `json:"runId"`
	Status string          `json:"status"`
	Value  json.RawMessage `json:"value"`
	Error  *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"error"`
	Output struct {
		Text     string `json:"text"`
		CutChars int    `json:"cutChars"`
	} `json:"output"`
	Calls struct {
		Total    int            `json:"total"`
		Answered int            `json:"answered"`
		Refused  int            `json:"refused"`
		ByTool   map[string]int `json:"byTool"`
		Unseen   []struct {
			ID    int    `json:"id"`
			Tool  string `json:"tool"`
			Args  string `json:"args"`
			State string `json:"state"`
		} `json:"unseen"`
		UnseenMore int `json:"unseenMore"`
		NeverSent  int `json:"neverSent"`
	} `json:"calls"`
	DurationMs int64 `json:"durationMs"`
}

// runJS runs client.mjs with program, timeoutMs (0: the default) and any
// further flags of client.mjs, checks that the client saw exactly the
// gateway's six tools, and returns run_js's result and its raw JSON.
func runJS(t *testing.T, e *env, program string, timeoutMs int, flags ...string) (*callToolResult, []byte) {
	t.Helper()
	res, raw, _ := runJSWithInput(t, e, program, nil, timeoutMs, nil, flags...)
	return res, raw
}

// runJSWithInput is runJS with the program's input, and with extraEnv
// (non-nil) client.mjs --info (server_info before and after run_js, on its
// stderr) and extra variables in the environment of the client and so of
// the gateway; it returns the client's stderr too.
func runJSWithInput(t *testing.T, e *env, program string, input any, timeoutMs int, extraEnv []string, flags ...string) (*callToolResult, []byte, string) {
	t.Helper()
	code := filepath.Join(t.TempDir(), "program.js")
	if err := os.WriteFile(code, []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"client.mjs", "--server", e.gateway, "--config", e.config, "--code-file", code}
	if timeoutMs > 0 {
		args = append(args, "--timeout-ms", strconv.Itoa(timeoutMs))
	}
	if extraEnv != nil {
		args = append(args, "--info")
	}
	if input != nil {
		b, err := json.Marshal(input)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--input", string(b))
	}
	args = append(args, flags...)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(e.node, args...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The gateway shares the client's stderr: if it outlived the client,
	// Wait would wait for it to close that pipe.
	cmd.WaitDelay = termGrace
	// SIGTERM first: the gateway (in the client's group) stops its
	// downstream servers on it.
	p := start(t, "client.mjs", cmd, termGrace)
	select {
	case <-p.done:
	case <-time.After(clientTimeout):
		p.stop(t, termGrace)
		t.Fatalf("client.mjs did not finish within %s (gateway start, tools/list, run_js, close); stderr:\n%s\nstdout:\n%s",
			clientTimeout, &stderr, &stdout)
	}
	if p.err != nil {
		t.Fatalf("client.mjs failed: %v; stderr:\n%s\nstdout:\n%s", p.err, &stderr, &stdout)
	}
	t.Logf("client.mjs stderr:\n%s", &stderr)

	const toolsLine = "client: tools: "
	var listed []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, toolsLine); ok {
			if err := json.Unmarshal([]byte(rest), &listed); err != nil {
				t.Fatalf("client.mjs: bad tools line %q: %v", line, err)
			}
		}
	}
	if want := []string{"list_js", "run_js", "search_tools", "server_info", "stop_js", "wait_js"}; !slices.Equal(listed, want) {
		t.Fatalf("the TypeScript client saw tools %q, want exactly %q; stderr:\n%s", listed, want, &stderr)
	}

	raw := bytes.TrimSpace(stdout.Bytes())
	var res callToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("client.mjs stdout is not a CallToolResult: %v; stdout:\n%s", err, raw)
	}
	if res.StructuredContent == nil {
		t.Fatalf("run_js result has no structuredContent:\n%s", raw)
	}
	if len(res.Content) == 0 || res.Content[0].Type != "text" || res.Content[0].Text == "" {
		t.Errorf("run_js result content is not one text block: %+v", res.Content)
	}
	return &res, raw, stderr.String()
}

// fanOut calls an echo on each everything server (one per transport) and the
// demo tracker at once, plus an image, a structured result and a call with
// invalid arguments, and sums it up.
const fanOut = `
const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
const [stdio, http, sse, auto, issues, image, weather] = await Promise.all([
  tools.stdio_everything.echo({ message: "via stdio" }),
  tools.http_everything.echo({ message: "via streamable http" }),
  tools.sse_everything.echo({ message: "via legacy sse" }),
  tools.auto_everything.echo({ message: "via auto" }),
  tools.demo.list_issues({ state: "all", limit: 3 }),
  tools.http_everything["get-tiny-image"]({}),
  tools.stdio_everything["get-structured-content"]({ location: "Chicago" }),
]);
let refused = null;
try {
  await tools.stdio_everything["get-sum"]({ a: "one", b: 2 });
} catch (e) {
  refused = { name: e.name, isToolRefused: e instanceof ToolRefused, code: e.code, mayHaveRun: e.mayHaveRun, message: e.message };
}
const img = image.content.find((c) => c.type === "image");
console.log("fan-out done");
return {
  echoes: { stdio: text(stdio), http: text(http), sse: text(sse), auto: text(auto) },
  issues: {
    isError: issues.isError,
    total: issues.structuredContent.total,
    ids: issues.structuredContent.issues.map((i) => i.id),
    titled: issues.structuredContent.issues.every((i) => typeof i.title === "string" && i.title !== ""),
  },
  image: { types: image.content.map((c) => c.type), mimeType: img && img.mimeType, data: img && img.data },
  weather: { structured: weather.structuredContent, text: text(weather) },
  refused,
};
`

type fanOutSummary struct {
	Echoes map[string]string `json:"echoes"`
	Issues struct {
		IsError bool  `json:"isError"`
		Total   int   `json:"total"`
		IDs     []int `json:"ids"`
		Titled  bool  `json:"titled"`
	} `json:"issues"`
	Image struct {
		Types    []string `json:"types"`
		MimeType string   `json:"mimeType"`
		Data     string   `json:"data"`
	} `json:"image"`
	Weather struct {
		Structured map[string]any `json:"structured"`
		Text       string         `json:"text"`
	} `json:"weather"`
	Refused *struct {
		Name          string `json:"name"`
		IsToolRefused bool   `json:"isToolRefused"`
		Code          string `json:"code"`
		MayHaveRun    bool   `json:"mayHaveRun"`
		Message       string `json:"message"`
	} `json:"refused"`
}

func TestFanOutAcrossTransports(t *testing.T) {
	e := setup(t)
	// The calls take milliseconds; the deadline only bounds a hang.
	res, raw := runJS(t, e, fanOut, 20_000)
	end := res.StructuredContent
	if end.Status != "returned" || res.IsError {
		t.Fatalf("run_js ended %q (isError %v), want returned (isError false); result:\n%s", end.Status, res.IsError, indent(raw))
	}

	var s fanOutSummary
	if err := json.Unmarshal(end.Value, &s); err != nil {
		t.Fatalf("the program's value is not the summary: %v; value: %s", err, end.Value)
	}
	wantEchoes := map[string]string{
		"stdio": "Echo: via stdio", "http": "Echo: via streamable http",
		"sse": "Echo: via legacy sse", "auto": "Echo: via auto",
	}
	for k, want := range wantEchoes {
		if got := s.Echoes[k]; got != want {
			t.Errorf("echo over %s: got %q, want %q", k, got, want)
		}
	}
	if s.Issues.IsError || len(s.Issues.IDs) != 3 || s.Issues.Total < 3 || !s.Issues.Titled {
		t.Errorf("demo.list_issues({state: all, limit: 3}): got %+v, want 3 titled issues, total >= 3, isError false", s.Issues)
	}

	// The image block must arrive as it was sent: type, mimeType and the
	// exact bytes server-everything holds.
	if !slices.Contains(s.Image.Types, "image") || s.Image.MimeType != "image/png" {
		t.Errorf("get-tiny-image: content types %q, image mimeType %q; want an image block with mimeType image/png", s.Image.Types, s.Image.MimeType)
	}
	png, err := base64.StdEncoding.DecodeString(s.Image.Data)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("get-tiny-image: data is not base64 of a PNG (%v); %d chars", err, len(s.Image.Data))
	}
	if want := tinyImage(t, e.dir); s.Image.Data != want {
		t.Errorf("get-tiny-image: data differs from server-everything's MCP_TINY_IMAGE (%d chars, want %d)", len(s.Image.Data), len(want))
	}

	wantWeather := map[string]any{"temperature": 36.0, "conditions": "Light rain / drizzle", "humidity": 82.0}
	if fmt.Sprint(s.Weather.Structured) != fmt.Sprint(wantWeather) {
		t.Errorf("get-structured-content(Chicago).structuredContent: got %v, want %v", s.Weather.Structured, wantWeather)
	}
	if !strings.Contains(s.Weather.Text, "Light rain") {
		t.Errorf("get-structured-content(Chicago) text: got %q, want the JSON of the weather", s.Weather.Text)
	}

	r := s.Refused
	switch {
	case r == nil:
		t.Errorf("get-sum({a: \"one\", b: 2}) did not throw; want ToolRefused invalid_arguments")
	case r.Name != "ToolRefused" || !r.IsToolRefused || r.Code != "invalid_arguments" || r.MayHaveRun:
		t.Errorf("get-sum({a: \"one\", b: 2}) threw %+v; want ToolRefused, code invalid_arguments, mayHaveRun false", *r)
	case !strings.Contains(r.Message, "/a"):
		t.Errorf("get-sum({a: \"one\", b: 2}) message %q does not name the path /a", r.Message)
	}

	wantByTool := map[string]int{
		"stdio_everything.echo": 1, "http_everything.echo": 1, "sse_everything.echo": 1, "auto_everything.echo": 1,
		"demo.list_issues": 1, "http_everything.get-tiny-image": 1, "stdio_everything.get-structured-content": 1,
		"stdio_everything.get-sum": 1,
	}
	c := end.Calls
	if fmt.Sprint(c.ByTool) != fmt.Sprint(wantByTool) || c.Total != 8 || c.Answered != 7 || c.Refused != 1 ||
		len(c.Unseen) != 0 || c.UnseenMore != 0 || c.NeverSent != 0 {
		t.Errorf("calls: got %+v; want total 8, answered 7 (every call but get-sum), refused 1, nothing unseen, byTool %v", c, wantByTool)
	}
	if !strings.Contains(end.Output.Text, "fan-out done") {
		t.Errorf("output: got %q, want it to hold the program's console.log", end.Output.Text)
	}
	if t.Failed() {
		t.Logf("result:\n%s", indent(raw))
	}
}

// longCall makes one quick call, then waits on two 30-second operations,
// over stdio and Streamable HTTP, well past the run's deadline.
const longCall = `
const first = await tools.http_everything.echo({ message: "before the long calls" });
console.log(first.content[0].text);
await Promise.all([
  tools.stdio_everything["trigger-long-running-operation"]({ duration: 30, steps: 3 }),
  tools.http_everything["trigger-long-running-operation"]({ duration: 30, steps: 3 }),
]);
return "the long calls answered before the deadline";
`

func TestLongCallTimesOut(t *testing.T) {
	e := setup(t)
	const timeoutMs = 2000
	res, raw := runJS(t, e, longCall, timeoutMs)
	end := res.StructuredContent
	if end.Status != "timed_out" || !res.IsError {
		t.Fatalf("run_js ended %q (isError %v), want timed_out (isError true); result:\n%s", end.Status, res.IsError, indent(raw))
	}
	if end.DurationMs < timeoutMs || end.DurationMs > 15_000 {
		t.Errorf("durationMs %d: want at least the deadline (%d ms) and far below the calls' 30 s", end.DurationMs, timeoutMs)
	}
	c := end.Calls
	if c.Total != 3 || c.Answered != 1 || c.Refused != 0 || c.NeverSent != 0 {
		t.Errorf("calls: got %+v; want total 3, answered 1 (the echo), refused 0, neverSent 0", c)
	}
	var unseen []string
	for _, u := range c.Unseen {
		if u.State != "in_flight" && u.State != "timed_out" {
			t.Errorf("unseen call %s is %q, want in_flight or timed_out", u.Tool, u.State)
		}
		if u.Args != `{"duration":30,"steps":3}` {
			t.Errorf("unseen call %s has args %q, want {\"duration\":30,\"steps\":3}", u.Tool, u.Args)
		}
		unseen = append(unseen, u.Tool)
	}
	slices.Sort(unseen)
	want := []string{"http_everything.trigger-long-running-operation", "stdio_everything.trigger-long-running-operation"}
	if !slices.Equal(unseen, want) {
		t.Errorf("calls.unseen lists %q, want %q", unseen, want)
	}
	if !strings.Contains(end.Output.Text, "Echo: before the long calls") {
		t.Errorf("output: got %q, want the echo logged before the long calls", end.Output.Text)
	}
	if t.Failed() {
		t.Logf("result:\n%s", indent(raw))
	}
}

// tinyImage is the base64 PNG that server-everything's get-tiny-image
// returns, read from its source.
func tinyImage(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "tools", "get-tiny-image.js")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("reading server-everything's image: %v", err)
	}
	m := regexp.MustCompile(`MCP_TINY_IMAGE\s*=\s*"([A-Za-z0-9+/=]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no MCP_TINY_IMAGE = \"...\" in it", src)
	}
	return string(m[1])
}

func indent(raw []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
