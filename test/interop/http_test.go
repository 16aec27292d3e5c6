package interop

// The TypeScript SDK's client drives the gateway over Streamable HTTP
// (http_client.mjs): two sessions at once, the refusals, and SIGTERM with
// programs running.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// runHTTPClient runs http_client.mjs in a mode against url with the token
// in its environment, and decodes its summary into v.
func runHTTPClient(t *testing.T, node, dir, url, mode string, v any) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(node, "http_client.mjs", "--url", url, "--mode", mode)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RUN_JS_SERVER_TOKEN="+testToken)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = termGrace
	p := start(t, "http_client.mjs --mode "+mode, cmd, termGrace)
	select {
	case <-p.done:
	case <-time.After(clientTimeout):
		p.stop(t, termGrace)
		t.Fatalf("http_client.mjs --mode %s did not finish within %s; stderr:\n%s\nstdout:\n%s", mode, clientTimeout, &stderr, &stdout)
	}
	if p.err != nil {
		t.Fatalf("http_client.mjs --mode %s failed: %v; stderr:\n%s\nstdout:\n%s", mode, p.err, &stderr, &stdout)
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), v); err != nil {
		t.Fatalf("http_client.mjs --mode %s: stdout is not its summary: %v\n%s", mode, err, &stdout)
	}
	t.Logf("http_client.mjs --mode %s summary: %s", mode, bytes.TrimSpace(stdout.Bytes()))
}

// TestHTTPTwoSessions: two TypeScript agents at once over HTTP, with the
// token from --token-file: three runs each (calling the demo server), three
// running scripts each (the per-session cap), another session's script id
// refused, progress while waiting, a cancelled wait that leaves its program
// running, and stop_js of each script.
func TestHTTPTwoSessions(t *testing.T) {
	node, dir := nodeEnv(t)
	url, _, _ := serveHTTP(t, sharedGateway(t), "--demo", "--token-file", tokenFile(t))
	var s struct {
		Tools map[string][]string `json:"tools"`
		Runs  map[string][]struct {
			IsError bool   `json:"isError"`
			Status  string `json:"status"`
			Value   struct {
				Who   string `json:"who"`
				N     int    `json:"n"`
				ID    int    `json:"id"`
				State string `json:"state"`
			} `json:"value"`
		} `json:"runs"`
		Fourth struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"fourth"`
		Foreign map[string]struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"foreign"`
		Lists    map[string][][2]string `json:"lists"`
		IDs      map[string][]string    `json:"ids"`
		Progress struct {
			Notifications int    `json:"notifications"`
			Status        string `json:"status"`
		} `json:"progress"`
		Cancel struct {
			Error string `json:"error"`
			State string `json:"state"`
		} `json:"cancel"`
		Stopped map[string][]string `json:"stopped"`
	}
	runHTTPClient(t, node, dir, url, "sessions", &s)

	want := []string{"list_js", "run_js", "search_tools", "server_info", "stop_js", "wait_js"}
	for _, who := range []string{"a", "b"} {
		if !slices.Equal(s.Tools[who], want) {
			t.Errorf("session %s lists tools %q, want %q", who, s.Tools[who], want)
		}
		runs := s.Runs[who]
		if len(runs) != 3 {
			t.Fatalf("session %s: %d runs, want 3", who, len(runs))
		}
		for n, r := range runs {
			if r.IsError || r.Status != "returned" || r.Value.Who != who || r.Value.N != n || r.Value.ID != 101+n || r.Value.State == "" {
				t.Errorf("session %s run %d: %+v; want returned with its own input and issue %d", who, n, r, 101+n)
			}
		}
		if got := s.Stopped[who]; !slices.Equal(got, []string{"stopped", "stopped", "stopped"}) {
			t.Errorf("session %s: stop_js of its scripts gave %q, want three stopped", who, got)
		}
	}
	if !s.Fourth.IsError || !strings.Contains(s.Fourth.Text, "this session already runs 3 programs") {
		t.Errorf("a fourth running script in one session: %+v, want the per-session cap", s.Fourth)
	}
	for _, tool := range []string{"wait", "stop"} {
		if f := s.Foreign[tool]; !f.IsError || !strings.Contains(f.Text, "no script") || !strings.Contains(f.Text, s.IDs["a"][0]) {
			t.Errorf("session B's %s_js of session A's script: %+v, want it unknown", tool, f)
		}
	}
	// Each session lists its own three runs and three scripts, and none of
	// the other's.
	for who, other := range map[string]string{"a": "b", "b": "a"} {
		var mine []string
		for _, e := range s.Lists[who] {
			mine = append(mine, e[0])
		}
		if len(mine) != 6 {
			t.Errorf("list_js of %s: %d entries %q, want 6", who, len(mine), mine)
		}
		for _, id := range s.IDs[who] {
			if !slices.Contains(mine, id) {
				t.Errorf("list_js of %s lacks its script %s", who, id)
			}
		}
		for _, id := range s.IDs[other] {
			if slices.Contains(mine, id) {
				t.Errorf("list_js of %s lists %s's script %s", who, other, id)
			}
		}
	}
	if s.Progress.Notifications < 1 || s.Progress.Status != "running" {
		t.Errorf("wait_js with a progress token for 2.5 s: %+v, want at least one notification and status running", s.Progress)
	}
	if s.Cancel.Error == "" || s.Cancel.State != "running" {
		t.Errorf("a cancelled wait_js: %+v, want an error for the wait and the program still running", s.Cancel)
	}
}

// TestHTTPRefusals: what a TypeScript agent without the token, with a
// wrong one, from a foreign origin or with a body over the cap gets; and
// the session still serves after a refused body.
func TestHTTPRefusals(t *testing.T) {
	node, dir := nodeEnv(t)
	url, _, _ := serveHTTP(t, sharedGateway(t), "--token-file", tokenFile(t))
	type raw struct {
		Status          int    `json:"status"`
		WWWAuthenticate string `json:"wwwAuthenticate"`
		Body            string `json:"body"`
	}
	type sdk struct {
		Connected bool   `json:"connected"`
		Code      int    `json:"code"`
		Message   string `json:"message"`
	}
	var s struct {
		Raw     map[string]raw `json:"raw"`
		SDK     map[string]sdk `json:"sdk"`
		OverCap struct {
			Refused bool   `json:"refused"`
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"overCap"`
		AfterOverCap struct {
			Status string          `json:"status"`
			Value  json.RawMessage `json:"value"`
		} `json:"afterOverCap"`
	}
	runHTTPClient(t, node, dir, url, "refusals", &s)

	wants := []struct {
		name, challenge, body string
		status                int
	}{
		{"noToken", `Bearer realm="run-js-server"`, "no bearer token", 401},
		{"wrongToken", `error="invalid_token"`, "not the bearer token of this gateway", 401},
		{"foreignOrigin", "", `Origin "http://evil.example.com" is not allowed`, 403},
	}
	for _, w := range wants {
		r, c := s.Raw[w.name], s.SDK[w.name]
		if r.Status != w.status || !strings.Contains(r.Body, w.body) || !strings.Contains(r.WWWAuthenticate, w.challenge) || (w.challenge == "") != (r.WWWAuthenticate == "") {
			t.Errorf("%s, raw: %+v; want %d, WWW-Authenticate with %q, body with %q", w.name, r, w.status, w.challenge, w.body)
		}
		if c.Connected || c.Code != w.status || !strings.Contains(c.Message, w.body) {
			t.Errorf("%s, the SDK client: %+v; want refused with %d and %q", w.name, c, w.status, w.body)
		}
	}
	if o := s.OverCap; !o.Refused || o.Code != 413 || !strings.Contains(o.Message, "over this gateway's cap of 16777216 bytes") {
		t.Errorf("a 17 MiB run_js: %+v; want refused with 413 naming the cap", o)
	}
	if a := s.AfterOverCap; a.Status != "returned" || string(a.Value) != "42" {
		t.Errorf("run_js after the refused body: %+v; want returned 42", a)
	}
}

// TestHTTPSigtermReapsWorkers: SIGTERM with six programs running in two
// sessions and a wait in flight on each: the gateway exits 0, the waits get
// their programs' endings, and every process the gateway started (workers,
// spares, the demo server) is gone and was reaped by it. The test process
// is a child subreaper, so a child the gateway left unreaped or alive would
// become the test's own, and be seen.
func TestHTTPSigtermReapsWorkers(t *testing.T) {
	node, dir := nodeEnv(t)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", err)
	}
	url, gw, gwLog := serveHTTP(t, sharedGateway(t), "--demo", "--token-file", tokenFile(t))

	cmd := exec.Command(node, "http_client.mjs", "--url", url, "--mode", "hold")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RUN_JS_SERVER_TOKEN="+testToken)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start(t, "http_client.mjs --mode hold", cmd, 0)
	lines := readLines(bufio.NewReader(out))
	next := func(what string, d time.Duration) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("waiting for %s: http_client.mjs closed its stdout; stderr:\n%s", what, &stderr)
			}
			return l
		case <-time.After(d):
			t.Fatalf("no %s from http_client.mjs within %s; stderr:\n%s", what, d, &stderr)
		}
		return ""
	}
	var ready struct {
		Ready bool     `json:"ready"`
		IDs   []string `json:"ids"`
	}
	if l := next("ready line", clientTimeout); json.Unmarshal([]byte(l), &ready) != nil || !ready.Ready || len(ready.IDs) != 6 {
		t.Fatalf("http_client.mjs: %q, want {ready: true} with six script ids", l)
	}

	children := childrenOf(t, gw.cmd.Process.Pid)
	workers := 0
	for _, c := range children {
		if strings.Contains(c.cmdline, "--worker-fd") {
			workers++
		}
	}
	if workers < 6 {
		t.Fatalf("the gateway has %d workers with six programs running; children %+v", workers, children)
	}
	t.Logf("before SIGTERM the gateway (pid %d) has %d children: %+v", gw.cmd.Process.Pid, len(children), children)

	if err := syscall.Kill(gw.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gw.done:
	case <-time.After(sigtermTimeout):
		t.Fatalf("the gateway did not exit within %s of SIGTERM; output:\n%s", sigtermTimeout, gwLog)
	}
	if gw.err != nil {
		t.Fatalf("the gateway exited with %v after SIGTERM, want status 0; output:\n%s", gw.err, gwLog)
	}

	var waits struct {
		Waits []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"waits"`
	}
	if l := next("answers of the waits in flight", 30*time.Second); json.Unmarshal([]byte(l), &waits) != nil || len(waits.Waits) != 2 {
		t.Fatalf("http_client.mjs: %q, want the two waits' answers", l)
	}
	for _, w := range waits.Waits {
		if w.Status != "stopped" {
			t.Errorf("the wait on %s in flight at SIGTERM got %+v, want the program's ending, stopped", w.ID, w)
		}
	}

	for _, c := range children {
		state, err := procState(c.pid)
		if err != nil {
			continue // gone, and reaped
		}
		// Still there: alive, or a zombie nobody reaped; either way it is the
		// test's child now. Reap it so that it does not outlive the test.
		_ = syscall.Kill(c.pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(c.pid, &ws, 0, nil)
		t.Errorf("the gateway's child %d (%s) outlived it in state %s: not stopped and reaped", c.pid, c.cmdline, state)
	}
}

// child is a process whose parent is the gateway.
type child struct {
	pid     int
	cmdline string
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(t *testing.T, pid int) []child {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []child
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, child{pid: p, cmdline: strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")})
	}
	return out
}

// procState is a process's state letter (R, S, Z...), or an error when it
// does not exist.
func procState(pid int) (string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) == 0 {
		return "", fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	return f[0], nil
}
