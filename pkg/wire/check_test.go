package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// smallLimits are normalized limits whose caps are easy to hit exactly.
func smallLimits(t *testing.T) wire.Limits {
	t.Helper()
	l, err := wire.Limits{MaxArgBytes: 100, MaxArgValues: 5, MaxJSONDepth: 3, MaxResultBytes: 100}.Normalize()
	if err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	if l.MaxArgBytes != 100 || l.MaxArgValues != 5 || l.MaxJSONDepth != 3 || l.MaxResultBytes != 100 {
		t.Fatalf("Normalize changed the small caps: %+v", l)
	}
	return l
}

// objectOfSize returns {"a":"xxx…"}, exactly n bytes (n ≥ 8): two values, depth 1.
func objectOfSize(n int) string { return `{"a":"` + strings.Repeat("x", n-8) + `"}` }

// checkCase is one input to a Check function and the sentinel expected.
type checkCase struct {
	name string
	in   string
	want error // nil: accepted
	not  []error
}

func runChecks(t *testing.T, check func([]byte) error, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := check([]byte(tc.in))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("%.60q: %v, want accepted", tc.in, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("%.60q: %v, want %v", tc.in, err, tc.want)
			}
			for _, not := range tc.not {
				if errors.Is(err, not) {
					t.Fatalf("%.60q: %v also wraps %v", tc.in, err, not)
				}
			}
		})
	}
}

var (
	notSize    = []error{wire.ErrTooLarge, wire.ErrNotObject}
	notInvalid = []error{wire.ErrJSONInvalid, wire.ErrNotObject}
	notObject  = []error{wire.ErrJSONInvalid, wire.ErrTooLarge}
)

func TestCheckArgs(t *testing.T) {
	l := smallLimits(t)
	if len(objectOfSize(100)) != 100 {
		t.Fatal("objectOfSize is wrong")
	}
	runChecks(t, l.CheckArgs, []checkCase{
		{name: "object", in: `{"q":"x","n":1}`},
		{name: "empty object", in: `{}`},
		{name: "whitespace before the object", in: " \t\r\n{\"q\":1}"},
		{name: "whitespace after the object", in: "{\"q\":1} \n"},

		{name: "array", in: `[1]`, want: wire.ErrNotObject, not: notObject},
		{name: "empty array", in: ` [ ] `, want: wire.ErrNotObject, not: notObject},
		{name: "string", in: `"x"`, want: wire.ErrNotObject, not: notObject},
		{name: "null", in: `null`, want: wire.ErrNotObject, not: notObject},
		{name: "number", in: `1`, want: wire.ErrNotObject, not: notObject},
		{name: "true", in: `true`, want: wire.ErrNotObject, not: notObject},

		{name: "empty input", in: ``, want: wire.ErrJSONInvalid, not: notSize},
		{name: "only whitespace", in: "  \n", want: wire.ErrJSONInvalid, not: notSize},
		{name: "unclosed object", in: `{"q":1`, want: wire.ErrJSONInvalid, not: notSize},
		{name: "missing value", in: `{"q":}`, want: wire.ErrJSONInvalid, not: notSize},
		{name: "trailing data", in: `{"q":1}x`, want: wire.ErrJSONInvalid, not: notSize},
		{name: "two objects", in: `{}{}`, want: wire.ErrJSONInvalid, not: notSize},
		{name: "single quotes", in: `{'q':1}`, want: wire.ErrJSONInvalid, not: notSize},
		{name: "NUL byte", in: "{\x00}", want: wire.ErrJSONInvalid, not: notSize},

		{name: "bytes exactly at the cap", in: objectOfSize(100)},
		{name: "bytes one over the cap", in: objectOfSize(101), want: wire.ErrTooLarge, not: notInvalid},
		{name: "whitespace counts toward the bytes", in: objectOfSize(100) + " ", want: wire.ErrTooLarge, not: notInvalid},
		{name: "invalid JSON over the byte cap", in: strings.Repeat("{", 101), want: wire.ErrTooLarge},

		{name: "values exactly at the cap", in: `{"a":1,"b":2,"c":3,"d":4}`},
		{name: "values one over the cap", in: `{"a":1,"b":2,"c":3,"d":4,"e":5}`, want: wire.ErrTooLarge, not: notInvalid},
		{name: "values at the cap in an array", in: `{"a":[null,true,false]}`},
		{name: "values over the cap in an array", in: `{"a":[null,true,false,"x"]}`, want: wire.ErrTooLarge, not: notInvalid},
		{name: "keys do not count as values", in: `{"a":{"b":{"c":1}},"d":2}`},

		{name: "depth exactly at the cap", in: `{"a":{"b":{}}}`},
		{name: "depth at the cap with arrays", in: `{"a":[[1]]}`},
		{name: "depth one over the cap", in: `{"a":{"b":{"c":{}}}}`, want: wire.ErrTooLarge, not: notInvalid},
		{name: "depth one over the cap with arrays", in: `{"a":[[[]]]}`, want: wire.ErrTooLarge, not: notInvalid},
		{name: "depth over the cap, unclosed", in: `{"a":[[[`, want: wire.ErrTooLarge},
	})
}

func TestCheckArgsDefaults(t *testing.T) {
	l, err := wire.Limits{}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat(`{"a":`, wire.DefaultMaxJSONDepth) + "1" + strings.Repeat("}", wire.DefaultMaxJSONDepth)
	if err := l.CheckArgs([]byte(deep)); err != nil {
		t.Fatalf("depth %d with the default limits: %v", wire.DefaultMaxJSONDepth, err)
	}
	deeper := "{\"a\":" + deep + "}"
	if err := l.CheckArgs([]byte(deeper)); !errors.Is(err, wire.ErrTooLarge) {
		t.Fatalf("depth %d with the default limits: %v, want ErrTooLarge", wire.DefaultMaxJSONDepth+1, err)
	}
	many := "{\"a\":[" + strings.Repeat("0,", wire.DefaultMaxArgValues-2) + "0]}" // object, array and values-1 numbers: one too many
	if err := l.CheckArgs([]byte(many)); !errors.Is(err, wire.ErrTooLarge) {
		t.Fatalf("%d values with the default limits: %v, want ErrTooLarge", wire.DefaultMaxArgValues+1, err)
	}
	exact := "{\"a\":[" + strings.Repeat("0,", wire.DefaultMaxArgValues-3) + "0]}" // object, array and values-2 numbers
	if err := l.CheckArgs([]byte(exact)); err != nil {
		t.Fatalf("%d values with the default limits: %v", wire.DefaultMaxArgValues, err)
	}
	big := objectOfSize(wire.DefaultMaxArgBytes + 1)
	if err := l.CheckArgs([]byte(big)); !errors.Is(err, wire.ErrTooLarge) {
		t.Fatalf("%d bytes with the default limits: %v, want ErrTooLarge", len(big), err)
	}
	if err := l.CheckArgs([]byte(big[:len(big)-3] + `"}`)); err != nil {
		t.Fatalf("%d bytes with the default limits: %v", wire.DefaultMaxArgBytes, err)
	}
}

func TestCheckResult(t *testing.T) {
	l := smallLimits(t)
	runChecks(t, l.CheckResult, []checkCase{
		{name: "object", in: `{"content":[{"type":"text","text":"hi"}],"isError":false}`},
		{name: "whitespace before the object", in: "\r\n\t {}"},

		{name: "array", in: `[1]`, want: wire.ErrNotObject, not: notObject},
		{name: "string", in: `"x"`, want: wire.ErrNotObject, not: notObject},
		{name: "null", in: `null`, want: wire.ErrNotObject, not: notObject},
		{name: "number", in: `1`, want: wire.ErrNotObject, not: notObject},

		{name: "empty input", in: ``, want: wire.ErrJSONInvalid, not: notSize},
		{name: "unclosed object", in: `{"a":[1,2}`, want: wire.ErrJSONInvalid, not: notSize},
		{name: "trailing data", in: `{} {}`, want: wire.ErrJSONInvalid, not: notSize},
		{name: "bad escape", in: `{"a":"\x"}`, want: wire.ErrJSONInvalid, not: notSize},

		{name: "bytes exactly at the cap", in: objectOfSize(100)},
		{name: "bytes one over the cap", in: objectOfSize(101), want: wire.ErrTooLarge, not: notInvalid},

		{name: "depth exactly at the cap", in: `{"a":{"b":[]}}`},
		{name: "depth one over the cap", in: `{"a":{"b":[{}]}}`, want: wire.ErrTooLarge, not: notInvalid},

		// No value cap on results: far more values than MaxArgValues pass.
		{name: "many values", in: `{"a":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]}`},
	})
	many := []byte(`{"a":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]}`)
	if err := l.CheckArgs(many); !errors.Is(err, wire.ErrTooLarge) {
		t.Fatalf("the many-values document should be over the argument value cap: %v", err)
	}
	// The byte cap is MaxResultBytes, not MaxArgBytes.
	l2 := l
	l2.MaxArgBytes = 10
	if err := l2.CheckResult([]byte(objectOfSize(100))); err != nil {
		t.Fatalf("CheckResult used the argument byte cap: %v", err)
	}
	l2 = l
	l2.MaxResultBytes = 50
	if err := l2.CheckResult([]byte(objectOfSize(51))); !errors.Is(err, wire.ErrTooLarge) {
		t.Fatalf("CheckResult over MaxResultBytes 50: %v, want ErrTooLarge", err)
	}
}

func TestCheckInput(t *testing.T) {
	l := smallLimits(t)
	runChecks(t, l.CheckInput, []checkCase{
		{name: "object", in: `{"k":[1,2]}`},
		{name: "array", in: `[1,2,3]`},
		{name: "string", in: `"x"`},
		{name: "null", in: `null`},
		{name: "number", in: `-1.5e3`},
		{name: "true", in: `true`},
		{name: "whitespace around", in: " \n\"x\"\t"},
		// Input is not held to the arguments' caps, only to MaxInputBytes.
		{name: "more bytes than MaxArgBytes", in: objectOfSize(1000)},
		{name: "more values than MaxArgValues", in: `[1,2,3,4,5,6,7,8,9,10]`},

		{name: "empty input", in: ``, want: wire.ErrJSONInvalid, not: notSize},
		{name: "unclosed array", in: `[1,2`, want: wire.ErrJSONInvalid, not: notSize},
		{name: "trailing data", in: `1 2`, want: wire.ErrJSONInvalid, not: notSize},
		{name: "bare word", in: `undefined`, want: wire.ErrJSONInvalid, not: notSize},
	})

	exact := []byte(`"` + strings.Repeat("x", wire.MaxInputBytes-2) + `"`)
	if err := l.CheckInput(exact); err != nil {
		t.Fatalf("input of exactly MaxInputBytes (%d): %v", len(exact), err)
	}
	over := append(exact, ' ')
	if err := l.CheckInput(over); !errors.Is(err, wire.ErrTooLarge) {
		t.Fatalf("input of MaxInputBytes+1: %v, want ErrTooLarge", err)
	}
	// Depth is held to MaxJSONDepth; how the error is classed is not
	// asserted here (it wraps ErrTooDeep, not ErrTooLarge).
	if err := l.CheckInput([]byte(`[[[1]]]`)); err != nil {
		t.Fatalf("input at the depth cap: %v", err)
	}
	if err := l.CheckInput([]byte(`[[[[1]]]]`)); err == nil {
		t.Fatalf("input one level over the depth cap was accepted")
	}
}
