package jsrt

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// stackProbeCases are stack strings observed verbatim from quickjs-ng v0.15.1 (github.com/buke/quickjs-go v0.7.7):
// code was compiled with the AsyncFunction constructor (so file <input>, user line L is line L+2) from a prelude
// evaluated as prelude.js, and the stack of the error it threw (or that its compilation threw) was read.
var stackProbeCases = []struct {
	name, code, in, want string
}{
	{name: "body line 1", code: "throw new Error('boom1')",
		in:   "    at anonymous (<input>:3:11)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <program> (program.js:1:11)"},
	{name: "body line 5", code: "let a = 1\nlet b = 2\nlet c = 3\nlet d = 4\nthrow new Error('boom5')",
		in:   "    at anonymous (<input>:7:11)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <program> (program.js:5:11)"},
	{name: "nested named", code: "function outer() {\n  inner()\n}\nfunction inner() {\n  throw new Error('nested')\n}\nouter()",
		in:   "    at inner (<input>:7:13)\n    at outer (<input>:4:3)\n    at anonymous (<input>:9:1)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at inner (program.js:5:13)\n    at outer (program.js:2:3)\n    at <program> (program.js:7:1)"},
	{name: "arrow", code: "const f = () => {\n  throw new Error('arrow')\n}\nf()",
		in:   "    at f (<input>:4:13)\n    at anonymous (<input>:6:1)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at f (program.js:2:13)\n    at <program> (program.js:4:1)"},
	{name: "method", code: "const o = {\n  meth() {\n    throw new Error('method')\n  }\n}\no.meth()",
		in:   "    at meth (<input>:5:15)\n    at anonymous (<input>:8:3)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at meth (program.js:3:15)\n    at <program> (program.js:6:3)"},
	{name: "class method", code: "class K {\n  go() { throw new TypeError('cls') }\n}\nnew K().go()",
		in:   "    at go (<input>:4:20)\n    at anonymous (<input>:6:9)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at go (program.js:2:20)\n    at <program> (program.js:4:9)"},
	{name: "native callback", code: "[1].map(x => { throw new Error('m') })",
		in:   "    at <anonymous> (<input>:3:26)\n    at map (native)\n    at anonymous (<input>:3:9)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <anonymous> (program.js:1:26)\n    at <program> (program.js:1:9)"},
	{name: "type error", code: "let u\nu.x",
		in:   "    at anonymous (<input>:4:1)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <program> (program.js:2:1)"},
	{name: "reference error", code: "\nnotDefined + 1",
		in:   "    at anonymous (<input>:4:1)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <program> (program.js:2:1)"},
	{name: "syntax error", code: "let a = 1\nlet b = 2\nlet x = ;",
		in:   "    at <input>:5:1\n    at AsyncFunction (native)\n    at <anonymous> (prelude.js:15:14)\n",
		want: "    at program.js:3:1"},
	{name: "syntax error line 1", code: "}",
		in:   "    at <input>:4:16\n    at AsyncFunction (native)\n    at <anonymous> (prelude.js:15:14)\n",
		want: "    at program.js:2:16"},
	{name: "syntax error unterminated", code: "let s = 'abc\n",
		in:   "    at <input>:3:1\n    at AsyncFunction (native)\n    at <anonymous> (prelude.js:15:14)\n",
		want: "    at program.js:1:1"},
	{name: "after await", code: "await null\nthrow new Error('after await')",
		in:   "    at anonymous (<input>:4:11)\n",
		want: "    at <program> (program.js:2:11)"},
	{name: "in then", code: "await Promise.resolve(1).then(() => {\n  throw new Error('then')\n})",
		in:   "    at <anonymous> (<input>:4:13)\n",
		want: "    at <anonymous> (program.js:2:13)"},
	{name: "recursion", code: "function r(n) { return r(n + 1) + 1 }\nr(0)",
		in:   "    at r (<input>:3:30)\n    at r (<input>:3:30)\n    at r (<input>:3:30)\n    at r (<input>:3:30)\n    at r (<input>:3:30)\n    at r (<input>:3:30)\n    at r (<input>:3:30)\n    at r (<input>:3:30)\n    at r (<input>:3:30)\n    at r (<input>:3:30)\n",
		want: "    at r (program.js:1:30)\n    at r (program.js:1:30)\n    at r (program.js:1:30)\n    at r (program.js:1:30)\n    at r (program.js:1:30)\n    at r (program.js:1:30)\n    at r (program.js:1:30)\n    at r (program.js:1:30)\n    at r (program.js:1:30)\n    at r (program.js:1:30)"},
	{name: "recursion limit 100", code: "Error.stackTraceLimit = 100\nfunction r(n) { return r(n + 1) + 1 }\nr(0)",
		in:   "    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n    at r (<input>:4:30)\n",
		want: "    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    at r (program.js:2:30)\n    ... 14 more frames"},
	{name: "deep limit 100", code: "Error.stackTraceLimit = 100\nfunction d(n) { if (n === 0) throw new Error('deep'); return d(n - 1) }\nd(80)",
		in:   "    at d (<input>:4:40)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n    at d (<input>:4:68)\n",
		want: "    at d (program.js:2:40)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    at d (program.js:2:68)\n    ... 14 more frames"},
	{name: "weird name", code: "const f = function () { throw new Error('w') }\nObject.defineProperty(f, 'name', { value: 'a (b) c' })\nf()",
		in:   "    at a (b) c (<input>:3:35)\n    at anonymous (<input>:5:1)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at a (b) c (program.js:1:35)\n    at <program> (program.js:3:1)"},
	{name: "eval inner", code: "eval('\\n\\nthrow new Error(\"ev\")')",
		in:   "    at <eval> (<input>:3:11)\n    at anonymous (<input>:3:1)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <eval> (program.js:1:11)\n    at <program> (program.js:1:1)"},
	{name: "thrown string", code: "throw 'str'",
		in:   "undefined",
		want: ""},
	{name: "eval syntax error", code: "\neval('1 +')",
		in:   "    at <input>:1:1\n    at anonymous (<input>:4:1)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <program> (program.js:2:1)"},
	{name: "new Function inner", code: "const g = new Function('\\n\\nthrow new Error(\"fn\")')\ng()",
		in:   "    at anonymous (<input>:5:11)\n    at anonymous (<input>:4:1)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <program> (program.js:3:11)\n    at <program> (program.js:2:1)"},
	{name: "user AsyncFunction syntax", code: "const AF = (async function () {}).constructor\nnew AF('let = = 1')",
		in:   "    at <input>:3:1\n    at AsyncFunction (native)\n    at anonymous (<input>:4:5)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <program> (program.js:2:5)"},
	{name: "limit 0", code: "Error.stackTraceLimit = 0\nthrow new Error('none')",
		in:   "",
		want: ""},
	{name: "getter", code: "const o = { get x() { throw new Error('g') } }\no.x",
		in:   "    at get x (<input>:3:33)\n    at anonymous (<input>:4:1)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at get x (program.js:1:33)\n    at <program> (program.js:2:1)"},
	{name: "constructor", code: "class K { constructor() { throw new Error('c') } }\nnew K()",
		in:   "    at K (<input>:3:37)\n    at anonymous (<input>:4:5)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at K (program.js:1:37)\n    at <program> (program.js:2:5)"},
	{name: "symbol method", code: "const o = { [Symbol.iterator]() { throw new Error('s') } }\no[Symbol.iterator]()",
		in:   "    at [Symbol.iterator] (<input>:3:45)\n    at anonymous (<input>:4:10)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at [Symbol.iterator] (program.js:1:45)\n    at <program> (program.js:2:10)"},
	{name: "async named", code: "async function af() {\n  throw new Error('af')\n}\nawait af()",
		in:   "    at af (<input>:4:13)\n    at anonymous (<input>:6:7)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at af (program.js:2:13)\n    at <program> (program.js:4:7)"},
	{name: "async named after await", code: "async function af() {\n  await null\n  throw new Error('af2')\n}\nawait af()",
		in:   "    at af (<input>:5:13)\n",
		want: "    at af (program.js:3:13)"},
	{name: "json parse", code: "JSON.parse('{\"a\":')",
		in:   "    at <input>:1:1\n    at parse (native)\n    at anonymous (<input>:3:6)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <program> (program.js:1:6)"},
	{name: "newline name", code: "const f = function () { throw new Error('nl') }\nObject.defineProperty(f, 'name', { value: 'x\\n    at y (<input>:9:9)' })\nf()",
		in:   "    at x\n    at y (<input>:9:9) (<input>:3:35)\n    at anonymous (<input>:5:1)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at y (<input>:9:9) (program.js:1:35)\n    at <program> (program.js:3:1)"},
	{name: "syntax col", code: "let a = 1\n   let x = 1 +;",
		in:   "    at <input>:4:4\n    at AsyncFunction (native)\n    at <anonymous> (prelude.js:15:14)\n",
		want: "    at program.js:2:4"},
	{name: "syntax col2", code: "let a = 1\nfoo(1,, 2)",
		in:   "    at <input>:4:1\n    at AsyncFunction (native)\n    at <anonymous> (prelude.js:15:14)\n",
		want: "    at program.js:2:1"},
	{name: "regexp syntax", code: "new RegExp('(')",
		in:   "    at RegExp (native)\n    at anonymous (<input>:3:5)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <program> (program.js:1:5)"},
	{name: "custom stack", code: "const e = new Error('cs')\ne.stack = 'hello'\nthrow e",
		in:   "hello",
		want: ""},
	{name: "error created elsewhere", code: "const e = new Error('made')\n\nthrow e",
		in:   "    at anonymous (<input>:3:15)\n    at <anonymous> (prelude.js:21:3)\n",
		want: "    at <program> (program.js:1:15)"},
}

func TestProgramStackObserved(t *testing.T) {
	for _, tc := range stackProbeCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProgramStack(tc.in, 2); got != tc.want {
				t.Errorf("code %q\nProgramStack(%q, 2) =\n%s\nwant\n%s", tc.code, tc.in, got, tc.want)
			}
		})
	}
}

func TestProgramStack(t *testing.T) {
	tests := []struct {
		name, in   string
		lineOffset int
		want       string
	}{
		{name: "empty", in: "", lineOffset: 2, want: ""},
		{name: "only newlines", in: "\n\n\n", lineOffset: 2, want: ""},
		{name: "no trailing newline in input", in: "    at f (<input>:5:1)", lineOffset: 2, want: "    at f (program.js:3:1)"},
		{name: "offset zero", in: "    at f (<input>:5:1)\n", lineOffset: 0, want: "    at f (program.js:5:1)"},
		{name: "negative offset counts as zero", in: "    at f (<input>:5:1)\n", lineOffset: -7, want: "    at f (program.js:5:1)"},
		{name: "line never below 1", in: "    at f (<input>:1:4)\n    at g (<input>:0:1)\n", lineOffset: 2, want: "    at f (program.js:1:4)\n    at g (program.js:1:1)"},
		{name: "large offset", in: "    at f (<input>:1000:2)\n", lineOffset: 990, want: "    at f (program.js:10:2)"},
		{name: "only anonymous is the program", in: "    at anonymousX (<input>:3:1)\n    at Anonymous (<input>:3:1)\n    at <anonymous> (<input>:3:1)\n", lineOffset: 2,
			want: "    at anonymousX (program.js:1:1)\n    at Anonymous (program.js:1:1)\n    at <anonymous> (program.js:1:1)"},
		{name: "other files dropped", in: "    at f (prelude.js:3:1)\n    at g (other.js:3:1)\n    at h (input:3:1)\n    at i (<input>x:3:1)\n    at j (<INPUT>:3:1)\n", lineOffset: 2, want: ""},
		{name: "native and missing dropped", in: "    at map (native)\n    at f (missing)\n    at g (<null>)\n    at h (<null>:1:1)\n", lineOffset: 2, want: ""},
		{name: "unparseable lines dropped", in: strings.Join([]string{
			"Error: boom",
			"at",
			"    at",
			"    at ",
			"    at f",
			"    at f (<input>:3:1",
			"    at f <input>:3:1)",
			"    at f (<input>)",
			"    at f (<input>:3)",
			"    at f (<input>:3:)",
			"    at f (<input>::1)",
			"    at f (<input>:x:1)",
			"    at f (<input>:3:1x)",
			"    at f (<input>:-3:1)",
			"    at f (<input>:+3:1)",
			"    at f (<input>:3:1:1)",
			"    at f (<input>:99999999999999999999999:1)",
			"    at  (<input>:3:1)",
			"    at <input>:3",
			"    at <input>:3:1 trailing",
			"    by f (<input>:3:1)",
			"    atf (<input>:3:1)",
			"    at f (<input>:3:1)",
		}, "\n"), lineOffset: 2, want: "    at f (program.js:1:1)"},
		{name: "CRLF and tabs tolerated", in: "\tat f (<input>:4:2)\r\n  at g (<input>:5:3)\r\n", lineOffset: 2, want: "    at f (program.js:2:2)\n    at g (program.js:3:3)"},
		{name: "name with parentheses and spaces", in: "    at a (b) c  (<input>:3:1)\n", lineOffset: 2, want: "    at a (b) c  (program.js:1:1)"},
		{name: "name that looks like a position", in: "    at <input>:7:7 (<input>:3:1)\n    at <input>:8:8 (native)\n", lineOffset: 2, want: "    at <input>:7:7 (program.js:1:1)"},
		{name: "non-ASCII name", in: "    at grüße😀 (<input>:3:1)\n", lineOffset: 2, want: "    at grüße😀 (program.js:1:1)"},
		{name: "huge column kept as is", in: "    at f (<input>:3:123456789012345678901234567890)\n", lineOffset: 2, want: "    at f (program.js:1:123456789012345678901234567890)"},
		{name: "leading zeros in line normalised", in: "    at f (<input>:007:01)\n", lineOffset: 2, want: "    at f (program.js:5:01)"},
		{name: "position line alone is the program's syntax error", in: "    at <input>:9:3\n", lineOffset: 2, want: "    at program.js:7:3"},
		{name: "position line before program frames is dropped", in: "    at <input>:9:3\n    at eval (native)\n    at anonymous (<input>:4:1)\n", lineOffset: 2, want: "    at <program> (program.js:2:1)"},
		{name: "position line after all program frames is kept", in: "    at anonymous (<input>:4:1)\n    at <input>:9:3\n", lineOffset: 2, want: "    at <program> (program.js:2:1)\n    at program.js:7:3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProgramStack(tc.in, tc.lineOffset); got != tc.want {
				t.Errorf("ProgramStack(%q, %d) =\n%s\nwant\n%s", tc.in, tc.lineOffset, got, tc.want)
			}
		})
	}
}

func stackFrames(n int, format string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

func TestProgramStackFrameCap(t *testing.T) {
	for _, tc := range []struct {
		frames int
		more   string
	}{
		{49, ""},
		{50, ""},
		{51, "\n    ... 1 more frames"},
		{64, "\n    ... 14 more frames"},
	} {
		t.Run(fmt.Sprint(tc.frames), func(t *testing.T) {
			in := stackFrames(tc.frames, "    at f%d (<input>:12:1)\n    at map (native)\n")
			want := strings.TrimSuffix(stackFrames(min(tc.frames, 50), "    at f%d (program.js:10:1)\n"), "\n") + tc.more
			if got := ProgramStack(in, 2); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
	// Dropped frames do not count toward the cap.
	in := stackFrames(200, "    at p%d (prelude.js:1:1)\n") + stackFrames(3, "    at f%d (<input>:3:1)\n")
	if got, want := ProgramStack(in, 2), "    at f0 (program.js:1:1)\n    at f1 (program.js:1:1)\n    at f2 (program.js:1:1)"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// linear fails the test when f, linear in its input, is still running after
// a minute: these inputs take well under a second on an idle machine, and
// quadratic work on them takes hours. It is a watchdog, not a speed check.
func linear(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: still running after a minute: ProgramStack is not linear", what)
	}
}

// TestProgramStackLong checks that a very long stack (an Error's stack property can be set to anything) is
// handled in linear time: 1e6 frames, and one 16 MB line.
func TestProgramStackLong(t *testing.T) {
	const n = 1_000_000
	in := stackFrames(n, "    at f%d (<input>:3:1)\n")
	var got string
	linear(t, "1e6 frames", func() { got = ProgramStack(in, 2) })
	want := strings.TrimSuffix(stackFrames(50, "    at f%d (program.js:1:1)\n"), "\n") + fmt.Sprintf("\n    ... %d more frames", n-50)
	if got != want {
		t.Errorf("got %d bytes ending %q", len(got), got[max(0, len(got)-60):])
	}

	long := "    at " + strings.Repeat("x (", 4<<20) + " (<input>:3:1)"
	linear(t, "a 16 MB line", func() { got = ProgramStack(long, 2) })
	if want := "    at " + strings.Repeat("x (", 4<<20) + " (program.js:1:1)"; got != want {
		t.Errorf("long name: got %d bytes", len(got))
	}
	// Many position lines and program frames interleaved.
	mixed := stackFrames(n/2, "    at <input>:%d:1\n    at g (<input>:4:1)\n")
	if got := ProgramStack(mixed, 2); strings.Contains(got, "    at program.js:") || !strings.HasSuffix(got, fmt.Sprintf("... %d more frames", n/2-50)) {
		t.Errorf("interleaved: got %d bytes ending %q", len(got), got[max(0, len(got)-60):])
	}
}

func FuzzProgramStack(f *testing.F) {
	for _, tc := range stackProbeCases {
		f.Add(tc.in, 2)
	}
	f.Add("    at f (<input>:3:1)\n    at <input>:1:1\n", 0)
	f.Add("    at a (b) (c (<input>:3:1)", -1)
	f.Fuzz(func(t *testing.T, stack string, lineOffset int) {
		got := ProgramStack(stack, lineOffset)
		if strings.HasSuffix(got, "\n") {
			t.Fatalf("trailing newline in %q", got)
		}
		if strings.Contains(got, "<input>:") && !strings.Contains(stack, "<input>:") {
			t.Fatalf("output names <input> that the input did not")
		}
		lines := strings.Split(got, "\n")
		if got == "" {
			lines = nil
		}
		if len(lines) > 51 {
			t.Fatalf("%d lines", len(lines))
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, "    at ") && !(i == 50 && strings.HasPrefix(l, "    ... ")) {
				t.Fatalf("line %d = %q", i, l)
			}
			if strings.HasPrefix(l, "    at ") && !strings.Contains(l, "program.js:") {
				t.Fatalf("line %d = %q", i, l)
			}
		}
		// Every line it writes names program.js, not <input>, so a second pass keeps nothing.
		if again := ProgramStack(got, 0); again != "" {
			t.Fatalf("second pass kept %q", again)
		}
	})
}
