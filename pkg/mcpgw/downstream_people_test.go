package mcpgw

// Tests with servers as people run them (the "people" and "exit-message"
// modes of this test binary, gateway_test.go): slow to start, chatty on
// stdout, dying with a reason, reading their environment, recording the
// order of calls.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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

// logBuffer is a log destination tests read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startGateway builds a gateway over cfg logging to log (at debug), starts
// its servers and returns at once, as a serving gateway does.
func startGateway(t *testing.T, cfg *Config, log io.Writer) *Gateway {
	t.Helper()
	g, err := New(cfg, Options{Version: "test", Log: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Worker: worker.Config{Command: []string{os.Args[0], "--worker-fd", "3"}, Grace: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	g.Connect(context.Background())
	return g
}

// parseTestConfig parses a config whose servers run this test binary:
// "BIN" in src stands for it.
func parseTestConfig(t *testing.T, src string, lookup func(string) (string, bool)) *Config {
	t.Helper()
	bin, _ := json.Marshal(os.Args[0])
	src = strings.ReplaceAll(src, `"BIN"`, string(bin))
	cfg, err := ParseConfig(filepath.Join(t.TempDir(), "gateway.json"), []byte(src), lookup)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serverInfo is one server's state as server_info reports it.
func serverInfo(g *Gateway, name string) ServerInfo {
	for _, s := range g.Servers() {
		if s.Name == name {
			return s
		}
	}
	return ServerInfo{}
}

// waitFor polls cond until it holds, failing with what after the bound.
func waitFor(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(bound); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("within %s: %s", bound, what)
		}
	}
}

// TestHandshakeWhileServersStart: the agent's initialize is answered while
// a server is still starting (it waits on a file that does not exist yet),
// and server_info says so with the time so far. A run started meanwhile
// waits for the server, then runs with its tools; the agent is sent
// notifications/tools/list_changed, and run_js's description and
// search_tools then name the new tools.
func TestHandshakeWhileServersStart(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	cfg := parseTestConfig(t, fmt.Sprintf(`{"mcpServers": {"slow": {"command": "BIN", "args": ["--downstream", "people"], "env": {"GATE": %q}}}}`, gate), nil)
	g := startGateway(t, cfg, io.Discard)

	var changed atomic.Int32
	ct, st := mcp.NewInMemoryTransports()
	ss, err := NewServer(g).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	// Connect returns when initialize has been answered.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "test"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) },
	}).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	// The handshake is done and the server is still starting: no timing,
	// a state (it cannot be ready: its gate is closed).
	_, info, _ := callTool(t, cs, "server_info", nil)
	servers, _ := info["servers"].([]any)
	slow, _ := servers[0].(map[string]any)
	if slow["state"] != "starting" || slow["startingMs"] == nil || slow["attempts"] != 1.0 || slow["startTimeoutMs"] != 60000.0 {
		t.Fatalf("server_info while the server starts: %v", slow)
	}
	if d := runJSDescriptionOf(t, cs); !strings.Contains(d, "Not ready now") || !strings.Contains(d, "slow (starting)") {
		t.Fatalf("run_js's description does not say the server is starting:\n%s", d)
	}

	// A run started now waits for the server.
	result := make(chan string, 1)
	go func() {
		text, _, _ := callTool(t, cs, "run_js", map[string]any{"code": `return (await tools.slow.echo({s: 'waited'})).content[0].text`})
		result <- text
	}()
	waitFor(t, 10*time.Second, "the run never reached the gateway", func() bool { return g.slots.count() == 1 })
	if serverInfo(g, "slow").State != StateStarting {
		t.Fatal("the server started with its gate closed")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case text := <-result:
		if !strings.Contains(text, `"waited"`) || !strings.HasPrefix(text, "returned") {
			t.Fatalf("the run that waited for the server: %s", text)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the run that waited for the starting server did not end within 60 s")
	}

	waitFor(t, 10*time.Second, "no notifications/tools/list_changed reached the agent", func() bool { return changed.Load() > 0 })
	if d := runJSDescriptionOf(t, cs); !strings.Contains(d, "tools.slow.echo") || strings.Contains(d, "Not ready now") {
		t.Fatalf("run_js's description after the server came up:\n%s", d)
	}
	if text, _, _ := callTool(t, cs, "search_tools", map[string]any{"query": "stray"}); !strings.Contains(text, "stray") {
		t.Fatalf("search_tools does not find the late server's tool: %s", text)
	}
}

func runJSDescriptionOf(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "run_js" {
			return tool.Description
		}
	}
	t.Fatal("no run_js")
	return ""
}

// TestStrayLinesKeepTheConnection: a banner and a JSON log line before the
// handshake, and later a line that is not JSON, truncated JSON, JSON that is
// not JSON-RPC and an answer to nothing: each is skipped and logged with
// the server's name; the connection (one session, one process) stays.
func TestStrayLinesKeepTheConnection(t *testing.T) {
	var log logBuffer
	cfg := parseTestConfig(t, `{"mcpServers": {"chatty": {"command": "BIN", "args": ["--downstream", "people"]}}}`, nil)
	g := startGateway(t, cfg, &log)
	g.Settle(context.Background())
	pid := serverInfo(g, "chatty").PID
	e := run(t, g, `const a = await tools.chatty.stray({}); const b = await tools.chatty.echo({s: 'still here'})
		return [a.content[0].text, b.content[0].text]`, 20*time.Second)
	wantStatus(t, e, wire.StatusReturned)
	if string(e.Value) != `["after the strays","still here"]` {
		t.Fatalf("value %s", e.Value)
	}
	s := serverInfo(g, "chatty")
	if s.State != StateReady || s.Sessions != 1 || s.PID != pid || s.SkippedLines != 6 {
		t.Fatalf("server_info %+v: want ready, one session, the same pid %d, 6 lines skipped", s, pid)
	}
	for _, want := range []string{
		`chatty: skipped a line on stdout that is not JSON: \"Starting people server v1.2.3 on stdio...\"`,
		`chatty: skipped a line on stdout that is JSON but not JSON-RPC (no \"jsonrpc\": \"2.0\"): \"{\\\"level\\\":\\\"info\\\",\\\"msg\\\":\\\"listening\\\"}\"`,
		`chatty: skipped a line on stdout that is not JSON: \"progress: 50%\"`,
		`chatty: skipped a line on stdout that is not valid JSON (truncated, or with text after it)`,
		`chatty: skipped a line on stdout that is JSON but not JSON-RPC (no \"jsonrpc\": \"2.0\"): \"{\\\"hello\\\":\\\"world\\\"}\"`,
		`chatty: skipped a line on stdout that answers no request of ours (id 987654)`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, log.String())
		}
	}
}

// TestReasonsAndRestart: a server that exits with a message on stderr is
// unavailable with its exit status and its last stderr lines (which are in
// the log too, under its name, at the default level); a server killed
// under its calls is restarted, its refusals while it cannot start name the
// reason (server_unavailable, never unknown_server), and once it can start
// again it is used without restarting the gateway.
func TestReasonsAndRestart(t *testing.T) {
	defer setReconnectMin(50 * time.Millisecond)()
	var log logBuffer
	fail := filepath.Join(t.TempDir(), "fail")
	cfg := parseTestConfig(t, fmt.Sprintf(`{"mcpServers": {
		"gh": {"command": "BIN", "args": ["--downstream", "exit-message"]},
		"db": {"command": "BIN", "args": ["--downstream", "people"], "env": {"FAIL": %q}}}}`, fail), nil)
	g := startGateway(t, cfg, &log)
	g.Settle(context.Background())

	gh := serverInfo(g, "gh")
	if gh.State == StateReady || !strings.Contains(gh.Reason, "its process exited with status 1, before it answered initialize; its stderr ends: Starting GitHub MCP server... | Error: GITHUB_PERSONAL_ACCESS_TOKEN not set") {
		t.Fatalf("gh: %+v", gh)
	}
	if !strings.Contains(log.String(), `level=INFO msg="gh: Error: GITHUB_PERSONAL_ACCESS_TOKEN not set (got )" server=gh stream=stderr`) {
		t.Errorf("the server's stderr is not in the log at info, under its name:\n%s", log.String())
	}

	// gh never listed its tools: the run's catalog has none of them, but it
	// names gh and its state, so the program's call is refused
	// server_unavailable with gh's reason, not unknown_server.
	e := run(t, g, `try { await tools.gh.search_issues({q: 'x'}); return 'sent' } catch (e) { return [e.name, e.code, e.server, e.message] }`, 10*time.Second)
	wantStatus(t, e, wire.StatusReturned)
	var ghRefusal []string
	_ = json.Unmarshal(e.Value, &ghRefusal)
	if len(ghRefusal) != 4 || ghRefusal[0] != "ToolRefused" || ghRefusal[1] != CodeServerUnavailable || ghRefusal[2] != "gh" ||
		!strings.Contains(ghRefusal[3], `tools.gh: server "gh" is unavailable: its process exited with status 1, before it answered initialize; its stderr ends: Starting GitHub MCP server... | Error: GITHUB_PERSONAL_ACCESS_TOKEN not set`) ||
		!strings.HasSuffix(ghRefusal[3], "; nothing was sent") {
		t.Fatalf("a call to gh, which never listed its tools: %s", e.Value)
	}
	// A server nobody configured is still unknown_server.
	e = run(t, g, `try { tools.nope.x({}) } catch (e) { return e.code }`, 10*time.Second)
	if string(e.Value) != `"unknown_server"` {
		t.Fatalf("a call to a server nobody configured: %s", e.Value)
	}

	db := serverInfo(g, "db")
	if db.State != StateReady {
		t.Fatalf("db: %+v", db)
	}
	if err := os.WriteFile(fail, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(db.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "db was not seen to fail its restart", func() bool {
		s := serverInfo(g, "db")
		return s.State == StateUnavailable && strings.Contains(s.Reason, "exited with status 2")
	})
	e = run(t, g, `try { await tools.db.echo({s: 'x'}); return 'sent' } catch (e) { return [e.name, e.code, e.message] }`, 10*time.Second)
	wantStatus(t, e, wire.StatusReturned)
	var refusal []string
	_ = json.Unmarshal(e.Value, &refusal)
	if len(refusal) != 3 || refusal[0] != "ToolRefused" || refusal[1] != CodeServerUnavailable ||
		!strings.Contains(refusal[2], "server db is unavailable: its process exited with status 2, before it answered initialize; its stderr ends: Error: cannot reach the database (port 5432)") {
		t.Fatalf("a call while db cannot start: %s", e.Value)
	}
	if err := os.Remove(fail); err != nil {
		t.Fatal(err)
	}
	// The refused call asked for an attempt; backoff (50 ms here) and it
	// comes back without a restart of the gateway.
	waitFor(t, 30*time.Second, "db did not come back once it could start", func() bool {
		return serverInfo(g, "db").State == StateReady
	})
	e = run(t, g, `return (await tools.db.echo({s: 'back'})).content[0].text`, 10*time.Second)
	wantStatus(t, e, wire.StatusReturned)
	if string(e.Value) != `"back"` {
		t.Fatalf("after the restart: %s", e.Value)
	}
}

// setReconnectMin lowers the backoff for a test and returns the reset.
func setReconnectMin(d time.Duration) func() {
	old := reconnectMin
	reconnectMin = d
	return func() { reconnectMin = old }
}

// TestFIFOWithOneActive: with maxActive 1, eight calls a program makes
// without awaiting reach the server in the order the program made them.
func TestFIFOWithOneActive(t *testing.T) {
	cfg := parseTestConfig(t, `{"mcpServers": {"rec": {"command": "BIN", "args": ["--downstream", "people"], "lane": {"maxActive": 1}}}}`, nil)
	g := startGateway(t, cfg, io.Discard)
	g.Settle(context.Background())
	for round := range 5 {
		e := run(t, g, `const ps = []
			for (let i = 0; i < 8; i++) ps.push(tools.rec.record({i}))
			await Promise.all(ps)
			return (await tools.rec.recorded({})).structuredContent.order`, 20*time.Second)
		wantStatus(t, e, wire.StatusReturned)
		if string(e.Value) != `[0,1,2,3,4,5,6,7]` {
			t.Fatalf("round %d: the server saw the calls in order %s, want the program's", round, e.Value)
		}
	}
}

// TestServerEnvironment: a stdio server gets HOME, LOGNAME, PATH, SHELL,
// TERM and USER of the gateway's environment, what its inheritEnv names, its
// envFile and its env, and nothing else: not the gateway's secret.
func TestServerEnvironment(t *testing.T) {
	t.Setenv("RUNJS_TEST_GATEWAY_SECRET", "gateway-secret-sentinel")
	t.Setenv("RUNJS_TEST_INHERITED", "inherited-value")
	envFile := filepath.Join(t.TempDir(), "server.env")
	if err := os.WriteFile(envFile, []byte("# tokens\nexport FROM_FILE=\"file value\"\nOVERRIDDEN=file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := parseTestConfig(t, fmt.Sprintf(`{"mcpServers": {"env": {"command": "BIN", "args": ["--downstream", "people"],
		"inheritEnv": ["RUNJS_TEST_INHERITED", "RUNJS_TEST_NOT_SET"], "envFile": %q, "env": {"OWN": "own", "OVERRIDDEN": "env"}}}}`, envFile), os.LookupEnv)
	if !slices.ContainsFunc(cfg.Warnings, func(w string) bool {
		return strings.Contains(w, "RUNJS_TEST_NOT_SET is not set in the gateway's environment")
	}) {
		t.Errorf("no warning for an inherited variable that is not set: %q", cfg.Warnings)
	}
	g := startGateway(t, cfg, io.Discard)
	g.Settle(context.Background())
	e := run(t, g, `return (await tools.env.env({})).structuredContent.env`, 10*time.Second)
	wantStatus(t, e, wire.StatusReturned)
	var env []string
	if err := json.Unmarshal(e.Value, &env); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"HOME": true, "LOGNAME": true, "PATH": true, "SHELL": true, "TERM": true, "USER": true,
		"RUNJS_TEST_INHERITED": true, "FROM_FILE": true, "OWN": true, "OVERRIDDEN": true}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
		if !allowed[k] {
			t.Errorf("the server got %s, which it was not given", k)
		}
	}
	if got["RUNJS_TEST_INHERITED"] != "inherited-value" || got["FROM_FILE"] != "file value" || got["OWN"] != "own" || got["OVERRIDDEN"] != "env" || got["PATH"] != os.Getenv("PATH") {
		t.Errorf("the server's environment %q", env)
	}
	if strings.Contains(string(e.Value), "gateway-secret-sentinel") {
		t.Errorf("the gateway's secret reached the server")
	}
}

// TestSecretsNeverShown: a token expanded into a URL's path and host, into
// a command, and printed by a server on its stderr, appears nowhere: not in
// server_info, not in the log, not in what a program reads.
func TestSecretsNeverShown(t *testing.T) {
	const token = "tok-S3CRET-4f9a2c"
	lookup := func(k string) (string, bool) {
		if k == "TOKEN" {
			return token, true
		}
		return os.LookupEnv(k)
	}
	var log logBuffer
	cfg := parseTestConfig(t, `{"mcpServers": {
		"path": {"url": "http://127.0.0.1:9/${TOKEN}/mcp"},
		"host": {"url": "http://${TOKEN}.invalid/mcp", "startTimeout": "5s"},
		"cmd": {"command": "/nonexistent-${TOKEN}"},
		"stderr": {"command": "BIN", "args": ["--downstream", "exit-message"], "env": {"TOKEN": "${TOKEN}"}},
		"ok": {"command": "BIN", "args": ["--downstream", "people"], "env": {"TOKEN": "${TOKEN}"}}}}`, lookup)
	g := startGateway(t, cfg, &log)
	g.Settle(context.Background())
	e := run(t, g, `const out = []
		for (const f of [() => tools.ok.echo({s: 'fine'}), () => tools.path.x({}), () => tools.cmd.x({})]) {
			try { out.push((await f()).content[0].text) } catch (e) { out.push(e.message) } }
		return out`, 10*time.Second)
	wantStatus(t, e, wire.StatusReturned)
	info, _ := json.Marshal(g.info())
	for what, text := range map[string]string{"server_info": string(info), "the log": log.String(), "the run": fmt.Sprint(e.Value, e.Error)} {
		if strings.Contains(text, token) {
			t.Errorf("the token shows in %s:\n%s", what, text)
		}
	}
	for name, want := range map[string]string{
		"path":   "initialize failed: connection refused (nothing listens at 127.0.0.1:9)",
		"cmd":    "cannot start /nonexistent-" + redactedText,
		"stderr": "(got " + redactedText + ")",
	} {
		if r := serverInfo(g, name).Reason; !strings.Contains(r, want) {
			t.Errorf("%s: reason %q lacks %q", name, r, want)
		}
	}
	if r := serverInfo(g, "host").Reason; r == "" || strings.Contains(r, token) {
		t.Errorf("host: reason %q", r)
	}
}

// TestCloseStopsStartingServers: Close ends an attempt under way (a server
// waiting on its gate) and reaps its process.
func TestCloseStopsStartingServers(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "never")
	cfg := parseTestConfig(t, fmt.Sprintf(`{"mcpServers": {"slow": {"command": "BIN", "args": ["--downstream", "people"], "env": {"GATE": %q}}}}`, gate), nil)
	g := startGateway(t, cfg, io.Discard)
	d := g.servers["slow"]
	var pid int
	waitFor(t, 10*time.Second, "the server's process never started", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.attempt != nil
	})
	// The attempt holds its process until it ends; find it through /proc.
	waitFor(t, 10*time.Second, "no child process", func() bool { pid = childPID(os.Getpid()); return pid != 0 })
	done := make(chan struct{})
	go func() { g.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s with a server starting")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the starting server (pid %d) outlived Close: %v", pid, err)
	}
}

// childPID finds a child process of pid running this binary in people mode.
func childPID(pid int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == fmt.Sprint(pid) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if bytes.Contains(cmdline, []byte("people")) {
				var n int
				fmt.Sscan(e.Name(), &n)
				return n
			}
		}
	}
	return 0
}

// TestShutdownLadder: a server that ignores its stdin's end and SIGTERM,
// with a child in its process group, is killed with its group by Close,
// which returns once it is reaped.
func TestShutdownLadder(t *testing.T) {
	defer setStopSteps(100*time.Millisecond, 100*time.Millisecond)()
	var log logBuffer
	cfg := parseTestConfig(t, `{"mcpServers": {"stubborn": {"command": "BIN", "args": ["--downstream", "stubborn"]}}}`, nil)
	g := startGateway(t, cfg, &log)
	g.Settle(context.Background())
	pid := serverInfo(g, "stubborn").PID
	var child int
	waitFor(t, 10*time.Second, "the server did not say its child's pid", func() bool {
		_, err := fmt.Sscanf(log.String()[max(0, strings.Index(log.String(), "child pid ")):], "child pid %d", &child)
		return err == nil && child > 0
	})
	d := g.servers["stubborn"]
	d.mu.Lock()
	proc := d.proc
	d.mu.Unlock()
	done := make(chan struct{})
	go func() { g.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s: the ladder did not end a server that ignores SIGTERM")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the server (pid %d) outlived Close: %v", pid, err)
	}
	// The child was the server's: once its parent is gone it is reaped by
	// init, so it may be a zombie a moment longer; it must not run.
	waitFor(t, 10*time.Second, fmt.Sprintf("the server's child (pid %d) outlived its group's kill", child), func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			return true
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		return len(fields) > 0 && fields[0] == "Z"
	})
	if how := proc.ended(); !strings.Contains(how, "was killed by signal SIGKILL (it did not exit on SIGTERM, so its process group was killed)") {
		t.Errorf("how it ended: %q", how)
	}
}

// setStopSteps shortens the ladder's first two waits for a test.
func setStopSteps(stdin, term time.Duration) func() {
	oldStdin, oldTerm := stdinGrace, termGrace
	stdinGrace, termGrace = stdin, term
	return func() { stdinGrace, termGrace = oldStdin, oldTerm }
}
