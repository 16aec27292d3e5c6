package mcpgw

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// declCatalog is a catalog with every kind of name and schema a
// declaration must carry through: quoted names, reserved words, output
// schemas, descriptions with comment ends, schemas cut for size.
func declCatalog() []wire.Tool {
	tools := []wire.Tool{
		{Server: "github", Name: "list_issues", Description: "List issues.\n\nSecond */ paragraph.",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"repo":{"type":"string","description":"owner/name */ x"},"state":{"enum":["open","closed"]}},"required":["repo"]}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"issues":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"title":{"type":"string"}}}},"total":{"type":"integer"}},"required":["issues","total"]}`)},
		{Server: "my-server", Name: "get-issue", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}}}`)},
		{Server: "class", Name: "delete", Description: "Reserved words as names."},
		{Server: "s", Name: "a\"b\\c\u2028d", Description: "An odd name."},
		{Server: "s", Name: "deep", InputSchema: json.RawMessage(nestedSchema(100))},
		{Server: "s", Name: "x", OutputSchema: json.RawMessage(`{"type":"string"}`)},
		{Server: "github", Name: "add_comment"},
	}
	for i, tc := range tsTypeCases {
		tools = append(tools, wire.Tool{Server: "cases", Name: fmt.Sprintf("case_%d", i), InputSchema: json.RawMessage(tc.schema), OutputSchema: json.RawMessage(tc.schema)})
	}
	return tools
}

// TestTSDeclarationsParse: search_tools' answer is TypeScript that esbuild
// parses and strips whole, so a program may begin with it; and it declares
// every type it uses.
func TestTSDeclarationsParse(t *testing.T) {
	decls := TSDeclarations(declCatalog())
	p, err := CompileTS(decls + "\nreturn 1;")
	if err != nil {
		t.Fatalf("the declarations do not parse: %v\n%s", err, decls)
	}
	if strings.TrimSpace(p.JS) != "return 1;" {
		t.Fatalf("the declarations left JavaScript behind:\n%s", p.JS)
	}
	// Two answers one after the other still parse (declarations repeat).
	if _, err := CompileTS(decls + "\n" + decls + "\nreturn 1;"); err != nil {
		t.Fatalf("two answers together do not parse: %v", err)
	}
	for _, want := range []string{"declare const tools: {\n  github: {\n", `    "get-issue"(args: { id?: number }): Promise<ToolResult>;`,
		"  class: {\n    /** Reserved words as names. */\n    delete(args: ", "list_issues(args: {\n      /** owner/name *\\/ x */\n      repo: string;",
		"Promise<ToolResult<{ issues: { id?: number; title?: string }[]; total: number }>>;", "x(args: { [key: string]: unknown }): Promise<ToolResult<string>>;"} {
		if !strings.Contains(decls, want) {
			t.Errorf("the declarations lack %q:\n%s", want, decls)
		}
	}
	// Every type named in a declaration is declared: the shared types.
	for _, name := range []string{"ToolResult", "ContentBlock", "EmbeddedResource", "Annotations", "ToolRefused", "ToolFailed"} {
		if !strings.Contains(decls, "interface "+name) && !strings.Contains(decls, "type "+name+" ") && !strings.Contains(decls, "declare class "+name) {
			t.Errorf("%s is used but not declared", name)
		}
	}
}

// blockKeys are the keys a content block has as normalizeResult encodes it,
// and those of its embedded resource.
func blockKeys(t *testing.T, c mcp.Content) (keys, resourceKeys []string) {
	t.Helper()
	b, err := normalizeResult(&mcp.CallToolResult{Content: []mcp.Content{c}})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Content []map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("%s: %v", b, err)
	}
	for k := range res.Content[0] {
		keys = append(keys, k)
	}
	if r, ok := res.Content[0]["resource"]; ok {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(r, &m)
		for k := range m {
			resourceKeys = append(resourceKeys, k)
		}
	}
	return keys, resourceKeys
}

// checkFields fails unless keys are exactly what fields allow: every key
// declared, every field that is not optional present.
func checkFields(t *testing.T, what string, keys []string, fields []tsField) {
	t.Helper()
	declared := map[string]bool{}
	for _, f := range fields {
		declared[f.name] = true
		if !f.optional && !slices.Contains(keys, f.name) {
			t.Errorf("%s: %s is declared required but absent at run time (keys %v)", what, f.name, keys)
		}
	}
	for _, k := range keys {
		if !declared[k] {
			t.Errorf("%s: %s is present at run time but not declared", what, k)
		}
	}
}

// TestResultTypesAgree: what a call resolves to at run time (normalizeResult)
// is what ToolResult and ContentBlock declare, for every kind of block,
// with all its fields and with only the required ones.
func TestResultTypesAgree(t *testing.T) {
	ann := &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5, LastModified: "2026-01-01T00:00:00Z"}
	meta := mcp.Meta{"k": "v"}
	size := int64(3)
	blocks := map[string][]mcp.Content{
		"text":  {&mcp.TextContent{Text: "hi", Annotations: ann, Meta: meta}, &mcp.TextContent{}},
		"image": {&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png", Annotations: ann, Meta: meta}, &mcp.ImageContent{MIMEType: "image/png"}},
		"audio": {&mcp.AudioContent{Data: []byte{1}, MIMEType: "audio/wav", Annotations: ann, Meta: meta}, &mcp.AudioContent{MIMEType: "audio/wav"}},
		"resource_link": {
			&mcp.ResourceLink{URI: "file:///a", Name: "a", Title: "A", Description: "d", MIMEType: "text/plain", Size: &size,
				Icons: []mcp.Icon{{Source: "data:,", MIMEType: "image/png", Sizes: []string{"1x1"}, Theme: "dark"}}, Annotations: ann, Meta: meta},
			&mcp.ResourceLink{URI: "file:///a", Name: "a"},
		},
		"resource": {
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///r", MIMEType: "text/plain", Text: "t", Meta: meta}, Annotations: ann, Meta: meta},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///r", Blob: []byte{1, 2}}},
		},
	}
	for _, decl := range tsContentBlocks {
		list, ok := blocks[decl.typ]
		if !ok {
			t.Errorf("no test block of type %s", decl.typ)
			continue
		}
		delete(blocks, decl.typ)
		fields := append(append([]tsField{{name: "type"}}, decl.fields...), tsBlockCommon...)
		for i, c := range list {
			keys, resourceKeys := blockKeys(t, c)
			checkFields(t, fmt.Sprintf("%s block %d", decl.typ, i), keys, fields)
			if decl.typ == "resource" {
				checkFields(t, fmt.Sprintf("%s block %d: resource", decl.typ, i), resourceKeys, tsEmbeddedResource)
			}
		}
	}
	for typ := range blocks {
		t.Errorf("content blocks of type %s reach programs but are not declared", typ)
	}

	for _, res := range []*mcp.CallToolResult{{}, {Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, StructuredContent: map[string]any{"a": 1}, IsError: true}} {
		b, err := normalizeResult(res)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		checkFields(t, "result "+string(b), keys, tsToolResult)
		if res.StructuredContent == nil && string(m["structuredContent"]) != "null" {
			t.Errorf("a result without structured content: structuredContent is %s, declared S | null", m["structuredContent"])
		}
	}
}

// FuzzTSDeclarationsParse: whatever schemas and names a server sends, the
// declarations parse as TypeScript.
func FuzzTSDeclarationsParse(f *testing.F) {
	for _, tc := range tsTypeCases[:20] {
		f.Add("s", "t", "doc */ x", tc.schema)
	}
	f.Add("my-server", "a\"b\n*/", "/* */", `{"properties":{"*/":{"description":"*/"}}}`)
	f.Fuzz(func(t *testing.T, server, name, desc, schema string) {
		tool := wire.Tool{Server: server, Name: name, Description: desc, InputSchema: json.RawMessage(schema), OutputSchema: json.RawMessage(schema)}
		decls := TSDeclarations([]wire.Tool{tool})
		if _, err := CompileTS(decls + "\nreturn 1;"); err != nil {
			t.Fatalf("the declaration does not parse: %v\n%s", err, decls)
		}
	})
}

// declaredMembers lists the members a declaration in tsSharedTypes gives
// the type or class it declares.
func declaredMembers(t *testing.T, head string) []string {
	t.Helper()
	i := strings.Index(tsSharedTypes, head)
	if i < 0 {
		t.Fatalf("tsSharedTypes has no %q", head)
	}
	body := tsSharedTypes[i+len(head):]
	body = body[:strings.Index(body, "\n")]
	var names []string
	for _, m := range regexp.MustCompile(`(?:^|[{;] |\*/ )(\w+)\??: `).FindAllStringSubmatch(body, -1) {
		names = append(names, m[1])
	}
	slices.Sort(names)
	return names
}

// TestGlobalsAgreeWithDeclarations: what a program really gets as
// ToolRefused, ToolFailed, ALL_TOOLS entries and call results has exactly
// the members the declarations give them.
func TestGlobalsAgreeWithDeclarations(t *testing.T) {
	g := newTestGateway(t, testServer("demo", "demo"), testServer("bad", "misbehaving"))
	e := run(t, g, `
const keys = (o) => Object.keys(o).sort();
let refused, failed;
try { await tools.demo.get_issue({ id: "x" }); } catch (err) { refused = err; }
try { await tools.bad.crash({}); } catch (err) { failed = err; }
const all = ALL_TOOLS.find((x) => x.name === "get_issue");
return {
  refused: keys(refused), refusedIs: refused instanceof ToolRefused && refused instanceof Error && refused.mayHaveRun === false,
  failed: keys(failed), failedIs: failed instanceof ToolFailed && failed.mayHaveRun === true,
  all: keys(all), input: typeof input,
  result: keys(await tools.demo.get_issue({ id: 101 })),
};`, 0)
	wantStatus(t, e, wire.StatusReturned)
	var got struct {
		Refused, Failed, All, Result []string
		RefusedIs, FailedIs          bool
		Input                        string
	}
	if err := json.Unmarshal(e.Value, &got); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		got  []string
		head string
	}{
		{"ToolRefused", got.Refused, "declare class ToolRefused extends Error "},
		{"ToolFailed", got.Failed, "declare class ToolFailed extends Error "},
		{"an ALL_TOOLS entry", got.All, "declare const ALL_TOOLS: readonly "},
		{"a call's result", got.Result, "interface ToolResult<S = unknown> "},
	} {
		if want := declaredMembers(t, c.head); !slices.Equal(c.got, want) {
			t.Errorf("%s has %v at run time, declared %v", c.what, c.got, want)
		}
	}
	if !got.RefusedIs || !got.FailedIs || got.Input != "undefined" {
		t.Errorf("instanceof and mayHaveRun: %+v", got)
	}
}
