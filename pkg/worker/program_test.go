package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// TestEndings runs real programs, normal and hostile, in real workers and
// checks each ending.
func TestEndings(t *testing.T) {
	short := wire.Limits{TimeoutMs: 1500}
	tests := []struct {
		name   string
		code   string
		input  string
		limits wire.Limits
		status wire.Status
		value  string   // exact JSON, when status is returned
		errHas []string // parts of "name: message\nstack"
		outHas string
	}{
		// Values.
		{name: "returns a value", code: `return {a: [1, "two", null], b: true}`, status: wire.StatusReturned, value: `{"a":[1,"two",null],"b":true}`},
		{name: "no return is null", code: `1 + 1`, status: wire.StatusReturned, value: `null`},
		{name: "top-level await", code: `const x = await Promise.resolve(20); return x + 1`, status: wire.StatusReturned, value: `21`},
		{name: "input is a global", code: `return input.n * 2`, input: `{"n": 21}`, status: wire.StatusReturned, value: `42`},
		{name: "no input is undefined", code: `return typeof input`, status: wire.StatusReturned, value: `"undefined"`},
		{name: "BigInt cannot be JSON", code: `return 10n`, status: wire.StatusReturned, errHas: nil, value: `"[the returned value could not be converted to JSON: BigInt are forbidden in JSON.stringify]"`},
		{name: "a cycle cannot be JSON", code: `const a = {}; a.a = a; return a`, status: wire.StatusReturned},
		{name: "a function cannot be JSON", code: `return () => 1`, status: wire.StatusReturned, value: `"[the returned value is a function, which JSON cannot hold]"`},
		{name: "NUL survives", code: `return "a\u0000b"`, status: wire.StatusReturned, value: `"a\u0000b"`},
		{name: "lone surrogate", code: `return "\ud800"`, status: wire.StatusReturned, value: `"\ud800"`},
		{name: "a returned thenable is awaited", code: `return {then(r) { r(7) }}`, status: wire.StatusReturned, value: `7`},

		// Throwing.
		{name: "throws an Error with the program's lines", code: "const a = 1\n\nfunction f() {\n  throw new TypeError('bad ' + a)\n}\nf()", status: wire.StatusThrew,
			errHas: []string{"TypeError: bad 1", "at f (program.js:4:", "at <program> (program.js:6:"}},
		{name: "syntax error names its line", code: "let a = 1\nlet b = ;", status: wire.StatusThrew, errHas: []string{"SyntaxError", "program.js:"}},
		{name: "throws a string", code: `throw "nope"`, status: wire.StatusThrew, errHas: []string{"NonError", "'nope'"}},
		{name: "throws an object", code: `throw {code: 42}`, status: wire.StatusThrew, errHas: []string{"NonError", "code: 42"}},
		{name: "throws null", code: `throw null`, status: wire.StatusThrew, errHas: []string{"threw null"}},
		{name: "throws undefined", code: `throw undefined`, status: wire.StatusThrew, errHas: []string{"non-Error value: undefined"}},
		{name: "rejects after await", code: `await null; throw new RangeError('late')`, status: wire.StatusThrew, errHas: []string{"RangeError: late"}},
		{name: "deep recursion", code: `function f(n) { return f(n + 1) + 1 } f(0)`, status: wire.StatusThrew, errHas: []string{"RangeError", "stack"}},
		{name: "getter on the thrown error throws", code: `const e = new Error('x'); Object.defineProperty(e, 'message', {get() { throw new Error('gotcha') }}); throw e`,
			status: wire.StatusThrew, errHas: []string{"Error"}},
		{name: "toJSON throws at the end", code: `return {toJSON() { throw new Error('late toJSON') }}`, status: wire.StatusReturned,
			value: `"[the returned value could not be converted to JSON: late toJSON]"`},

		// Never settling.
		{name: "a promise nothing settles", code: `await new Promise(() => {})`, status: wire.StatusStalled, errHas: []string{"nothing can settle"}},
		{name: "an async chain to nowhere", code: `const p = new Promise(() => {}); await p.then(x => x)`, status: wire.StatusStalled},

		// Time.
		{name: "infinite loop", code: `while (true) {}`, limits: short, status: wire.StatusTimedOut, errHas: []string{"deadline of 1.5s"}},
		{name: "loop that catches everything", code: `for (;;) { try { while (true) {} } catch (e) {} finally { continue } }`, limits: short, status: wire.StatusTimedOut},
		{name: "catastrophic regex", code: `return /(a+)+$/.test('a'.repeat(40) + 'b')`, limits: short, status: wire.StatusTimedOut},
		{name: "microtask loop", code: `for (;;) await null`, limits: short, status: wire.StatusTimedOut},
		{name: "toJSON loops at the end", code: `return {toJSON() { for (;;) {} }}`, limits: short, status: wire.StatusTimedOut},
		{name: "Atomics.wait cannot block", code: `Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5000)`, status: wire.StatusThrew, errHas: []string{"TypeError"}},

		// Memory.
		{name: "one huge string", code: `return 'x'.repeat(2 ** 28).length`, status: wire.StatusOutOfMemory},
		{name: "many small objects", code: `const a = []; for (;;) a.push({n: a.length})`, status: wire.StatusOutOfMemory},
		{name: "huge array", code: `const a = []; for (;;) a.push(a.length)`, status: wire.StatusOutOfMemory},
		{name: "caught OOM then rethrown", code: `try { 'x'.repeat(2 ** 28) } catch (e) { throw e }`, status: wire.StatusOutOfMemory},
		{name: "caught OOM and recovered", code: `try { 'x'.repeat(2 ** 28) } catch (e) { return 'recovered: ' + e.message }`, status: wire.StatusReturned, value: `"recovered: out of memory"`},
		{name: "cyclic garbage is collected", code: `for (let i = 0; i < 300000; i++) { const a = {}; const b = {a}; a.b = b } return 'ok'`, limits: wire.Limits{MemoryBytes: 32 << 20}, status: wire.StatusReturned, value: `"ok"`},
		{name: "memory limit is the run's", code: `return 'x'.repeat(8 << 20).length`, limits: wire.Limits{MemoryBytes: 4 << 20}, status: wire.StatusOutOfMemory, errHas: []string{"4 MiB"}},

		// The host is out of reach.
		{name: "no host globals", code: `return ['std','os','require','process','setTimeout','setInterval','performance','WebAssembly','scriptArgs','bjson','navigator','fetch','Deno','Bun'].filter(n => typeof globalThis[n] !== 'undefined')`,
			status: wire.StatusReturned, value: `[]`},
		{name: "no os module", code: `const os = await import('os'); return os.exec(['/bin/true'])`, status: wire.StatusThrew, errHas: []string{"os"}},
		{name: "no file modules", code: `return await import('/etc/passwd')`, status: wire.StatusThrew},
		{name: "eval grants nothing", code: `return eval('typeof std + typeof os + typeof require')`, status: wire.StatusReturned, value: `"undefinedundefinedundefined"`},
		{name: "Function constructor grants nothing", code: `return new Function('return typeof this.std')()`, status: wire.StatusReturned, value: `"undefined"`},
		{name: "tools cannot be replaced", code: `tools = 1; return typeof tools`, status: wire.StatusReturned, value: `"object"`},

		// Output.
		{name: "console formats values", code: `console.log('n', 1, {a: [1, {b: 'x'}], m: new Map([[1, 2]])}, [undefined, null], new Error('e1').message); console.warn('w'); console.error('e'); print('p')`,
			status: wire.StatusReturned, outHas: "n 1 { a: [ 1, { b: 'x' } ], m: Map(1) { 1 => 2 } } [ undefined, null ] e1\n[warn] w\n[error] e\np\n"},
		{name: "console never runs getters", code: `let ran = false; console.log({get x() { ran = true; return 1 }}); return ran`, status: wire.StatusReturned, value: `false`, outHas: "{ x: [Getter] }"},
		{name: "console prints errors with the program's stack", code: "function g() { return new Error('shown') }\nconsole.log(g())", status: wire.StatusReturned, outHas: "Error: shown\n    at g (program.js:1:"},
		{name: "console on a cycle", code: `const a = {n: 1}; a.self = a; console.log(a)`, status: wire.StatusReturned, outHas: "{ n: 1, self: [Circular] }"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := Request{Code: tt.code, Limits: tt.limits, Call: echoCall}
			if tt.input != "" {
				req.Input = json.RawMessage(tt.input)
			}
			e := runProgram(t, req)
			wantStatus(t, e, tt.status)
			if tt.value != "" && string(e.Value) != tt.value {
				t.Errorf("value %s, want %s", e.Value, tt.value)
			}
			if len(tt.errHas) > 0 {
				wantErrorContains(t, e, tt.errHas...)
			}
			if tt.outHas != "" && !strings.Contains(e.Output.Text, tt.outHas) {
				t.Errorf("output %q does not contain %q", e.Output.Text, tt.outHas)
			}
			if e.Status == wire.StatusReturned && tt.value == "" && !json.Valid(e.Value) {
				t.Errorf("value %q is not JSON", e.Value)
			}
		})
	}
}

// TestOutputFlood: the parent keeps the head and tail and counts exactly what
// it cut, however much a program prints.
func TestOutputFlood(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		code  string
		total int64 // characters printed
	}{
		{name: "many lines", code: `for (let i = 0; i < 200000; i++) console.log('line ' + String(i).padStart(6, '0'))`, total: 200000 * 12},
		{name: "one huge line", code: `console.log('y'.repeat(20_000_000))`, total: 20_000_001},
		{name: "emoji", code: `for (let i = 0; i < 10000; i++) console.log('😀')`, total: 10000 * 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := runProgram(t, Request{Code: tt.code, Limits: wire.Limits{TimeoutMs: 20_000}})
			wantStatus(t, e, wire.StatusReturned)
			// A surrogate pair at a boundary is cut whole: up to 2 fewer kept.
			kept := tt.total - e.Output.CutChars
			if kept > wire.OutputHeadChars+wire.OutputTailChars || kept < wire.OutputHeadChars+wire.OutputTailChars-2 {
				t.Fatalf("total %d, cut %d: kept %d characters, want %d", tt.total, e.Output.CutChars, kept, wire.OutputHeadChars+wire.OutputTailChars)
			}
			if !strings.Contains(e.Output.Text, fmt.Sprintf("%d characters cut", e.Output.CutChars)) {
				t.Fatalf("no cut marker in the output's %d bytes", len(e.Output.Text))
			}
		})
	}
	t.Run("first and last lines kept", func(t *testing.T) {
		t.Parallel()
		e := runProgram(t, Request{Code: `for (let i = 0; i < 100000; i++) console.log('L' + i)`})
		if !strings.HasPrefix(e.Output.Text, "L0\nL1\n") || !strings.HasSuffix(e.Output.Text, "L99998\nL99999\n") {
			t.Fatalf("output does not start with the first lines and end with the last: %q … %q", e.Output.Text[:20], e.Output.Text[len(e.Output.Text)-20:])
		}
	})
}

// TestCalls covers the tools API end to end with real workers.
func TestCalls(t *testing.T) {
	t.Run("dot and bracket access", func(t *testing.T) {
		t.Parallel()
		e := runProgram(t, Request{Call: echoCall, Code: `
			const a = await tools.issues.get_issue({id: 7})
			const b = await tools['my-srv']['echo-back']({s: 'x'})
			return [a.structuredContent.id, b.structuredContent.s, a.isError, a.content[0].text]`})
		wantStatus(t, e, wire.StatusReturned)
		if string(e.Value) != `[7,"x",false,"ok"]` {
			t.Fatalf("value %s", e.Value)
		}
		if e.Calls.Total != 2 || e.Calls.Answered != 2 || e.Calls.ByTool["issues.get_issue"] != 1 || e.Calls.ByTool["my-srv.echo-back"] != 1 {
			t.Fatalf("ledger %+v", e.Calls)
		}
	})
	t.Run("a misspelt tool is refused at once with matches", func(t *testing.T) {
		t.Parallel()
		var called atomic.Int32
		call := func(ctx context.Context, c Call) Outcome { called.Add(1); return echoCall(ctx, c) }
		e := runProgram(t, Request{Call: call, Code: `
			try { await tools.issues.get_isue({id: 1}) } catch (e) {
				return [e instanceof ToolRefused, e instanceof Error, e.code, e.matches, e.mayHaveRun, e.message]
			}`})
		wantStatus(t, e, wire.StatusReturned)
		var got []any
		_ = json.Unmarshal(e.Value, &got)
		if len(got) != 6 || got[0] != true || got[1] != true || got[2] != "unknown_tool" || fmt.Sprint(got[3]) != "[get_issue]" || got[4] != false ||
			!strings.Contains(got[5].(string), "nothing was sent") {
			t.Fatalf("refusal %s", e.Value)
		}
		if called.Load() != 0 || e.Calls.Total != 0 {
			t.Fatalf("a refused name reached the parent: %d calls", called.Load())
		}
	})
	t.Run("an unknown server is refused", func(t *testing.T) {
		t.Parallel()
		e := runProgram(t, Request{Code: `try { tools.isues.list_issues() } catch (e) { return [e.name, e.code, e.matches] }`})
		if string(e.Value) != `["ToolRefused","unknown_server",["issues"]]` {
			t.Fatalf("value %s", e.Value)
		}
	})
	t.Run("await tools does not hang", func(t *testing.T) {
		t.Parallel()
		e := runProgram(t, Request{Code: `const t = await tools; return typeof t.issues.list_issues`})
		if string(e.Value) != `"function"` {
			t.Fatalf("value %s (%s)", e.Value, e.Status)
		}
	})
	t.Run("ALL_TOOLS", func(t *testing.T) {
		t.Parallel()
		e := runProgram(t, Request{Code: `
			const t = ALL_TOOLS.find(t => t.name === 'get_issue')
			let threw = false
			try { 'use strict'; ALL_TOOLS[0].name = 'x'; ALL_TOOLS.push(1) } catch (e) { threw = true }
			return [ALL_TOOLS.length, t.server, t.description, t.inputSchema.properties.id.type, t.outputSchema, Object.isFrozen(t.inputSchema), ALL_TOOLS[0].name]`})
		if string(e.Value) != `[4,"issues","Get one issue","integer",null,true,"list_issues"]` {
			t.Fatalf("value %s (%s %v)", e.Value, e.Status, e.Error)
		}
	})
	t.Run("the catalog is intact after many results", func(t *testing.T) {
		// The catalog stays in the start frame's buffer in the worker; the
		// results that follow (buffered, compacted between waits) must
		// never write over it.
		t.Parallel()
		e := runProgram(t, Request{Call: echoCall, Code: `
			for (let i = 0; i < 200; i++) await tools.issues.get_issue({pad: 'y'.repeat(i * 50)})
			await Promise.all(Array.from({length: 50}, (_, i) => tools['my-srv']['echo-back']({i})))
			return [Object.keys(tools), Object.keys(tools.issues), ALL_TOOLS.map(t => t.server + '.' + t.name + ':' + t.description).join(',')]`})
		if string(e.Value) != `[["issues","my-srv"],["list_issues","get_issue","add_comment"],"issues.list_issues:List issues,issues.get_issue:Get one issue,issues.add_comment:Comment on an issue,my-srv.echo-back:"]` {
			t.Fatalf("value %s (%s %v)", e.Value, e.Status, e.Error)
		}
	})
	t.Run("ALL_TOOLS is fetched when read, between results", func(t *testing.T) {
		// The worker holds only the names; reading ALL_TOOLS asks the
		// parent, while results of calls in flight arrive around the answer.
		t.Parallel()
		e := runProgram(t, Request{Call: echoCall, Code: `
			const ps = Array.from({length: 12}, (_, i) => tools.issues.get_issue({i}))
			const a = ALL_TOOLS, b = ALL_TOOLS
			const got = (await Promise.all(ps)).map(r => r.structuredContent.i)
			return [a === b, a.length, a[1].name, a[1].inputSchema.properties.id.type, got.length, got[11]]`})
		if string(e.Value) != `[true,4,"get_issue","integer",12,11]` {
			t.Fatalf("value %s (%s %v)", e.Value, e.Status, e.Error)
		}
	})
	t.Run("tools cannot be changed", func(t *testing.T) {
		t.Parallel()
		e := runProgram(t, Request{Call: echoCall, Code: `
			'use strict'
			const out = []
			const tries = [
				() => { tools.issues = 1 }, () => { tools.x = 1 }, () => { delete tools.issues },
				() => { tools.issues.get_issue = 1 }, () => { delete tools.issues.get_issue },
				() => Object.defineProperty(tools, 'y', {value: 1}), () => Object.setPrototypeOf(tools, {}),
				() => Object.preventExtensions(tools), () => Object.freeze(tools.issues),
			]
			for (const f of tries) { try { f(); out.push('changed') } catch (e) { out.push(e.name) } }
			out.push(tools.issues === tools.issues, tools.issues.get_issue === tools.issues.get_issue,
				'issues' in tools, 'nope' in tools, 'get_issue' in tools.issues, Object.getPrototypeOf(tools))
			out.push((await tools.issues.get_issue({id: 3})).structuredContent.id)
			return out`})
		if string(e.Value) != `["TypeError","TypeError","TypeError","TypeError","TypeError","TypeError","TypeError","TypeError","TypeError",true,true,true,false,true,null,3]` {
			t.Fatalf("value %s (%s %v)", e.Value, e.Status, e.Error)
		}
	})
	t.Run("bad arguments are refused in the worker", func(t *testing.T) {
		t.Parallel()
		var called atomic.Int32
		call := func(ctx context.Context, c Call) Outcome { called.Add(1); return echoCall(ctx, c) }
		e := runProgram(t, Request{Call: call, Code: `
			const out = []
			for (const a of [[1], 'x', null, {n: 10n}, {big: 'a'.repeat(5 << 20)}, {many: Array(100001).fill(0)}]) {
				try { await tools.issues.list_issues(a); out.push('sent') } catch (e) { out.push(e.code) }
			}
			return out`})
		if string(e.Value) != `["invalid_arguments","invalid_arguments","invalid_arguments","invalid_arguments","arguments_too_large","arguments_too_large"]` {
			t.Fatalf("value %s (%s %v)", e.Value, e.Status, e.Error)
		}
		if called.Load() != 0 {
			t.Fatalf("%d refused calls reached the call handler", called.Load())
		}
	})
	t.Run("refusals and failures from the parent", func(t *testing.T) {
		t.Parallel()
		call := func(_ context.Context, c Call) Outcome {
			switch c.Tool {
			case "list_issues":
				return Refuse("lane_full", "the lane is full", "x")
			case "get_issue":
				return Fail(wire.CodeTimeout, "no answer within 10s")
			}
			return Answer(json.RawMessage(`{"content":[],"isError":true}`))
		}
		e := runProgram(t, Request{Call: call, Code: `
			const out = []
			try { await tools.issues.list_issues({}) } catch (e) { out.push([e instanceof ToolRefused, e.code, e.mayHaveRun, e.message]) }
			try { await tools.issues.get_issue({id: 1}) } catch (e) { out.push([e instanceof ToolFailed, e.code, e.mayHaveRun, e.message]) }
			out.push((await tools.issues.add_comment({})).isError)
			return out`})
		if string(e.Value) != `[[true,"lane_full",false,"the lane is full"],[true,"timeout",true,"no answer within 10s"],true]` {
			t.Fatalf("value %s (%s %v)", e.Value, e.Status, e.Error)
		}
		if e.Calls.Refused != 1 || e.Calls.Answered != 1 || len(e.Calls.Unseen) != 1 || e.Calls.Unseen[0].State != CallTimedOut {
			t.Fatalf("ledger %+v", e.Calls)
		}
	})
	t.Run("results too large or too deep become ToolFailed", func(t *testing.T) {
		t.Parallel()
		big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", 12<<20) + `"}]}`
		deep := `{"content":` + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + `}`
		call := func(_ context.Context, c Call) Outcome {
			if c.Tool == "list_issues" {
				return Answer(json.RawMessage(big))
			}
			if c.Tool == "get_issue" {
				return Answer(json.RawMessage(deep))
			}
			return Answer(json.RawMessage(`[1]`))
		}
		e := runProgram(t, Request{Call: call, Limits: wire.Limits{MemoryBytes: 32 << 20}, Code: `
			const out = []
			for (const f of [tools.issues.list_issues, tools.issues.get_issue, tools.issues.add_comment]) {
				try { await f({}); out.push('ok') } catch (e) { out.push([e.name, e.code, e.mayHaveRun]) }
			}
			return out`})
		if string(e.Value) != `[["ToolFailed","result_too_large",true],["ToolFailed","result_too_large",true],["ToolFailed","call_failed",true]]` {
			t.Fatalf("value %s (%s %v)", e.Value, e.Status, e.Error)
		}
		if e.Calls.Answered != 0 || len(e.Calls.Unseen) != 3 || e.Calls.Unseen[0].State != CallTooLarge {
			t.Fatalf("ledger %+v", e.Calls)
		}
	})
	t.Run("at most 16 in flight, the rest wait and are never refused", func(t *testing.T) {
		t.Parallel()
		var cur, peak atomic.Int32
		call := func(ctx context.Context, c Call) Outcome {
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
			cur.Add(-1)
			return echoCall(ctx, c)
		}
		e := runProgram(t, Request{Call: call, Code: `
			const r = await Promise.all(Array.from({length: 200}, (_, i) => tools.issues.get_issue({id: i})))
			return r.reduce((s, x) => s + x.structuredContent.id, 0)`})
		wantStatus(t, e, wire.StatusReturned)
		if string(e.Value) != "19900" {
			t.Fatalf("sum %s", e.Value)
		}
		if p := peak.Load(); p > wire.DefaultMaxInFlight || p < 8 {
			t.Fatalf("peak calls in flight %d; want ≤ %d (and real fan-out)", p, wire.DefaultMaxInFlight)
		}
		if e.Calls.Total != 200 || e.Calls.Answered != 200 || e.Calls.NeverSent != 0 {
			t.Fatalf("ledger %+v", e.Calls)
		}
	})
	t.Run("calls in flight at the deadline are named", func(t *testing.T) {
		t.Parallel()
		e := runProgram(t, Request{Call: blockingCall, Limits: wire.Limits{TimeoutMs: 500}, Code: `
			await Promise.all(Array.from({length: 20}, (_, i) => tools.issues.add_comment({id: i, body: 'x'.repeat(500)})))`})
		wantStatus(t, e, wire.StatusTimedOut)
		c := e.Calls
		if c.Total != 16 || c.NeverSent != 4 || len(c.Unseen) != MaxUnseenListed || c.UnseenMore != 6 {
			t.Fatalf("ledger total %d, neverSent %d, unseen %d + %d", c.Total, c.NeverSent, len(c.Unseen), c.UnseenMore)
		}
		u := c.Unseen[0]
		if u.Tool != "issues.add_comment" || u.State != CallInFlight || !strings.HasPrefix(u.Args, `{"id":0,"body":"xxx`) || len([]rune(u.Args)) != MaxLedgerArgChars {
			t.Fatalf("unseen call %+v", u)
		}
	})
	t.Run("returning with calls in flight names them", func(t *testing.T) {
		t.Parallel()
		e := runProgram(t, Request{Call: blockingCall, Code: `tools.issues.add_comment({id: 1}); return 'left it'`})
		wantStatus(t, e, wire.StatusReturned)
		if len(e.Calls.Unseen) != 1 || e.Calls.Unseen[0].State != CallInFlight {
			t.Fatalf("ledger %+v", e.Calls)
		}
	})
}

// TestStop stops programs while they compute and while they wait.
func TestStop(t *testing.T) {
	for _, tt := range []struct{ name, code string }{
		{"computing", `while (true) {}`},
		{"waiting on a call", `await tools.issues.add_comment({id: 9})`},
		{"printing", `for (;;) console.log('spam')`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inCall := make(chan struct{}, 1)
			call := func(ctx context.Context, c Call) Outcome {
				inCall <- struct{}{}
				return blockingCall(ctx, c)
			}
			r, err := Start(context.Background(), testConfig(""), Request{Code: tt.code, Catalog: testCatalog, Call: call})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-inCall:
			case <-time.After(300 * time.Millisecond):
			}
			begin := time.Now()
			r.Stop("the test is done")
			r.Stop("twice is fine")
			e := r.Wait()
			wantStatus(t, e, wire.StatusStopped)
			// The worker ended the run itself: not killed after the grace.
			if e.Error == nil || e.Error.Message != "the run was stopped" {
				t.Fatalf("stop ended with %+v after %s: the worker should end the run itself, at once", e.Error, time.Since(begin))
			}
			if strings.Contains(tt.code, "add_comment") && (len(e.Calls.Unseen) != 1 || e.Calls.Unseen[0].Args != `{"id":9}`) {
				t.Fatalf("the call in flight is not named: %+v", e.Calls)
			}
		})
	}
	t.Run("cancelled context stops", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		r, err := Start(ctx, testConfig(""), Request{Code: `while (true) {}`})
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(100*time.Millisecond, cancel)
		wantStatus(t, r.Wait(), wire.StatusStopped)
	})
}

// TestHostileRunsDoNotDisturbOthers runs hostile programs beside normal ones.
func TestHostileRunsDoNotDisturbOthers(t *testing.T) {
	hostile := []string{`while (true) {}`, `const a = []; for (;;) a.push({a})`, `function f() { f() } f()`, `for (;;) console.log('x'.repeat(1000))`}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			code, want := `return (await tools.issues.get_issue({id: `+fmt.Sprint(i)+`})).structuredContent.id`, wire.StatusReturned
			if i%3 == 0 {
				code, want = hostile[(i/3)%len(hostile)], ""
			}
			e, err := Execute(context.Background(), testConfig(""), Request{Code: code, Catalog: testCatalog, Call: echoCall, Limits: wire.Limits{TimeoutMs: 2000}})
			if err != nil {
				errs <- err
				return
			}
			if want != "" && (e.Status != want || string(e.Value) != fmt.Sprint(i)) {
				errs <- fmt.Errorf("normal run %d ended %s with %s beside hostile ones", i, e.Status, e.Value)
			}
			if want == "" && (e.Status == wire.StatusReturned || e.Status == wire.StatusCrashed) {
				errs <- fmt.Errorf("hostile run %d ended %s: %s", i, e.Status, e.Text())
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"memory too small", Request{Code: "1", Limits: wire.Limits{MemoryBytes: 1 << 20}}, "memory is 1048576 bytes; allowed 4194304 to"},
		{"timeout too long", Request{Code: "1", Limits: wire.Limits{TimeoutMs: 3_600_000}}, "timeout"},
		{"code too large", Request{Code: strings.Repeat(" ", wire.MaxCodeBytes+1)}, "above the cap"},
		{"code not UTF-8", Request{Code: "\xff"}, "UTF-8"},
		{"input not JSON", Request{Code: "1", Input: json.RawMessage(`{`)}, "input"},
		{"duplicate tool", Request{Code: "1", Catalog: []wire.Tool{{Server: "a", Name: "b"}, {Server: "a", Name: "b"}}}, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Start(context.Background(), testConfig(""), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestProgress reads a run's output while it runs: each piece is returned
// once, by Progress or by the ending, never both.
func TestProgress(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	inCall := make(chan struct{})
	call := func(ctx context.Context, c Call) Outcome {
		close(inCall)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return echoCall(ctx, c)
	}
	r, err := Start(context.Background(), testConfig(""), Request{Catalog: testCatalog, Call: call,
		Code: `console.log('before'); await tools.issues.get_issue({id: 1}); console.log('after'); return 'done'`})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-inCall:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never arrived")
	}
	// Output frames are flushed before the call frame, so "before" is here.
	p := r.Progress()
	if p.Output.Text != "before\n" || p.Calls.Total != 1 || len(p.Calls.Unseen) != 1 || p.Calls.Unseen[0].State != CallInFlight {
		t.Fatalf("progress mid-run: %+v", p)
	}
	if again := r.Progress(); again.Output.Text != "" {
		t.Fatalf("the same output came back twice: %q", again.Output.Text)
	}
	close(release)
	e := r.Wait()
	wantStatus(t, e, wire.StatusReturned)
	if e.Output.Text != "after\n" || e.Calls.Answered != 1 {
		t.Fatalf("ending output %q, calls %+v: want only what Progress did not take", e.Output.Text, e.Calls)
	}
	if p := r.Progress(); p.Output.Text != "" {
		t.Fatalf("progress after the ending: %+v", p)
	}
}
