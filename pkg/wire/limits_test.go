package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

func TestNormalizeDefaults(t *testing.T) {
	got, err := wire.Limits{}.Normalize()
	if err != nil {
		t.Fatalf("Normalize(zero) = %v", err)
	}
	want := wire.Limits{
		TimeoutMs:      wire.DefaultTimeout.Milliseconds(),
		MemoryBytes:    wire.DefaultMemory,
		StackBytes:     wire.DefaultStack,
		MaxInFlight:    wire.DefaultMaxInFlight,
		MaxArgBytes:    wire.DefaultMaxArgBytes,
		MaxArgValues:   wire.DefaultMaxArgValues,
		MaxResultBytes: wire.DefaultMemory / wire.ResultMemoryShare,
		MaxJSONDepth:   wire.DefaultMaxJSONDepth,
		MaxReturnBytes: wire.DefaultMaxReturnBytes,
	}
	if got != want {
		t.Fatalf("Normalize(zero) =\n %+v\nwant\n %+v", got, want)
	}
	// The documented numbers, so that a change to a default is deliberate.
	literal := wire.Limits{
		TimeoutMs: 30_000, MemoryBytes: 64 << 20, StackBytes: 1 << 20, MaxInFlight: 16,
		MaxArgBytes: 4 << 20, MaxArgValues: 100_000, MaxResultBytes: (64 << 20) / 3,
		MaxJSONDepth: 2000, MaxReturnBytes: 20 << 20,
	}
	if got != literal {
		t.Fatalf("Normalize(zero) =\n %+v\nwant the documented\n %+v", got, literal)
	}
	if got.Timeout() != wire.DefaultTimeout {
		t.Fatalf("Timeout() = %v, want %v", got.Timeout(), wire.DefaultTimeout)
	}
	again, err := got.Normalize()
	if err != nil || again != got {
		t.Fatalf("Normalize is not idempotent: %+v, %v", again, err)
	}
}

func TestNormalizeKeepsSetFields(t *testing.T) {
	in := wire.Limits{
		TimeoutMs: 1234, MemoryBytes: 9 << 20, StackBytes: 256 << 10, MaxInFlight: 3,
		MaxArgBytes: 1000, MaxArgValues: 77, MaxResultBytes: 500, MaxJSONDepth: 12, MaxReturnBytes: 999,
	}
	got, err := in.Normalize()
	if err != nil || got != in {
		t.Fatalf("Normalize(%+v) = %+v, %v; want it unchanged", in, got, err)
	}
}

func TestNormalizeCustomMemoryResultCap(t *testing.T) {
	for _, mem := range []int64{wire.MinMemory, 12 << 20, 100_000_000, wire.MaxMemory} {
		got, err := wire.Limits{MemoryBytes: mem}.Normalize()
		if err != nil {
			t.Fatalf("memory %d: %v", mem, err)
		}
		if got.MaxResultBytes != mem/3 {
			t.Errorf("memory %d: MaxResultBytes %d, want %d (a third)", mem, got.MaxResultBytes, mem/3)
		}
	}
	got, _ := wire.Limits{MemoryBytes: 12 << 20}.Normalize()
	if got.MaxResultBytes != 4<<20 {
		t.Fatalf("memory 12 MiB: MaxResultBytes %d, want 4 MiB", got.MaxResultBytes)
	}
}

// limitField describes one field of Limits and its allowed range.
type limitField struct {
	name     string // as the error names it
	unit     string
	min, max int64
	isInt    bool // the field is an int, not an int64
	set      func(l *wire.Limits, v int64)
	get      func(l wire.Limits) int64
}

func limitFields() []limitField {
	defaultResultMax := int64(wire.DefaultMemory / 3)
	return []limitField{
		{"timeout", "ms", 100, 600_000, false,
			func(l *wire.Limits, v int64) { l.TimeoutMs = v }, func(l wire.Limits) int64 { return l.TimeoutMs }},
		{"memory", "bytes", 4 << 20, 2 << 30, false,
			func(l *wire.Limits, v int64) { l.MemoryBytes = v }, func(l wire.Limits) int64 { return l.MemoryBytes }},
		{"stack", "bytes", 64 << 10, 4 << 20, false,
			func(l *wire.Limits, v int64) { l.StackBytes = v }, func(l wire.Limits) int64 { return l.StackBytes }},
		{"calls in flight", "", 1, 1024, true,
			func(l *wire.Limits, v int64) { l.MaxInFlight = int(v) }, func(l wire.Limits) int64 { return int64(l.MaxInFlight) }},
		{"argument bytes", "bytes", 2, 25<<20 - 64<<10, true,
			func(l *wire.Limits, v int64) { l.MaxArgBytes = int(v) }, func(l wire.Limits) int64 { return int64(l.MaxArgBytes) }},
		{"argument values", "", 1, 10_000_000, true,
			func(l *wire.Limits, v int64) { l.MaxArgValues = int(v) }, func(l wire.Limits) int64 { return int64(l.MaxArgValues) }},
		{"result bytes", "bytes", 2, defaultResultMax, false,
			func(l *wire.Limits, v int64) { l.MaxResultBytes = v }, func(l wire.Limits) int64 { return l.MaxResultBytes }},
		{"JSON depth", "", 1, 10_000, true,
			func(l *wire.Limits, v int64) { l.MaxJSONDepth = int(v) }, func(l wire.Limits) int64 { return int64(l.MaxJSONDepth) }},
		{"returned value bytes", "bytes", 4, 21 << 20, true,
			func(l *wire.Limits, v int64) { l.MaxReturnBytes = int(v) }, func(l wire.Limits) int64 { return int64(l.MaxReturnBytes) }},
	}
}

func limitFieldNamed(t *testing.T, name string) limitField {
	t.Helper()
	for _, f := range limitFields() {
		if f.name == name {
			return f
		}
	}
	t.Fatalf("no limit field %q", name)
	return limitField{}
}

func TestNormalizeOutOfRange(t *testing.T) {
	type row struct {
		name  string
		field limitField
		v     int64
	}
	var rows []row
	for _, f := range limitFields() {
		for _, v := range []int64{-1, f.min - 1, f.max + 1, f.max * 1000, -1 << 40} {
			if v == 0 {
				continue // zero means the default
			}
			if f.isInt && int64(int(v)) != v {
				continue // does not fit the field on this platform
			}
			rows = append(rows, row{fmt.Sprintf("%s=%d", f.name, v), f, v})
		}
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			var l wire.Limits
			tc.field.set(&l, tc.v)
			_, err := l.Normalize()
			if !errors.Is(err, wire.ErrBadLimits) {
				t.Fatalf("Normalize with %s %d = %v, want ErrBadLimits", tc.field.name, tc.v, err)
			}
			msg := err.Error()
			for _, want := range []string{
				tc.field.name + " is " + fmt.Sprint(tc.v),
				fmt.Sprintf("allowed %d to %d", tc.field.min, tc.field.max),
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
			if tc.field.unit != "" && !strings.Contains(msg, tc.field.unit) {
				t.Errorf("error %q does not give the unit %q", msg, tc.field.unit)
			}
		})
	}
}

func TestNormalizeBoundaries(t *testing.T) {
	for _, f := range limitFields() {
		for _, v := range []int64{f.min, f.max} {
			var l wire.Limits
			f.set(&l, v)
			got, err := l.Normalize()
			if err != nil {
				t.Errorf("%s = %d (a bound) refused: %v", f.name, v, err)
				continue
			}
			if f.get(got) != v {
				t.Errorf("%s = %d: Normalize changed it to %d", f.name, v, f.get(got))
			}
		}
	}
	// Several fields at a bound at once, including the result cap at the
	// third of the largest and of the smallest memory.
	for _, l := range []wire.Limits{
		{MemoryBytes: wire.MaxMemory, MaxResultBytes: wire.MaxMemory / 3},
		{MemoryBytes: wire.MinMemory, MaxResultBytes: wire.MinMemory / 3},
		{MemoryBytes: wire.MinMemory, MaxResultBytes: 2},
		{TimeoutMs: wire.MinTimeout.Milliseconds(), MemoryBytes: wire.MinMemory, StackBytes: 64 << 10, MaxInFlight: 1,
			MaxArgBytes: 2, MaxArgValues: 1, MaxResultBytes: 2, MaxJSONDepth: 1, MaxReturnBytes: 4},
		{TimeoutMs: wire.MaxTimeout.Milliseconds(), MemoryBytes: wire.MaxMemory, StackBytes: 4 << 20, MaxInFlight: 1024,
			MaxArgBytes: wire.MaxWorkerFrame - 64<<10, MaxArgValues: 10_000_000, MaxResultBytes: wire.MaxMemory / 3,
			MaxJSONDepth: 10_000, MaxReturnBytes: wire.MaxWorkerFrame - 4<<20},
	} {
		if got, err := l.Normalize(); err != nil {
			t.Errorf("Normalize(%+v) = %v", l, err)
		} else if l.MaxResultBytes != 0 && got.MaxResultBytes != l.MaxResultBytes {
			t.Errorf("Normalize(%+v) changed MaxResultBytes to %d", l, got.MaxResultBytes)
		}
	}
}

func TestNormalizeResultAboveMemoryShare(t *testing.T) {
	for _, mem := range []int64{wire.MinMemory, 30 << 20, wire.DefaultMemory, wire.MaxMemory} {
		third := mem / 3
		if _, err := (wire.Limits{MemoryBytes: mem, MaxResultBytes: third}).Normalize(); err != nil {
			t.Errorf("memory %d, result %d (exactly a third): %v", mem, third, err)
		}
		_, err := wire.Limits{MemoryBytes: mem, MaxResultBytes: third + 1}.Normalize()
		if !errors.Is(err, wire.ErrBadLimits) {
			t.Fatalf("memory %d, result %d (above a third): %v, want ErrBadLimits", mem, third+1, err)
		}
		if want := fmt.Sprintf("result bytes is %d bytes; allowed 2 to %d", third+1, third); !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	// A result cap that fits the default memory is refused with a smaller one.
	if _, err := (wire.Limits{MemoryBytes: wire.MinMemory, MaxResultBytes: 10 << 20}).Normalize(); !errors.Is(err, wire.ErrBadLimits) {
		t.Fatalf("result 10 MiB with 4 MiB of memory: %v, want ErrBadLimits", err)
	}
}

func TestResultFrameCap(t *testing.T) {
	for _, in := range []wire.Limits{
		{},
		{MemoryBytes: wire.MinMemory},
		{MemoryBytes: wire.MaxMemory},
		{MaxResultBytes: 2},
		{MemoryBytes: 30 << 20, MaxResultBytes: 10 << 20},
	} {
		l, err := in.Normalize()
		if err != nil {
			t.Fatal(err)
		}
		c := l.ResultFrameCap()
		if int64(c) < l.MaxResultBytes {
			t.Errorf("%+v: ResultFrameCap %d below MaxResultBytes %d", in, c, l.MaxResultBytes)
		}
		// A result frame carrying the largest result must pass the cap.
		hdr, _ := json.Marshal(wire.Result{ID: 1<<64 - 1, Outcome: wire.OutcomeOK})
		if need := int64(5+len(hdr)) + l.MaxResultBytes; need > int64(c) {
			t.Errorf("%+v: a result frame of %d bytes would be refused by the cap %d", in, need, c)
		}
		if l.MaxResultBytes <= 4<<20 {
			payload := make([]byte, l.MaxResultBytes)
			b, err := wire.AppendFrame(nil, wire.TypeResult, wire.Result{ID: 1<<64 - 1, Outcome: wire.OutcomeOK}, payload)
			if err != nil {
				t.Fatal(err)
			}
			if _, n, _, err := wire.Split(b, c); err != nil || n != len(b) {
				t.Errorf("%+v: Split of the largest result frame with cap %d: n %d, %v", in, c, n, err)
			}
		}
	}
}

// The largest arguments and returned value a run may be given must fit a
// worker frame with their header.
func TestLimitsFitWorkerFrame(t *testing.T) {
	argMax := limitFieldNamed(t, "argument bytes").max
	retMax := limitFieldNamed(t, "returned value bytes").max
	call, _ := json.Marshal(wire.Call{RunID: strings.Repeat("r", 64), ID: 1<<64 - 1, Server: strings.Repeat("s", 256), Tool: strings.Repeat("t", 256)})
	if n := 5 + int64(len(call)) + argMax; n > wire.MaxWorkerFrame {
		t.Errorf("a call frame with the largest arguments is %d bytes, above MaxWorkerFrame %d", n, wire.MaxWorkerFrame)
	}
	end, _ := json.Marshal(wire.End{RunID: strings.Repeat("r", 64), Status: wire.StatusReturned,
		Error: &wire.ErrorInfo{Name: strings.Repeat("\u2028", wire.MaxErrorChars), Message: strings.Repeat("\x01", wire.MaxErrorChars), Stack: strings.Repeat("<", wire.MaxErrorChars)}})
	if n := 5 + int64(len(end)) + retMax; n > wire.MaxWorkerFrame {
		t.Errorf("an end frame with the largest value is %d bytes, above MaxWorkerFrame %d", n, wire.MaxWorkerFrame)
	}
}

// TestStatusFromWorker: a worker may report every ending but crashed.
func TestStatusFromWorker(t *testing.T) {
	for _, s := range []wire.Status{wire.StatusReturned, wire.StatusThrew, wire.StatusStalled, wire.StatusTimedOut, wire.StatusOutOfMemory, wire.StatusStopped} {
		if !s.FromWorker() {
			t.Errorf("%s: a worker may report it", s)
		}
	}
	for _, s := range []wire.Status{wire.StatusCrashed, "", "returned ", "RETURNED"} {
		if s.FromWorker() {
			t.Errorf("%q: a worker may not report it", s)
		}
	}
}
