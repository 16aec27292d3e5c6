package wire

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these, so
// callers branch with errors.Is and read the wrapped text for the detail.
var (
	// ErrFrameTooLarge: a frame's announced length is above the reader's cap.
	// Nothing of the body was read or allocated.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrBadFrame: the bytes do not form a frame (length below the minimum, a
	// header length past the frame, a header that is not the message's JSON).
	ErrBadFrame = errors.New("malformed frame")
	// ErrBadLimits: a Limits value outside its documented range.
	ErrBadLimits = errors.New("limit out of range")
)
