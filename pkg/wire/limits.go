package wire

import (
	"fmt"
	"time"
)

// The defaults and bounds of a run. This is the one place they are set;
// server_info and the docs report these values. Each has its reason.
const (
	// DefaultTimeout is a run's deadline: long enough for a program that fans
	// out to slow tools, short enough that an agent is not left waiting.
	DefaultTimeout = 30 * time.Second
	// MinTimeout keeps a deadline above what spawning a worker costs.
	MinTimeout = 100 * time.Millisecond
	// MaxTimeout bounds how long one run can hold a worker slot.
	MaxTimeout = 10 * time.Minute

	// DefaultMemory is the QuickJS heap limit: plenty for shaping tool results,
	// small enough that a gateway's programs running at once (16,
	// mcpgw.MaxRunningPrograms) fit a small host.
	DefaultMemory = 64 << 20
	// MinMemory is the smallest heap that still runs the prelude and a program.
	MinMemory = 4 << 20
	// MaxMemory is the largest heap a run may ask for.
	MaxMemory = 2 << 30

	// DefaultStack is the JS stack: deep enough for ordinary recursion, and far
	// below the worker thread's 8 MiB C stack, so overflow is a RangeError and
	// never a SIGSEGV.
	DefaultStack = 1 << 20

	// DefaultMaxInFlight is how many of a run's calls the parent holds at once;
	// more wait inside the program, in its own memory, and are never refused
	// for this.
	DefaultMaxInFlight = 16

	// DefaultMaxArgBytes and DefaultMaxArgValues bound one call's arguments:
	// far above any real tool call, small enough that checking them and
	// validating them against a schema stays cheap.
	DefaultMaxArgBytes  = 4 << 20
	DefaultMaxArgValues = 100_000

	// DefaultMaxJSONDepth bounds the nesting of every JSON value that crosses
	// into or out of a program: a call's arguments, a result, the input.
	// JSON.parse and JSON.stringify in a 1 MiB JS stack handle it with room
	// to spare.
	DefaultMaxJSONDepth = 2000
	// ResultMemoryShare: a result may take at most memory/ResultMemoryShare
	// bytes of JSON, so parsing it (about twice its size as JS values) still
	// leaves the program room to use it.
	ResultMemoryShare = 3

	// DefaultMaxReturnBytes bounds the JSON of the value a program returns,
	// so that an end frame always fits MaxWorkerFrame.
	DefaultMaxReturnBytes = 20 << 20

	// MaxWorkerFrame caps any frame from the (untrusted) worker: a call with
	// the largest arguments, or an end with the largest value, plus headroom.
	MaxWorkerFrame = 25 << 20
	// MaxStartFrame caps the start frame the worker accepts before it knows
	// its limits: code, input and a catalog of thousands of tools.
	MaxStartFrame = 64 << 20

	// MaxCodeBytes bounds a program's source: a program, not a bundle.
	MaxCodeBytes = 1 << 20
	// MaxInputBytes bounds the JSON given to a program as `input`.
	MaxInputBytes = 4 << 20

	// OutputHeadChars and OutputTailChars are what the parent keeps of a
	// run's output (in UTF-16 code units, as JavaScript counts): the start
	// says what the program did, the end how it finished.
	OutputHeadChars = 8000
	OutputTailChars = 8000

	// MaxErrorChars bounds the name, message and stack of a thrown error.
	MaxErrorChars = 8000
)

// The bounds Normalize holds each field of Limits to, beyond the ones above.
const (
	// minStack and maxStack bound the JS stack a run may set: at most half
	// the worker thread's 8 MiB C stack keeps an overflow a RangeError,
	// never a SIGSEGV (see DefaultStack).
	minStack = 64 << 10
	maxStack = 8 << 20 / 2
	// maxInFlightLimit bounds MaxInFlight: every call in flight is a
	// goroutine and a lane slot in the parent.
	maxInFlightLimit = 1024
	// maxArgValuesLimit bounds MaxArgValues: checking and validating the
	// arguments costs time per value.
	maxArgValuesLimit = 10_000_000
	// maxJSONDepthLimit bounds MaxJSONDepth: encoding/json refuses nesting
	// deeper than 10,000, so the parent could not decode more.
	maxJSONDepthLimit = 10_000
	// frameHeadroom is what a frame needs beside its payload (the length,
	// the type and the JSON header): arguments may take MaxWorkerFrame less
	// this, and a result frame is its result plus this.
	frameHeadroom = 64 << 10
	// endHeadroom is kept beside the returned value in an end frame: its
	// header carries the error's name, message and stack (MaxErrorChars
	// characters each, escaped as JSON), with room to spare.
	endHeadroom = 4 << 20
)

// Limits are the limits of one run, sent to the worker in the start frame and
// enforced again by the parent. Zero fields mean the default.
type Limits struct {
	TimeoutMs      int64 `json:"timeoutMs"`
	MemoryBytes    int64 `json:"memoryBytes"`
	StackBytes     int64 `json:"stackBytes"`
	MaxInFlight    int   `json:"maxInFlight"`
	MaxArgBytes    int   `json:"maxArgBytes"`
	MaxArgValues   int   `json:"maxArgValues"`
	MaxResultBytes int64 `json:"maxResultBytes"`
	MaxJSONDepth   int   `json:"maxJsonDepth"`
	MaxReturnBytes int   `json:"maxReturnBytes"`
}

// Timeout is TimeoutMs as a Duration.
func (l Limits) Timeout() time.Duration { return time.Duration(l.TimeoutMs) * time.Millisecond }

// Normalize fills zero fields with defaults and checks every field against its
// bounds. The error wraps ErrBadLimits and names the field, the value and the
// allowed range. The result bytes default to the memory / ResultMemoryShare.
func (l Limits) Normalize() (Limits, error) {
	def64 := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def64(&l.TimeoutMs, DefaultTimeout.Milliseconds())
	def64(&l.MemoryBytes, DefaultMemory)
	def64(&l.StackBytes, DefaultStack)
	def(&l.MaxInFlight, DefaultMaxInFlight)
	def(&l.MaxArgBytes, DefaultMaxArgBytes)
	def(&l.MaxArgValues, DefaultMaxArgValues)
	def64(&l.MaxResultBytes, l.MemoryBytes/ResultMemoryShare)
	def(&l.MaxJSONDepth, DefaultMaxJSONDepth)
	def(&l.MaxReturnBytes, DefaultMaxReturnBytes)

	checks := []struct {
		name     string
		v        int64
		min, max int64
		unit     string
	}{
		{"timeout", l.TimeoutMs, MinTimeout.Milliseconds(), MaxTimeout.Milliseconds(), "ms"},
		{"memory", l.MemoryBytes, MinMemory, MaxMemory, "bytes"},
		{"stack", l.StackBytes, minStack, maxStack, "bytes"},
		{"calls in flight", int64(l.MaxInFlight), 1, maxInFlightLimit, ""},
		{"argument bytes", int64(l.MaxArgBytes), 2, MaxWorkerFrame - frameHeadroom, "bytes"},
		{"argument values", int64(l.MaxArgValues), 1, maxArgValuesLimit, ""},
		{"result bytes", l.MaxResultBytes, 2, l.MemoryBytes / ResultMemoryShare, "bytes"},
		{"JSON depth", int64(l.MaxJSONDepth), 1, maxJSONDepthLimit, ""},
		{"returned value bytes", int64(l.MaxReturnBytes), 4, MaxWorkerFrame - endHeadroom, "bytes"},
	}
	for _, c := range checks {
		if c.v < c.min || c.v > c.max {
			unit := ""
			if c.unit != "" {
				unit = " " + c.unit
			}
			return l, fmt.Errorf("%w: %s is %d%s; allowed %d to %d%s", ErrBadLimits, c.name, c.v, unit, c.min, c.max, unit)
		}
	}
	return l, nil
}

// ResultFrameCap is the largest frame the worker accepts once it knows its
// limits: the largest result plus room for the header.
func (l Limits) ResultFrameCap() int { return int(l.MaxResultBytes) + frameHeadroom }
