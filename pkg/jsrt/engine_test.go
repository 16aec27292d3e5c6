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
		t.Fatalf("%s: the engine did not survive (%v); child output:\n%s", name, err, headTail(out.String(), 3000, 1500))
	}
}

// headTail keeps the first head and last tail bytes of s (a crash report
// starts with the signal and the C frame, and ends with the registers).
func headTail(s string, head, tail int) string {
	if len(s) <= head+tail {
		return s
	}
	return s[:head] + "\n[...]\n" + s[len(s)-tail:]
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

// TestEngineRegExpCompileOOM is patch 0006: compiling a regular expression
// when an allocation of its byte code fails must not write past the buffer.
// The child fills the heap to its limit, then frees it a small object at a
// time, compiling patterns at every step, so that the byte code's growth
// fails at every possible point (the goto of an alternative, a lookahead,
// a quantifier, the named groups). Without the patch the alternative's goto
// is patched up to 4 bytes past the end of a full buffer: AddressSanitizer
// reports a heap-buffer-overflow (go test -asan); a plain build may or may
// not notice, depending on malloc's slack at that size.
func TestEngineRegExpCompileOOM(t *testing.T) {
	inChild(t, "regexp-compile-oom", regexpCompileOOMAttack)
}

func regexpCompileOOMAttack() error {
	rt, ctx := newEngine()
	rt.SetMemoryLimit(4 << 20)
	v, err := evalValue(ctx, `
		const patterns = [];
		for (let k = 1; k <= 6; k++) patterns.push(('x'.repeat(k) + '|').repeat(1500 / k));
		patterns.push('(?:a|)'.repeat(600), '(?=a|b)'.repeat(500), 'a*?b+?'.repeat(500),
			Array.from({length: 200}, (_, i) => '(?<g' + i + '>a)').join('|'), '(?<=a|bc)'.repeat(400));
		let compiled = 0, failed = 0;
		for (const pat of patterns) {
			let head = null;
			try { for (;;) head = {next: head} } catch (e) {}
			for (let steps = 0; head !== null && steps < 4000; steps++) {
				head = head.next;
				try { new RegExp(pat); compiled++ } catch (e) { failed++ }
			}
			head = null;
		}
		const ok = patterns.every(p => new RegExp(p).source.length > 0) &&
			/(?<y>\d{4})-(?<m>\d\d)/.exec('on 2026-12-01').groups.m === '12';
		[ok, compiled > 0, failed > 0].join()`)
	if err != nil {
		return err
	}
	got := v.ToString()
	v.Free()
	if got != "true,true,true" {
		return fmt.Errorf("after compiling at the memory limit: works, some compiled, some failed = %s, want true,true,true", got)
	}
	ctx.Close()
	rt.Close()
	return nil
}

// TestEngineResolvingFunctionsOOM is patch 0007: when creating a promise's
// second resolving function runs out of memory, the first must not be left
// behind in the caller's array, freed. The child fills the heap, then frees
// it a small object at a time and, with spacers of every size in between,
// calls async functions and generators and makes promises, so that each
// allocation on those paths fails at some step. Without the patch an async
// function call that fails there frees its resolve function twice.
func TestEngineResolvingFunctionsOOM(t *testing.T) {
	inChild(t, "resolving-functions-oom", resolvingFunctionsOOMAttack)
}

func resolvingFunctionsOOMAttack() error {
	rt, ctx := newEngine()
	rt.SetMemoryLimit(2 << 20)
	v, err := evalValue(ctx, `
		async function af(x) { return x }
		async function* ag(x) { yield x }
		const attempts = [
			() => af(1),
			() => ag(1).next(),
			() => new Promise(r => r(1)),
			() => Promise.resolve(1).then(x => x),
			() => af(1).then(x => x),
		];
		let ok = 0, failed = 0;
		for (const attempt of attempts) {
			let head = null;
			try { for (;;) head = {next: head} } catch (e) {}
			for (let steps = 0; head !== null && steps < 300; steps++) {
				head = head.next;
				for (let size = 0; size <= 160; size += 8) {
					let spacer = null;
					try { spacer = new Uint8Array(size) } catch (e) {}
					try { attempt(); ok++ } catch (e) { failed++ }
					spacer = null;
				}
			}
			head = null;
		}
		[ok > 0, failed > 0].join()`)
	if err != nil {
		return err
	}
	got := v.ToString()
	v.Free()
	if got != "true,true" {
		return fmt.Errorf("some attempts succeeded, some failed = %s, want true,true", got)
	}
	for i := 0; i < 100; i++ {
		if ctx.LoopOnce() <= 0 {
			break
		}
	}
	check, err := evalValue(ctx, `let r = 0; af(41).then(x => { r = x + 1 }); 'ran'`)
	if err != nil {
		return err
	}
	check.Free()
	for i := 0; i < 100; i++ {
		if ctx.LoopOnce() <= 0 {
			break
		}
	}
	after, err := evalValue(ctx, `r`)
	if err != nil {
		return err
	}
	r := after.ToString()
	after.Free()
	if r != "42" {
		return fmt.Errorf("after the attempts, an async function's result is %s, want 42", r)
	}
	ctx.Close()
	rt.Close()
	return nil
}

// TestEngineCallSiteOOM is patch 0008: when storing a CallSite in the array
// given to Error.prepareStackTrace fails for lack of memory, the CallSite and
// the frame data it took over must be freed once. The child makes errors
// from deep calls while sweeping the free memory, as above.
func TestEngineCallSiteOOM(t *testing.T) {
	inChild(t, "callsite-oom", callSiteOOMAttack)
}

func callSiteOOMAttack() error {
	rt, ctx := newEngine()
	rt.SetMemoryLimit(2 << 20)
	v, err := evalValue(ctx, `
		Error.prepareStackTrace = (e, frames) => frames;
		Error.stackTraceLimit = 64;
		function deep(n) { return n === 0 ? new Error('x') : deep(n - 1) }
		let made = 0, failed = 0;
		for (const depth of [5, 20, 60]) {
			let head = null;
			try { for (;;) head = {next: head} } catch (e) {}
			for (let steps = 0; head !== null && steps < 300; steps++) {
				head = head.next;
				for (let size = 0; size <= 160; size += 8) {
					let spacer = null;
					try { spacer = new Uint8Array(size) } catch (e) {}
					try { if (deep(depth).stack) made++ } catch (e) { failed++ }
					spacer = null;
				}
			}
			head = null;
		}
		const frames = deep(3).stack;
		[made > 0, Array.isArray(frames) && frames.length >= 4 && typeof frames[0].getFunctionName === 'function'].join()`)
	if err != nil {
		return err
	}
	got := v.ToString()
	v.Free()
	if got != "true,true" {
		return fmt.Errorf("errors made at the limit, CallSites after = %s, want true,true", got)
	}
	ctx.Close()
	rt.Close()
	return nil
}

// TestEngineCoroutinesTearDown is a guard for patch 0009, which makes the
// var_refs of coroutine frames GC objects holding their coroutine: every
// kind of coroutine, suspended or finished, with closures and mapped
// arguments over its locals, must still be freed, so that freeing the
// runtime finds no object left (JS_FreeRuntime asserts it and aborts).
func TestEngineCoroutinesTearDown(t *testing.T) {
	inChild(t, "coroutines-tear-down", coroutinesTearDownAttack)
}

func coroutinesTearDownAttack() error {
	rt, ctx := newEngine()
	v, err := evalValue(ctx, `
		globalThis.keep = [];
		const never = () => new Promise(() => {});
		const AsyncFunction = (async function () {}).constructor;
		const argsAsync = AsyncFunction('a', 'keep.push(() => arguments); await never()');
		function* argsGen(a) { keep.push(() => arguments); yield a }
		for (let i = 0; i < 200; i++) {
			(async () => { const x = {i}; keep.push(() => x); await never() })();
			(async () => { const x = {i}; const f = () => x; x.f = f; await never() })();
			(async () => { const x = {i}; keep.push(() => x); await null; return x })();
			const g = (function* () { const y = {i}; keep.push(() => y); yield 1; yield 2 })(); g.next(); keep.push(g);
			(function* () { const y = {i}; y.g = () => y; yield 1 })().next();
			const ag = (async function* () { const z = {i}; keep.push(() => z); yield 1; await never() })(); ag.next(); ag.next();
			argsAsync(i);
			argsGen(i).next();
		}
		keep.length`)
	if err != nil {
		return err
	}
	v.Free()
	for i := 0; i < 1000 && ctx.LoopOnce() > 0; i++ {
	}
	rt.RunGC()
	check, err := evalValue(ctx, `keep.filter(f => typeof f === 'function').every(f => f() !== undefined)`)
	if err != nil {
		return err
	}
	got := check.ToString()
	check.Free()
	if got != "true" {
		return fmt.Errorf("after a collection, every kept closure reaches its variable = %s, want true", got)
	}
	ctx.Close()
	rt.Close() // aborts if any object was leaked (or freed twice)
	return nil
}
