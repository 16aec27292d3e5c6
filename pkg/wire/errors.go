package wire

import "errors"

// The sentinel errors of package wire, in one place; callers branch with
// errors.Is and read the wrapped text for the detail. What is true of the
// errors this package returns:
//
//   - Reader.Next and Split: ErrFrameTooLarge or ErrBadFrame for bytes that
//     break the framing; otherwise the stream's own error, wrapped with %w
//     (io.EOF at a clean end between frames, io.ErrUnexpectedEOF for a
//     stream cut inside one, a deadline or a closed connection).
//   - Frame.Decode: ErrBadFrame.
//   - AppendFrame and WriteFrame: ErrFrameTooLarge for a frame past the
//     32-bit length; otherwise the JSON encoder's or the writer's error,
//     wrapped.
//   - ScanJSON: a *JSONError wrapping ErrJSONInvalid, ErrTooManyValues or
//     ErrTooDeep, with the byte offset.
//   - Limits.CheckArgs, CheckResult and CheckInput: ErrTooLarge past a cap,
//     ErrNotObject for JSON that is not the object needed, or ScanJSON's
//     error for bytes that are not JSON.
//   - Limits.Normalize: ErrBadLimits.
var (
	// ErrFrameTooLarge: a frame's announced length is above the reader's cap.
	// Nothing of the body was read or allocated.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrBadFrame: the bytes do not form a frame (length below the minimum, a
	// header length past the frame, a header that is not the message's JSON).
	ErrBadFrame = errors.New("malformed frame")
	// ErrBadLimits: a Limits value outside its documented range.
	ErrBadLimits = errors.New("limit out of range")

	// ErrTooLarge: past a size cap of a call's arguments, a result or the
	// input (bytes, values or nesting).
	ErrTooLarge = errors.New("too large")
	// ErrNotObject: valid JSON, but not the JSON object the protocol needs.
	ErrNotObject = errors.New("not a JSON object")

	// ErrJSONInvalid: not one JSON value (RFC 8259).
	ErrJSONInvalid = errors.New("invalid JSON")
	// ErrTooManyValues: more JSON values than ScanJSON's maxValues.
	ErrTooManyValues = errors.New("too many JSON values")
	// ErrTooDeep: JSON nested deeper than ScanJSON's maxDepth.
	ErrTooDeep = errors.New("JSON nested too deeply")
)
