package worker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Strings of every representation the engine has, sent through every way a
// string crosses from a program into the host (item 1 of issue 11): console
// output (as is, and quoted inside a value), an error's message and name, a
// thrown string, the returned value, a tool's arguments, and the input
// handed back. Each case is a base string of UTF-16 code units (anything:
// NULs, lone surrogates, pairs), a shape that makes the engine hold it as a
// flat string, a slice (of 8-bit or 16-bit characters, at 0 or not, through
// pairs or not), a rope, or a slice of a slice or of a rope, and a crossing.
// What reaches the parent must be the string exactly, each lone surrogate
// one U+FFFD, whatever the shape.

// stringShapes names the shapes; the index is the case's shape.
var stringShapes = []string{"flat", "slice", "slice at 0", "rope", "slice of a rope", "slice of a slice"}

// stringCrossings names the crossings; the index is the case's crossing.
var stringCrossings = []string{"console", "console quoted", "return", "error message", "error name", "thrown string", "tool arguments", "input"}

// stringCase is one string through one crossing.
type stringCase struct {
	base     []uint16
	shape    int
	a, b     int // where the shape slices, taken modulo the length
	crossing int
}

// jsLiteral writes units as a JavaScript string literal, escaping all but
// plain printable ASCII.
func jsLiteral(us []uint16) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, u := range us {
		if u >= 0x20 && u < 0x7f && u != '\\' && u != '\'' {
			b.WriteByte(byte(u))
		} else {
			fmt.Fprintf(&b, "\\u%04x", u)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

func repeatUnits(us []uint16, k int) []uint16 {
	out := make([]uint16, 0, len(us)*k)
	for range k {
		out = append(out, us...)
	}
	return out
}

// expression returns a JavaScript expression that makes the case's string
// from base (an expression holding the base string) and the same string's
// code units, computed here.
func (c stringCase) expression(base string, us []uint16) (string, []uint16) {
	if len(us) == 0 {
		return base, nil
	}
	reps := func(n int) int { return (n + len(us) - 1) / len(us) }
	window := func(n int) (int, int) { // a slice [a, b) of a string of n units
		a := c.a % n
		return a, a + c.b%(n-a+1)
	}
	switch c.shape {
	case 1: // a slice: longer than the engine copies (1024 bytes)
		k := reps(3000)
		r := repeatUnits(us, k)
		a, b := window(len(r))
		return fmt.Sprintf("(%s).repeat(%d).slice(%d, %d)", base, k, a, b), r[a:b]
	case 2:
		k := reps(3000)
		r := repeatUnits(us, k)
		_, b := window(len(r))
		return fmt.Sprintf("(%s).repeat(%d).slice(0, %d)", base, k, b), r[:b]
	case 3: // a rope: both halves longer than the engine's rope threshold
		k := reps(9000)
		r := repeatUnits(us, 2*k)
		return fmt.Sprintf("(%s).repeat(%d) + (%s).repeat(%d)", base, k, base, k), r
	case 4:
		k := reps(9000)
		r := repeatUnits(us, 2*k)
		a, b := window(len(r))
		return fmt.Sprintf("((%s).repeat(%d) + (%s).repeat(%d)).slice(%d, %d)", base, k, base, k, a, b), r[a:b]
	case 5:
		k := reps(3000)
		r := repeatUnits(us, k)
		a, b := window(len(r))
		s := r[a:b]
		if len(s) == 0 {
			return fmt.Sprintf("(%s).repeat(%d).slice(%d, %d)", base, k, a, b), s
		}
		a2, b2 := c.b%len(s), len(s)
		return fmt.Sprintf("(%s).repeat(%d).slice(%d, %d).slice(%d)", base, k, a, b, a2), s[a2:b2]
	}
	return base, us
}

// decodeUnits is how the host must see units: each lone surrogate U+FFFD.
func decodeUnits(us []uint16) string { return string(utf16.Decode(us)) }

// clipBytes is how jsrt cuts an error's fields: wire's one rule.
func clipBytes(s string, n int) string { return wire.Cut(s, n) }

// quoteJS is the prelude's quote.
func quoteJS(s string) string {
	return "'" + strings.NewReplacer("\\", "\\\\", "'", "\\'", "\n", "\\n").Replace(s) + "'"
}

// checkStringCase runs one case in a real worker and checks what reached
// the parent.
func checkStringCase(t *testing.T, c stringCase) {
	t.Helper()
	base, us := jsLiteral(c.base), c.base
	var input json.RawMessage
	if c.crossing == 7 {
		// The input is JSON: what Go can send, lone surrogates already U+FFFD.
		s := decodeUnits(c.base)
		input, _ = json.Marshal(map[string]string{"s": s})
		base, us = "input.s", utf16.Encode([]rune(s))
	}
	expr, want := c.expression(base, us)
	w := decodeUnits(want)
	var code string
	switch c.crossing {
	case 0:
		code = "console.log(" + expr + ")"
	case 1:
		code = "console.log([" + expr + "])"
	case 2, 7:
		code = "return " + expr
	case 3:
		code = "throw new Error(" + expr + ")"
	case 4:
		code = "const e = new Error('m'); e.name = " + expr + "; throw e"
	case 5:
		code = "throw " + expr
	case 6:
		code = "await tools.issues.get_issue({s: " + expr + "}); return 0"
	}
	rec := &callRecorder{}
	e := runProgram(t, Request{Code: code, Input: input, Call: rec.call, Limits: wire.Limits{TimeoutMs: 20_000}})
	if e.Status == wire.StatusCrashed {
		b, _ := json.MarshalIndent(e, "", "  ")
		t.Fatalf("%s crashed its worker:\n%s", code, b)
	}
	fail := func(got, want string) {
		t.Helper()
		t.Fatalf("%s (%s, %s): got %d bytes %+q…, want %d bytes %+q…", cut(code, 200), stringShapes[c.shape], stringCrossings[c.crossing],
			len(got), cut(got, 80), len(want), cut(want, 80))
	}
	switch c.crossing {
	case 0, 1:
		wantStatus(t, e, wire.StatusReturned)
		stream := w + "\n"
		if c.crossing == 1 {
			stream = "[ " + quoteJS(w) + " ]\n"
		}
		if k := keptOf(stream); e.Output != k {
			fail(e.Output.Text, k.Text)
		}
	case 2, 7:
		wantStatus(t, e, wire.StatusReturned)
		var got string
		if err := json.Unmarshal(e.Value, &got); err != nil || got != w {
			fail(string(e.Value), w)
		}
	case 3:
		wantStatus(t, e, wire.StatusThrew)
		if got, want := e.Error.Message, clipBytes(w, wire.MaxErrorChars); got != want {
			fail(got, want)
		}
	case 4:
		wantStatus(t, e, wire.StatusThrew)
		if got, want := e.Error.Name, clipBytes(w, 200); got != want {
			fail(got, want)
		}
	case 5:
		wantStatus(t, e, wire.StatusThrew)
		if got, want := e.Error.Message, clipBytes("the program threw a non-Error value: "+quoteJS(w), wire.MaxErrorChars); got != want {
			fail(got, want)
		}
	case 6:
		wantStatus(t, e, wire.StatusReturned)
		calls := rec.sorted()
		var args struct{ S string }
		if len(calls) != 1 || json.Unmarshal([]byte(calls[0].Args), &args) != nil || args.S != w {
			fail(fmt.Sprint(calls), w)
		}
	}
}

// stringSeeds are bases that reach every representation: 8-bit, 8-bit with
// a NUL, wide, pairs, lone surrogates of each kind, and the repro.
var stringSeeds = [][]uint16{
	{'a', 'b', 'c'},
	{'a', 0, 'b', 0xE9, 0xFF},
	{0x100, 'x', 0},
	{0xD83D, 0xDE00, 'q'},
	{0xD83D},
	{0xDE00, 0xD83D},
	{'\\', '\'', '\n', 0xD800, 'z', 0xDFFF},
	{},
}

// TestStringsCrossExactly sends each seed in every shape through every
// crossing.
func TestStringsCrossExactly(t *testing.T) {
	t.Parallel()
	for si, base := range stringSeeds {
		for shape := range stringShapes {
			for crossing := range stringCrossings {
				c := stringCase{base: base, shape: shape, a: 7 * si, b: 1500 + 13*si, crossing: crossing}
				t.Run(fmt.Sprintf("%d/%s/%s", si, stringShapes[shape], stringCrossings[crossing]), func(t *testing.T) {
					t.Parallel()
					checkStringCase(t, c)
				})
			}
		}
	}
}

// FuzzStrings is TestStringsCrossExactly with any base (its bytes read as
// UTF-16 code units, little-endian), shape, slice and crossing. Run it
// under AddressSanitizer (BUILD.md) to see the engine's heap as well.
func FuzzStrings(f *testing.F) {
	for si, base := range stringSeeds {
		b := make([]byte, 0, 2*len(base))
		for _, u := range base {
			b = append(b, byte(u), byte(u>>8))
		}
		f.Add(b, uint8(si%len(stringShapes)), uint16(si), uint16(1000+si), uint8(si%len(stringCrossings)))
	}
	f.Fuzz(func(t *testing.T, data []byte, shape uint8, a, b uint16, crossing uint8) {
		if len(data) > 1024 {
			t.Skip()
		}
		us := make([]uint16, len(data)/2)
		for i := range us {
			us[i] = uint16(data[2*i]) | uint16(data[2*i+1])<<8
		}
		checkStringCase(t, stringCase{base: us, shape: int(shape) % len(stringShapes), a: int(a), b: int(b), crossing: int(crossing) % len(stringCrossings)})
	})
}
