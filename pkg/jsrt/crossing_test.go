package jsrt

import (
	"runtime"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/buke/quickjs-go"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// withEngine runs fn on a fresh runtime, on a goroutine locked to its thread
// (the engine checks its stack against the thread that made it).
func withEngine(t *testing.T, memory int64, fn func(ctx *quickjs.Context)) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		l, _ := wire.Limits{MemoryBytes: memory}.Normalize()
		rt := newRuntime(l)
		fn(newContext(rt))
	}()
	<-done
}

// units builds the UTF-16 code units of a string from pieces, each repeated.
type piece struct {
	u []uint16
	n int
}

func units(ps ...piece) []uint16 {
	var out []uint16
	for _, p := range ps {
		for range p.n {
			out = append(out, p.u...)
		}
	}
	return out
}

func u(s string) []uint16 { return utf16.Encode([]rune(s)) }

// want is the Go string a JS string of these units must cross as: each lone
// surrogate one U+FFFD (utf16.Decode does exactly that), everything else as is.
func want(us []uint16) string { return string(utf16.Decode(us)) }

// TestJSUTF8 sends a string of every representation the engine has through
// jsUTF8: 8-bit and 16-bit, flat, rope and slice (of either, starting at 0 or
// not, splitting a surrogate pair or not), with NULs and lone surrogates, up
// to the sizes of the caps.
func TestJSUTF8(t *testing.T) {
	hi, lo := uint16(0xD83D), uint16(0xDE00)
	tests := []struct {
		name string
		js   string
		want []uint16
	}{
		{"empty", `''`, nil},
		{"ascii", `'abc'`, u("abc")},
		{"8-bit latin-1", `'\xe9'.repeat(10)`, units(piece{u("é"), 10})},
		{"8-bit NUL", `'a\0b\0'`, u("a\x00b\x00")},
		{"wide", `'\u0100xyz'`, u("Āxyz")},
		{"wide NUL", `'\u0100\0\u0101'`, u("Ā\x00ā")},
		{"pair", `'\ud83d\ude00'`, []uint16{hi, lo}},
		{"lone high", `'\ud83d'`, []uint16{hi}},
		{"lone low", `'\ude00'`, []uint16{lo}},
		{"lone each side", `'a\ud800b\udc00c'`, []uint16{'a', 0xD800, 'b', 0xDC00, 'c'}},
		{"low then high is two lone", `'\ude00\ud83d'`, []uint16{lo, hi}},
		{"8-bit rope", `'x'.repeat(10000) + 'y'.repeat(10000)`, units(piece{u("x"), 10000}, piece{u("y"), 10000})},
		{"wide rope", `'\u0100'.repeat(10000) + '\0'.repeat(9000) + '\ud83d'.repeat(9000)`,
			units(piece{u("Ā"), 10000}, piece{[]uint16{0}, 9000}, piece{[]uint16{hi}, 9000})},
		{"8-bit slice", `'abcdefgh'.repeat(500).slice(3, 3003)`, u(strings.Repeat("abcdefgh", 500)[3:3003])},
		{"8-bit slice at 0", `'\xe9'.repeat(5000).slice(0, 4000)`, units(piece{u("é"), 4000})},
		{"wide slice", `'\u0100\u0101'.repeat(2000).slice(1, 3001)`, units(piece{u("āĀ"), 1500})},
		{"wide slice at 0", `'\ud83d'.repeat(16001).slice(0, 8000)`, units(piece{[]uint16{hi}, 8000})},
		{"slice splitting pairs", `'\ud83d\ude00'.repeat(2000).slice(1, 3000)`, units(piece{[]uint16{lo}, 1}, piece{[]uint16{hi, lo}, 1499})},
		{"slice of a slice", `'\u0100\0'.repeat(4000).slice(2, 7000).slice(1, 5001)`, units(piece{[]uint16{0, 0x100}, 2500})},
		{"slice of a rope", `('\u0100'.repeat(9000) + 'b'.repeat(9000)).slice(8000, 12000)`, units(piece{u("Ā"), 1000}, piece{u("b"), 3000})},
		{"4 MiB of ASCII", `'q'.repeat(4 << 20)`, units(piece{u("q"), 4 << 20})},
		{"4 MiB of wide, as a slice", `('\u0100'.repeat((4 << 20) + 2)).slice(1, (4 << 20) + 1)`, units(piece{u("Ā"), 4 << 20})},
		{"20 MiB of ASCII with a pair", `'r'.repeat(20 << 20) + '\ud83d\ude00'`, units(piece{u("r"), 20 << 20}, piece{[]uint16{hi, lo}, 1})},
	}
	withEngine(t, 256<<20, func(ctx *quickjs.Context) {
		for _, tt := range tests {
			v := ctx.Eval("(" + tt.js + ")")
			if !v.IsString() {
				t.Errorf("%s: %s is not a string", tt.name, tt.js)
				continue
			}
			b, release, err := jsUTF8(ctx, v)
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
				v.Free()
				continue
			}
			got, w := string(b), want(tt.want)
			release()
			if got != w {
				t.Errorf("%s: got %d bytes %q…, want %d bytes %q…", tt.name, len(got), cut(got, 40), len(w), cut(w, 40))
			}
			if s, err := jsString(ctx, v); err != nil || s != w {
				t.Errorf("%s: jsString differs from jsUTF8 (%v)", tt.name, err)
			}
			if n := strLen(v); n != int64(len(tt.want)) {
				t.Errorf("%s: length %d, want %d", tt.name, n, len(tt.want))
			}
			v.Free()
		}
	})
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// TestJSUTF8RefusesNonStrings: a value that is not a string is refused, and
// its toString, a program's code, does not run.
func TestJSUTF8RefusesNonStrings(t *testing.T) {
	withEngine(t, 0, func(ctx *quickjs.Context) {
		obj := ctx.Eval(`globalThis.ran = false; ({toString() { globalThis.ran = true; return 'x' }})`)
		defer obj.Free()
		for _, v := range []*quickjs.Value{obj, ctx.NewInt64(1), ctx.NewNull(), nil} {
			if _, _, err := jsUTF8(ctx, v); err != errNotString {
				t.Fatalf("a non-string crossed: %v", err)
			}
		}
		ran := ctx.Eval(`ran`)
		defer ran.Free()
		if ran.ToBool() {
			t.Fatal("converting a non-string ran its toString")
		}
	})
}

// TestJSUTF8OutOfMemory: a string the heap has no room to encode is refused
// with errConversion, and no exception is left pending.
func TestJSUTF8OutOfMemory(t *testing.T) {
	withEngine(t, 32<<20, func(ctx *quickjs.Context) {
		// 8 Mi wide characters: 16 MiB; encoding reserves 3 bytes each.
		v := ctx.Eval(`'\u0100'.repeat(8 << 20)`)
		defer v.Free()
		if !v.IsString() {
			t.Fatal("setup: the string does not fit")
		}
		if _, _, err := jsUTF8(ctx, v); err != errConversion {
			t.Fatalf("err %v, want errConversion", err)
		}
		if ctx.HasException() {
			t.Fatal("an exception was left pending")
		}
	})
}

// TestTakeExceptionRunsNothing: the pending exception is taken as a value;
// the getters of the thrown error, which Exception would run, do not.
func TestTakeExceptionRunsNothing(t *testing.T) {
	withEngine(t, 0, func(ctx *quickjs.Context) {
		v := ctx.Eval(`globalThis.ran = 0; const e = new Error('m');
			Object.defineProperty(e, 'name', {get() { ran++; return 'N' }});
			Object.defineProperty(e, 'stack', {get() { ran++; return '' }});
			e.toJSON = () => { ran++ }; throw e`)
		if !v.IsException() {
			t.Fatal("setup: no exception")
		}
		ex := ctx.TakeException()
		if ex == nil || !ex.IsError() {
			t.Fatal("TakeException did not return the error")
		}
		ex.Free()
		if ctx.HasException() {
			t.Fatal("the exception is still pending")
		}
		ran := ctx.Eval(`ran`)
		defer ran.Free()
		if ran.ToInt64() != 0 {
			t.Fatalf("taking the exception ran %d getters", ran.ToInt64())
		}
	})
}
