package jsrt

// Tests of the engine patches under third_party/quickjs-ng/patches that are
// seen from the binding's API. An attack that may corrupt the heap runs in a
// re-executed copy of this test binary, so that a crash fails the test
// instead of killing it.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/buke/quickjs-go"
)

// engineChildEnv names the attack a re-executed test binary runs.
const engineChildEnv = "RUN_JS_SERVER_ENGINE_ATTACK"

// engineChildOK is what a child prints when its attack found nothing wrong.
const engineChildOK = "engine attack survived: "

// inChild runs attack in a child copy of this test binary (the test named
// test, with engineChildEnv=name) and fails t unless the child printed the
// survival line and exited 0. In the child itself it runs attack on a locked
// thread and prints the line; attack reports what it found wrong as an error.
func inChild(t *testing.T, name string, attack func() error) {
	t.Helper()
	if os.Getenv(engineChildEnv) == name {
		done := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // the engine records its thread's stack top
			done <- attack()
		}()
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fmt.Println(engineChildOK + name)
		return
	}
	const watchdog = 3 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), engineChildEnv+"="+name)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: the child did not finish within %s (watchdog)", name, watchdog)
	}
	if err != nil || !strings.Contains(out.String(), engineChildOK+name) {
		t.Fatalf("%s: the engine did not survive (%v); child output:\n%s", name, err, tail(out.String(), 4000))
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// newEngine builds a runtime and a context with the program's intrinsics,
// for attacks that call the binding directly. The caller's thread is locked.
func newEngine() (*quickjs.Runtime, *quickjs.Context) {
	rt := quickjs.NewRuntime(
		quickjs.WithMemoryLimit(256<<20),
		quickjs.WithMaxStackSize(1<<20),
		quickjs.WithGCThreshold(gcThreshold),
		quickjs.WithCanBlock(false),
		quickjs.WithOwnerGoroutineCheck(false),
	)
	return rt, newContext(rt)
}

// evalValue evaluates code and returns its value, or an error naming code.
func evalValue(ctx *quickjs.Context, code string) (*quickjs.Value, error) {
	v := ctx.Eval(code)
	if v.IsException() {
		v.Free()
		return nil, fmt.Errorf("%s: %v", code, ctx.Exception())
	}
	return v, nil
}

// TestEngineUTF16Slices is patch 0001: Value.ToStringUTF16 on a string that
// is a slice of a wide string must copy it, not hand back a pointer into the
// parent that JS_FreeCStringUTF16 then frees as if a string header preceded
// it. Without the patch the child dies (SIGSEGV, malloc abort) or finds a
// character of the parent or of another string changed.
func TestEngineUTF16Slices(t *testing.T) {
	inChild(t, "utf16-slices", utf16SlicesAttack)
}

func utf16SlicesAttack() error {
	rt, ctx := newEngine()
	// P: 6000 distinct wide characters, P[i] = U+4E00+i. L: an 8-bit
	// (Latin-1) string. S: a bystander. JS_STRING_SLICE_LEN_MAX is 1024
	// bytes, so a wide slice of more than 512 characters is a SLICE string
	// pointing into P, and one of 512 or fewer is a copy.
	setup, err := evalValue(ctx, `
		globalThis.mk = (n, base) => Array.from({length: n}, (_, i) => String.fromCharCode(base + i)).join('');
		globalThis.P = mk(6000, 0x4e00);
		globalThis.L = 'abcdefghij'.repeat(300) + '\u00e9'.repeat(3000);
		globalThis.S = mk(2000, 0x3040);
		const big = P.slice(1000, 5000);
		globalThis.cases = [
			P.slice(0, 513),          // a slice starting at the parent's first character
			P.slice(0, 512),          // at the limit: a copy
			P.slice(1000, 1511),      // 511: a copy
			P.slice(1000, 1512),      // 512: a copy
			P.slice(1000, 1513),      // 513: a slice
			P.slice(2001, 5000),      // a long slice in the middle
			P.substring(5400),        // a slice to the end
			big.slice(10, 2000),      // a slice of a slice
			big.slice(0, 600),        // a slice of a slice, at its start
			P.slice(100, 700) + P.slice(800, 1400), // a rope of two slices
			L.slice(0, 2000),         // an 8-bit slice
			L.slice(2500, 4000),      // an 8-bit slice across into the wide-able tail
			'\ud83d'.repeat(16001).slice(1, 1500), // lone surrogates, as in the issue
		];
		cases.length`)
	if err != nil {
		return err
	}
	setup.Free()

	wide := func(from, to int) []uint16 {
		u := make([]uint16, 0, to-from)
		for i := from; i < to; i++ {
			u = append(u, uint16(0x4e00+i))
		}
		return u
	}
	lUnits := append(slices.Repeat([]uint16{'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'}, 300), slices.Repeat([]uint16{0xe9}, 3000)...)
	surrogates := slices.Repeat([]uint16{0xd83d}, 1499)
	want := [][]uint16{
		wide(0, 513), wide(0, 512), wide(1000, 1511), wide(1000, 1512), wide(1000, 1513),
		wide(2001, 5000), wide(5400, 6000), wide(1010, 3000), wide(1000, 1600),
		append(wide(100, 700), wide(800, 1400)...),
		lUnits[0:2000], lUnits[2500:4000], surrogates,
	}

	cases, err := evalValue(ctx, `cases`)
	if err != nil {
		return err
	}
	vals := make([]*quickjs.Value, len(want))
	for i := range vals {
		vals[i] = cases.GetIdx(int64(i))
	}
	const rounds = 300
	for r := 0; r < rounds; r++ {
		for i, v := range vals {
			got, err := v.ToStringUTF16()
			if err != nil {
				return fmt.Errorf("round %d case %d: %v", r, i, err)
			}
			if !slices.Equal(got, want[i]) {
				d := firstDiff(got, want[i])
				return fmt.Errorf("round %d case %d: got %d units, want %d (first difference at %d: %x)", r, i, len(got), len(want[i]), d, got[d:min(d+4, len(got))])
			}
		}
		if r%50 == 0 {
			rt.RunGC()
		}
	}
	for _, v := range vals {
		v.Free()
	}
	cases.Free()

	// The parent and a bystander are unchanged, and the engine still works.
	check, err := evalValue(ctx, `
		cases = null;
		const fresh = mk(6000, 0x4e00), freshS = mk(2000, 0x3040);
		const junk = []; for (let i = 0; i < 20000; i++) junk.push('y'.repeat(i % 100) + i);
		[P === fresh, S === freshS, junk.length, 6 * 7].join()`)
	if err != nil {
		return err
	}
	got := check.ToString()
	check.Free()
	if got != "true,true,20000,42" {
		return fmt.Errorf("after the conversions: parent unchanged, bystander unchanged, allocations, arithmetic = %s, want true,true,20000,42", got)
	}
	ctx.Close()
	rt.Close() // asserts that no object leaked or was over-released
	return nil
}

func firstDiff(a, b []uint16) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
