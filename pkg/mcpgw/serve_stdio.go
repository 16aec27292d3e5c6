package mcpgw

// This file serves the agent's MCP tools on stdio, with a filter in front
// of go-sdk's JSON-RPC reader: go-sdk ends the connection on the first line
// it cannot decode, so every line is checked here first, and a bad one is
// answered (or logged) and skipped while the server goes on.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the line filter, each with its reason.
const (
	// idScanHead: of a line too large to keep, this much of its start is
	// kept to find its id (JSON-RPC clients mostly write the id early).
	idScanHead = 64 << 10
	// idScanTail: and this much of its end (the TypeScript SDK writes the id
	// last).
	idScanTail = 4 << 10
	// readChunk: stdin is read in pieces of this size; a line is gathered
	// from them up to the cap.
	readChunk = 64 << 10
	// maxLoggedLine: a dropped line is logged with at most this much of its
	// start, quoted.
	maxLoggedLine = 80
)

// ServeStdio serves g's MCP tools on in and out (the process's stdin and
// stdout) until in ends or ctx is done. Each line of in must be one
// JSON-RPC 2.0 message of at most MaxRequestBytes; any other line never
// ends the server: it is answered with a JSON-RPC error when its id can be
// read (-32700 for a line that is not JSON, -32600 for JSON that is not a
// JSON-RPC message, for a batch, or for a line over the cap, whose message
// names the cap), logged to g's log, and skipped. A line over the cap is
// never held whole: at most MaxRequestBytes of it is buffered.
func ServeStdio(ctx context.Context, g *Gateway, in io.ReadCloser, out io.Writer) error {
	return serveStdio(ctx, g, in, out, MaxRequestBytes)
}

// serveStdio is ServeStdio with max for the cap (tests lower it).
func serveStdio(ctx context.Context, g *Gateway, in io.ReadCloser, out io.Writer, max int) error {
	w := &lineWriter{w: out}
	f := newLineFilter(in, w, g.log, max)
	// Each Read of the filter returns bytes of one line only, so go-sdk's own
	// frame cap counts exactly one line and its newline.
	return NewServer(g).Run(ctx, &mcp.IOTransport{Reader: f, Writer: w, MaxLineLength: max + 1})
}

// lineWriter writes whole lines to w, one writer at a time: go-sdk writes
// each message in one Write, and so do the filter's answers.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does nothing: stdout stays open for the process's last words.
func (l *lineWriter) Close() error { return nil }

// lineFilter reads lines from in and gives go-sdk only those that are one
// JSON-RPC message each, one line per Read at most. It is read by one
// goroutine (go-sdk's reader); its answers go through out.
type lineFilter struct {
	in  io.ReadCloser
	br  *bufio.Reader
	out io.Writer
	log *slog.Logger
	max int // the cap on a line, without its newline

	buf     []byte // the line being gathered, up to max+1 bytes
	head    []byte // of a line over the cap: its first idScanHead bytes
	tail    []byte // and its last idScanTail bytes
	pending []byte // an accepted line and its newline, not yet read
	err     error  // in's error, returned once pending is drained
}

func newLineFilter(in io.ReadCloser, out io.Writer, log *slog.Logger, max int) *lineFilter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &lineFilter{in: in, br: bufio.NewReaderSize(in, readChunk), out: out, log: log, max: max}
}

// Close closes in.
func (f *lineFilter) Close() error { return f.in.Close() }

// Read gives the next accepted line, or the rest of it.
func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, over, size, err := f.readLine()
		if err != nil {
			f.err = err // after this line is handled
		}
		if over {
			f.refuseOverCap(size)
			continue
		}
		if msg := f.check(line); msg != nil {
			f.pending = append(msg, '\n')
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine reads up to the next newline or the end of in. A line of at most
// max bytes comes back whole (without its line ending); a longer one comes
// back as over, with its size, and with its head and tail kept in f.head
// and f.tail: the rest is read and dropped, never held.
func (f *lineFilter) readLine() (line []byte, over bool, size int64, err error) {
	if cap(f.buf) > 4*readChunk {
		f.buf = nil // a large line's buffer is not kept for the next
	}
	f.buf, f.head, f.tail = f.buf[:0], f.head[:0], f.tail[:0]
	for {
		chunk, rerr := f.br.ReadSlice('\n')
		size += int64(len(chunk))
		switch {
		case over:
			f.keepTail(chunk)
		case len(f.buf)+len(chunk) > f.max+2: // +2: room for "\r\n"
			over = true
			f.head = append(f.head, f.buf[:min(len(f.buf), idScanHead)]...)
			f.keepTail(f.buf)
			f.keepTail(chunk)
			f.buf = f.buf[:0]
		default:
			if need := len(f.buf) + len(chunk); need > cap(f.buf) {
				// Grown by hand: append's doubling would pass the cap.
				nb := make([]byte, len(f.buf), min(max(2*cap(f.buf), need), f.max+2))
				copy(nb, f.buf)
				f.buf = nb
			}
			f.buf = append(f.buf, chunk...)
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if rerr != nil && size == 0 {
			return nil, false, 0, rerr
		}
		if over {
			f.tail = bytes.TrimRight(f.tail, "\r\n")
			return nil, true, size - int64(len(chunk)-len(bytes.TrimRight(chunk, "\r\n"))), rerr
		}
		line = bytes.TrimRight(f.buf, "\r\n")
		if len(line) > f.max { // within the slack of the line ending
			f.head = append(f.head, line[:min(len(line), idScanHead)]...)
			f.keepTail(line)
			return nil, true, int64(len(line)), rerr
		}
		return line, false, int64(len(line)), rerr
	}
}

// keepTail keeps the last idScanTail bytes seen of a line over the cap.
func (f *lineFilter) keepTail(b []byte) {
	f.tail = append(f.tail, b[max(0, len(b)-idScanTail):]...)
	if len(f.tail) > idScanTail {
		f.tail = append(f.tail[:0], f.tail[len(f.tail)-idScanTail:]...)
	}
}

// check returns the line if it is one JSON-RPC message; otherwise it
// answers or logs it and returns nil.
func (f *lineFilter) check(line []byte) []byte {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil // blank lines are allowed between messages
	}
	if !json.Valid(line) {
		var syntax error = errors.New("not JSON")
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			syntax = err
		}
		id, ok := readID(line, nil)
		f.refuse(line, int64(len(line)), jsonrpc.CodeParseError,
			fmt.Sprintf("parse error: the line is not one JSON value (%v); send one JSON-RPC message per line", syntax), id, ok)
		return nil
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		_ = json.Unmarshal(line, &batch) // valid JSON: an array
		msg := "invalid request: JSON-RPC batches are not served; send one message per line"
		answered := false
		for _, m := range batch {
			if id, ok := readID(m, nil); ok {
				f.answer(id, jsonrpc.CodeInvalidRequest, msg)
				answered = true
			}
		}
		f.logDrop(line, int64(len(line)), msg, answered)
		return nil
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		id, ok := readID(line, nil)
		f.refuse(line, int64(len(line)), jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("invalid request: the line is JSON but not a JSON-RPC 2.0 message (%v); send {\"jsonrpc\":\"2.0\",\"id\":...,\"method\":...}", err), id, ok)
		return nil
	}
	return append([]byte(nil), line...)
}

// refuseOverCap answers a line over the cap, if its head or tail gives its
// id.
func (f *lineFilter) refuseOverCap(size int64) {
	id, ok := readID(f.head, f.tail)
	f.refuse(f.head, size, jsonrpc.CodeInvalidRequest,
		fmt.Sprintf("request too large: a line of %d bytes is over this server's cap of %d bytes (%s, MaxRequestBytes); it was dropped unread: a run_js program is at most 1 MiB and its input at most 4 MiB",
			size, f.max, FormatSize(int64(f.max))), id, ok)
}

func (f *lineFilter) refuse(line []byte, size int64, code int64, msg string, id jsonrpc.ID, ok bool) {
	if ok {
		f.answer(id, code, msg)
	}
	f.logDrop(line, size, msg, ok)
}

func (f *lineFilter) logDrop(line []byte, size int64, why string, answered bool) {
	start := line[:min(len(line), maxLoggedLine)]
	f.log.Warn("stdio: dropped a line", "reason", why, "bytes", size, "start", string(start), "answered", answered)
}

// answer writes a JSON-RPC error response.
func (f *lineFilter) answer(id jsonrpc.ID, code int64, msg string) {
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		panic(fmt.Sprintf("mcpgw: encoding an error response: %v", err)) // our bug: every part is ours
	}
	_, _ = f.out.Write(append(b, '\n'))
}

// tailID matches an id that ends its object, at the end of a line: the
// top-level object's last member, as the TypeScript SDK writes it.
var tailID = regexp.MustCompile(`"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*}\s*$`)

// readID finds the id of a JSON-RPC message that may be invalid or cut:
// a top-level "id" member read from head as far as head is JSON, or else
// one that ends tail. Only a string or an integer is an id.
func readID(head, tail []byte) (jsonrpc.ID, bool) {
	if id, ok := headID(head); ok {
		return id, true
	}
	if tail == nil {
		tail = head[max(0, len(head)-idScanTail):]
	}
	if m := tailID.FindSubmatch(tail); m != nil {
		return idOf(m[1])
	}
	return jsonrpc.ID{}, false
}

// headID walks the top-level object's members as far as the bytes go.
func headID(b []byte) (jsonrpc.ID, bool) {
	dec := json.NewDecoder(bytes.NewReader(b[:min(len(b), idScanHead)]))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return jsonrpc.ID{}, false
	}
	for {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return jsonrpc.ID{}, false
		}
		if key == "id" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return jsonrpc.ID{}, false
			}
			return idOf(raw)
		}
		if err := skipTokens(dec); err != nil {
			return jsonrpc.ID{}, false
		}
	}
}

// skipTokens reads one whole value's tokens.
func skipTokens(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// idOf reads a JSON string or integer as an id.
func idOf(raw []byte) (jsonrpc.ID, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	// An integer that a float64 holds exactly, as go-sdk reads ids.
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n))
	return id, err == nil
}
