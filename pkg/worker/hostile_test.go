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
	e := runProgram(t, Request{Call: rec.call, Code: `
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
