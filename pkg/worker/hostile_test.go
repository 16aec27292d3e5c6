package worker

// Hostile programs, part 2 (issue 11): each test here runs real workers and
// attacks one promise of the isolate. See the report for which item each
// covers.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// recordedCall is what the parent was asked to do.
type recordedCall struct {
	ID     uint64
	Server string
	Tool   string
	Args   string
}

// callRecorder answers calls like echoCall, except that add_comment never
// answers (it waits for the run to end), and records every call.
type callRecorder struct {
	mu    sync.Mutex
	calls []recordedCall
}

func (r *callRecorder) call(ctx context.Context, c Call) Outcome {
	r.mu.Lock()
	r.calls = append(r.calls, recordedCall{c.ID, c.Server, c.Tool, string(c.Args)})
	r.mu.Unlock()
	if c.Tool == "add_comment" {
		<-ctx.Done()
		return Fail(wire.CodeTimeout, "the run ended")
	}
	return echoCall(ctx, c)
}

func (r *callRecorder) sorted() []recordedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.calls)
	slices.SortFunc(out, func(a, b recordedCall) int { return int(a.ID) - int(b.ID) })
	return out
}

// TestRefusedCallTakesNoID (item 2): a call refused inside the worker for
// its arguments (too many values, too deep, over the byte cap once UTF-8 but
// under it in UTF-16 units) takes no call id; the next call goes through.
func TestRefusedCallTakesNoID(t *testing.T) {
	t.Parallel()
	rec := &callRecorder{}
	// A deep stack: JSON.stringify of 2,500 levels must not overflow it, even
	// with AddressSanitizer's larger frames.
	e := runProgram(t, Request{Call: rec.call, Limits: wire.Limits{StackBytes: 4 << 20}, Code: `
		const codes = []
		const tries = [
			{many: Array(100001).fill(0)},
			{deep: JSON.parse('['.repeat(2500) + ']'.repeat(2500))},
			{wide: '\u00e9'.repeat(3 << 20)},
		]
		for (let i = 0; i < tries.length; i++) {
			try { await tools.issues.list_issues(tries[i]) } catch (e) { codes.push(e.code) }
		}
		const a = await tools.issues.get_issue({id: 1})
		try { await tools.issues.list_issues({wide: '\u00e9'.repeat(3 << 20)}) } catch (e) { codes.push(e.code) }
		const b = await tools.issues.get_issue({id: 2})
		return [codes, a.structuredContent.id, b.structuredContent.id]`})
	wantStatus(t, e, wire.StatusReturned)
	if got := string(e.Value); got != `[["arguments_too_large","arguments_too_large","arguments_too_large","arguments_too_large"],1,2]` {
		t.Fatalf("value %s", got)
	}
	calls := rec.sorted()
	if len(calls) != 2 || calls[0].ID != 1 || calls[1].ID != 2 {
		t.Fatalf("the parent saw calls %+v, want ids 1 and 2", calls)
	}
}

// tamperProgram is a program that builds values, calls a tool, then applies
// TAMPER (one line), then calls tools (sent, refused by name, refused for its
// arguments, queued behind the in-flight cap), logs, and ends with END.
const tamperProgram = `function tamper(o, k, how) {
  const bad = function () { throw new Error('tampered') };
  if (how === 'delete') { if (!(delete o[k])) throw new Error('cannot delete'); return }
  const d = how === 'getter' ? {get: bad, set: bad, configurable: true} : {value: how === 'throw' ? bad : function () { return 'evil' }, writable: true, configurable: true};
  Object.defineProperty(o, k, d);
}
const before = {a: [1, 'two', {b: null}], m: new Map([[1, 'x'], ['k', {v: [2]}]]), s: new Set([2, 'three']), d: new Date(0), bad: new Date(NaN), re: /a+b/gi, e: new TypeError('boom'), f: function named() {}, anon: () => 1, n: -0, big: 10n, sym: Symbol('q'), u: undefined, nested: {x: {y: {z: {w: 1}}}}, p: Promise.resolve(1), bare: Object.create(null), cls: new (class Foo { constructor() { this.k = 1 } })(), 'odd key': "it's\n\\", [Symbol('s')]: 1, get g() { return 1 }};
const err = new RangeError('the end');
const first = await tools.issues.get_issue({id: 1});
TAMPER
console.log('first', first.structuredContent.id, before);
console.warn('w', 'x\ny', "it's", [1, , 3]);
try { tools.issues.get_isue({}) } catch (x) { console.log('refused', x.code, x.matches.length, x.matches[0], x.message) }
try { tools.isues.get_issue({}) } catch (x) { console.log('refused', x.code, x.matches[0], x.message) }
try { await tools.issues.list_issues([1]) } catch (x) { console.log('bad args', x.code, x.message, x.mayHaveRun) }
try { await tools.issues.list_issues({n: 1n}) } catch (x) { console.log('bad args', x.code, x.message) }
const second = await tools.issues.get_issue({id: 2, s: 'x', list: [1, {y: null}]});
console.log('second', second.structuredContent, second.isError);
for (let i = 0; i < 20; i++) tools.issues.add_comment({i});
console.log(ALL_TOOLS.length, ALL_TOOLS[1].name);
print('end');
END`

// tamperTargets are the intrinsics the prelude uses or used, as
// [object expression, key expression]. Each is replaced, deleted, made to
// throw and made a throwing getter.
var tamperTargets = [][2]string{}

func init() {
	add := func(obj string, keys ...string) {
		for _, k := range keys {
			tamperTargets = append(tamperTargets, [2]string{obj, k})
		}
	}
	add("Array.prototype", "'push'", "'pop'", "'join'", "'slice'", "'map'", "'sort'", "'includes'", "'indexOf'", "'fill'",
		"'concat'", "Symbol.iterator", "'0'", "'1'", "'constructor'")
	add("Object.getPrototypeOf([][Symbol.iterator]())", "'next'")
	add("Function.prototype", "'call'", "'apply'", "'bind'", "'toString'")
	add("Promise.prototype", "'then'", "'catch'", "'finally'")
	add("Promise", "'resolve'", "'reject'", "'all'", "Symbol.species")
	add("Error", "Symbol.hasInstance", "'captureStackTrace'")
	add("Error.prototype", "'name'", "'message'", "'toString'", "'constructor'")
	add("TypeError.prototype", "'name'", "'message'")
	add("RangeError.prototype", "'name'")
	add("InternalError.prototype", "'name'", "'message'")
	add("Object", "'assign'", "'create'", "'keys'", "'freeze'", "'isFrozen'", "'defineProperty'", "'getOwnPropertyDescriptor'",
		"'getPrototypeOf'", "'setPrototypeOf'", "'entries'", "'is'", "'hasOwn'", "Symbol.hasInstance")
	add("Object.prototype", "'toString'", "'hasOwnProperty'", "'constructor'", "'valueOf'", "'code'", "'server'", "'tool'",
		"'matches'", "'mayHaveRun'", "'next'", "'json'", "'resolve'", "'reject'", "'get'", "'set'", "'value'", "'writable'",
		"'enumerable'", "'configurable'", "'done'", "'name'", "'message'", "'stack'", "'up'", "'v'", "'text'", "'skip'",
		"'0'", "'1'", "'length'", "'__proto__'")
	add("Reflect", "'apply'", "'construct'", "'defineProperty'", "'getPrototypeOf'", "'getOwnPropertyDescriptor'", "'ownKeys'")
	add("JSON", "'stringify'", "'parse'")
	add("globalThis", "'String'", "'Map'", "'Set'", "'Promise'", "'Proxy'", "'Int32Array'", "'Error'", "'Date'", "'RegExp'",
		"'Array'", "'Object'", "'Reflect'", "'JSON'", "'Math'", "'Symbol'", "'Function'", "'TypeError'")
	add("String.prototype", "'slice'", "'indexOf'", "'replace'", "'toLowerCase'", "'includes'", "'charCodeAt'", "'split'",
		"'join'", "Symbol.iterator", "Symbol.replace", "'toString'", "'length'")
	add("RegExp.prototype", "'exec'", "'test'", "Symbol.replace", "Symbol.split", "'source'", "'flags'", "'global'",
		"'ignoreCase'", "'toString'")
	add("RegExp", "Symbol.species", "Symbol.hasInstance")
	add("Map.prototype", "'get'", "'set'", "'delete'", "'has'", "'entries'", "Symbol.iterator", "'size'", "'forEach'")
	add("Object.getPrototypeOf(new Map().entries())", "'next'")
	add("Set.prototype", "'add'", "'has'", "'values'", "Symbol.iterator", "'size'")
	add("Object.getPrototypeOf(new Set().values())", "'next'")
	add("Map", "Symbol.hasInstance")
	add("Set", "Symbol.hasInstance")
	add("Date", "'now'", "Symbol.hasInstance")
	add("Date.prototype", "'toISOString'", "'getTime'", "'toString'")
	add("Promise", "Symbol.hasInstance")
	add("Math", "'min'", "'max'", "'floor'")
	add("Symbol.prototype", "'toString'", "'description'")
	add("Number.prototype", "'toString'")
	add("BigInt.prototype", "'toString'")
	add("Int32Array.prototype", "'0'")
	add("Object.getPrototypeOf(Int32Array.prototype)", "'fill'", "'length'")
	add("Function.prototype", "'name'")
}

var tamperModes = []string{"replace", "delete", "throw", "getter"}

// tamperEnds are the two endings the program tries: returning and throwing.
var tamperEnds = []string{
	`return {v: [1, 'x', {y: null}], s: second.structuredContent, n: 0.5};`,
	`throw err;`,
}

// TestTamperingChangesNothing (item 3): for each intrinsic the prelude
// touches, a program overrides it in each of four ways while it calls tools;
// what reaches the parent (the calls' server, tool and arguments, the output,
// the ending, its value or error, and the call counts) must be exactly what
// the same program produces without the override, and the run never ends
// crashed or out_of_memory.
func TestTamperingChangesNothing(t *testing.T) {
	t.Parallel()
	type outcome struct {
		calls  []recordedCall
		ending *Ending
	}
	run := func(t *testing.T, tamper, end string) outcome {
		rec := &callRecorder{}
		code := strings.Replace(strings.Replace(tamperProgram, "TAMPER", tamper, 1), "END", end, 1)
		e := runProgram(t, Request{Call: rec.call, Code: code})
		return outcome{rec.sorted(), e}
	}
	comparable := func(e *Ending) string {
		c := *e
		c.RunID, c.DurationMs, c.PeakMemoryKiB = "", 0, 0
		c.Calls.QueuedMs = 0
		c.Calls.Unseen = slices.Clone(c.Calls.Unseen)
		for i := range c.Calls.Unseen {
			c.Calls.Unseen[i].QueuedMs = 0
		}
		b, _ := json.MarshalIndent(c, "", "  ")
		return string(b)
	}
	var want [2]outcome
	for i, end := range tamperEnds {
		want[i] = run(t, ";", end)
		if i == 0 {
			wantStatus(t, want[i].ending, wire.StatusReturned)
		} else {
			wantStatus(t, want[i].ending, wire.StatusThrew)
		}
		// The baseline itself must show every path: 2 answered calls, 16 left
		// in flight, 4 never sent, refusals and console output of each kind.
		c := want[i].ending.Calls
		if len(want[i].calls) != 18 || c.Total != 18 || c.NeverSent != 4 || len(c.Unseen)+c.UnseenMore != 16 {
			t.Fatalf("baseline %d: %d calls, record %+v", i, len(want[i].calls), c)
		}
		for _, part := range []string{"Map(2) { 1 => 'x', 'k' => { v: [ 2 ] } }", "Set(2) { 2, 'three' }", "1970-01-01T00:00:00.000Z",
			"Invalid Date", "/a+b/gi", "TypeError: boom\n", "[Function: named]", "[Function: anon]", "n: -0", "big: 10n",
			"sym: Symbol(q)", "[Object]", "Promise {}", "bare: [Object: null prototype] {}", "cls: Foo { k: 1 }",
			`'odd key': 'it\'s\n\\'`, "[Symbol(s)]: 1", "g: [Getter]", "[warn] w x\ny it's [ 1, <empty>, 3 ]",
			"refused unknown_tool 1 get_issue", "refused unknown_server issues", "bad args invalid_arguments", "false",
			"arguments cannot be converted to JSON", "second { id: 2, s: 'x', list: [ 1, { y: null } ] } false", "4 get_issue\nend\n"} {
			if !strings.Contains(want[i].ending.Output.Text, part) {
				t.Fatalf("baseline output lacks %q:\n%s", part, want[i].ending.Output.Text)
			}
		}
	}
	for ti, target := range tamperTargets {
		for mi, mode := range tamperModes {
			end := (ti + mi) % 2
			name := fmt.Sprintf("%s[%s]/%s/%s", target[0], target[1], mode, []string{"return", "throw"}[end])
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				got := run(t, fmt.Sprintf("tamper(%s, %s, '%s');", target[0], target[1], mode), tamperEnds[end])
				if s := got.ending.Status; s == wire.StatusCrashed || s == wire.StatusOutOfMemory {
					t.Fatalf("the run ended %s: %s", s, comparable(got.ending))
				}
				if !slices.Equal(got.calls, want[end].calls) {
					t.Errorf("the parent was asked\n%+v\nwant\n%+v", got.calls, want[end].calls)
				}
				if g, w := comparable(got.ending), comparable(want[end].ending); g != w {
					t.Errorf("ending\n%s\nwant\n%s", g, w)
				}
			})
		}
	}
}

// memoryOverheadKiB is the stated bound on what a worker holds beyond its
// heap limit: the binary, the Go runtime, and the transient buffers of the
// host (see README "Memory").
const memoryOverheadKiB = 16 << 10

// TestMemoryBound (item 5): whatever crosses between the program and the
// host, the worker's peak resident set stays within its heap limit plus
// memoryOverheadKiB. The rows move the largest values each path allows.
func TestMemoryBound(t *testing.T) {
	if asanEnabled {
		t.Skip("AddressSanitizer's allocator keeps freed memory in quarantine: peaks mean nothing")
	}
	t.Parallel()
	const limit = 64 << 20
	bigResult := func(ctx context.Context, c Call) Outcome {
		if c.Tool == "get_issue" {
			n := limit/wire.ResultMemoryShare - 200
			return Answer(json.RawMessage(`{"content":[],"structuredContent":{"s":"` + strings.Repeat("r", n) + `"}}`))
		}
		return echoCall(ctx, c)
	}
	tests := []struct {
		name    string
		code    string
		input   string
		status  wire.Status
		goHeavy bool // moves a large value through Go's heap (inflated by the race detector)
	}{
		{name: "wide return (issue 11)", code: `return "\u0100".repeat(6 << 20)`, status: wire.StatusReturned},
		{name: "ASCII return at the cap", code: `return 'x'.repeat((20 << 20) - 2)`, status: wire.StatusReturned},
		{name: "ASCII return over the cap", code: `return 'x'.repeat(21 << 20)`, status: wire.StatusReturned},
		{name: "wide return too large for the heap", code: `return "\u0100".repeat(11 << 20)`, status: wire.StatusOutOfMemory},
		{name: "return with the heap nearly full", code: `const keep = []; try { for (;;) keep.push('k'.repeat(1 << 20)) } catch (e) {} keep.length -= 12; return "\u00e9".repeat(4 << 20)`},
		{name: "one huge wide line", code: `console.log("\u0100".repeat(6 << 20))`, status: wire.StatusReturned},
		{name: "an output flood", code: `const s = "\u0100".repeat(99); for (let i = 0; i < 300000; i++) console.log(s)`, status: wire.StatusReturned},
		{name: "arguments at the cap", code: `await tools.issues.list_issues({s: "\u00e9".repeat((2 << 20) - 20)}); return 1`, status: wire.StatusReturned},
		{name: "a result of a third of the heap", code: `const r = await tools.issues.get_issue({}); return r.structuredContent.s.length`, status: wire.StatusReturned, goHeavy: true},
		{name: "input at the cap", code: `return input.s.length`, input: `{"s":"` + strings.Repeat("i", (4<<20)-20) + `"}`, status: wire.StatusReturned, goHeavy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.goHeavy && raceEnabled {
				t.Skip("the race detector's shadow of Go's heap inflates the peak; .ci/run runs this row without -race")
			}
			req := Request{Code: tt.code, Call: bigResult, Limits: wire.Limits{MemoryBytes: limit}}
			if tt.input != "" {
				req.Input = json.RawMessage(tt.input)
			}
			e := runProgram(t, req)
			if tt.status != "" {
				wantStatus(t, e, tt.status)
			}
			if e.Status == wire.StatusCrashed {
				t.Fatalf("crashed: %+v", e.Crash)
			}
			bound := int64(limit>>10) + memoryOverheadKiB + raceBaseKiB
			t.Logf("%s: peak %d KiB (bound %d KiB)", e.Status, e.PeakMemoryKiB, bound)
			if e.PeakMemoryKiB == 0 || e.PeakMemoryKiB > bound {
				t.Fatalf("peak %d KiB, above the bound of %d KiB (limit %d MiB + %d KiB)", e.PeakMemoryKiB, bound, limit>>20, memoryOverheadKiB+raceBaseKiB)
			}
		})
	}
}

// TestEndingsEarned (item 4): each program ends as what it did:
// out_of_memory only when the engine ran out of memory, threw for what it
// threw however hostile the value, and a returned value too large to send
// ends out_of_memory saying so, or returns the "return less" text.
func TestEndingsEarned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		code   string
		memory int64
		status wire.Status
		errHas []string
		value  string // a prefix of the value's JSON
	}{
		{name: "a Proxy whose traps throw", code: `const h = {}; for (const k of ['get', 'getPrototypeOf', 'ownKeys', 'getOwnPropertyDescriptor', 'has']) h[k] = () => { throw new Error('trap') }; throw new Proxy({}, h)`,
			status: wire.StatusThrew, errHas: []string{"NonError", "non-Error value"}},
		{name: "a revoked Proxy", code: `const r = Proxy.revocable({}, {}); r.revoke(); throw r.proxy`, status: wire.StatusThrew, errHas: []string{"NonError"}},
		{name: "a Proxy of an Error", code: `throw new Proxy(new Error('inner'), {get() { throw 1 }})`, status: wire.StatusThrew, errHas: []string{"Error"}},
		{name: "after a hostile Symbol.hasInstance", code: `Object.defineProperty(Error, Symbol.hasInstance, {value() { throw new Error('no') }}); throw new TypeError('plain')`,
			status: wire.StatusThrew, errHas: []string{"TypeError: plain"}},
		{name: "after Error's prototype became hostile", code: `for (const k of ['name', 'message', 'stack']) Object.defineProperty(Error.prototype, k, {get() { throw 1 }}); throw new Error('m')`,
			status: wire.StatusThrew, errHas: []string{"Error: m"}},
		{name: "an error whose getters throw", code: `const e = new Error('x'); for (const k of ['name', 'message', 'stack']) Object.defineProperty(e, k, {get() { throw 1 }}); throw e`,
			status: wire.StatusThrew, errHas: []string{"Error"}},
		{name: "an error whose getters loop", code: `const e = new Error('x'); Object.defineProperty(e, 'message', {get() { for (;;) {} }}); throw e`,
			status: wire.StatusThrew, errHas: []string{"Error"}},
		{name: "a thrown InternalError of its own", code: `throw new InternalError('stack overflow')`, status: wire.StatusThrew, errHas: []string{"InternalError: stack overflow"}},
		{name: "19 MiB returned at 64 MiB", code: `return 'x'.repeat(19 << 20)`, status: wire.StatusReturned, value: `"xxxxxxxx`},
		{name: "10 MiB returned at 32 MiB", code: `return 'x'.repeat(10 << 20)`, memory: 32 << 20, status: wire.StatusReturned, value: `"xxxxxxxx`},
		// The JSON text of 12 MiB does not fit beside the string at 32 MiB
		// (the engine grows its buffer by half again): the program is told so.
		{name: "12 MiB returned at 32 MiB", code: `return 'x'.repeat(12 << 20)`, memory: 32 << 20, status: wire.StatusOutOfMemory,
			errHas: []string{"returned a value too large to send", "return less"}},
		{name: "a wide value too large to send", code: `return "\u0100".repeat(9 << 20)`, memory: 32 << 20, status: wire.StatusOutOfMemory, errHas: []string{"returned a value too large to send", "return less"}},
		{name: "JSON too large for the heap", code: `return Array(30).fill('s'.repeat(1 << 20))`, memory: 16 << 20,
			status: wire.StatusOutOfMemory, errHas: []string{"returned a value too large to send"}},
		{name: "over the returned-value cap", code: `return 'x'.repeat(21 << 20)`, status: wire.StatusReturned, value: `"[the returned value is 22020098 characters`},
		{name: "a real out of memory", code: `const a = []; for (;;) a.push({n: a.length})`, status: wire.StatusOutOfMemory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := runProgram(t, Request{Code: tt.code, Limits: wire.Limits{MemoryBytes: tt.memory, TimeoutMs: 5000}})
			wantStatus(t, e, tt.status)
			if len(tt.errHas) > 0 {
				wantErrorContains(t, e, tt.errHas...)
			}
			if tt.value != "" && !strings.HasPrefix(string(e.Value), tt.value) {
				t.Fatalf("value %.80s…, want it to start %s", e.Value, tt.value)
			}
		})
	}
}

// TestDeadlineEndsTheRunWhateverTheEngineDoes (item 7): a program that keeps
// the engine from polling its interrupt handler (a native builtin called in
// a loop, a sort without a comparator, a loop that catches what the
// interrupt throws when memory is short) is still ended at its deadline by
// the worker itself, with the call record it knows, not by the parent's
// kill after the grace.
func TestDeadlineEndsTheRunWhateverTheEngineDoes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		code   string
		limits wire.Limits
		calls  bool // 20 calls first: 16 in flight, 4 waiting in the program
	}{
		{name: "a native builtin in a loop", code: `const a = new Array(1e6).fill(1); for (;;) a.indexOf(2)`},
		{name: "catching out-of-memory errors (issue 11)", code: `const a = []; for (;;) { try { a.push(new Array(1e5).fill(a.length)); } catch (e) {} }`,
			limits: wire.Limits{TimeoutMs: 1000, MemoryBytes: 32 << 20}},
		{name: "a long sort", code: `const a = []; for (let i = 0; i < 5e5; i++) a.push(String((i * 7919) % 5e5)); for (;;) a.sort()`,
			limits: wire.Limits{TimeoutMs: 1000, MemoryBytes: 256 << 20}},
		{name: "with calls in flight and waiting", code: `const a = new Array(1e6).fill(1); for (;;) a.indexOf(2)`, calls: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.limits.TimeoutMs == 0 {
				tt.limits.TimeoutMs = 1000
			}
			code := tt.code
			if tt.calls {
				code = `for (let i = 0; i < 20; i++) tools.issues.add_comment({i}); ` + code
			}
			rec := &callRecorder{}
			e := runWith(t, Config{Command: testConfig("").Command, Grace: 5 * time.Second}, Request{Code: code, Call: rec.call, Limits: tt.limits})
			wantStatus(t, e, wire.StatusTimedOut)
			// The parent's own verdict after the grace says so; the worker's
			// does not. A 5 s grace leaves the worker every chance.
			if strings.Contains(e.Error.Message, "grace") || e.Crash != nil {
				t.Fatalf("the parent ended the run, not the worker: %s", e.Error.Message)
			}
			if tt.calls {
				c := e.Calls
				if c.Total != 16 || c.NeverSent != 4 || len(c.Unseen)+c.UnseenMore != 16 {
					t.Fatalf("call record %+v: want 16 sent and unseen, 4 never sent", c)
				}
			}
		})
	}
}

// keptOf is what the parent keeps of a stream it was sent whole.
func keptOf(stream string) OutputText {
	o := newOutputKeeper(wire.OutputHeadChars, wire.OutputTailChars)
	o.Append(stream)
	return o.TakeText()
}

// TestOutputKeptIsExact (item 6): the worker sends only the head, then a
// tail and a count; what the parent keeps (head, tail, cut count) must be
// exactly what it would keep had it been sent everything, whatever the
// program writes, however its run ends.
func TestOutputKeptIsExact(t *testing.T) {
	t.Parallel()
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i))
			b.WriteByte('\n')
		}
		return b.String()
	}
	// lastLine is the last line of the kept text that starts with prefix.
	lastNumber := func(text, prefix string) int {
		i := strings.LastIndex(text, "\n"+prefix)
		var n int
		fmt.Sscanf(text[i+1+len(prefix):], "%d", &n)
		return n
	}
	const fffd = "\uFFFD"
	tests := []struct {
		name   string
		code   string
		limits wire.Limits
		status wire.Status
		stream func(kept string) string // the whole stream the program wrote
	}{
		{name: "ASCII lines", code: `for (let i = 0; i < 200000; i++) console.log('line ' + i)`,
			stream: func(string) string { return lines(200000, func(i int) string { return fmt.Sprint("line ", i) }) }},
		{name: "wide lines", code: `const s = '\u0100'.repeat(99); for (let i = 0; i < 100000; i++) console.log(s + i)`,
			stream: func(string) string {
				return lines(100000, func(i int) string { return strings.Repeat("Ā", 99) + fmt.Sprint(i) })
			}},
		{name: "pairs at every offset", code: `for (let i = 0; i < 60000; i++) console.log('😀'.repeat(i % 5) + 'x'.repeat(i % 3))`,
			stream: func(string) string {
				return lines(60000, func(i int) string { return strings.Repeat("😀", i%5) + strings.Repeat("x", i%3) })
			}},
		{name: "one huge line, then more", code: `console.log('y'.repeat(20000000)); console.log('after')`,
			stream: func(string) string { return strings.Repeat("y", 20000000) + "\nafter\n" }},
		{name: "a huge line of pairs across the head", code: `console.log('a' + '😀'.repeat(1000000))`,
			stream: func(string) string { return "a" + strings.Repeat("😀", 1000000) + "\n" }},
		{name: "lone surrogates", code: `for (let i = 0; i < 5; i++) console.log('\ud83d'.repeat(12345 + i) + '\ude00' + 'a\ud800')`,
			stream: func(string) string {
				return lines(5, func(i int) string { return strings.Repeat(fffd, 12344+i) + "😀a" + fffd })
			}},
		{name: "output between calls", code: `for (let i = 0; i < 300; i++) { console.log('before ' + i + ' ' + 'x'.repeat(200)); await tools.issues.get_issue({id: i}) }`,
			stream: func(string) string {
				return lines(300, func(i int) string { return fmt.Sprint("before ", i, " ", strings.Repeat("x", 200)) })
			}},
		{name: "print, warn and error", code: `for (let i = 0; i < 50000; i++) { print('p', i); console.error('e', {i}) }`,
			stream: func(string) string {
				var b strings.Builder
				for i := range 50000 {
					fmt.Fprintf(&b, "p %d\n[error] e { i: %d }\n", i, i)
				}
				return b.String()
			}},
		{name: "writing for a while", code: `const end = Date.now() + 400; let i = 0; while (Date.now() < end) console.log('t' + i++); console.log('count ' + i)`,
			stream: func(kept string) string {
				n := lastNumber(kept, "count ")
				return lines(n, func(i int) string { return fmt.Sprint("t", i) }) + fmt.Sprintf("count %d\n", n)
			}},
		{name: "writing until the deadline", code: `let i = 0; for (;;) console.log('z' + i++)`, limits: wire.Limits{TimeoutMs: 700}, status: wire.StatusTimedOut,
			stream: func(kept string) string {
				return lines(lastNumber(kept, "z")+1, func(i int) string { return fmt.Sprint("z", i) })
			}},
		{name: "writing until memory runs out", code: `const keep = []; let i = 0; for (;;) { keep.push({i}); console.log('m' + i++) }`, limits: wire.Limits{MemoryBytes: 8 << 20},
			status: wire.StatusOutOfMemory,
			stream: func(kept string) string {
				return lines(lastNumber(kept, "m")+1, func(i int) string { return fmt.Sprint("m", i) })
			}},
		{name: "writing long lines until memory runs out", code: `const keep = []; let i = 0; for (;;) { keep.push('k'.repeat(300) + i); console.log('m' + i++ + ' ' + 'x'.repeat(3000)) }`,
			limits: wire.Limits{MemoryBytes: 4 << 20}, status: wire.StatusOutOfMemory,
			stream: func(kept string) string {
				return lines(lastNumber(kept, "m")+1, func(i int) string { return fmt.Sprint("m", i, " ", strings.Repeat("x", 3000)) })
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.limits.TimeoutMs == 0 {
				tt.limits.TimeoutMs = 20_000
			}
			if tt.status == "" {
				tt.status = wire.StatusReturned
			}
			e := runProgram(t, Request{Code: tt.code, Call: echoCall, Limits: tt.limits})
			wantStatus(t, e, tt.status)
			want := keptOf(tt.stream(e.Output.Text))
			if e.Output.CutChars != want.CutChars || e.Output.Text != want.Text {
				t.Fatalf("kept %d bytes with %d cut, want %d bytes with %d cut\ngot  %q … %q\nwant %q … %q",
					len(e.Output.Text), e.Output.CutChars, len(want.Text), want.CutChars,
					cut(e.Output.Text, 60), tailOf(e.Output.Text, 60), cut(want.Text, 60), tailOf(want.Text, 60))
			}
		})
	}
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// rawRun runs code in a worker of this binary with the test as its parent,
// speaking the protocol itself, and counts the bytes of output the worker
// sent. It answers no call.
func rawRun(t testing.TB, code string, limits wire.Limits) (outputBytes int, end wire.End, elapsed time.Duration) {
	t.Helper()
	cfg := testConfig("")
	cfg.TempDir = t.TempDir()
	p, err := spawn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		p.conn.Close()
		killGroup(p.cmd.Process.Pid)
		_ = p.cmd.Wait()
		p.stderr.Close()
	}()
	l, _ := limits.Normalize()
	_ = p.conn.SetDeadline(time.Now().Add(l.Timeout() + 30*time.Second))
	r := wire.NewReader(p.conn, wire.MaxWorkerFrame)
	if f, err := r.Next(); err != nil || f.Type != wire.TypeHello {
		t.Fatalf("no hello: %v", err)
	}
	start := time.Now()
	if err := wire.WriteFrame(p.conn, wire.TypeStart, wire.Start{Protocol: wire.ProtocolVersion, RunID: "r", Limits: limits}, []byte(code)); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("reading the worker (watchdog: the socket's deadline): %v", err)
		}
		switch f.Type {
		case wire.TypeOutput:
			outputBytes += len(f.Payload)
		case wire.TypeEnd:
			if err := f.Decode(&end); err != nil {
				t.Fatal(err)
			}
			return outputBytes, end, time.Since(start)
		default:
			t.Fatalf("unexpected %s frame", f.Type)
		}
	}
}

// TestOutputPastTheHeadIsNotSent (item 6): once the head is full the worker
// sends a tail and a count, not what the program writes: at most one piece of
// outputBuffer characters per outputFlush, whatever the volume.
func TestOutputPastTheHeadIsNotSent(t *testing.T) {
	t.Parallel()
	const (
		written      = 200000 * 100 // 100-character lines
		outputBuffer = 65536 + 100  // prelude.js CAP, plus the line that crossed it
		outputFlush  = 100 * time.Millisecond
	)
	sent, end, elapsed := rawRun(t, `const s = 'x'.repeat(99); for (let i = 0; i < 200000; i++) console.log(s)`, wire.Limits{TimeoutMs: 60_000})
	if end.Status != wire.StatusReturned {
		t.Fatalf("ended %s: %+v", end.Status, end.Error)
	}
	bound := wire.OutputHeadChars + 100 + (int(elapsed/outputFlush)+2)*outputBuffer
	t.Logf("the program wrote %d bytes in %s; the worker sent %d (bound %d)", written, elapsed, sent, bound)
	if sent > bound || sent > written/4 {
		t.Fatalf("the worker sent %d bytes of the %d written in %s; at most %d should go", sent, written, elapsed, bound)
	}
}
