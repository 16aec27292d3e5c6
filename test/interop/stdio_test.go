package interop

// The built gateway on stdio, fed each kind of bad line: it must answer
// what it can, skip the rest, and go on serving.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// maxRequestBytes is mcpgw.MaxRequestBytes, the cap on a stdio line.
const maxRequestBytes = 16 << 20

func TestStdioBadLines(t *testing.T) {
	cmd := exec.Command(sharedGateway(t)) // stdio, no config
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = stopTimeout
	p := start(t, "run-js-server (stdio)", cmd, termGrace)
	lines := readLines(bufio.NewReaderSize(stdout, 1<<20))
	// Writes go from their own goroutine: a 16 MiB line fills the pipe
	// while the gateway answers on the other.
	writes := make(chan string, 16)
	writeErr := make(chan error, 1)
	go func() {
		for s := range writes {
			if _, err := io.WriteString(stdin, s); err != nil {
				writeErr <- err
				return
			}
		}
		if err := stdin.Close(); err != nil {
			writeErr <- err
		}
	}()
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("waiting for %s: the gateway closed stdout (it ended: %v); stderr:\n%.3000s", what, p.err, &stderr)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("waiting for %s: stdout line is not JSON: %.300q", what, l)
			}
			return m
		case err := <-writeErr:
			t.Fatalf("waiting for %s: writing to the gateway failed: %v; stderr:\n%.3000s", what, err, &stderr)
		case <-time.After(clientTimeout):
			t.Fatalf("no answer for %s within %s; stderr:\n%.3000s", what, clientTimeout, &stderr)
		}
		return nil
	}
	wantError := func(what string, id any, code float64, inMessage string) {
		t.Helper()
		m := next(what)
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if m["id"] != id || e == nil || e["code"] != code || !strings.Contains(msg, inMessage) {
			t.Fatalf("%s: got %.500v; want error %v with %q for id %v", what, m, code, inMessage, id)
		}
	}

	// Without an id: logged and skipped, nothing answered (the next answer
	// is for the truncated line).
	writes <- "this is not JSON\n"
	writes <- `{"hello": "world"}` + "\n"
	writes <- "\n"
	writes <- `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protoc` + "\n"
	wantError("a truncated line", 1.0, -32700, "parse error")
	writes <- `{"jsonrpc":"1.0","id":"two","method":"ping"}` + "\n"
	wantError("JSON that is not JSON-RPC", "two", -32600, "not a JSON-RPC 2.0 message")
	writes <- `{"method":"tools/call","params":{"name":"run_js","arguments":{"code":"return 1 // ` + strings.Repeat("x", maxRequestBytes) + `"}},"jsonrpc":"2.0","id":3}` + "\n"
	wantError("a line over the 16 MiB cap", 3.0, -32600, "over this server's cap of 16777216 bytes")

	writes <- `{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	if m := next("initialize"); m["id"] != 10.0 || m["result"] == nil {
		t.Fatalf("initialize after bad lines: %.500v", m)
	}
	writes <- `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	writes <- `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"run_js","arguments":{"code":"return input.n * 2","input":{"n":21}}}}` + "\n"
	m := next("run_js")
	res, _ := m["result"].(map[string]any)
	st, _ := res["structuredContent"].(map[string]any)
	if m["id"] != 11.0 || st["status"] != "returned" || st["value"] != 42.0 {
		t.Fatalf("run_js after bad lines: %.1000v", m)
	}
	// The last line cut short by the end of stdin: answered, then the
	// gateway exits as stdin ended.
	writes <- `{"jsonrpc":"2.0","id":12,"method":"tools/li`
	close(writes)
	wantError("a line cut by the end of stdin", 12.0, -32700, "parse error")
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Fatalf("the gateway did not exit within %s of its stdin's end", stopTimeout)
	}
	if p.err != nil {
		t.Fatalf("the gateway exited with %v, want 0; stderr:\n%.3000s", p.err, &stderr)
	}
	for _, want := range []string{`start="this is not JSON"`, "answered=false", "answered=true", "bytes=16777"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the gateway's log lacks %q:\n%.3000s", want, &stderr)
		}
	}
}
