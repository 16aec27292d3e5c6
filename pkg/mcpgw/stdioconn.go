package mcpgw

// This file holds the JSON-RPC connection over a stdio server's pipes: one
// message a line, with the stray lines people's servers print (banners, logs,
// truncated or foreign JSON, answers to nothing) skipped and logged rather
// than fatal, and each line's size bounded by what the call it answers may
// bring into its program, so that an answer too large for its program is
// refused while it streams past, never held.

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
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Limits of a stdio connection, each with its reason.
const (
	// maxControlLine bounds a line that answers no call of a program
	// (initialize, a page of tools/list) or is the server's own message:
	// the go-sdk's default for every transport.
	maxControlLine = mcp.DefaultMaxLineLength
	// resultLineSlack is how far a call's line may run past its program's
	// result cap: the JSON-RPC envelope, and escapes a server writes that
	// the normalized result does not. A line longer than that is refused
	// (result_too_large) while it is read, never held.
	resultLineSlack = 1 << 20
	// maxPendingIDs bounds the table of our requests awaiting an answer
	// (used to tell an answer to nothing); older entries go first. A
	// connection has at most a lane's calls and a few listings in flight.
	maxPendingIDs = 4096
	// oversizeKeep is how much of the head and of the tail of a line too
	// long to read is kept, to find whose answer it was.
	oversizeKeep = 4096
	// strayQuote bounds how much of a stray line a log quotes.
	strayQuote = 200
	// strayLinesPerSecond and strayBurst bound the log of stray lines.
	strayLinesPerSecond = 5
	strayBurst          = 20
)

// rawResultMin: a call's result of at least this many bytes skips the
// go-sdk's decoding (which copies it three times) and is normalized from
// the line as read (normalizeRaw), on a connection that can (stdio).
const rawResultMin = 1 << 20

// rawSinkKey carries, on a call's context, where the connection puts the
// raw result of a large answer (see rawResultMin).
type rawSinkKey struct{}

// rawResult receives a large result's JSON, as read.
type rawResult struct{ raw []byte }

func withRawSink(ctx context.Context, r *rawResult) context.Context {
	return context.WithValue(ctx, rawSinkKey{}, r)
}

// rawPlaceholder is what the go-sdk decodes in place of a result handed to
// a rawResult.
var rawPlaceholder = json.RawMessage(`{"content":[]}`)

// resultCapKey carries, on a call's context, the most its program may
// receive (wire.Limits.MaxResultBytes); see withResultCap.
type resultCapKey struct{}

// withResultCap marks ctx with the result cap of the program making the
// call: the stdio connection reads the call's answer only up to it (plus
// resultLineSlack).
func withResultCap(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, resultCapKey{}, n)
}

// answerTooLargeError is the outcome of a call whose answer was too large
// for its program (or, for a request of ours, for maxControlLine): the
// connection answers the call with it instead of the answer.
type answerTooLargeError struct {
	method string
	size   int   // bytes of the line, at least
	limit  int64 // the program's result cap, or maxControlLine
	call   bool  // a program's call (limit is its result cap)
}

func (e *answerTooLargeError) Error() string {
	if e.call {
		return fmt.Sprintf("its answer was %d bytes of JSON, more than the program may receive (%d bytes: a third of its memory limit); it was not read", e.size, e.limit)
	}
	return fmt.Sprintf("its answer to %s was more than %d bytes, the most the gateway reads of one message", e.method, e.limit)
}

// pendingReq is one of our requests awaiting its answer.
type pendingReq struct {
	method string
	limit  int64      // the result cap of its program; 0 for our own requests
	sink   *rawResult // where a large result goes, or nil
}

// stdioConn is an mcp.Connection over a serverProc's stdin and stdout.
// Read, Write and Close are safe for concurrent use, as the SDK needs.
type stdioConn struct {
	p       *serverProc
	name    string
	log     *slog.Logger
	scrub   func(string) string
	limit   *logLimiter
	onStray func()

	wmu sync.Mutex // serializes writes: one message a line

	mu      sync.Mutex
	pending map[jsonrpc.ID]pendingReq
	order   []jsonrpc.ID // pending's keys, oldest first (maybe answered since)

	incoming  chan readResult
	closed    chan struct{}
	closeOnce sync.Once
	queue     []jsonrpc.Message // the rest of a batch; Read is not concurrent with itself
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// newStdioConn starts reading the server's stdout.
func newStdioConn(p *serverProc, d *downstream) *stdioConn {
	c := &stdioConn{p: p, name: d.cfg.Name, log: d.log, scrub: d.scrub, limit: d.strayLimit, onStray: d.countStray,
		pending: map[jsonrpc.ID]pendingReq{}, incoming: make(chan readResult), closed: make(chan struct{})}
	go c.readLoop()
	return c
}

// stdioTransport hands an already started connection to the SDK.
type stdioTransport struct{ c *stdioConn }

func (t stdioTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

func (c *stdioConn) SessionID() string { return "" }

// Read returns the next message from the server: requests and
// notifications as they came, answers to our requests (or an
// answerTooLargeError in their place).
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write sends one message as one line. A request's id is noted with its
// program's result cap (from ctx). A write blocked by a server that does not
// read gives up at ctx's deadline; if part of the line went out, the stream
// is broken and the connection is closed.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	req, isReq := msg.(*jsonrpc.Request)
	if isReq && req.ID.IsValid() {
		limit, _ := ctx.Value(resultCapKey{}).(int64)
		sink, _ := ctx.Value(rawSinkKey{}).(*rawResult)
		c.track(req.ID, pendingReq{method: req.Method, limit: limit, sink: sink})
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	dl, _ := ctx.Deadline() // zero: none
	_ = c.p.stdin.SetWriteDeadline(dl)
	n, err := c.p.stdin.Write(data)
	if err != nil {
		if isReq && req.ID.IsValid() {
			c.take(req.ID)
		}
		if n > 0 {
			c.Close() // half a line went out: nothing after it can be read right
		}
		return fmt.Errorf("writing to server %s: %w", c.name, err)
	}
	return nil
}

// Close ends Read and closes our end of the server's stdin: a well-behaved
// server exits at its stdin's EOF. Its stdout is still drained (a server
// writing to a closed pipe would die of SIGPIPE or EPIPE instead of
// exiting), until serverProc.stop closes it. It is idempotent.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.p.stdin.Close()
	})
	return nil
}

func (c *stdioConn) track(id jsonrpc.ID, r pendingReq) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.order) >= maxPendingIDs {
		for len(c.order) > maxPendingIDs/2 { // drop the oldest half: answered or given up on
			delete(c.pending, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.pending[id] = r
	c.order = append(c.order, id)
}

// take removes id from the pending table, reporting whether it was there.
func (c *stdioConn) take(id jsonrpc.ID) (pendingReq, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.pending[id]
	if ok {
		delete(c.pending, id)
		if len(c.pending) == 0 {
			c.order = c.order[:0]
		}
	}
	return r, ok
}

// lineCap is how long the next line may be: the largest cap among the
// calls awaiting an answer, and at least maxControlLine.
func (c *stdioConn) lineCap() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	lim := int64(maxControlLine)
	for _, r := range c.pending {
		if r.limit > 0 {
			lim = max(lim, r.limit+resultLineSlack)
		}
	}
	return int(min(lim, int64(1)<<40))
}

// readLoop reads lines until the stream ends or breaks, and hands each
// message to Read.
func (c *stdioConn) readLoop() {
	br := bufio.NewReaderSize(c.p.stdout, 64<<10)
	for {
		line, over, err := c.readLine(br)
		var msgs []jsonrpc.Message
		switch {
		case over != nil:
			if m := c.oversize(over); m != nil {
				msgs = append(msgs, m)
			}
		case len(line) > 0:
			msgs = c.messages(line)
		}
		for _, m := range msgs {
			select {
			case c.incoming <- readResult{msg: m}:
			case <-c.closed:
				_, _ = io.Copy(io.Discard, br) // until the process's end, or stop closes stdout
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || c.isClosed() {
				err = io.EOF
			}
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

func (c *stdioConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// oversizeLine is what is kept of a line longer than its cap.
type oversizeLine struct {
	size       int
	limit      int
	head, tail []byte
}

// readLine reads one line (without its newline) of at most lineCap bytes,
// in a buffer of its own and of its size: the message made of it may keep
// slices of it. A longer line is read to its end without being kept, but
// for its head and tail. The cap is read again when a line reaches it: the
// read may have begun before the call it answers was sent.
func (c *stdioConn) readLine(br *bufio.Reader) ([]byte, *oversizeLine, error) {
	limit := c.lineCap()
	var blocks [][]byte // the line so far, in blocks of lineBlock bytes (no regrowth of a large line)
	n := 0
	var over *oversizeLine
	for {
		chunk, err := br.ReadSlice('\n')
		if over == nil && n+len(chunk) > limit {
			limit = c.lineCap()
		}
		if over == nil && n+len(chunk) > limit {
			over = &oversizeLine{limit: limit, size: n}
			for _, b := range blocks {
				over.head = append(over.head, b[:min(len(b), oversizeKeep-len(over.head))]...)
			}
			over.head = append(over.head, chunk[:min(len(chunk), oversizeKeep-len(over.head))]...)
			blocks = nil
		}
		if over != nil {
			over.size += len(chunk)
			over.tail = append(over.tail, chunk...)
			if len(over.tail) > oversizeKeep {
				over.tail = append(over.tail[:0], over.tail[len(over.tail)-oversizeKeep:]...)
			}
		} else {
			for len(chunk) > 0 {
				if len(blocks) == 0 || len(blocks[len(blocks)-1]) == cap(blocks[len(blocks)-1]) {
					blocks = append(blocks, make([]byte, 0, min(lineBlock, max(len(chunk), 512))))
				}
				last := &blocks[len(blocks)-1]
				k := min(len(chunk), cap(*last)-len(*last))
				*last = append(*last, chunk[:k]...)
				chunk = chunk[k:]
				n += k
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over != nil {
			over.tail = bytes.TrimRight(over.tail, "\r\n")
			return nil, over, err
		}
		line := joinBlocks(blocks, n)
		if err == nil {
			line = bytes.TrimRight(line, "\r\n")
		}
		return line, nil, err
	}
}

// lineBlock is the size of the blocks a long line is read into before it
// is joined: large enough to be few, small enough that the last one wastes
// little.
const lineBlock = 1 << 20

// joinBlocks is the blocks as one slice of exactly n bytes.
func joinBlocks(blocks [][]byte, n int) []byte {
	switch len(blocks) {
	case 0:
		return nil
	case 1:
		return blocks[0]
	}
	line := make([]byte, 0, n)
	for i := range blocks {
		line = append(line, blocks[i]...)
		blocks[i] = nil // each block goes as soon as it is copied
	}
	return line
}

// messages turns one line into the messages it holds: one, the elements of
// a batch, or none for a stray line (logged).
func (c *stdioConn) messages(line []byte) []jsonrpc.Message {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return nil
	}
	if t[0] != '{' && t[0] != '[' {
		c.stray("is not JSON", t)
		return nil
	}
	if _, err := wire.ScanJSON(t, 0, 0); err != nil {
		c.stray("is not valid JSON (truncated, or with text after it)", t)
		return nil
	}
	if t[0] == '{' {
		if m := c.message(t); m != nil {
			return []jsonrpc.Message{m}
		}
		return nil
	}
	var out []jsonrpc.Message
	for _, el := range jsonElements(t) {
		if m := c.message(el); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// message decodes one JSON-RPC message from valid JSON, or logs why it is
// not one. An answer's result is a slice of obj, not a copy.
func (c *stdioConn) message(obj []byte) jsonrpc.Message {
	members, ok := jsonObjectMembers(obj)
	if !ok {
		c.stray("is JSON but not a JSON-RPC message", obj)
		return nil
	}
	if v := members["jsonrpc"]; string(v) != `"2.0"` {
		c.stray(`is JSON but not JSON-RPC (no "jsonrpc": "2.0")`, obj)
		return nil
	}
	if _, ok := members["method"]; ok {
		m, err := jsonrpc.DecodeMessage(obj)
		if err != nil {
			c.stray("is not a valid JSON-RPC request ("+err.Error()+")", obj)
			return nil
		}
		return m
	}
	rawID, hasID := members["id"]
	result, hasResult := members["result"]
	rawErr, hasErr := members["error"]
	if !hasID || hasResult == hasErr {
		c.stray(`is JSON but not JSON-RPC (an answer needs "id" and one of "result" or "error")`, obj)
		return nil
	}
	id, ok := decodeID(rawID)
	if !ok {
		c.stray("is a JSON-RPC answer with an id no request has", obj)
		return nil
	}
	req, ok := c.take(id)
	if !ok {
		c.stray("answers no request of ours (id "+string(rawID)+")", obj)
		return nil
	}
	if req.limit > 0 && len(obj) > int(req.limit)+resultLineSlack {
		return &jsonrpc.Response{ID: id, Error: &answerTooLargeError{method: req.method, size: len(obj), limit: req.limit, call: true}}
	}
	resp := &jsonrpc.Response{ID: id}
	if hasErr {
		we := new(jsonrpc.Error)
		if err := json.Unmarshal(rawErr, we); err != nil {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server's error could not be read: " + string(wire.Cut(string(rawErr), strayQuote))}
		}
		resp.Error = we
	} else if req.sink != nil && len(result) >= rawResultMin {
		req.sink.raw = result
		resp.Result = rawPlaceholder
	} else {
		resp.Result = json.RawMessage(result)
	}
	return resp
}

// idAtEnd finds an id that is the last member of a JSON object cut short:
// the TypeScript SDK writes {"result":...,"jsonrpc":"2.0","id":N}.
var idAtEnd = regexp.MustCompile(`"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*}\s*$`)

// oversize handles a line longer than its cap: the request it answers is
// found from the head (an id among the first members) or the tail (the id
// as the last member), and answered with an answerTooLargeError; a line
// whose request cannot be told is logged and skipped (its call then ends at
// its deadline).
func (c *stdioConn) oversize(o *oversizeLine) jsonrpc.Message {
	var id jsonrpc.ID
	found := false
	if raw, ok := leadingID(o.head); ok {
		id, found = decodeID(raw)
	}
	if !found {
		if m := idAtEnd.FindSubmatch(o.tail); m != nil {
			id, found = decodeID(m[1])
		}
	}
	if found {
		if req, ok := c.take(id); ok {
			limit := req.limit
			if limit == 0 {
				limit = maxControlLine
			}
			return &jsonrpc.Response{ID: id, Error: &answerTooLargeError{method: req.method, size: o.size, limit: limit, call: req.limit > 0}}
		}
	}
	c.stray(fmt.Sprintf("is %d bytes, past the %d the gateway reads, and answers none of our requests that can be told", o.size, o.limit), o.head)
	return nil
}

// stray logs a skipped line, within the rate limit, with the server's name.
func (c *stdioConn) stray(what string, line []byte) {
	if c.onStray != nil {
		c.onStray()
	}
	ok, dropped := c.limit.allow(time.Now())
	if !ok {
		return
	}
	msg := fmt.Sprintf("%s: skipped a line on stdout that %s: %s", c.name, what, strconv.Quote(c.scrub(wire.Cut(string(line[:min(len(line), 4*strayQuote)]), strayQuote))))
	if dropped > 0 {
		msg += fmt.Sprintf(" (and %d more such lines not logged)", dropped)
	}
	c.log.Warn(msg, "server", c.name, "stream", "stdout")
}

// decodeID reads a JSON-RPC id (a number or a string).
func decodeID(raw []byte) (jsonrpc.ID, bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil || !id.IsValid() {
		return jsonrpc.ID{}, false
	}
	return id, true
}

// leadingID finds "id" among the members of a JSON object whose text is cut
// short (the head of a line too long), reading members until one is cut.
func leadingID(head []byte) ([]byte, bool) {
	i := skipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipSpace(head, i)
		if i >= len(head) || head[i] != '"' {
			return nil, false
		}
		kEnd := skipString(head, i)
		if kEnd < 0 {
			return nil, false
		}
		key := head[i+1 : kEnd-1]
		i = skipSpace(head, kEnd)
		if i >= len(head) || head[i] != ':' {
			return nil, false
		}
		vStart := skipSpace(head, i+1)
		vEnd := skipValue(head, vStart)
		if vEnd < 0 || vEnd >= len(head) { // cut inside, or we cannot tell it ended
			return nil, false
		}
		if string(key) == "id" {
			return head[vStart:vEnd], true
		}
		i = skipSpace(head, vEnd)
		if i >= len(head) || head[i] != ',' {
			return nil, false
		}
		i++
	}
}

// jsonObjectMembers lists the members of a valid JSON object by key (the
// key's text as written, without its quotes), their values as slices of
// obj. Duplicate keys keep the last, as encoding/json does.
func jsonObjectMembers(obj []byte) (map[string][]byte, bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	out := map[string][]byte{}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return out, true
	}
	for i < len(obj) {
		kEnd := skipString(obj, i)
		if kEnd < 0 {
			return nil, false
		}
		key := string(obj[i+1 : kEnd-1])
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		vStart := skipSpace(obj, i+1)
		vEnd := skipValue(obj, vStart)
		if vEnd < 0 {
			return nil, false
		}
		out[key] = obj[vStart:vEnd]
		i = skipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == '}' {
			return out, true
		}
		if i >= len(obj) || obj[i] != ',' {
			return nil, false
		}
		i = skipSpace(obj, i+1)
	}
	return nil, false
}

// jsonElements lists the elements of a valid JSON array, as slices of it.
func jsonElements(arr []byte) [][]byte {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	var out [][]byte
	i = skipSpace(arr, i+1)
	for i < len(arr) && arr[i] != ']' {
		end := skipValue(arr, i)
		if end < 0 {
			return out
		}
		out = append(out, arr[i:end])
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return out
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] (a
// quote), or -1 if it is not closed within b.
func skipString(b []byte, i int) int {
	j := i + 1
	for {
		// The next quote, and the backslashes before it, each found by
		// IndexByte many bytes at a time (a result's text can be
		// megabytes); every byte is looked at once.
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		q += j
		k := j
		for {
			bs := bytes.IndexByte(b[k:q], '\\')
			if bs < 0 {
				return q + 1 // nothing escapes the quote at q: it closes
			}
			k += bs + 2 // the backslash and the byte it escapes
			if k > q {
				break // it escaped the quote at q
			}
		}
		j = k
	}
}

// skipValue returns the index just past the JSON value starting at b[i],
// or -1 if it does not end within b. It trusts b to be valid JSON (checked
// by ScanJSON first) except that b may be cut short.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && bytes.IndexByte([]byte(",}] \t\r\n"), b[j]) < 0 {
		j++
	}
	if j == len(b) {
		return j // a number or literal that may go on: the caller decides
	}
	return j
}
