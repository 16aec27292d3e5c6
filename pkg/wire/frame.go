package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// Type says what a frame carries. The set is closed; a reader rejects others.
type Type byte

// Frame types. The comment says who sends it.
const (
	TypeHello  Type = 'H' // worker → parent, once, first: protocol version
	TypeStart  Type = 'S' // parent → worker, once: the run; payload is the program's code
	TypeCall   Type = 'C' // worker → parent: a tool call; payload is the arguments' JSON
	TypeResult Type = 'R' // parent → worker: a call's outcome; payload is the result's JSON when ok
	TypeOutput Type = 'O' // worker → parent: console output; payload is UTF-8 text
	TypeStop   Type = 'X' // parent → worker: stop the run now
	TypeEnd    Type = 'E' // worker → parent, once, last: the ending; payload is the returned value's JSON
	// TypeCatalog: parent → worker: before start, to a spare, a catalog to
	// hold for the run to come (its names); during a run, the answer to a
	// tools request (ALL_TOOLS). The payload is its sections (see Start).
	TypeCatalog Type = 'K'
	// TypeToolsRequest: worker → parent, at most once a run: the program
	// read ALL_TOOLS; the parent answers with a catalog frame holding it.
	TypeToolsRequest Type = 'T'
)

func (t Type) String() string {
	switch t {
	case TypeHello:
		return "hello"
	case TypeStart:
		return "start"
	case TypeCall:
		return "call"
	case TypeResult:
		return "result"
	case TypeOutput:
		return "output"
	case TypeStop:
		return "stop"
	case TypeEnd:
		return "end"
	case TypeCatalog:
		return "catalog"
	case TypeToolsRequest:
		return "tools request"
	}
	return fmt.Sprintf("type 0x%02x", byte(t))
}

// frameOverhead is the part of n that is not header or payload: type + h.
const frameOverhead = 1 + 4

// Frame is one decoded frame. Header and Payload alias the reader's buffer
// for this frame only; they stay valid until the caller drops the Frame (a
// Reader allocates a new buffer per frame, so they are never overwritten).
type Frame struct {
	Type    Type
	Header  []byte
	Payload []byte
}

// Size is the frame's length on the wire, prefix included.
func (f Frame) Size() int { return 4 + frameOverhead + len(f.Header) + len(f.Payload) }

// Decode reads the header into v, strictly: the header must be one JSON
// object, and unknown fields and trailing data are errors (they mean the peer
// speaks another version of the protocol).
func (f Frame) Decode(v any) error {
	var err error
	switch m := v.(type) {
	case *Call:
		err = decodeCall(f.Header, m)
	case *Result:
		err = decodeResult(f.Header, m)
	case *Output:
		err = decodeOutput(f.Header, m)
	default:
		return f.decodeJSON(v)
	}
	if err != nil {
		return fmt.Errorf("%w: %s header: %v", ErrBadFrame, f.Type, err)
	}
	return nil
}

// decodeJSON is Decode through encoding/json, for the headers of frames
// sent once a run (hello, start, end, stop).
func (f Frame) decodeJSON(v any) error {
	if !isObject(f.Header) {
		return fmt.Errorf("%w: %s header is not a JSON object", ErrBadFrame, f.Type)
	}
	dec := json.NewDecoder(bytes.NewReader(f.Header))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s header: %v", ErrBadFrame, f.Type, err)
	}
	// More() misses a stray '}' or ']'; only the end of input will do.
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: %s header: trailing data after the JSON object", ErrBadFrame, f.Type)
	}
	return nil
}

// Reader reads frames from a stream, refusing any frame longer than Max
// before reading its body. Not safe for concurrent use.
type Reader struct {
	r   *bufio.Reader
	max int
	hdr [4]byte
}

// NewReader returns a Reader with the given cap on a frame's length (prefix
// excluded). A cap too small for any frame (≤ 5) is a programming error and
// panics: every stream from a peer has a real cap.
func NewReader(r io.Reader, max int) *Reader {
	if max <= frameOverhead {
		panic("wire: NewReader needs a positive frame cap")
	}
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// HasFrame reports whether a whole frame is already buffered, so that Next
// returns it without reading.
func (r *Reader) HasFrame() bool {
	if r.r.Buffered() < 4 {
		return false // and Peek would read
	}
	b, err := r.r.Peek(4)
	if err != nil || len(b) < 4 {
		return false
	}
	n := uint64(binary.BigEndian.Uint32(b))
	return uint64(r.r.Buffered()) >= 4+n
}

// Next reads one frame. At a clean end of stream it returns io.EOF; a stream
// cut inside a frame gives io.ErrUnexpectedEOF. Errors of the stream itself
// (deadlines, closed connections) are returned wrapped, as they are.
func (r *Reader) Next() (Frame, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		if err == io.EOF {
			return Frame{}, io.EOF
		}
		return Frame{}, fmt.Errorf("wire: read frame length: %w", err)
	}
	n := binary.BigEndian.Uint32(r.hdr[:])
	if uint64(n) > uint64(r.max) {
		return Frame{}, fmt.Errorf("%w: %d bytes announced, cap is %d", ErrFrameTooLarge, n, r.max)
	}
	if n < frameOverhead {
		return Frame{}, fmt.Errorf("%w: length %d is below the minimum %d", ErrBadFrame, n, frameOverhead)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, fmt.Errorf("wire: read %d-byte frame body: %w", n, err)
	}
	return parseBody(body)
}

// parseBody decodes a frame's body (everything after the length field).
func parseBody(body []byte) (Frame, error) {
	t := Type(body[0])
	if !t.Known() {
		return Frame{}, fmt.Errorf("%w: unknown %s", ErrBadFrame, t)
	}
	n := len(body)
	h := binary.BigEndian.Uint32(body[1:5])
	if uint64(h) > uint64(n-frameOverhead) {
		return Frame{}, fmt.Errorf("%w: %s header length %d is past the frame's %d bytes", ErrBadFrame, t, h, n)
	}
	return Frame{Type: t, Header: body[5 : 5+h], Payload: body[5+h:]}, nil
}

// Split takes the first whole frame off the front of b, for a reader that
// reads what is available and frames it itself. It returns the frame and the
// number of bytes it used; n == 0 with a nil error means b does not yet hold
// a whole frame, and need says how many bytes it must hold (0 while even the
// length is incomplete). A frame longer than max is refused as soon as its
// length is known. The frame aliases b.
func Split(b []byte, max int) (f Frame, n, need int, err error) {
	if len(b) < 4 {
		return Frame{}, 0, 0, nil
	}
	size := binary.BigEndian.Uint32(b)
	if uint64(size) > uint64(max) {
		return Frame{}, 0, 0, fmt.Errorf("%w: %d bytes announced, cap is %d", ErrFrameTooLarge, size, max)
	}
	if size < frameOverhead {
		return Frame{}, 0, 0, fmt.Errorf("%w: length %d is below the minimum %d", ErrBadFrame, size, frameOverhead)
	}
	if uint64(len(b)) < 4+uint64(size) {
		return Frame{}, 0, 4 + int(size), nil
	}
	f, err = parseBody(b[4 : 4+size])
	if err != nil {
		return Frame{}, 0, 0, err
	}
	return f, 4 + int(size), 0, nil
}

// Known reports whether t is one of the Type constants.
func (t Type) Known() bool {
	switch t {
	case TypeHello, TypeStart, TypeCall, TypeResult, TypeOutput, TypeStop, TypeEnd, TypeCatalog, TypeToolsRequest:
		return true
	}
	return false
}

// AppendFrame appends one frame to dst: hdr is encoded as JSON (nil gives
// "{}"), payload is copied as is. It fails only if hdr cannot be encoded or
// the frame would not fit the 32-bit length.
func AppendFrame(dst []byte, t Type, hdr any, payload []byte) ([]byte, error) {
	dst, err := AppendFrameHead(dst, t, hdr, len(payload))
	if err != nil {
		return dst, err
	}
	return append(dst, payload...), nil
}

// AppendFrameHead is AppendFrame without the payload: it appends the length
// fields (counting a payload of payloadLen bytes) and the header, for a
// writer that sends the payload from where it lies.
func AppendFrameHead(dst []byte, t Type, hdr any, payloadLen int) ([]byte, error) {
	at := len(dst)
	// The header is written in place, after room for the two length fields.
	dst = append(dst, 0, 0, 0, 0, byte(t), 0, 0, 0, 0)
	var ok bool
	switch {
	case hdr == nil:
		dst, ok = append(dst, "{}"...), true
	default:
		dst, ok = appendHeader(dst, hdr)
	}
	if !ok {
		h, err := json.Marshal(hdr)
		if err != nil {
			return dst[:at], fmt.Errorf("wire: encode %s header: %w", t, err)
		}
		dst = append(dst, h...)
	}
	hlen := len(dst) - at - 4 - frameOverhead
	n := uint64(frameOverhead) + uint64(hlen) + uint64(payloadLen)
	if n > 1<<32-1 {
		return dst[:at], fmt.Errorf("%w: %s frame of %d bytes does not fit the length field", ErrFrameTooLarge, t, n)
	}
	binary.BigEndian.PutUint32(dst[at:], uint32(n))
	binary.BigEndian.PutUint32(dst[at+5:], uint32(hlen))
	return dst, nil
}

// WriteFrame writes one frame to w in a single Write call.
func WriteFrame(w io.Writer, t Type, hdr any, payload []byte) error {
	buf, err := AppendFrame(make([]byte, 0, 64+len(payload)), t, hdr, payload)
	if err != nil {
		return err
	}
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("wire: write %s frame: %w", t, err)
	}
	return nil
}
