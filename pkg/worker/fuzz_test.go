package worker

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// FuzzProgram runs arbitrary program text in a real worker under tight
// limits: whatever the text does, the run must end with a defined ending of
// the program's own (never crashed, which would mean the worker died or broke
// the protocol), and the parent must go on.
func FuzzProgram(f *testing.F) {
	for _, seed := range []string{
		`return 1`,
		`while (true) {}`,
		`for (;;) { try { for (;;) {} } catch (e) {} }`,
		`const a = []; for (;;) a.push({a})`,
		`return 'x'.repeat(2 ** 30)`,
		`function f() { f() } f()`,
		`return JSON.parse('['.repeat(100000))`,
		`return /(a|a)*$/.test('a'.repeat(30) + 'b')`,
		`await new Promise(() => {})`,
		`throw null`,
		`throw {toString() { throw 1 }}`,
		`return {toJSON() { return this }}`,
		`return new Proxy({}, {get() { throw new Error('trap') }, ownKeys() { return ['a'] }})`,
		`console.log(new Proxy({}, {getPrototypeOf() { throw 1 }}))`,
		`Object.defineProperty(Array.prototype, 'then', {get() { throw 1 }}); return []`,
		`Promise.prototype.then = function () {}; return 5`,
		`JSON.stringify = () => { throw 1 }; return {a: 1}`,
		`globalThis.String = 1; throw new Error('x')`,
		`await tools.issues.list_issues({a: 1n})`,
		`tools.issues.get_isue()`,
		`for (let i = 0; i < 100; i++) tools.issues.add_comment({i}); return 'sent'`,
		"\u0000\ufffd",
		`}`,
		`import('os')`,
		`return new Date(8.64e15 + 1).toISOString()`,
		`Atomics.wait(new Int32Array(new SharedArrayBuffer(8)), 0, 0)`,
		`return eval('(' + 'a'.repeat(100) + ')')`,
		`[].constructor.constructor('return this')().tools = 1`,
		// Issue 11.
		`console.log("\ud83d".repeat(16001))`,
		`const e = new Error('x'); e.stack = '\u0100'.repeat(5000).slice(0, 3000); for (let i = 0; i < 5; i++) console.log(e)`,
		`return "\u0100".repeat(1 << 20).slice(1)`,
		`try { await tools.issues.list_issues({s: '\u00e9'.repeat(3 << 20)}) } catch (e) {} return await tools.issues.get_issue({})`,
		`Array.prototype.push = () => { throw 1 }; Function.prototype.call = null; for (let i = 0; i < 20; i++) tools.issues.add_comment({i}); return 1`,
		`Object.defineProperty(Array.prototype, '0', {set() { throw 1 }}); return [[1]]`,
		`Object.defineProperty(Error, Symbol.hasInstance, {value() { throw 1 }}); throw new Proxy({}, {getPrototypeOf() { throw 2 }})`,
		`const a = new Array(1e6).fill(1); for (;;) a.indexOf(2)`,
		`const a = []; for (;;) { try { a.push(new Array(1e5).fill(a.length)); } catch (e) {} }`,
		`for (let i = 0; i < 100000; i++) console.log('\ud83d\ude00'.repeat(i % 4) + '\ud800')`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, code string) {
		if !utf8.ValidString(code) || len(code) > wire.MaxCodeBytes {
			t.Skip()
		}
		e := runProgram(t, Request{Code: code, Call: echoCall, Limits: wire.Limits{TimeoutMs: 300, MemoryBytes: 16 << 20}})
		if e.Status == wire.StatusCrashed {
			b, _ := json.MarshalIndent(e, "", "  ")
			t.Fatalf("program %q crashed its worker:\n%s", code, b)
		}
		if !e.Status.FromWorker() {
			t.Fatalf("unknown status %q", e.Status)
		}
		if e.Status == wire.StatusReturned && !json.Valid(e.Value) {
			t.Fatalf("returned value %q is not JSON", e.Value)
		}
		if e.Status != wire.StatusReturned && e.Error == nil {
			t.Fatalf("ending %s without an error", e.Status)
		}
	})
}

// FuzzJSONRoundTrip sends JSON into a program as `input` and back out as its
// value: what comes back must be what went in, as JavaScript numbers see it.
func FuzzJSONRoundTrip(f *testing.F) {
	for _, seed := range []string{
		`null`, `true`, `0`, `-0`, `1.5e300`, `9007199254740993`, `""`, `"a\u0000b"`, `"\ud800"`, `"😀"`,
		`[]`, `{}`, `{"a":[1,{"b":null}],"c":"\n"}`, `{"__proto__":1}`, `{"a":1,"a":2}`, `[[[[[[[[[[1]]]]]]]]]]`,
		`{"constructor":{"prototype":1}}`, `"\\u2028\u2029"`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want any
		if !json.Valid([]byte(in)) || json.Unmarshal([]byte(in), &want) != nil {
			t.Skip()
		}
		l, _ := wire.Limits{}.Normalize()
		if l.CheckInput([]byte(in)) != nil {
			t.Skip()
		}
		e := runProgram(t, Request{Code: `return input`, Input: json.RawMessage(in)})
		wantStatus(t, e, wire.StatusReturned)
		var got any
		if err := json.Unmarshal(e.Value, &got); err != nil {
			t.Fatalf("value %q: %v", e.Value, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("input %s came back as %s", in, e.Value)
		}
	})
}
