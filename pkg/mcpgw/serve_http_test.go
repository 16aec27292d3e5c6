package mcpgw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

const testToken = "t0ken-for-tests-0123456789"

// serveHTTPTest serves g over HTTP on a loopback port and returns the MCP
// endpoint's URL; Shutdown runs at cleanup.
func serveHTTPTest(t *testing.T, g *Gateway, opts HTTPOptions) (string, *HTTPServer) {
	t.Helper()
	hs, err := NewHTTPServer(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		hs.Shutdown()
		select {
		case err := <-served:
			if !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return within 10 s of Shutdown")
		}
	})
	return "http://" + ln.Addr().String() + MCPPath, hs
}

// testHeaders adds headers to every request.
type testHeaders map[string]string

func (h testHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// httpClient connects a go-sdk client (an agent) over Streamable HTTP with
// the token.
func httpClient(t *testing.T, url string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: testHeaders{"Authorization": "Bearer " + testToken}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "test"}, opts).Connect(ctx, tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mustHTTPClient(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := httpClient(t, url, nil)
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	return cs
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestHTTPRefusals: every guard in front of the MCP endpoint, attacked
// with a raw request: the status, the body that names the guard, and the
// headers a client needs.
func TestHTTPRefusals(t *testing.T) {
	g := newTestGateway(t)
	url, _ := serveHTTPTest(t, g, HTTPOptions{Token: testToken, AllowOrigins: []string{"https://app.example.com"}})
	auth := "Bearer " + testToken
	tests := []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		body    io.Reader
		status  int
		inBody  string
		header  [2]string // a header the answer must carry, and in its value
	}{
		{name: "no token", headers: map[string]string{}, status: 401, inBody: "no bearer token", header: [2]string{"WWW-Authenticate", `Bearer realm="run-js-server"`}},
		{name: "wrong token", headers: map[string]string{"Authorization": "Bearer " + strings.Repeat("x", len(testToken))}, status: 401,
			inBody: "not the bearer token of this gateway", header: [2]string{"WWW-Authenticate", `error="invalid_token"`}},
		{name: "token with a suffix", headers: map[string]string{"Authorization": auth + "x"}, status: 401, header: [2]string{"WWW-Authenticate", "Bearer"}},
		{name: "token as basic auth", headers: map[string]string{"Authorization": "Basic " + testToken}, status: 401},
		{name: "the token", headers: map[string]string{"Authorization": auth}, status: 200, header: [2]string{"Mcp-Session-Id", ""}},
		{name: "foreign origin", headers: map[string]string{"Authorization": auth, "Origin": "http://evil.example.com"}, status: 403, inBody: "--allow-origin"},
		{name: "foreign origin, no token", headers: map[string]string{"Origin": "http://evil.example.com"}, status: 403, inBody: `Origin "http://evil.example.com" is not allowed`},
		{name: "foreign origin on GET", method: "GET", headers: map[string]string{"Authorization": auth, "Origin": "https://evil.example.com", "Accept": "text/event-stream"}, status: 403},
		{name: "cross-site fetch", headers: map[string]string{"Authorization": auth, "Sec-Fetch-Site": "cross-site"}, status: 403},
		{name: "null origin", headers: map[string]string{"Authorization": auth, "Origin": "null"}, status: 403},
		{name: "same origin", headers: map[string]string{"Authorization": auth, "Origin": "http://" + strings.TrimPrefix(strings.TrimSuffix(url, MCPPath), "http://")}, status: 200},
		{name: "allowed origin", headers: map[string]string{"Authorization": auth, "Origin": "https://app.example.com"}, status: 200,
			header: [2]string{"Access-Control-Allow-Origin", "https://app.example.com"}},
		{name: "preflight of the allowed origin", method: "OPTIONS", headers: map[string]string{"Origin": "https://app.example.com", "Access-Control-Request-Method": "POST"},
			status: 204, header: [2]string{"Access-Control-Allow-Headers", "Mcp-Session-Id"}},
		{name: "preflight of a foreign origin", method: "OPTIONS", headers: map[string]string{"Origin": "https://evil.example.com", "Access-Control-Request-Method": "POST"}, status: 403},
		{name: "rebinding: foreign host", headers: map[string]string{"Authorization": auth, "Host": "evil.example.com:8080", "Origin": "http://evil.example.com:8080"}, status: 403, inBody: "DNS-rebinding"},
		{name: "localhost by name", headers: map[string]string{"Authorization": auth, "Host": "localhost"}, status: 200},
		{name: "body over the cap", headers: map[string]string{"Authorization": auth}, body: strings.NewReader(strings.Repeat(" ", MaxRequestBytes+1)),
			status: 413, inBody: "over this gateway's cap of 16777216 bytes"},
		{name: "chunked body over the cap", headers: map[string]string{"Authorization": auth}, body: io.MultiReader(strings.NewReader(strings.Repeat(" ", MaxRequestBytes+1))),
			status: 413, inBody: "exceeds 16777216 bytes"},
		{name: "another path", path: "/other", headers: map[string]string{"Authorization": auth}, status: 404, inBody: "serves MCP at /mcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, u, body := tt.method, url, tt.body
			if method == "" {
				method = "POST"
			}
			if tt.path != "" {
				u = strings.TrimSuffix(url, MCPPath) + tt.path
			}
			if body == nil {
				body = strings.NewReader(initializeBody)
			}
			req, err := http.NewRequest(method, u, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tt.headers {
				if k == "Host" {
					req.Host = v
				}
				req.Header.Set(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := http.DefaultClient.Do(req.WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096)) // a session's answer is an SSE stream: its start is enough
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.inBody) {
				t.Fatalf("status %d, body %q; want %d with %q", resp.StatusCode, b, tt.status, tt.inBody)
			}
			if h := tt.header[0]; h != "" && (resp.Header.Get(h) == "" || !strings.Contains(resp.Header.Get(h), tt.header[1])) {
				t.Fatalf("header %s is %q, want it with %q; headers %v", h, resp.Header.Get(h), tt.header[1], resp.Header)
			}
			if tt.status == 200 && resp.Header.Get("WWW-Authenticate") != "" {
				t.Fatalf("a served request carries WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestNewHTTPServerRefuses: a short token or a bad origin is refused
// before anything serves.
func TestNewHTTPServerRefuses(t *testing.T) {
	g := newTestGateway(t)
	for _, opts := range []HTTPOptions{
		{Token: "short"},
		{AllowOrigins: []string{"https://ok.example", "ftp://bad.example"}},
		{AllowOrigins: []string{"https://bad.example/path"}},
	} {
		if _, err := NewHTTPServer(g, opts); !errors.Is(err, ErrConfig) {
			t.Errorf("NewHTTPServer(%+v): %v, want ErrConfig", opts, err)
		}
	}
}

// TestHTTPSessionsApart: two agents over HTTP at once, each with three
// programs running: a script id of one is unknown to the other, each has
// its own per-session cap, and the gateway's cap holds across them.
func TestHTTPSessionsApart(t *testing.T) {
	g := newTestGateway(t)
	g.slots.max = 5
	url, _ := serveHTTPTest(t, g, HTTPOptions{Token: testToken})
	a, b := mustHTTPClient(t, url), mustHTTPClient(t, url)
	start := func(cs *mcp.ClientSession) (string, string) {
		t.Helper()
		text, st, isErr := callTool(t, cs, "run_js", map[string]any{"yield_ms": 50, "timeout_ms": 60000, "code": `while (true) {}`})
		id, _ := st["scriptId"].(string)
		if isErr {
			return "", text
		}
		if id == "" {
			t.Fatalf("run_js did not leave the program running: %s", text)
		}
		return id, text
	}
	var idsA, idsB []string
	for range MaxRunningPerSession {
		id, _ := start(a)
		idsA = append(idsA, id)
	}
	if id, text := start(a); id != "" || !strings.Contains(text, "this session already runs 3 programs") {
		t.Fatalf("a fourth program in session A: %q, want the per-session cap", text)
	}
	for range 2 {
		id, _ := start(b)
		idsB = append(idsB, id)
	}
	// A runs 3 and B 2: the gateway's cap (5) is reached before B's own.
	if id, text := start(b); id != "" || !strings.Contains(text, "5 programs are running on this server, its cap") {
		t.Fatalf("a sixth program on the gateway: %q, want the gateway's cap", text)
	}
	for _, tool := range []string{"wait_js", "stop_js"} {
		text, _, isErr := callTool(t, b, tool, map[string]any{"scriptId": idsA[0]})
		if !isErr || !strings.Contains(text, "no script") {
			t.Fatalf("session B's %s of session A's script: %q, want it unknown", tool, text)
		}
	}
	textA, _, _ := callTool(t, a, "list_js", nil)
	textB, _, _ := callTool(t, b, "list_js", nil)
	for _, id := range idsA {
		if !strings.Contains(textA, id) || strings.Contains(textB, id) {
			t.Fatalf("list_js: A's script %s: A lists %q, B lists %q", id, textA, textB)
		}
	}
	if !strings.Contains(textB, idsB[0]) {
		t.Fatalf("list_js of B %q lacks its own %s", textB, idsB[0])
	}
	// A's script still runs after B's attempts.
	_, st, _ := callTool(t, a, "stop_js", map[string]any{"scriptId": idsA[0]})
	if st["status"] != "stopped" {
		t.Fatalf("stop_js of A's script by A: %v", st)
	}
}

// TestHTTPProgressAndCancel: over HTTP, progress notifications reach the
// agent while it waits, and a cancelled wait ends the wait, not the
// program.
func TestHTTPProgressAndCancel(t *testing.T) {
	slow := testServer("bad", "misbehaving")
	slow.CallTimeout = 1500 * time.Millisecond
	g := newTestGateway(t, slow)
	url, _ := serveHTTPTest(t, g, HTTPOptions{Token: testToken})
	var notes atomic.Int32
	cs, err := httpClient(t, url, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if strings.Contains(req.Params.Message, "calls made") {
				notes.Add(1)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{"yield_ms": 30000,
		"code": `try { await tools.bad.hang({}) } catch (e) {} return 'ok'`}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("run_js: %v %+v", err, res)
	}
	if notes.Load() < 1 {
		t.Fatal("no progress notification reached the agent over HTTP during a 1.5 s wait")
	}

	_, st0, _ := callTool(t, cs, "run_js", map[string]any{"yield_ms": 50, "code": `while (true) {}`})
	id := st0["scriptId"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_js", Arguments: map[string]any{"scriptId": id, "yield_ms": 60000}}); err == nil {
		t.Fatal("a cancelled wait_js returned no error")
	}
	var sc *script
	for _, x := range g.scripts.all() {
		if x.id() == id {
			sc = x
		}
	}
	// The cancellation reaches the server as a notification: the wait ends
	// when it is handled.
	waitFor(t, 10*time.Second, "the cancelled wait_js to end on the server", func() bool { return !sc.watching.Load() })
	if e := sc.run.Ending(); e != nil {
		t.Fatalf("cancelling the wait ended the program: %+v", e)
	}
	text, st, _ := callTool(t, cs, "stop_js", map[string]any{"scriptId": id})
	if st["status"] != "stopped" {
		t.Fatalf("stop_js after a cancelled wait: %s", text)
	}
}

// TestHTTPSessionCap: past MaxSessions a new session is refused with 503
// and a body naming the cap; closing one makes room.
func TestHTTPSessionCap(t *testing.T) {
	g := newTestGateway(t)
	url, hs := serveHTTPTest(t, g, HTTPOptions{Token: testToken, MaxSessions: 2})
	first := mustHTTPClient(t, url)
	mustHTTPClient(t, url)
	if _, err := httpClient(t, url, nil); err == nil {
		t.Fatal("a third session was opened past the cap of 2")
	}
	req, _ := http.NewRequest("POST", url, strings.NewReader(initializeBody))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "too many MCP sessions: 2 are open") {
		t.Fatalf("a third session: status %d, Retry-After %q, body %q; want 503 with Retry-After and the cap named", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if err := first.Close(); err != nil { // DELETE: the session ends at once
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the closed session to leave the server", func() bool { return countSessions(hs) == 1 })
	mustHTTPClient(t, url)
}

// countSessions counts the initialized sessions (go-sdk also holds, for
// the length of a request, the session of a refused sessionless probe).
func countSessions(hs *HTTPServer) int {
	n := 0
	for ss := range hs.mcp.Sessions() {
		if ss.InitializeParams() != nil {
			n++
		}
	}
	return n
}

// TestHTTPSessionCapConcurrent: eight agents opening sessions at once
// cannot pass a cap of 2.
func TestHTTPSessionCapConcurrent(t *testing.T) {
	g := newTestGateway(t)
	url, hs := serveHTTPTest(t, g, HTTPOptions{Token: testToken, MaxSessions: 2})
	results := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := httpClient(t, url, nil)
			results <- err
		}()
	}
	opened := 0
	for range 8 {
		select {
		case err := <-results:
			if err == nil {
				opened++
			}
		case <-time.After(60 * time.Second):
			t.Fatal("eight concurrent connects did not all end within 60 s")
		}
	}
	if opened > 2 || countSessions(hs) > 2 {
		t.Fatalf("%d sessions opened, %d on the server, past the cap of 2", opened, countSessions(hs))
	}
	if opened == 0 {
		t.Fatal("no session opened of eight under a cap of 2")
	}
}

// TestHTTPIdleSessionStopsScripts: a session that sends nothing for the
// idle bound is closed, and its running program stopped and reaped.
func TestHTTPIdleSessionStopsScripts(t *testing.T) {
	g := newTestGateway(t)
	url, hs := serveHTTPTest(t, g, HTTPOptions{Token: testToken, SessionIdle: 300 * time.Millisecond})
	cs := mustHTTPClient(t, url)
	_, st, _ := callTool(t, cs, "run_js", map[string]any{"yield_ms": 50, "timeout_ms": 120000, "code": `while (true) {}`})
	id, _ := st["scriptId"].(string)
	var sc *script
	for _, x := range g.scripts.all() {
		if x.id() == id {
			sc = x
		}
	}
	if sc == nil {
		t.Fatalf("script %q is not in the table", id)
	}
	select {
	case <-sc.run.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the program of an idle session still runs 30 s after the 300 ms idle bound")
	}
	if e := sc.run.Ending(); e.Status != wire.StatusStopped {
		t.Fatalf("the idle session's program ended %s: %s", e.Status, e.Text())
	}
	select {
	case <-sc.run.Reaped(): // the ending is given at the end frame; the reaping follows
	case <-time.After(30 * time.Second):
		t.Fatal("the idle session's worker was not reaped 30 s after its ending")
	}
	if err := syscall.Kill(sc.run.PID(), 0); err == nil {
		t.Fatalf("worker %d still exists", sc.run.PID())
	}
	waitFor(t, 10*time.Second, "the idle session to leave the server", func() bool { return countSessions(hs) == 0 })
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_js", Arguments: map[string]any{}}); err == nil {
		t.Fatal("a call on the closed session succeeded")
	}
}

// TestHTTPShutdown: the ladder: a wait in flight gets its program's
// ending (stopped), every worker is reaped, and then nothing is accepted.
func TestHTTPShutdown(t *testing.T) {
	g := newTestGateway(t)
	url, hs := serveHTTPTest(t, g, HTTPOptions{Token: testToken})
	cs := mustHTTPClient(t, url)
	var ids []string
	for range 2 {
		_, st, _ := callTool(t, cs, "run_js", map[string]any{"yield_ms": 50, "timeout_ms": 120000, "code": `while (true) {}`})
		ids = append(ids, st["scriptId"].(string))
	}
	var pids []int
	for _, sc := range g.scripts.all() {
		pids = append(pids, sc.run.PID())
	}
	// The wait goes as a raw POST on the session, so that what the server
	// sends on it is read whole, whatever the client does with its other
	// streams when the session closes.
	body := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"wait_js","arguments":{"scriptId":"` + ids[0] + `","yield_ms":60000}}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	waited := make(chan string, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			waited <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		waited <- fmt.Sprintf("%d %s (read: %v)", resp.StatusCode, b, err)
	}()
	waitFor(t, 10*time.Second, "wait_js to be in flight", func() bool {
		for _, sc := range g.scripts.all() {
			if sc.id() == ids[0] {
				return sc.watching.Load()
			}
		}
		return false
	})
	done := make(chan struct{})
	go func() { hs.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Shutdown did not return within 60 s")
	}
	select {
	case got := <-waited:
		if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"id":99`) || !strings.Contains(got, `\"status\": \"stopped\"`) && !strings.Contains(got, `"status":"stopped"`) {
			t.Fatalf("the wait in flight at shutdown got %s, want the stopped ending", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait in flight got no answer within 10 s of shutdown")
	}
	for _, sc := range g.scripts.all() {
		if e := sc.run.Ending(); e == nil || e.Status != wire.StatusStopped {
			t.Fatalf("script %s after Shutdown: %+v, want stopped", sc.id(), e)
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Fatalf("worker %d exists after Shutdown", pid)
		}
	}
	if _, err := http.Post(url, "application/json", strings.NewReader(initializeBody)); err == nil {
		t.Fatal("a request after Shutdown was accepted")
	}
}

// TestServerInfoReportsHTTPLimits: server_info names the HTTP serving limits
// in force once the gateway is served over HTTP, and none on stdio.
func TestServerInfoReportsHTTPLimits(t *testing.T) {
	g := newTestGateway(t)
	if h := g.info().Limits.HTTP; h != nil {
		t.Fatalf("server_info reports HTTP limits %+v before any HTTP serving", h)
	}
	if _, err := NewHTTPServer(g, HTTPOptions{Token: testToken, MaxSessions: 5, SessionIdle: time.Minute, AllowOrigins: []string{"https://app.example"}}); err != nil {
		t.Fatal(err)
	}
	want := httpLimitsReport{TokenRequired: true, MaxRequestBytes: MaxRequestBytes, MaxSessions: 5, SessionIdleMs: 60_000, AllowedOrigins: 1}
	if h := g.info().Limits.HTTP; h == nil || *h != want {
		t.Fatalf("server_info HTTP limits %+v, want %+v", h, want)
	}
}
