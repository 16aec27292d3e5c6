package worker

// Attacks on the engine from plain JavaScript, run in real workers: each row
// reaches a defect of quickjs-ng 0.15.1 that a patch under
// third_party/quickjs-ng/patches fixes. Without its patch a row ends
// crashed (the worker died) or returns the wrong value.

import (
	"encoding/json"
	"testing"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// wideJS builds a flat wide string of n distinct characters, U+4E00 up.
const wideJS = `const wide = n => Array.from({length: n}, (_, i) => String.fromCharCode(0x4e00 + i)).join('');`

// churnJS defines churn(), which allocates enough short-lived objects to run
// the cycle collector (the runtime's GC threshold is 256 KiB): a program has
// no gc() to call.
const churnJS = `function churn() { let j = []; for (let i = 0; i < 20000; i++) j.push({i}); j = null }`

func TestEngineAttacks(t *testing.T) {
	tests := []struct {
		name   string
		patch  string // the patch under third_party/quickjs-ng/patches that fixes it
		code   string
		limits wire.Limits
		status wire.Status
		value  string   // exact JSON, when status is returned
		errHas []string // parts of "name: message\nstack", when it threw
	}{
		{name: "console.log of a wide slice (issue 11, item 1)", patch: "0001",
			code:   `console.log("\ud83d".repeat(16001)); return "ok"`,
			status: wire.StatusReturned, value: `"ok"`},
		{name: "an error whose message and stack are wide slices", patch: "0001",
			code: wideJS + `const P = wide(6000);
				for (let i = 0; i < 50; i++) { const e = new Error(P.slice(100, 1000)); e.stack = P.slice(i, 2000); console.log(e) }
				const e = new TypeError(P.slice(2000, 2600)); e.stack = P.slice(0, 3000); throw e`,
			status: wire.StatusThrew, errHas: []string{"TypeError: " + string([]rune{0x4e00 + 2000, 0x4e00 + 2001, 0x4e00 + 2002})}},
		{name: "arrays grown through .length then pushed, then collected (issue 13)", patch: "0002",
			code: `const keep = [];
				for (let i = 0; i < 40; i++) { const a = [0]; a.length = 245; a.push({i}); keep.push(a) }
				let junk = []; for (let i = 0; i < 300000; i++) junk.push({i}); junk = null;
				return keep.every((a, i) => a.length === 246 && a[0] === 0 && a[245].i === i && !(1 in a) && !(244 in a))`,
			status: wire.StatusReturned, value: `true`},
		{name: "arrays shrunk, regrown through .length, then pushed", patch: "0002",
			code: `const keep = [];
				for (let i = 0; i < 40; i++) { const a = [{a: 1}, {b: 2}, {c: 3}, {d: 4}, {e: 5}]; a.length = 2; a.length = 5; a.push({f: i}); keep.push(a) }
				let junk = []; for (let i = 0; i < 300000; i++) junk.push({i}); junk = null;
				return keep.every((a, i) => a.length === 6 && a[1].b === 2 && a[5].f === i && !(2 in a) && a[3] === undefined)`,
			status: wire.StatusReturned, value: `true`},
		{name: "DisposableStack: a disposer collects after an earlier one was freed", patch: "0003",
			code: churnJS + `let n = 0;
				for (let k = 0; k < 20; k++) {
					const s = new DisposableStack();
					s.adopt({k}, () => { churn(); n++ });   // disposed last: collects
					for (let i = 0; i < 8; i++) s.use({i, [Symbol.dispose]() { n++ }});
					s.defer(() => { n++ });                  // disposed first
					s.dispose();
				}
				return n`,
			status: wire.StatusReturned, value: `200`},
		{name: "AsyncDisposableStack: a step's reject handler called with no argument", patch: "0004",
			code: churnJS + `const then = Promise.prototype.then;
				let saved = [], threw = 0;
				Promise.prototype.then = function (f, r) { if (typeof r === 'function') saved.push(r); return Promise.resolve() };
				for (let k = 0; k < 20; k++) { const s = new AsyncDisposableStack(); s.use(undefined); s.defer(() => {}); s.disposeAsync() }
				Promise.prototype.then = then;
				const caught = new Set();
				for (const r of saved) { try { r() } catch (e) { caught.add(e === undefined ? 'undefined' : typeof e) } churn() }
				return [saved.length, ...caught]`,
			status: wire.StatusReturned, value: `[20,"undefined"]`},
		{name: "AsyncDisposableStack: a rethrow's reject handler called with no argument", patch: "0004",
			code: churnJS + `const then = Promise.prototype.then;
				let saved = [], calls = 0;
				Promise.prototype.then = function (f, r) {
					calls++;
					if (calls === 1) return r({previous: 1});  // drives the step into its rethrow branch
					if (calls === 2) saved.push(r);           // the rethrow's reject handler
					return Promise.resolve();
				};
				for (let k = 0; k < 20; k++) { calls = 0; const s = new AsyncDisposableStack(); s.defer(() => undefined); s.defer(() => { throw {first: k} }); s.disposeAsync() }
				Promise.prototype.then = then;
				const caught = new Set();
				for (const r of saved) { try { r() } catch (e) { caught.add(e instanceof SuppressedError && e.error === undefined && e.suppressed.previous === 1) } churn() }
				return [saved.length, ...caught]`,
			status: wire.StatusReturned, value: `[20,true]`},
		{name: "RegExp.escape of a rope (issue 13)", patch: "0005",
			code: `const out = [];
				for (const [unit, n] of [['a', 50000], ['a.b-c|d', 4000], ['\u20ac\u2603', 4000], ['x', 700]]) {
					const rope = unit.repeat(n) + unit.repeat(n), flat = unit.repeat(2 * n);
					out.push(RegExp.escape(rope) === RegExp.escape(flat));
				}
				return out`,
			status: wire.StatusReturned, value: `[true,true,true,true]`},
		{name: "a suspended async function reachable only through a closure survives a collection", patch: "0009",
			code: churnJS + `const leaked = [];
				async function step(i) { const d = {i, w: Promise.withResolvers()}; leaked.push(() => d); await d.w.promise }
				for (let i = 0; i < 50; i++) step(i);
				churn(); churn();
				return leaked.every((f, i) => f().i === i && typeof f().w.resolve === 'function')`,
			status: wire.StatusReturned, value: `true`},
		{name: "a suspended generator in a cycle, reachable only through a closure, survives a collection", patch: "0009",
			code: churnJS + `const leaked = [];
				for (let i = 0; i < 50; i++) (function () {
					let g;
					function* gen() { const o = {i}; o.g = g; leaked.push(() => o); yield 1; yield o.i }
					g = gen(); g.next(); g = null;
				})();
				churn(); churn();
				return leaked.every((f, i) => f().i === i && f().g.next().value === i)`,
			status: wire.StatusReturned, value: `true`},
		{name: "a suspended async function reachable only through its arguments survives a collection", patch: "0009",
			code: churnJS + `const leaked = [];
				globalThis.leaked = leaked;
				const AsyncFunction = (async function () {}).constructor;
				const step = AsyncFunction('a', 'globalThis.leaked.push(() => arguments); await new Promise(() => {})');
				for (let i = 0; i < 50; i++) step({i});
				churn(); churn();
				return leaked.length === 50 && leaked.every((f, i) => f()[0].i === i)`,
			status: wire.StatusReturned, value: `true`},
		{name: "unreachable suspended coroutines with closures over their locals are still collected", patch: "0009",
			// 100,000 of them hold far more than the 32 MiB limit: this ends
			// out_of_memory if the fix made them uncollectable.
			limits: wire.Limits{MemoryBytes: 32 << 20},
			code: `for (let i = 0; i < 100000; i++) {
					(async () => { const x = {pad: new Array(64).fill(i)}; const f = () => x; x.f = f; await new Promise(() => {}) })();
					(function* () { const y = {pad: new Array(64).fill(i)}; y.g = () => y; yield 1; yield 2 })().next();
				}
				return 'collected'`,
			status: wire.StatusReturned, value: `"collected"`},
		{name: "Proxy ownKeys returning a huge length", patch: "0010",
			code: `const out = [];
				for (const length of [0x20000000, 0xffffffff, 1e6]) {
					const p = new Proxy({}, {ownKeys() { return {length} }});
					try { Object.keys(p); out.push('none') } catch (e) { out.push(e.name + ': ' + e.message) }
				}
				const q = new Proxy({}, {ownKeys() { return {length: 3, 0: 'a', 1: 'b', 2: 'c'} }, getOwnPropertyDescriptor() { return {value: 1, enumerable: true, configurable: true} }});
				out.push(Object.keys(q).join());
				return out`,
			status: wire.StatusReturned, value: `["TypeError: proxy: properties must be strings or symbols","TypeError: proxy: properties must be strings or symbols","TypeError: proxy: properties must be strings or symbols","a,b,c"]`},
		{name: "ArrayBuffers detached by transfer, then collected", patch: "0011",
			code: churnJS + `let n = 0;
				for (let i = 0; i < 2000; i++) {
					const b = new ArrayBuffer(64 + i), v = new Uint8Array(b); v[0] = i & 255;
					const t = i % 2 ? b.transfer(0) : b.transfer();
					n += b.detached && v.length === 0 && (i % 2 ? t.byteLength === 0 : new Uint8Array(t)[0] === (i & 255)) ? 1 : 0;
				}
				churn();
				return n`,
			status: wire.StatusReturned, value: `2000`},
		{name: "TypedArray sort with a comparator", patch: "0012",
			code: `const a = new Int32Array(100000); for (let i = 0; i < a.length; i++) a[i] = (i * 7919) % 100003;
				a.sort((x, y) => y - x);
				let sorted = true; for (let i = 1; i < a.length; i++) if (a[i - 1] < a[i]) sorted = false;
				return [sorted, new Float64Array([3, 1, 2]).sort((x, y) => x - y).join()]`,
			status: wire.StatusReturned, value: `[true,"1,2,3"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := runProgram(t, Request{Code: tt.code, Limits: tt.limits, Call: echoCall})
			if e.Status != tt.status {
				b, _ := json.MarshalIndent(e, "", "  ")
				t.Fatalf("status %s, want %s (fixed by patch %s); ending:\n%s", e.Status, tt.status, tt.patch, b)
			}
			if tt.value != "" && string(e.Value) != tt.value {
				t.Errorf("value %s, want %s (fixed by patch %s)", e.Value, tt.value, tt.patch)
			}
			if len(tt.errHas) > 0 {
				wantErrorContains(t, e, tt.errHas...)
			}
		})
	}
}
