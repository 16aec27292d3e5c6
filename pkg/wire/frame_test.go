package wire_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// allTypes is every frame type the protocol defines.
var allTypes = []wire.Type{
	wire.TypeHello, wire.TypeStart, wire.TypeCall, wire.TypeResult,
	wire.TypeOutput, wire.TypeStop, wire.TypeEnd, wire.TypeCatalog, wire.TypeToolsRequest,
}

// watchdogTimeout bounds every read that could block if a guard failed.
const watchdogTimeout = 5 * time.Second

// watchdog runs f in a goroutine and fails the test with guard if f has not
// returned within watchdogTimeout. f must not call t.Fatal; it hands its
// results back through variables the caller reads after watchdog returns.
func watchdog(t *testing.T, guard string, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("panic: %v (while checking: %s)", p, guard)
		}
	case <-time.After(watchdogTimeout):
		t.Fatalf("%s (no return after %v)", guard, watchdogTimeout)
	}
}

// frameBytes builds one frame by hand, independently of AppendFrame.
func frameBytes(t wire.Type, header, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(5+len(header)+len(payload)))
	b = append(b, byte(t))
	b = binary.BigEndian.AppendUint32(b, uint32(len(header)))
	b = append(b, header...)
	return append(b, payload...)
}

// rawFrame builds a frame prefix with an arbitrary length, type and header length.
func rawFrame(n uint32, typ byte, h uint32, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, n)
	b = append(b, typ)
	b = binary.BigEndian.AppendUint32(b, h)
	return append(b, rest...)
}

func be32(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// endlessReader yields prefix, then fill bytes forever, counting what it gave.
type endlessReader struct {
	prefix []byte
	fill   byte
	n      int64
}

func (r *endlessReader) Read(p []byte) (int, error) {
	k := copy(p, r.prefix)
	r.prefix = r.prefix[k:]
	for i := k; i < len(p); i++ {
		p[i] = r.fill
	}
	r.n += int64(len(p))
	return len(p), nil
}

// repeatReader yields pattern over and over, aligned to the stream's start.
type repeatReader struct {
	pattern []byte
	pos     int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.pattern[r.pos]
		r.pos = (r.pos + 1) % len(r.pattern)
	}
	return len(p), nil
}

// errAfterReader yields data, then fails with err.
type errAfterReader struct {
	data []byte
	err  error
}

func (r *errAfterReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	k := copy(p, r.data)
	r.data = r.data[k:]
	return k, nil
}

// writeCounter records every Write call.
type writeCounter struct {
	calls int
	buf   bytes.Buffer
	err   error
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.calls++
	if w.err != nil {
		return 0, w.err
	}
	return w.buf.Write(p)
}

// --- round trips -------------------------------------------------------------

type headerCase struct {
	name string
	hdr  any             // what is given to AppendFrame
	want []byte          // the header bytes expected on the wire
	dst  func() any      // a fresh pointer to decode into; nil: not decoded
	val  func(v any) any // the decoded value to compare with hdr (dereferenced)
	orig func() any      // hdr as a value comparable with val's result
}

func roundTripHeaders(t *testing.T) []headerCase {
	t.Helper()
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	call := wire.Call{RunID: "run-1", ID: 7, Server: "github", Tool: "search_issues"}
	end := wire.End{
		RunID: "run-1", Status: wire.StatusThrew,
		Error:     &wire.ErrorInfo{Name: "TypeError", Message: "x is not a function \u2028 \"q\" <b>", Stack: "at main (1:2)"},
		Unsettled: []uint64{3, 4}, NeverSent: 2, PeakRSSKiB: 12345,
	}
	start := wire.Start{
		Protocol: wire.ProtocolVersion, RunID: "run-1",
		Limits:  wire.Limits{TimeoutMs: 1000, MemoryBytes: 8 << 20},
		Catalog: wire.StartCatalog{Names: 4, All: 10, Servers: []wire.ServerState{{Name: "gh", State: "unavailable", Reason: "exited"}}},
		Input:   json.RawMessage(`{"k":[1,2,3]}`),
	}
	return []headerCase{
		{name: "nil header", hdr: nil, want: []byte("{}")},
		{name: "call header", hdr: call, want: mustJSON(call),
			dst: func() any { return new(wire.Call) }, val: func(v any) any { return *v.(*wire.Call) }, orig: func() any { return call }},
		{name: "end header pointer", hdr: &end, want: mustJSON(end),
			dst: func() any { return new(wire.End) }, val: func(v any) any { return *v.(*wire.End) }, orig: func() any { return end }},
		{name: "start header", hdr: start, want: mustJSON(start),
			dst: func() any { return new(wire.Start) }, val: func(v any) any { return *v.(*wire.Start) }, orig: func() any { return start }},
		{name: "empty struct header", hdr: wire.Stop{}, want: []byte("{}"),
			dst: func() any { return new(wire.Stop) }, val: func(v any) any { return *v.(*wire.Stop) }, orig: func() any { return wire.Stop{} }},
	}
}

func roundTripPayloads() []struct {
	name string
	p    []byte
} {
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i*7 + i>>8)
	}
	return []struct {
		name string
		p    []byte
	}{
		{"nil payload", nil},
		{"empty payload", []byte{}},
		{"short payload", []byte("console.log('hi')")},
		{"payload with NUL bytes", []byte("\x00a\x00\x00b\x00\xff\x00")},
		{"1 MiB payload", big},
	}
}

func TestFrameRoundTrip(t *testing.T) {
	const max = 2 << 20
	headers := roundTripHeaders(t)
	payloads := roundTripPayloads()
	for _, typ := range allTypes {
		for _, hc := range headers {
			for _, pc := range payloads {
				for _, via := range []string{"AppendFrame", "WriteFrame"} {
					name := fmt.Sprintf("%s/%s/%s/%s", typ, hc.name, pc.name, via)
					t.Run(name, func(t *testing.T) {
						var enc []byte
						switch via {
						case "AppendFrame":
							prefix := []byte("prefix")
							b, err := wire.AppendFrame(prefix, typ, hc.hdr, pc.p)
							if err != nil {
								t.Fatalf("AppendFrame: %v", err)
							}
							if !bytes.HasPrefix(b, []byte("prefix")) {
								t.Fatalf("AppendFrame lost the bytes already in dst")
							}
							enc = b[len("prefix"):]
						case "WriteFrame":
							w := &writeCounter{}
							if err := wire.WriteFrame(w, typ, hc.hdr, pc.p); err != nil {
								t.Fatalf("WriteFrame: %v", err)
							}
							if w.calls != 1 {
								t.Fatalf("WriteFrame made %d Write calls, want 1", w.calls)
							}
							enc = w.buf.Bytes()
						}
						if want := frameBytes(typ, hc.want, pc.p); !bytes.Equal(enc, want) {
							t.Fatalf("encoding differs from the documented layout:\n got %q\nwant %q", trunc(enc), trunc(want))
						}
						r := wire.NewReader(bytes.NewReader(enc), max)
						var f wire.Frame
						var err, err2 error
						watchdog(t, "Next did not return on a finite stream", func() {
							f, err = r.Next()
							if err == nil {
								_, err2 = r.Next()
							}
						})
						if err != nil {
							t.Fatalf("Next: %v", err)
						}
						if err2 != io.EOF {
							t.Fatalf("second Next = %v, want exactly io.EOF", err2)
						}
						checkFrame(t, f, typ, hc.want, pc.p)
						if f.Size() != len(enc) {
							t.Fatalf("Size() = %d, frame is %d bytes on the wire", f.Size(), len(enc))
						}
						sf, n, need, serr := wire.Split(enc, max)
						if serr != nil || n != len(enc) || need != 0 {
							t.Fatalf("Split = n %d, need %d, err %v; want n %d", n, need, serr, len(enc))
						}
						checkFrame(t, sf, typ, hc.want, pc.p)
						if hc.dst != nil {
							v := hc.dst()
							if err := f.Decode(v); err != nil {
								t.Fatalf("Decode: %v", err)
							}
							if got, want := hc.val(v), hc.orig(); !reflect.DeepEqual(got, want) {
								t.Fatalf("Decode = %+v, want %+v", got, want)
							}
						}
					})
				}
			}
		}
	}
}

func trunc(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

func checkFrame(t *testing.T, f wire.Frame, typ wire.Type, header, payload []byte) {
	t.Helper()
	if f.Type != typ {
		t.Fatalf("Type = %v, want %v", f.Type, typ)
	}
	if !bytes.Equal(f.Header, header) {
		t.Fatalf("Header = %q, want %q", trunc(f.Header), trunc(header))
	}
	if !bytes.Equal(f.Payload, payload) {
		t.Fatalf("Payload = %q (%d bytes), want %q (%d bytes)", trunc(f.Payload), len(f.Payload), trunc(payload), len(payload))
	}
}

func TestFramesBackToBack(t *testing.T) {
	type sent struct {
		typ     wire.Type
		header  []byte
		payload []byte
	}
	var stream bytes.Buffer
	var want []sent
	headers := roundTripHeaders(t)
	for i, pc := range roundTripPayloads() {
		for j, typ := range allTypes {
			hc := headers[(i+j)%len(headers)]
			if err := wire.WriteFrame(&stream, typ, hc.hdr, pc.p); err != nil {
				t.Fatal(err)
			}
			want = append(want, sent{typ, hc.want, pc.p})
		}
	}
	all := stream.Bytes()

	// A reader that hands out a few bytes at a time, so frames straddle reads.
	r := wire.NewReader(io.LimitReader(&chunkReader{b: all, chunk: 7}, int64(len(all))), 2<<20)
	var got []wire.Frame
	var err error
	watchdog(t, "Next did not return on a finite stream of back-to-back frames", func() {
		for {
			var f wire.Frame
			if f, err = r.Next(); err != nil {
				return
			}
			got = append(got, f)
		}
	})
	if err != io.EOF {
		t.Fatalf("after %d frames: %v, want exactly io.EOF", len(got), err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d frames, wrote %d", len(got), len(want))
	}
	off := 0
	for i := range want {
		checkFrame(t, got[i], want[i].typ, want[i].header, want[i].payload)
		f, n, _, err := wire.Split(all[off:], 2<<20)
		if err != nil || n != got[i].Size() {
			t.Fatalf("frame %d: Split n %d err %v, Reader frame size %d", i, n, err, got[i].Size())
		}
		checkFrame(t, f, want[i].typ, want[i].header, want[i].payload)
		off += n
	}
	if off != len(all) {
		t.Fatalf("frames cover %d of %d bytes", off, len(all))
	}
}

// chunkReader returns at most chunk bytes per Read.
type chunkReader struct {
	b     []byte
	chunk int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if len(p) > r.chunk {
		p = p[:r.chunk]
	}
	k := copy(p, r.b)
	r.b = r.b[k:]
	return k, nil
}

func TestFrameDecodeStrict(t *testing.T) {
	cases := []struct {
		name   string
		header string
		ok     bool
	}{
		{name: "exact fields", header: `{"runId":"r","id":3,"server":"s","tool":"t"}`, ok: true},
		{name: "missing fields are zero", header: `{"id":3}`, ok: true},
		{name: "whitespace around", header: " \n{\"id\":3}\t ", ok: true},
		{name: "unknown field", header: `{"id":3,"extra":true}`},
		{name: "unknown field only", header: `{"version":2}`},
		{name: "trailing object", header: `{"id":3}{"id":4}`},
		{name: "trailing object after space", header: `{"id":3} {}`},
		{name: "trailing garbage", header: `{"id":3}x`},
		{name: "trailing number", header: `{"id":3} 5`},
		{name: "trailing close brace", header: `{"id":3}}`},
		{name: "trailing close bracket", header: `{"id":3} ]`},
		{name: "null", header: `null`},
		{name: "wrong field type", header: `{"id":"3"}`},
		{name: "negative id", header: `{"id":-1}`},
		{name: "empty header", header: ``},
		{name: "not JSON", header: `id=3`},
		{name: "truncated", header: `{"id":3`},
		{name: "array", header: `[1]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := wire.Frame{Type: wire.TypeCall, Header: []byte(tc.header)}
			var c wire.Call
			err := f.Decode(&c)
			if tc.ok {
				if err != nil {
					t.Fatalf("Decode(%q) = %v, want nil", tc.header, err)
				}
				return
			}
			if !errors.Is(err, wire.ErrBadFrame) {
				t.Fatalf("Decode(%q) = %v, want ErrBadFrame", tc.header, err)
			}
			if !strings.Contains(err.Error(), "call header") {
				t.Errorf("error %q does not say which frame type's header failed", err)
			}
		})
	}
	// The decoded values are the header's.
	f := wire.Frame{Type: wire.TypeResult, Header: []byte(`{"id":9,"outcome":"refused","code":"unknown_tool","matches":["a","b"]}`)}
	var res wire.Result
	if err := f.Decode(&res); err != nil {
		t.Fatal(err)
	}
	want := wire.Result{ID: 9, Outcome: wire.OutcomeRefused, Code: wire.CodeUnknownTool, Matches: []string{"a", "b"}}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("Decode = %+v, want %+v", res, want)
	}
}

func TestAppendFrameErrors(t *testing.T) {
	dst := []byte("keep")
	got, err := wire.AppendFrame(dst, wire.TypeCall, map[string]any{"c": make(chan int)}, nil)
	if err == nil {
		t.Fatal("AppendFrame with an unencodable header returned no error")
	}
	if string(got) != "keep" {
		t.Fatalf("AppendFrame changed dst on error: %q", got)
	}
	w := &writeCounter{}
	if err := wire.WriteFrame(w, wire.TypeCall, map[string]any{"c": make(chan int)}, nil); err == nil || w.calls != 0 {
		t.Fatalf("WriteFrame with an unencodable header: err %v, %d writes; want an error and no write", err, w.calls)
	}
	boom := errors.New("pipe closed")
	w = &writeCounter{err: boom}
	if err := wire.WriteFrame(w, wire.TypeStop, nil, nil); !errors.Is(err, boom) {
		t.Fatalf("WriteFrame on a failing writer = %v, want it to wrap %v", err, boom)
	}
}

func TestTypeString(t *testing.T) {
	names := map[wire.Type]string{
		wire.TypeHello: "hello", wire.TypeStart: "start", wire.TypeCall: "call", wire.TypeResult: "result",
		wire.TypeOutput: "output", wire.TypeStop: "stop", wire.TypeEnd: "end", wire.TypeCatalog: "catalog", wire.TypeToolsRequest: "tools request",
	}
	for typ, name := range names {
		if !typ.Known() || typ.String() != name {
			t.Errorf("%q: Known %v, String %q; want true, %q", byte(typ), typ.Known(), typ.String(), name)
		}
	}
	known := 0
	for b := 0; b < 256; b++ {
		if wire.Type(b).Known() {
			known++
		}
	}
	if known != len(allTypes) {
		t.Fatalf("%d type bytes are Known, want %d", known, len(allTypes))
	}
	if s := wire.Type(0).String(); s != "type 0x00" {
		t.Fatalf("Type(0).String() = %q", s)
	}
}

// --- hostile streams ---------------------------------------------------------

// hostileStream is a stream a worker could send, and how a reader must fail.
type hostileStream struct {
	name    string
	in      []byte // the stream, or the start of an endless one
	endless bool   // after in, the stream yields bytes forever
	max     int    // the reader's cap
	frames  int    // whole frames before the failure
	want    error  // ErrFrameTooLarge, ErrBadFrame, io.ErrUnexpectedEOF or io.EOF
	guard   string // the guard that failed if Next blocks
}

const hostileCap = 1 << 20

func hostileStreams() []hostileStream {
	ok := frameBytes(wire.TypeOutput, []byte(`{"skip":1}`), []byte("text"))
	stop := frameBytes(wire.TypeStop, []byte(`{}`), nil)
	capGuard := "Next did not return: the frame cap failed to trip"
	rows := []hostileStream{
		{name: "length 0xFFFFFFFF", in: be32(0xFFFFFFFF), want: wire.ErrFrameTooLarge, guard: capGuard},
		{name: "length 0xFFFFFFFF then body bytes", in: cat(be32(0xFFFFFFFF), []byte("Hxxxxxxxxxxxxxxx")), want: wire.ErrFrameTooLarge, guard: capGuard},
		{name: "length one over the cap", in: be32(hostileCap + 1), want: wire.ErrFrameTooLarge, guard: capGuard},
		{name: "length 0x80000000 (negative as int32)", in: be32(0x80000000), want: wire.ErrFrameTooLarge, guard: capGuard},
		{name: "over-cap frame after a good one", in: cat(ok, be32(hostileCap+1), []byte("O")), frames: 1, want: wire.ErrFrameTooLarge, guard: capGuard},
		{name: "endless: 0xFFFFFFFF then endless bytes", in: be32(0xFFFFFFFF), endless: true, want: wire.ErrFrameTooLarge, guard: capGuard},
		{name: "endless: 1 GiB length then endless bytes", in: be32(1 << 30), endless: true, want: wire.ErrFrameTooLarge, guard: capGuard},
		{name: "endless: cap+1 length then endless bytes", in: be32(hostileCap + 1), endless: true, want: wire.ErrFrameTooLarge, guard: capGuard},
		{name: "endless: good frame, then huge length, then endless bytes", in: cat(ok, be32(0x7FFFFFFF)), endless: true, frames: 1, want: wire.ErrFrameTooLarge, guard: capGuard},

		{name: "unknown type byte 0x00", in: rawFrame(5, 0x00, 0, nil), want: wire.ErrBadFrame},
		{name: "unknown type byte 'Z'", in: rawFrame(7, 'Z', 2, []byte("{}")), want: wire.ErrBadFrame},
		{name: "unknown type byte 'h' (lower case hello)", in: rawFrame(7, 'h', 2, []byte("{}")), want: wire.ErrBadFrame},
		{name: "unknown type byte 0xFF", in: rawFrame(5, 0xFF, 0, nil), want: wire.ErrBadFrame},
		{name: "unknown type after a good frame", in: cat(ok, rawFrame(5, 'Q', 0, nil)), frames: 1, want: wire.ErrBadFrame},
		{name: "header length one past the frame", in: rawFrame(7, 'C', 3, []byte("{}")), want: wire.ErrBadFrame},
		{name: "header length 0xFFFFFFFF", in: rawFrame(7, 'C', 0xFFFFFFFF, []byte("{}")), want: wire.ErrBadFrame},
		{name: "header length 0x80000000", in: rawFrame(5, 'E', 0x80000000, nil), want: wire.ErrBadFrame},
		{name: "header length past the frame, more bytes in the stream", in: cat(rawFrame(5, 'C', 2, nil), []byte("{}"), stop), want: wire.ErrBadFrame},

		{name: "cut mid-length (2 of 4 bytes)", in: []byte{0, 0}, want: io.ErrUnexpectedEOF},
		{name: "cut mid-length (1 byte)", in: []byte{0}, want: io.ErrUnexpectedEOF},
		{name: "cut mid-length (3 bytes) after a good frame", in: cat(ok, []byte{0, 0, 0}), frames: 1, want: io.ErrUnexpectedEOF},
		{name: "cut right after the length", in: be32(12), want: io.ErrUnexpectedEOF},
		{name: "cut after the type byte", in: cat(be32(7), []byte("C")), want: io.ErrUnexpectedEOF},
		{name: "cut mid-header", in: ok[:len(ok)-6], want: io.ErrUnexpectedEOF},
		{name: "cut mid-body", in: ok[:len(ok)-1], want: io.ErrUnexpectedEOF},
		{name: "cut mid-body after a good frame", in: cat(stop, ok[:len(ok)-2]), frames: 1, want: io.ErrUnexpectedEOF},

		{name: "clean EOF: empty stream", in: nil, want: io.EOF},
		{name: "clean EOF after one frame", in: stop, frames: 1, want: io.EOF},
		{name: "clean EOF between frames", in: cat(ok, stop, ok), frames: 3, want: io.EOF},
		{name: "frame exactly at the cap", in: frameBytes(wire.TypeEnd, []byte("{}"), make([]byte, hostileCap-7)), frames: 1, want: io.EOF},
		{name: "header-only frame, no payload", in: rawFrame(7, 'X', 2, []byte("{}")), frames: 1, want: io.EOF},
		{name: "empty header and payload (length 5)", in: rawFrame(5, 'X', 0, nil), frames: 1, want: io.EOF},
	}
	for n := uint32(0); n < 5; n++ {
		rows = append(rows,
			hostileStream{name: fmt.Sprintf("length %d below the minimum", n), in: cat(be32(n), []byte("X\x00\x00\x00\x00")), want: wire.ErrBadFrame},
			hostileStream{name: fmt.Sprintf("length %d below the minimum, nothing after", n), in: be32(n), want: wire.ErrBadFrame},
		)
	}
	for i := range rows {
		if rows[i].max == 0 {
			rows[i].max = hostileCap
		}
		if rows[i].guard == "" {
			rows[i].guard = "Next did not return on a hostile stream: " + rows[i].name
		}
	}
	return rows
}

// readAll reads frames until the first error.
func readAll(r *wire.Reader) ([]wire.Frame, error) {
	var fs []wire.Frame
	for {
		f, err := r.Next()
		if err != nil {
			return fs, err
		}
		fs = append(fs, f)
	}
}

func TestReaderHostileStreams(t *testing.T) {
	for _, tc := range hostileStreams() {
		t.Run(tc.name, func(t *testing.T) {
			var src io.Reader = bytes.NewReader(tc.in)
			var counter *endlessReader
			if tc.endless {
				counter = &endlessReader{prefix: append([]byte(nil), tc.in...), fill: 'x'}
				src = counter
			}
			r := wire.NewReader(src, tc.max)
			var frames []wire.Frame
			var err error
			watchdog(t, tc.guard, func() { frames, err = readAll(r) })
			if len(frames) != tc.frames {
				t.Errorf("got %d whole frames before the error, want %d", len(frames), tc.frames)
			}
			switch tc.want {
			case io.EOF:
				if err != io.EOF {
					t.Fatalf("err = %v, want exactly io.EOF", err)
				}
			case io.ErrUnexpectedEOF:
				if err == io.EOF || !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("err = %v, want one wrapping io.ErrUnexpectedEOF and not io.EOF", err)
				}
				if errors.Is(err, wire.ErrBadFrame) || errors.Is(err, wire.ErrFrameTooLarge) {
					t.Fatalf("a cut stream is reported as a protocol error: %v", err)
				}
			default:
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				other := wire.ErrBadFrame
				if tc.want == wire.ErrBadFrame {
					other = wire.ErrFrameTooLarge
				}
				if errors.Is(err, other) || errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("err = %v wraps more than %v", err, tc.want)
				}
			}
			if counter != nil {
				if counter.n > 64<<10 {
					t.Fatalf("the reader consumed %d bytes of an endless stream, more than its 64 KiB buffer: the body was read", counter.n)
				}
			}
		})
	}
}

// splitAll frames b with Split until it stops, as a reader of a buffer would.
func splitAll(b []byte, max int) (fs []wire.Frame, sizes []int, rest []byte, need int, err error) {
	for len(b) > 0 {
		f, n, nd, err := wire.Split(b, max)
		if err != nil || n == 0 {
			return fs, sizes, b, nd, err
		}
		fs = append(fs, f)
		sizes = append(sizes, n)
		b = b[n:]
	}
	return fs, sizes, b, 0, nil
}

func TestSplitHostileStreams(t *testing.T) {
	for _, tc := range hostileStreams() {
		if tc.endless {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			fs, _, rest, need, err := splitAll(tc.in, tc.max)
			if len(fs) != tc.frames {
				t.Errorf("Split took %d whole frames, want %d", len(fs), tc.frames)
			}
			switch tc.want {
			case io.EOF:
				if err != nil || len(rest) != 0 {
					t.Fatalf("err %v, %d bytes left; want every byte framed", err, len(rest))
				}
			case io.ErrUnexpectedEOF:
				if err != nil || len(rest) == 0 {
					t.Fatalf("err %v, %d bytes left; want an incomplete frame (n == 0, nil error)", err, len(rest))
				}
				wantNeed := 0
				if len(rest) >= 4 {
					wantNeed = 4 + int(binary.BigEndian.Uint32(rest))
				}
				if need != wantNeed {
					t.Fatalf("need = %d with %d bytes in hand, want %d", need, len(rest), wantNeed)
				}
			default:
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
			}
		})
	}
}

func TestSplitIncomplete(t *testing.T) {
	full := cat(frameBytes(wire.TypeCall, []byte(`{"id":1}`), []byte(`{"q":"x"}`)), frameBytes(wire.TypeStop, []byte("{}"), nil))
	first := 4 + 5 + len(`{"id":1}`) + len(`{"q":"x"}`)
	for k := 0; k < first; k++ {
		f, n, need, err := wire.Split(full[:k], 1<<10)
		wantNeed := first
		if k < 4 {
			wantNeed = 0
		}
		if err != nil || n != 0 || need != wantNeed || f.Type != 0 || f.Header != nil || f.Payload != nil {
			t.Fatalf("Split(first %d bytes) = frame %+v, n %d, need %d, err %v; want empty frame, n 0, need %d, nil", k, f, n, need, err, wantNeed)
		}
	}
	f, n, need, err := wire.Split(full, 1<<10)
	if err != nil || n != first || need != 0 || f.Type != wire.TypeCall {
		t.Fatalf("Split(two frames) = %v, n %d, need %d, err %v; want the first frame, n %d", f.Type, n, need, err, first)
	}
	// The frame aliases the input.
	if &f.Payload[0] != &full[first-len(`{"q":"x"}`)] {
		t.Errorf("Split's payload does not alias its input")
	}
}

func TestSplitCapRefusedAtFourBytes(t *testing.T) {
	for _, n := range []uint32{0xFFFFFFFF, 0x80000000, 1 << 30, 1025} {
		for _, extra := range [][]byte{nil, []byte("C"), bytes.Repeat([]byte{0}, 100)} {
			b := cat(be32(n), extra)
			_, got, need, err := wire.Split(b, 1024)
			if !errors.Is(err, wire.ErrFrameTooLarge) || got != 0 || need != 0 {
				t.Fatalf("Split(length %d + %d bytes, cap 1024) = n %d, need %d, err %v; want ErrFrameTooLarge at once", n, len(extra), got, need, err)
			}
		}
	}
	// Fewer than 4 bytes cannot be judged yet.
	for k := 0; k < 4; k++ {
		if _, n, need, err := wire.Split([]byte{0xFF, 0xFF, 0xFF, 0xFF}[:k], 1024); err != nil || n != 0 || need != 0 {
			t.Fatalf("Split(%d bytes of 0xFF) = n %d, need %d, err %v; want incomplete", k, n, need, err)
		}
	}
}

func TestFrameExactlyAtCap(t *testing.T) {
	for _, max := range []int{6, 7, 100, 64 << 10, 1 << 20} {
		for _, delta := range []int{-1, 0, 1} {
			size := max + delta // the length field's value
			if size < 7 {
				continue
			}
			b := frameBytes(wire.TypeEnd, []byte("{}"), make([]byte, size-7))
			_, n, _, serr := wire.Split(b, max)
			r := wire.NewReader(bytes.NewReader(b), max)
			var f wire.Frame
			var rerr error
			watchdog(t, "Next did not return on a frame around the cap", func() { f, rerr = r.Next() })
			if delta <= 0 {
				if serr != nil || n != len(b) {
					t.Errorf("cap %d, length %d: Split n %d err %v; want accepted", max, size, n, serr)
				}
				if rerr != nil || f.Size() != len(b) {
					t.Errorf("cap %d, length %d: Next size %d err %v; want accepted", max, size, f.Size(), rerr)
				}
			} else {
				if !errors.Is(serr, wire.ErrFrameTooLarge) {
					t.Errorf("cap %d, length %d: Split err %v; want ErrFrameTooLarge", max, size, serr)
				}
				if !errors.Is(rerr, wire.ErrFrameTooLarge) {
					t.Errorf("cap %d, length %d: Next err %v; want ErrFrameTooLarge", max, size, rerr)
				}
			}
		}
	}
}

func TestReaderOverCapAllocatesNothing(t *testing.T) {
	const max = 1 << 20
	for _, n := range []uint32{max + 1, 64 << 20, 0xFFFFFFFF} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			// Every Next reads one 4-byte over-cap length from an endless
			// repetition of it; a body allocated before the check would show.
			r := wire.NewReader(&repeatReader{pattern: be32(n)}, max)
			next := func() {
				if _, err := r.Next(); !errors.Is(err, wire.ErrFrameTooLarge) {
					panic(fmt.Sprintf("Next = %v, want ErrFrameTooLarge", err))
				}
			}
			watchdog(t, "Next did not return: the frame cap failed to trip", next) // fill the buffer first
			var allocs float64
			var perCall uint64
			watchdog(t, "Next did not return: the frame cap failed to trip", func() {
				allocs = testing.AllocsPerRun(100, next)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				const runs = 100
				for range runs {
					next()
				}
				runtime.ReadMemStats(&after)
				perCall = (after.TotalAlloc - before.TotalAlloc) / runs
			})
			if allocs > 8 {
				t.Errorf("refusing an over-cap frame made %v allocations per call", allocs)
			}
			if perCall > 4<<10 {
				t.Errorf("refusing an over-cap frame allocated %d bytes per call: the body was allocated", perCall)
			}
		})
	}
}

func TestReaderStreamErrorsWrapped(t *testing.T) {
	boom := errors.New("i/o timeout")
	good := frameBytes(wire.TypeOutput, []byte("{}"), []byte("hello"))
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"before anything", nil},
		{"mid-length", good[:2]},
		{"mid-body", good[:len(good)-1]},
	} {
		r := wire.NewReader(&errAfterReader{data: tc.data, err: boom}, 1<<10)
		var err error
		watchdog(t, "Next did not return on a failing stream", func() { _, err = r.Next() })
		if !errors.Is(err, boom) || err == io.EOF {
			t.Errorf("%s: Next = %v, want it to wrap %v", tc.name, err, boom)
		}
	}
}

func TestReaderCapPanics(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	for _, max := range []int{-1 << 40, -1, 0, 1, 4, 5} {
		mustPanic(fmt.Sprintf("NewReader(cap %d)", max), func() { wire.NewReader(bytes.NewReader(nil), max) })
	}
	// 6 is the smallest cap that can hold a frame with a byte after the overhead.
	wire.NewReader(bytes.NewReader(nil), 6)
}

// --- Reader and Split agree -------------------------------------------------

// errClass puts an error in the classes Reader and Split must agree on.
func readerClass(err error) string {
	switch {
	case err == nil:
		return "nil"
	case err == io.EOF:
		return "end"
	case errors.Is(err, wire.ErrFrameTooLarge):
		return "too large"
	case errors.Is(err, wire.ErrBadFrame):
		return "bad frame"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "incomplete"
	}
	return "other: " + err.Error()
}

func splitClass(rest []byte, err error) string {
	switch {
	case err == nil && len(rest) == 0:
		return "end"
	case err == nil:
		return "incomplete"
	case errors.Is(err, wire.ErrFrameTooLarge):
		return "too large"
	case errors.Is(err, wire.ErrBadFrame):
		return "bad frame"
	}
	return "other: " + err.Error()
}

// checkReaderSplitAgree reads b with a Reader and with Split and fails unless
// both see the same frames and fail the same way at the same point.
func checkReaderSplitAgree(t *testing.T, b []byte, max int) {
	t.Helper()
	r := wire.NewReader(bytes.NewReader(b), max)
	rfs, rerr := readAll(r)
	sfs, sizes, rest, need, serr := splitAll(b, max)

	if rc := readerClass(rerr); rc == "nil" || strings.HasPrefix(rc, "other") {
		t.Fatalf("Reader ended with %v (class %q)", rerr, rc)
	}
	if len(rfs) != len(sfs) {
		t.Fatalf("Reader read %d frames (then %v), Split %d (then %v, %d bytes left)", len(rfs), rerr, len(sfs), serr, len(rest))
	}
	off := 0
	for i, f := range rfs {
		if f.Size() != sizes[i] {
			t.Fatalf("frame %d: Reader Size() %d, Split consumed %d", i, f.Size(), sizes[i])
		}
		// Size() is the bytes the frame took: its length field plus 4, and
		// the header and payload are exactly the bytes after type and h.
		if got := 4 + int(binary.BigEndian.Uint32(b[off:])); f.Size() != got {
			t.Fatalf("frame %d: Size() %d, the stream's length field says %d", i, f.Size(), got)
		}
		if typ := wire.Type(b[off+4]); f.Type != typ || !f.Type.Known() {
			t.Fatalf("frame %d: Type %v, the stream has %v", i, f.Type, typ)
		}
		if !bytes.Equal(cat(f.Header, f.Payload), b[off+9:off+f.Size()]) {
			t.Fatalf("frame %d: header+payload are not the frame's bytes", i)
		}
		if f.Type != sfs[i].Type || !bytes.Equal(f.Header, sfs[i].Header) || !bytes.Equal(f.Payload, sfs[i].Payload) {
			t.Fatalf("frame %d: Reader %v %q %q, Split %v %q %q", i, f.Type, trunc(f.Header), trunc(f.Payload), sfs[i].Type, trunc(sfs[i].Header), trunc(sfs[i].Payload))
		}
		var m map[string]any
		_ = f.Decode(&m) // must not panic, whatever the header
		off += f.Size()
	}
	if off+len(rest) != len(b) {
		t.Fatalf("frames cover %d bytes and %d are left, of %d", off, len(rest), len(b))
	}
	rc, sc := readerClass(rerr), splitClass(rest, serr)
	if rc != sc {
		t.Fatalf("after %d frames: Reader %v (%s), Split %v with %d bytes left (%s)", len(rfs), rerr, rc, serr, len(rest), sc)
	}
	if sc == "incomplete" {
		wantNeed := 0
		if len(rest) >= 4 {
			wantNeed = 4 + int(binary.BigEndian.Uint32(rest))
		}
		if need != wantNeed || (need != 0 && need <= len(rest)) {
			t.Fatalf("incomplete frame of %d bytes: need %d, want %d", len(rest), need, wantNeed)
		}
	}
}

// frameSeeds are inputs for FuzzReadFrame and TestReaderSplitAgree: every
// type, every hostile stream, and junk.
func frameSeeds() [][]byte {
	var seeds [][]byte
	for _, typ := range allTypes {
		b, _ := wire.AppendFrame(nil, typ, nil, nil)
		seeds = append(seeds, b)
		b, _ = wire.AppendFrame(nil, typ, wire.Call{RunID: "r", ID: 1, Server: "s", Tool: "t"}, []byte("{\"a\":\x00}"))
		seeds = append(seeds, b)
	}
	var all []byte
	for _, s := range seeds {
		all = append(all, s...)
	}
	seeds = append(seeds, all, all[:len(all)-3])
	for _, h := range hostileStreams() {
		if len(h.in) <= 4096 {
			seeds = append(seeds, h.in)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 24 {
		junk := make([]byte, rng.IntN(200))
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		seeds = append(seeds, junk)
	}
	// Junk with plausible prefixes, to get past the length check.
	for range 24 {
		size := 5 + rng.IntN(60)
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(rng.Uint32())
		}
		if rng.IntN(4) != 0 {
			body[0] = byte(allTypes[rng.IntN(len(allTypes))])
		}
		if rng.IntN(2) == 0 {
			binary.BigEndian.PutUint32(body[1:], uint32(rng.IntN(size)))
		}
		b := cat(be32(uint32(size)), body)
		b = b[:rng.IntN(len(b)+1)]
		seeds = append(seeds, b)
	}
	return seeds
}

func TestReaderSplitAgree(t *testing.T) {
	for i, b := range frameSeeds() {
		for _, max := range []int{6, 64, 1 << 16, hostileCap} {
			t.Run(fmt.Sprintf("seed%d/cap%d", i, max), func(t *testing.T) {
				checkReaderSplitAgree(t, b, max)
			})
		}
	}
}

func FuzzReadFrame(f *testing.F) {
	for _, s := range frameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkReaderSplitAgree(t, b, 1<<16)
	})
}

// --- benchmark ---------------------------------------------------------------

func BenchmarkAppendFrameCall(b *testing.B) {
	hdr := &wire.Call{RunID: "run-2f6c1e0a9b7d4c3e", ID: 42, Server: "github", Tool: "search_issues"}
	payload := []byte(`{"query":"is:open label:bug repo:run-js-server/run-js-server","perPage":50,"page":1,"sort":"new"}`)
	payload = append(payload, bytes.Repeat([]byte(" "), 100-len(payload))...) // exactly 100 bytes
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	var err error
	for b.Loop() {
		if buf, err = wire.AppendFrame(buf[:0], wire.TypeCall, hdr, payload); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}
