package mcpgw

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// tsPrograms are TypeScript programs and what they return: every kind of
// type syntax an agent writes, with top-level await and return.
var tsPrograms = []struct {
	name, code, want string
}{
	{"annotations", "const x: number = 1;\nlet s: string | null = null;\nreturn x + 1;", `2`},
	{"interface and generics", `interface Issue { id: number; title: string }
function first<T extends { id: number }>(xs: T[]): T | undefined { return xs[0]; }
const issues: Issue[] = [{ id: 7, title: "a" }];
return first<Issue>(issues)?.id;`, `7`},
	{"as and satisfies", "const v = JSON.parse('{\"a\":1}') as { a: number };\nconst c = { b: 2 } satisfies { b: number };\nreturn v.a + c.b;", `3`},
	{"enums", "enum Color { Red, Green = \"g\" }\nconst enum Size { S = 1, L = 3 }\nreturn [Color.Red, Color.Green, Color[0], Size.L];", `[0,"g","Red",3]`},
	{"top-level await and return", "const n: number = await Promise.resolve(5);\nif (n > 4) return { big: n } as const;\nreturn null;", `{"big":5}`},
	{"type aliases and declare vanish", "type Id = string;\ndeclare const nothing: Id;\ninterface Empty {}\nreturn typeof nothing;", `"undefined"`},
	{"only types", "interface A { a: string }\ntype B = A[];", `null`},
	{"non-null, optional chaining, tuples", "const m = new Map<string, [number, string]>([[\"k\", [1, \"x\"]]]);\nreturn m.get(\"k\")![1];", `"x"`},
	{"classes with modifiers", "class P { constructor(private readonly n: number, public tag?: string) {} get double(): number { return this.n * 2; } }\nreturn new P(21).double;", `42`},
	{"abstract classes and implements", "interface F { f(): number }\nabstract class A implements F { abstract f(): number; g() { return this.f() + 2; } }\nclass B extends A { f() { return 1; } }\nreturn new B().g();", `3`},
	{"unicode kept", "const s: string = \"é😀\";\nreturn s.length;", `3`},
	{"a string with }", "const s: string = \"}\\n}\";\nreturn s;", `"}\n}"`},
}

// TestTypeScriptPrograms strips each program's types in the parent and
// runs it in a real worker.
func TestTypeScriptPrograms(t *testing.T) {
	g := newTestGateway(t)
	for _, tc := range tsPrograms {
		t.Run(tc.name, func(t *testing.T) {
			p, err := CompileTS(tc.code)
			if err != nil {
				t.Fatalf("CompileTS: %v", err)
			}
			e := run(t, g, p.JS, 0)
			wantStatus(t, e, wire.StatusReturned)
			if string(e.Value) != tc.want {
				t.Fatalf("returned %s, want %s; JavaScript:\n%s", e.Value, tc.want, p.JS)
			}
		})
	}
}

// TestTypeScriptSyntaxErrors: esbuild's first error, at the program's own
// line and column (1-based, in bytes as QuickJS counts them).
func TestTypeScriptSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		name, code   string
		line, column int
		message      string
	}{
		{"missing expression", "const x: number = ;", 1, 19, `Unexpected ";"`},
		{"on line 3", "const a = 1;\nconst b = 2;\nconst c: = 3;", 3, 10, `Unexpected "="`},
		{"after non-ASCII", "const s = \"ééé\"; const q: number = ;", 1, 39, `Unexpected ";"`},
		{"unclosed brace at the end", "if (true) {\n  return 1;", 2, 12, `Unexpected end of file`},
		{"import is not in a body", "import x from \"y\";\nreturn x;", 1, 8, `Unexpected "x"`},
		{"a namespace is not in a body", "namespace NS { export const v = 1; }", 1, 11, `Expected ";" but found "NS"`},
		{"after CRLF lines", "const a = 1;\r\nconst b = 2;\r\nlet c: number = );", 3, 17, `Unexpected ")"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompileTS(tc.code)
			var se *TSSyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("CompileTS: %v, want a *TSSyntaxError", err)
			}
			if se.Line != tc.line || se.Column != tc.column || (tc.message != "" && se.Message != tc.message) {
				t.Fatalf("got %d:%d %q, want %d:%d %q", se.Line, se.Column, se.Message, tc.line, tc.column, tc.message)
			}
			e := se.Ending("js-x")
			if e.Status != wire.StatusThrew || e.Error.Name != "SyntaxError" || e.Error.Stack != fmt.Sprintf("    at program.ts:%d:%d", tc.line, tc.column) {
				t.Fatalf("ending %+v %+v", e, e.Error)
			}
			if !strings.Contains(e.Text(), fmt.Sprintf("|     at program.ts:%d:%d\n", tc.line, tc.column)) {
				t.Fatalf("the rendering does not name the position:\n%s", e.Text())
			}
		})
	}
	if _, err := CompileTS(strings.Repeat("x", wire.MaxCodeBytes+1)); !errors.Is(err, worker.ErrBadRequest) {
		t.Fatalf("a program over the cap: %v", err)
	}
}

// tsStackProgram throws from a function, after lines that esbuild removes
// (an interface) or changes (an enum), from a line that esbuild splits in
// two, so that a position left in JavaScript's coordinates would be wrong.
const tsStackProgram = `interface Shape {
  kind: "circle" | "square";
  size: number;
}
enum Kind { Circle = "circle", Square = "square" }
type Area = number;
function area(s: Shape): Area {
  const k: number = s.size; if (k > 2) throw new RangeError("too big: " + k);
  return s.kind === Kind.Square ? k * k : k;
}
console.log("before");
try { area({ kind: "circle", size: 5 }); } catch (e) { console.log(e); }
return area({ kind: "square", size: 9 } as Shape);`

// TestTypeScriptStackPositions: a runtime error's stack, in the ending and
// in the output, points to the TypeScript's lines, and to the same token
// of them that QuickJS names in the JavaScript.
func TestTypeScriptStackPositions(t *testing.T) {
	g := newTestGateway(t)
	p, err := CompileTS(tsStackProgram)
	if err != nil {
		t.Fatal(err)
	}
	raw := run(t, g, p.JS, 0)
	wantStatus(t, raw, wire.StatusThrew)
	e := p.MapEnding(raw)
	if e == raw || raw.Error.Stack == e.Error.Stack || !strings.Contains(raw.Error.Stack, "program.js") {
		t.Fatalf("MapEnding changed its argument, or nothing: %q", raw.Error.Stack)
	}
	// Where QuickJS points in a JavaScript line, as the distance from the
	// start of anchor; the same distance from anchor in the TypeScript line.
	frame := regexp.MustCompile(`at (\S+) \(program\.js:(\d+):(\d+)\)`)
	ts := strings.Split(tsStackProgram, "\n")
	want := func(fn string, tsLine int, anchor string) string {
		for _, m := range frame.FindAllStringSubmatch(raw.Error.Stack, -1) {
			if m[1] != fn {
				continue
			}
			var line, col int
			fmt.Sscan(m[2], &line)
			fmt.Sscan(m[3], &col)
			js := p.jsLines[line-1]
			off := col - 1 - strings.Index(js, anchor)
			if strings.Index(js, anchor) < 0 || off < 0 || off >= len(anchor) {
				t.Fatalf("QuickJS points at %d:%d, outside %q in %q", line, col, anchor, js)
			}
			return fmt.Sprintf("at %s (program.ts:%d:%d)", fn, tsLine, strings.Index(ts[tsLine-1], anchor)+off+1)
		}
		t.Fatalf("no frame of %s in %q", fn, raw.Error.Stack)
		return ""
	}
	wantArea := want("area", 8, `throw new RangeError("too big: " + k)`)
	wantProgram := want("<program>", 13, "area(")
	if !strings.Contains(e.Error.Stack, wantArea+"\n    "+wantProgram) {
		t.Fatalf("stack:\n%s\nwant:\n    %s\n    %s\n(JavaScript:\n%s)", e.Error.Stack, wantArea, wantProgram, p.JS)
	}
	if !strings.Contains(e.Output.Text, wantArea) || strings.Contains(e.Output.Text, "program.js") {
		t.Fatalf("the output's stack does not point into the TypeScript:\n%s", e.Output.Text)
	}
}

// TestSourceMap decodes known mappings and refuses broken ones.
func TestSourceMap(t *testing.T) {
	// Line 0: segments at columns 0 and 15 from source 0:0 and 0:15;
	// line 1: one at column 2 from source 2:4; line 2: none.
	m, err := parseSourceMap([]byte(`{"version":3,"mappings":"AAAA,eAAe;EAEX;"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, col, genCol, srcLine, srcCol int }{
		{0, 0, 0, 0, 0}, {0, 14, 0, 0, 0}, {0, 15, 15, 0, 15}, {0, 20, 15, 0, 15},
		{1, 0, 2, 2, 4}, {1, 2, 2, 2, 4}, {1, 5, 2, 2, 4},
		{2, 3, -1, 2, 4}, // no segment on the line: the last one before
	} {
		seg, ok := m.lookup(tc.line, tc.col)
		if want := (mapSegment{tc.genCol, tc.srcLine, tc.srcCol}); !ok || seg != want {
			t.Errorf("lookup(%d, %d) = %+v, %v; want %+v", tc.line, tc.col, seg, ok, want)
		}
	}
	if _, ok := m.lookup(7, 0); ok {
		t.Error("a line past the map was mapped")
	}
	for _, bad := range []string{`{"version":3,"mappings":"A!"}`, `{"version":3,"mappings":"g"}`, `{"version":3,"mappings":"AA"}`,
		`{"version":3,"mappings":"AAAAAA"}`, `{"version":2,"mappings":""}`, `[]`, `{"version":3,"mappings":"gggggggggggggA"}`} {
		if _, err := parseSourceMap([]byte(bad)); !errors.Is(err, errBadSourceMap) {
			t.Errorf("parseSourceMap(%s): %v, want errBadSourceMap", bad, err)
		}
	}
}

// FuzzSourceMap: no mappings make the reader panic, and lookups stay on
// the map's lines.
func FuzzSourceMap(f *testing.F) {
	for _, s := range []string{"AAAA,eAAe;EAEJ;", ";;;", "gggggggggggggA", "A,B;C", "+/+/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, mappings string) {
		raw, _ := json.Marshal(map[string]any{"version": 3, "mappings": mappings})
		m, err := parseSourceMap(raw)
		if err != nil {
			return
		}
		for l := -1; l <= len(m.lines); l++ {
			m.lookup(l, 3)
		}
	})
}

// TestTypeScriptPositionUnits: columns convert between QuickJS's bytes and
// the map's UTF-16 units, so a line with non-ASCII text maps right.
func TestTypeScriptPositionUnits(t *testing.T) {
	src := "const s: string = \"é😀\"; const n: number = 1; null!.x;"
	p, err := CompileTS(src)
	if err != nil {
		t.Fatal(err)
	}
	jsAt := -1
	for i, l := range p.jsLines {
		if strings.Contains(l, "null") {
			jsAt = i
		}
	}
	if jsAt < 0 {
		t.Fatalf("no null in %q", p.JS)
	}
	jsLine := p.jsLines[jsAt]
	jsCol := strings.Index(jsLine, "null") + 1
	line, col, ok := p.Position(jsAt+1, jsCol)
	if want := strings.Index(src, "null") + 1; !ok || line != 1 || col != want {
		t.Fatalf("Position(1, %d) = %d:%d %v, want 1:%d (JavaScript %q)", jsCol, line, col, ok, want, jsLine)
	}
	if _, _, ok := p.Position(99, 1); ok {
		t.Fatal("a line past the program was mapped")
	}
	text := "x\n    at f (program.js:" + fmt.Sprint(jsAt+1) + ":" + fmt.Sprint(jsCol) + ")\n    at program.js:1:1\nprogram.js:1:1 stays"
	got := p.MapText(text)
	want := "x\n    at f (program.ts:1:" + fmt.Sprint(strings.Index(src, "null")+1) + ")\n    at program.ts:1:1\nprogram.js:1:1 stays"
	if got != want {
		t.Fatalf("MapText:\n%s\nwant:\n%s", got, want)
	}
}

func TestLanguages(t *testing.T) {
	for in, want := range map[string]Language{"": JavaScript, "js": JavaScript, "JavaScript": JavaScript, "ts": TypeScript, "typescript": TypeScript} {
		if got, err := ParseLanguage(in); err != nil || got != want {
			t.Errorf("ParseLanguage(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseLanguage("python"); err == nil || !strings.Contains(err.Error(), `"typescript"`) {
		t.Errorf("ParseLanguage(python): %v", err)
	}
	for name, want := range map[string]Language{"a.ts": TypeScript, "b.MTS": TypeScript, "c.cts": TypeScript, "d.js": JavaScript, "-": JavaScript, "e.tsx": JavaScript} {
		if got := LanguageOfFile(name); got != want {
			t.Errorf("LanguageOfFile(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestWorkerDoesNotLinkEsbuild: types are stripped in the parent; the
// worker binary stays small.
func TestWorkerDoesNotLinkEsbuild(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goBin, "list", "-deps", filepath.Join(root, "cmd", "run-js-worker")).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/run-js-worker: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "esbuild") || strings.HasSuffix(pkg, "/pkg/mcpgw") {
			t.Fatalf("the worker binary links %s", pkg)
		}
	}
	if !strings.Contains(string(out), "pkg/jsrt") {
		t.Fatalf("go list printed no worker packages:\n%s", out)
	}
}

// tsBenchProgram is a 2 KB TypeScript program of the kind an agent writes.
func tsBenchProgram() string {
	var b strings.Builder
	b.WriteString("interface Issue { id: number; title: string; state: \"open\" | \"closed\"; labels: string[] }\n")
	for i := 0; b.Len() < 2000; i++ {
		fmt.Fprintf(&b, "const r%d = (await tools.demo.list_issues({ state: \"open\" })).structuredContent as { issues: Issue[] };\n", i)
		fmt.Fprintf(&b, "const n%d: number = r%d.issues.filter((x: Issue) => x.labels.includes(\"bug\")).length;\n", i, i)
	}
	b.WriteString("return { n: n0 };\n")
	return b.String()
}

// BenchmarkCompileTS: the parent's cost of a TypeScript program of 2 KB
// (goal: at most 0.3 ms).
func BenchmarkCompileTS(b *testing.B) {
	src := tsBenchProgram()
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileTS(src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTSMapEnding: mapping an ending's stack back (only a run that
// threw pays it; the first mapping parses the source map).
func BenchmarkTSMapEnding(b *testing.B) {
	src := tsBenchProgram()
	stack := "    at <program> (program.js:3:10)"
	b.ReportAllocs()
	for b.Loop() {
		p, err := CompileTS(src)
		if err != nil {
			b.Fatal(err)
		}
		p.MapEnding(&worker.Ending{Status: wire.StatusThrew, Error: &wire.ErrorInfo{Name: "E", Stack: stack}})
	}
}
