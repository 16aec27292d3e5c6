package interop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// setupDemo is setup with the demo tracker as the only downstream server:
// what the TypeScript tests need.
func setupDemo(t *testing.T) *env {
	t.Helper()
	e := &env{node: requireNode(t), dir: testDir(t)}
	if !fileExists(filepath.Join(e.dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")) {
		prerequisite(t, "test/interop/node_modules is missing or incomplete; "+npmHint)
	}
	e.gateway = buildGateway(t, e.dir)
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"demo": map[string]any{"command": e.gateway, "args": []string{"demo-server"}}}})
	if err != nil {
		t.Fatal(err)
	}
	e.config = filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(e.config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// tsEnding is the part of run_js's structured content these tests read.
type tsEnding struct {
	Status string          `json:"status"`
	Value  json.RawMessage `json:"value"`
	Error  *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Stack   string `json:"stack"`
	} `json:"error"`
	Calls struct {
		Total    int `json:"total"`
		Answered int `json:"answered"`
		Refused  int `json:"refused"`
	} `json:"calls"`
}

func tsResult(t *testing.T, raw []byte) (tsEnding, string, bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent tsEnding `json:"structuredContent"`
		IsError           bool     `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("run_js result: %v\n%s", err, raw)
	}
	return res.StructuredContent, res.Content[0].Text, res.IsError
}

// tsTracker uses interfaces, generics, as, satisfies and an enum against
// the demo tracker.
const tsTracker = `interface Issue { id: number; title: string; state: "open" | "closed"; labels: string[] | null }
enum State { Open = "open", Closed = "closed" }
type Listed = { issues: Issue[]; total: number };

async function list<T extends Issue = Issue>(state: State): Promise<T[]> {
  const r = await tools.demo.list_issues({ state });
  return (r.structuredContent as Listed).issues as T[];
}
const open: Issue[] = await list(State.Open);
const closed = await list<Issue>(State.Closed);
const summary = { open: open.length, closed: closed.length, firstId: open[0]!.id } satisfies Record<string, number>;
return summary;`

// tsThrows throws from a function on line 4 of the TypeScript, after an
// interface esbuild removes and an enum it rewrites.
const tsThrows = `interface Req { id: number }
enum Mode { Strict = 1 }
function check(r: Req, m: Mode): number {
  if (m === Mode.Strict && r.id > 100) throw new RangeError("id too large: " + r.id);
  return r.id;
}
return check({ id: 101 } as Req, Mode.Strict);`

// TestTypeScriptThroughTheTSClient: TypeScript programs sent by the
// TypeScript SDK's client, against the demo tracker: they run, a syntax
// error names its line and column, a runtime error's stack points to the
// TypeScript's own line, and a program that begins with a search_tools
// answer (declarations) runs.
func TestTypeScriptThroughTheTSClient(t *testing.T) {
	e := setupDemo(t)

	t.Run("interfaces, generics, as, satisfies, enums", func(t *testing.T) {
		_, raw := runJS(t, e, tsTracker, 20_000, "--language", "typescript")
		end, text, isErr := tsResult(t, raw)
		var v struct{ Open, Closed, FirstID int }
		_ = json.Unmarshal(end.Value, &v)
		if isErr || end.Status != "returned" || v.Open == 0 || v.Closed == 0 || v.FirstID == 0 || end.Calls.Answered != 2 {
			t.Fatalf("status %s, value %s:\n%s", end.Status, end.Value, text)
		}
	})

	t.Run("a syntax error", func(t *testing.T) {
		_, raw := runJS(t, e, "const a: number = 1;\nconst b: string = 'x';\nconst c: = a;\nreturn c;", 0, "--language", "typescript")
		end, text, isErr := tsResult(t, raw)
		if !isErr || end.Status != "threw" || end.Error == nil || end.Error.Name != "SyntaxError" || end.Error.Stack != "    at program.ts:3:10" ||
			!strings.Contains(text, "|     at program.ts:3:10\n") {
			t.Fatalf("a syntax error: %+v\n%s", end.Error, text)
		}
	})

	t.Run("a runtime error's stack", func(t *testing.T) {
		_, raw := runJS(t, e, tsThrows, 0, "--language", "typescript")
		end, text, isErr := tsResult(t, raw)
		frames := regexp.MustCompile(`at (\S+) \(program\.ts:(\d+):\d+\)`).FindAllStringSubmatch(end.Error.Stack, -1)
		if !isErr || end.Error.Name != "RangeError" || len(frames) < 2 || frames[0][1] != "check" || frames[0][2] != "4" || frames[1][1] != "<program>" || frames[1][2] != "7" {
			t.Fatalf("stack %q, want check at line 4 and <program> at line 7:\n%s", end.Error.Stack, text)
		}
		if strings.Contains(text, "program.js") {
			t.Fatalf("a position in JavaScript's coordinates:\n%s", text)
		}
	})

	t.Run("a program that begins with a search_tools answer", func(t *testing.T) {
		program := `type Listed = NonNullable<Awaited<ReturnType<typeof tools.demo.list_issues>>["structuredContent"]>;
const r = await tools.demo.list_issues({ state: "all", limit: 3 });
const listed: Listed = r.structuredContent!;
const blocks: ContentBlock[] = r.content;
let refused = false;
try { await tools.demo.add_comment({ id: 101 } as any); } catch (err) { refused = err instanceof ToolRefused; }
return { total: listed.total, ids: listed.issues!.map((i) => i.id), blocks: blocks.length, refused };`
		_, raw := runJS(t, e, program, 20_000, "--language", "typescript", "--prepend-search", "list issues")
		end, text, isErr := tsResult(t, raw)
		var v struct {
			Total   int
			IDs     []int
			Refused bool
		}
		_ = json.Unmarshal(end.Value, &v)
		if isErr || end.Status != "returned" || v.Total == 0 || len(v.IDs) != 3 || !v.Refused {
			t.Fatalf("status %s, value %s:\n%s", end.Status, end.Value, text)
		}
	})

	t.Run("TypeScript sent as JavaScript is told to pass the language", func(t *testing.T) {
		_, raw := runJS(t, e, "const n: number = 1;\nreturn n;", 0)
		_, text, isErr := tsResult(t, raw)
		if !isErr || !strings.Contains(text, `hint: this program is not JavaScript but parses as TypeScript: run it again with language: "typescript"`) {
			t.Fatalf("no hint:\n%s", text)
		}
	})
}
