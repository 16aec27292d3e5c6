package mcpgw

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// filterAnswer is an error response the filter wrote.
type filterAnswer struct {
	ID    json.RawMessage `json:"id"`
	Error struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// runFilter passes input through a filter with cap max and returns what
// go-sdk would read and the answers written.
func runFilter(t testing.TB, input []byte, max int) (forwarded []byte, answers []filterAnswer) {
	t.Helper()
	var out bytes.Buffer
	f := newLineFilter(io.NopCloser(bytes.NewReader(input)), &out, nil, max)
	forwarded, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("reading the filter: %v", err)
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var a filterAnswer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("an answer is not JSON: %v: %s", err, sc.Bytes())
		}
		if _, err := jsonrpc.DecodeMessage(sc.Bytes()); err != nil {
			t.Fatalf("an answer is not a JSON-RPC message: %v: %s", err, sc.Bytes())
		}
		answers = append(answers, a)
	}
	return forwarded, answers
}

// TestLineFilter: each kind of line, good and bad: what go-sdk gets, and
// what is answered, with which code and id.
func TestLineFilter(t *testing.T) {
	const max = 256
	pad := func(prefix, suffix string, n int) string { // a line of n bytes
		return prefix + strings.Repeat("a", n-len(prefix)-len(suffix)) + suffix
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := []struct {
		name    string
		line    string
		pass    bool   // forwarded as is (trimmed)
		code    int64  // 0: no answer
		id      string // the answer's id, as JSON
		message string // in the answer
	}{
		{name: "a request", line: ping, pass: true},
		{name: "a notification", line: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, pass: true},
		{name: "a response from the client", line: `{"jsonrpc":"2.0","id":"s1","result":{}}`, pass: true},
		{name: "CRLF and spaces", line: "  " + ping + " \r", pass: true},
		{name: "exactly the cap", line: pad(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"`, `"}}`, max), pass: true},
		{name: "blank", line: "   "},
		{name: "not JSON", line: "hello world"},
		{name: "not JSON, id readable", line: `{"jsonrpc":"2.0","id":4,"method":"ping",}`, code: -32700, id: "4", message: "parse error"},
		{name: "truncated", line: `{"jsonrpc":"2.0","id":7,"method":"tools/list"`, code: -32700, id: "7", message: "not one JSON value"},
		{name: "two values on a line", line: `{"jsonrpc":"2.0","id":5,"method":"ping"} {}`, code: -32700, id: "5"},
		{name: "JSON, not JSON-RPC", line: `{"hello":"world"}`},
		{name: "a number", line: `42`},
		{name: "wrong version", line: `{"jsonrpc":"1.0","id":3,"method":"x"}`, code: -32600, id: "3", message: "not a JSON-RPC 2.0 message"},
		{name: "no version, string id", line: `{"id":"a\"b","method":"x"}`, code: -32600, id: `"a\"b"`},
		{name: "id of the wrong type", line: `{"jsonrpc":"2.0","id":{"x":1},"method":"x"}`},
		{name: "fractional id", line: `{"jsonrpc":"1.0","id":1.5,"method":"x"}`},
		{name: "id past a nested one", line: `{"params":{"id":99},"jsonrpc":"1.0","id":6}`, code: -32600, id: "6"},
		{name: "only a nested id", line: `{"jsonrpc":"1.0","params":{"id":5}}`},
		{name: "a batch", line: `[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`, code: -32600, id: "8", message: "batches are not served"},
		{name: "an empty batch", line: `[]`},
		{name: "over the cap, id first", line: pad(`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"`, `"}}`, max+1), code: -32600, id: "9", message: "line of 257 bytes is over this server's cap of 256 bytes"},
		{name: "over the cap, id last", line: pad(`{"method":"ping","params":{"x":"`, `"},"jsonrpc":"2.0","id":12}`, 10*max), code: -32600, id: "12", message: "cap of 256 bytes"},
		{name: "over the cap, string id last", line: pad(`{"method":"ping","params":{"x":"`, `"},"jsonrpc":"2.0","id":"r-1"}`, 100*max), code: -32600, id: `"r-1"`},
		{name: "over the cap, no id", line: pad(`{"method":"ping","params":{"x":"`, `"}}`, 3*max)},
		{name: "over the cap, not JSON", line: strings.Repeat("x", 5*max)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The line, then a good one: the filter must go on.
			fwd, answers := runFilter(t, []byte(tt.line+"\n"+ping+"\n"), max)
			want := ping + "\n"
			if tt.pass {
				want = strings.TrimSpace(tt.line) + "\n" + want
			}
			if string(fwd) != want {
				t.Errorf("forwarded %q, want %q", fwd, want)
			}
			if tt.code == 0 {
				if len(answers) != 0 {
					t.Errorf("answered %+v, want no answer", answers)
				}
				return
			}
			if len(answers) != 1 {
				t.Fatalf("%d answers %+v, want 1", len(answers), answers)
			}
			a := answers[0]
			if a.Error.Code != tt.code || string(a.ID) != tt.id || !strings.Contains(a.Error.Message, tt.message) {
				t.Errorf("answer id %s code %d %q; want id %s code %d, message with %q", a.ID, a.Error.Code, a.Error.Message, tt.id, tt.code, tt.message)
			}
		})
	}
}

// TestLineFilterEOF: a last line without its newline is still judged.
func TestLineFilterEOF(t *testing.T) {
	fwd, answers := runFilter(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"+`{"jsonrpc":"2.0","id":2,"meth`), 256)
	if string(fwd) != `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n" {
		t.Errorf("forwarded %q", fwd)
	}
	if len(answers) != 1 || string(answers[0].ID) != "2" || answers[0].Error.Code != -32700 {
		t.Errorf("answers %+v, want one parse error for id 2", answers)
	}
}

// endlessLine is a reader of one line: a JSON start, then n bytes of "A"
// given a piece at a time, then `"}` and a newline; after it, a good line.
type endlessLine struct {
	n, sent int
	rest    []byte
	f       *lineFilter
	maxSeen int // the most the filter held at a Read
}

func (r *endlessLine) Read(p []byte) (int, error) {
	if r.f != nil {
		r.maxSeen = max(r.maxSeen, cap(r.f.buf)+cap(r.f.head)+cap(r.f.tail)+len(r.f.pending))
	}
	if r.sent == 0 && r.rest == nil {
		r.rest = []byte(`{"jsonrpc":"2.0","id":77,"method":"ping","params":{"x":"`)
	}
	if len(r.rest) > 0 {
		n := copy(p, r.rest)
		r.rest = r.rest[n:]
		return n, nil
	}
	if r.sent < r.n {
		n := min(len(p), r.n-r.sent)
		for i := range n {
			p[i] = 'A'
		}
		r.sent += n
		if r.sent == r.n {
			r.rest = []byte("\"}}\n" + `{"jsonrpc":"2.0","id":78,"method":"ping"}` + "\n")
		}
		return n, nil
	}
	return 0, io.EOF
}

// TestLineFilterBoundedMemory: a 64 MiB line against a 1 MiB cap is read
// through without the filter ever holding more than the cap and its
// bounded scraps; it is refused with its id, and the next line passes.
func TestLineFilterBoundedMemory(t *testing.T) {
	const max = 1 << 20
	src := &endlessLine{n: 64 << 20}
	var out bytes.Buffer
	f := newLineFilter(io.NopCloser(src), &out, nil, max)
	src.f = f
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(f)
		done <- b
	}()
	var fwd []byte
	select {
	case fwd = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the filter did not get through a 64 MiB line within 2 minutes")
	}
	if string(fwd) != `{"jsonrpc":"2.0","id":78,"method":"ping"}`+"\n" {
		t.Fatalf("forwarded %.200q", fwd)
	}
	if limit := max + 2 + idScanHead + idScanTail + readChunk; src.maxSeen > limit {
		t.Fatalf("the filter held %d bytes at once; its bound is %d (the cap and its scraps)", src.maxSeen, limit)
	}
	if !strings.Contains(out.String(), `"id":77`) || !strings.Contains(out.String(), "cap of 1048576 bytes") {
		t.Fatalf("answers: %.500s", out.String())
	}
}

// TestServeStdioGoesOn: through go-sdk itself, every kind of bad line is
// answered or skipped and the server goes on: initialize, tools/list and a
// run_js are answered after them, and a request of exactly the cap passes
// go-sdk's own frame cap.
func TestServeStdioGoesOn(t *testing.T) {
	const max = 4096
	g := newTestGateway(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveStdio(ctx, g, inR, outW, max); outW.Close() }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("serveStdio did not return within 10 s of its context's end")
		}
	})
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatalf("writing to the server: %v", err)
		}
	}
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("waiting for %s: the server closed stdout (it ended)", what)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("waiting for %s: not JSON: %s", what, l)
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer for %s within 30 s", what)
		}
		return nil
	}
	wantError := func(what string, id float64, code float64) {
		t.Helper()
		m := next(what)
		e, _ := m["error"].(map[string]any)
		if m["id"] != id || e == nil || e["code"] != code {
			t.Fatalf("%s: got %v, want an error %v for id %v", what, m, code, id)
		}
	}

	send("hello world")                                                  // skipped: no id
	send(`{"hello":"world"}`)                                            // skipped: no id
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pro`) // truncated
	wantError("a truncated line", 1, -32700)
	send(`{"jsonrpc":"1.0","id":2,"method":"ping"}`)
	wantError("JSON that is not JSON-RPC", 2, -32600)
	send(`{"method":"ping","params":{"x":"` + strings.Repeat("y", 3*max) + `"},"jsonrpc":"2.0","id":3}`)
	wantError("a line over the cap", 3, -32600)
	send(`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`)
	wantError("a batch", 4, -32600)

	send(`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := next("initialize"); m["id"] != 10.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	prefix, suffix := `{"jsonrpc":"2.0","id":11,"method":"ping","params":{"_meta":{"pad":"`, `"}}}`
	send(prefix + strings.Repeat("p", max-len(prefix)-len(suffix)) + suffix)
	if m := next("a ping of exactly the cap"); m["id"] != 11.0 || m["result"] == nil {
		t.Fatalf("a ping of exactly %d bytes: %v", max, m)
	}
	send("not json again")
	send(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"run_js","arguments":{"code":"return 6 * 7"}}}`)
	m := next("run_js")
	res, _ := m["result"].(map[string]any)
	st, _ := res["structuredContent"].(map[string]any)
	if m["id"] != 12.0 || st["status"] != "returned" || fmt.Sprint(st["value"]) != "42" {
		t.Fatalf("run_js after bad lines: %v", m)
	}
	select {
	case err := <-served:
		t.Fatalf("the server ended: %v", err)
	default:
	}
}

// FuzzLineFilter: whatever a line holds, the filter does not panic, gives
// go-sdk only single JSON-RPC messages within the cap, answers only with
// JSON-RPC errors, and passes the good line after it.
func FuzzLineFilter(f *testing.F) {
	for _, s := range []string{
		"hello", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":7,"method":"x"`, `[{"id":1}]`, `[]`,
		`{"id":"\u0000"}`, `{"method":"x","id":9}}`, `"id":5}`, `{"a":[[[[{"id":1}]]]],"id":2`, "\r\r\n\n", `{"id":1e400}`,
		`{"jsonrpc":"2.0","id":-9007199254740993,"method":"x"}`, strings.Repeat(`{"a":`, 100), strings.Repeat("z", 300),
	} {
		f.Add([]byte(s))
	}
	const max = 256
	good := `{"jsonrpc":"2.0","id":"last","method":"ping"}`
	f.Fuzz(func(t *testing.T, data []byte) {
		fwd, _ := runFilter(t, append(append(data, '\n'), good+"\n"...), max)
		lines := strings.Split(strings.TrimSuffix(string(fwd), "\n"), "\n")
		if lines[len(lines)-1] != good {
			t.Fatalf("the good line after %q was not forwarded: %q", data, fwd)
		}
		for _, l := range lines {
			if len(l) > max || !json.Valid([]byte(l)) || strings.HasPrefix(l, "[") {
				t.Fatalf("forwarded %q", l)
			}
			if _, err := jsonrpc.DecodeMessage([]byte(l)); err != nil {
				t.Fatalf("forwarded %q: %v", l, err)
			}
		}
	})
}
