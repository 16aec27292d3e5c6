package mcpgw

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// testConn is a stdioConn over a pipe the test writes the server's side of.
func testConn(t *testing.T) (*stdioConn, *os.File, *logBuffer) {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, inR) // the server reads its stdin
	t.Cleanup(func() { outW.Close(); inR.Close() })
	log := &logBuffer{}
	d := &downstream{cfg: ServerConfig{Name: "srv"}, log: slog.New(slog.NewTextHandler(log, nil)), sc: &scrubber{},
		strayLimit: newLogLimiter(1000, 1000)}
	c := newStdioConn(&serverProc{stdin: inW, stdout: outR}, d)
	t.Cleanup(func() { c.Close() })
	return c, outW, log
}

// readMsg reads one message with a watchdog.
func readMsg(t *testing.T, c *stdioConn) (jsonrpc.Message, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.Read(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("Read did not return: a line was neither delivered nor skipped")
	}
	return m, err
}

// TestStdioConnLines: every kind of line a server prints, in one stream:
// stray lines are skipped (and logged), messages and answers get through,
// answers too large for their program become answerTooLargeError while
// the stream goes on.
func TestStdioConnLines(t *testing.T) {
	c, w, log := testConn(t)
	ctx := context.Background()
	send := func(id int64, limit int64) {
		t.Helper()
		cctx := ctx
		if limit > 0 {
			cctx = withResultCap(ctx, limit)
		}
		req := &jsonrpc.Request{ID: mustID(id), Method: "tools/call", Params: []byte(`{}`)}
		if err := c.Write(cctx, req); err != nil {
			t.Fatal(err)
		}
	}
	send(1, 0)
	send(2, 10)    // a program that may receive 10 bytes
	send(3, 10)    // the same, answered with its id last
	send(4, 1<<20) // a program that may receive 1 MiB
	big := strings.Repeat("x", resultLineSlack+100)
	lines := []string{
		"Server starting...",                     // not JSON
		"",                                       // blank
		`{"jsonrpc":"2.0","id":`,                 // truncated
		`{"jsonrpc":"2.0","id":1,"result":{}} x`, // text after it
		`{"hello":"world"}`,                      // not JSON-RPC
		`["not", "messages"]`,                    // a batch of nothing
		`{"jsonrpc":"2.0","id":99,"result":{}}`,  // an answer to nothing
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"` + big + `"}]}}`,
		`{"result":{"content":[{"type":"text","text":"` + big + `","id":7}]},"jsonrpc":"2.0","id":3}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"bad"}}`,
	}
	go func() {
		bw := bufio.NewWriter(w)
		for _, l := range lines {
			bw.WriteString(l + "\n")
		}
		bw.Flush()
		w.Close()
	}()
	var got []string
	for {
		m, err := readMsg(t, c)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Read: %v", err)
			}
			break
		}
		switch m := m.(type) {
		case *jsonrpc.Request:
			got = append(got, "request "+m.Method)
		case *jsonrpc.Response:
			var tl *answerTooLargeError
			switch {
			case errors.As(m.Error, &tl):
				got = append(got, "too large "+fmt.Sprint(m.ID.Raw()))
			case m.Error != nil:
				got = append(got, "error "+fmt.Sprint(m.ID.Raw()))
			default:
				got = append(got, "result "+fmt.Sprint(m.ID.Raw())+" "+string(m.Result))
			}
		}
	}
	want := []string{"request notifications/message", `result 1 {"content":[]}`, "too large 2", "too large 3", "error 4"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("messages:\n got %q\nwant %q", got, want)
	}
	for _, kind := range []string{"is not JSON", "is not valid JSON (truncated, or with text after it)", "is JSON but not JSON-RPC", "answers no request of ours (id 99)"} {
		if !strings.Contains(log.String(), "srv: skipped a line on stdout that "+kind) {
			t.Errorf("the log lacks %q:\n%s", kind, log.String())
		}
	}
	if n := strings.Count(log.String(), "skipped a line"); n != 7 {
		t.Errorf("%d lines skipped, want 7 (two elements of the batch):\n%s", n, log.String())
	}
}

// TestStdioConnLineCap: a line past every cap (no call awaits a large
// answer) is never held whole: it answers the call it belongs to with
// answerTooLargeError, and an endless line ends only with the stream.
func TestStdioConnLineCap(t *testing.T) {
	c, w, _ := testConn(t)
	req := &jsonrpc.Request{ID: mustID(5), Method: "tools/list"}
	if err := c.Write(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.WriteString(`{"jsonrpc":"2.0","id":5,"result":{"tools":[`)
		chunk := bytes.Repeat([]byte(`{"name":"t"},`), 1<<16)
		for n := 0; n < maxControlLine+len(chunk); n += len(chunk) {
			w.Write(chunk)
		}
		w.WriteString("{}]}}\n")
		w.WriteString(strings.Repeat("y", maxControlLine+1)) // endless, then EOF
		w.Close()
	}()
	m, err := readMsg(t, c)
	var tl *answerTooLargeError
	if err != nil || !errors.As(m.(*jsonrpc.Response).Error, &tl) || tl.call || tl.limit != maxControlLine {
		t.Fatalf("an answer past maxControlLine: %v %v", m, err)
	}
	if _, err := readMsg(t, c); !errors.Is(err, io.EOF) {
		t.Fatalf("after the endless line: %v, want EOF", err)
	}
}

// FuzzStdioConnMessage: no line a server prints makes the connection panic,
// and what it delivers is a request or an answer to a request it sent.
func FuzzStdioConnMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","method":"x"}`, `[{"jsonrpc":"2.0","id":1,"result":{}}]`, `{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{}}`, `{"id":1e400,"jsonrpc":"2.0","result":0}`, `{"a\"b":1}`, `[]`, `{}`, `"x"`,
		`{"jsonrpc":"2.0","id":1,"error":"not an object"}`, `{"jsonrpc": "2.0" , "id" : 1 , "result" : [ ] }`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		d := &downstream{cfg: ServerConfig{Name: "f"}, log: slog.New(slog.DiscardHandler), sc: &scrubber{}, strayLimit: newLogLimiter(1, 1)}
		c := &stdioConn{name: "f", log: d.log, scrub: d.scrub, limit: d.strayLimit, pending: map[jsonrpc.ID]pendingReq{}}
		c.track(mustID(1), pendingReq{method: "tools/call", limit: 64})
		for _, m := range c.messages([]byte(line)) {
			if r, ok := m.(*jsonrpc.Response); ok && r.ID != mustID(1) {
				t.Fatalf("an answer to %v, which was never asked", r.ID)
			}
		}
		_, _ = leadingID([]byte(line))
	})
}

func mustID(n int64) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		panic(err)
	}
	return id
}
