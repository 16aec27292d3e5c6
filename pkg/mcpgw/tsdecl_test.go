package mcpgw

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// tsTypeCases are schemas and the exact TypeScript they render as.
var tsTypeCases = []struct {
	name, schema, want string
}{
	{"string", `{"type":"string"}`, `string`},
	{"integer is number", `{"type":"integer"}`, `number`},
	{"number", `{"type":"number","minimum":0}`, `number`},
	{"boolean", `{"type":"boolean"}`, `boolean`},
	{"null", `{"type":"null"}`, `null`},
	{"type array is a union", `{"type":["string","number","boolean"]}`, `string | number | boolean`},
	{"nullable via type array", `{"type":["string","null"]}`, `string | null`},
	{"integer and number once", `{"type":["integer","number"]}`, `number`},
	{"nullable, OpenAPI", `{"type":"string","nullable":true}`, `string | null`},
	{"unknown type", `{"type":"file"}`, `unknown`},
	{"true", `true`, `unknown`},
	{"false", `false`, `never`},
	{"empty schema", `{}`, `unknown`},
	{"only annotations", `{"description":"anything","examples":[1]}`, `unknown`},

	{"array", `{"type":"array","items":{"type":"string"}}`, `string[]`},
	{"array of a union", `{"type":"array","items":{"type":["string","number"]}}`, `(string | number)[]`},
	{"array without items", `{"type":"array"}`, `unknown[]`},
	{"array implied by items", `{"items":{"type":"boolean"}}`, `boolean[]`},
	{"nested arrays", `{"type":"array","items":{"type":"array","items":{"type":"integer"}}}`, `number[][]`},
	{"prefixItems, closed", `{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false}`, `[string, number]`},
	{"prefixItems, open", `{"prefixItems":[{"type":"string"}]}`, `[string, ...unknown[]]`},
	{"prefixItems, then items", `{"prefixItems":[{"type":"string"}],"items":{"type":"boolean"}}`, `[string, ...boolean[]]`},
	{"draft-07 items array", `{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}`, `[string, number]`},
	{"draft-07 additionalItems", `{"items":[{"type":"string"}],"additionalItems":{"enum":[1,2]}}`, `[string, ...(1 | 2)[]]`},

	{"object, required and optional", `{"type":"object","properties":{"repo":{"type":"string"},"limit":{"type":"integer"}},"required":["repo"]}`, `{ repo: string; limit?: number }`},
	{"object keeps the schema's order", `{"properties":{"z":{"type":"string"},"a":{"type":"string"},"m":{"type":"string"}}}`, `{ z?: string; a?: string; m?: string }`},
	{"object, any keys", `{"type":"object"}`, `{ [key: string]: unknown }`},
	{"object, no keys", `{"type":"object","additionalProperties":false}`, `{}`},
	{"object, closed", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{ a?: string }`},
	{"additionalProperties", `{"type":"object","additionalProperties":{"type":"number"}}`, `{ [key: string]: number }`},
	{"properties and additionalProperties", `{"properties":{"a":{"type":"string"}},"additionalProperties":{"type":"number"}}`, `{ a?: string } & { [key: string]: number }`},
	{"an array of those", `{"items":{"properties":{"a":{"type":"string"}},"additionalProperties":{"type":"number"}}}`, `({ a?: string } & { [key: string]: number })[]`},
	{"additionalProperties with descriptions", `{"additionalProperties":{"properties":{"n":{"type":"number","description":"N."}}}}`,
		"{\n  [key: string]: {\n    /** N. */\n    n?: number;\n  };\n}"},
	{"patternProperties", `{"type":"object","patternProperties":{"^x-":{"type":"string"},"^n-":{"type":"number"}}}`, `{ [key: string]: string | number }`},
	{"required without a property", `{"type":"object","properties":{"a":{"type":"string"}},"required":["b","a"]}`, `{ a: string; b: unknown }`},
	{"names that are not identifiers", `{"properties":{"my-key":{"type":"string"},"0x":{},"a b":{"type":"null"},"$ok_1":{"type":"boolean"},"ü":{"type":"number"}},"required":["my-key"]}`,
		`{ "my-key": string; "0x"?: unknown; "a b"?: null; $ok_1?: boolean; "ü"?: number }`},
	{"reserved words are fine as keys", `{"properties":{"default":{"type":"string"},"class":{"type":"string"}}}`, `{ default?: string; class?: string }`},
	{"nested objects", `{"properties":{"a":{"properties":{"b":{"type":"array","items":{"properties":{"c":{"type":"string"}},"required":["c"]}}}}}}`, `{ a?: { b?: { c: string }[] } }`},

	{"enum of strings", `{"type":"string","enum":["open","closed"]}`, `"open" | "closed"`},
	{"enum, mixed", `{"enum":["a",1,2.50,-3,true,null]}`, `"a" | 1 | 2.50 | -3 | true | null`},
	{"enum, quoted JSON", `{"enum":["say \"hi\"","a\nb","</x>","\u2028"]}`, `"say \"hi\"" | "a\nb" | "</x>" | "\u2028"`}, // encoding/json escapes U+2028: the line stays one
	{"enum, objects and arrays", `{"enum":[{"b":1,"a":[true]},[1,"x"]]}`, `{ "b": 1, "a": [true] } | [1, "x"]`},
	{"enum repeated", `{"enum":["a","a"]}`, `"a"`},
	{"empty enum", `{"enum":[]}`, `never`},
	{"const", `{"const":"fixed"}`, `"fixed"`},
	{"const null", `{"type":"string","const":null}`, `null`},
	{"big number kept exactly", `{"const":18446744073709551616}`, `18446744073709551616`},

	{"anyOf", `{"anyOf":[{"type":"string"},{"type":"number"}]}`, `string | number`},
	{"oneOf of objects", `{"oneOf":[{"properties":{"kind":{"const":"a"}},"required":["kind"]},{"properties":{"kind":{"const":"b"},"n":{"type":"integer"}},"required":["kind"]}]}`,
		`{ kind: "a" } | { kind: "b"; n?: number }`},
	{"anyOf with null", `{"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}]}`, `string[] | null`},
	{"anyOf of constraints only", `{"type":"string","anyOf":[{"minLength":1},{"pattern":"x"}]}`, `string`},
	{"allOf", `{"allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"number"}}}]}`, `{ a?: string } & { b?: number }`},
	{"oneOf with a constraint-only branch", `{"properties":{"a":{"type":"string"}},"oneOf":[{"required":["a"]},{"properties":{"b":{"type":"number"}},"required":["b"]}]}`,
		`{ a?: string }`},
	{"allOf with a union", `{"allOf":[{"properties":{"a":{"type":"string"}}},{"anyOf":[{"type":"object"},{"type":"null"}]}]}`,
		`{ a?: string } & ({ [key: string]: unknown } | null)`},
	{"allOf and anyOf", `{"allOf":[{"properties":{"a":{"type":"string"}}}],"anyOf":[{"properties":{"b":{"type":"number"}}},{"properties":{"c":{"type":"number"}}}]}`,
		`{ a?: string } & ({ b?: number } | { c?: number })`},

	{"$ref to $defs", `{"type":"object","properties":{"owner":{"$ref":"#/$defs/User"}},"$defs":{"User":{"type":"object","properties":{"login":{"type":"string"}},"required":["login"]}}}`,
		`{ owner?: { login: string } }`},
	{"$ref to definitions", `{"items":{"$ref":"#/definitions/Id"},"definitions":{"Id":{"type":["integer","string"]}}}`, `(number | string)[]`},
	{"$ref used twice", `{"properties":{"a":{"$ref":"#/$defs/S"},"b":{"$ref":"#/$defs/S"}},"$defs":{"S":{"enum":["x","y"]}}}`, `{ a?: "x" | "y"; b?: "x" | "y" }`},
	{"$ref with escapes", `{"$ref":"#/$defs/a~1b%20c","$defs":{"a/b c":{"type":"boolean"}}}`, `boolean`},
	{"recursive $ref", `{"$ref":"#/$defs/Node","$defs":{"Node":{"type":"object","properties":{"value":{"type":"number"},"next":{"$ref":"#/$defs/Node"}}}}}`,
		`{ value?: number; next?: unknown /* recursive $ref #/$defs/Node */ }`},
	{"recursive $ref to the root", `{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"}}}}`, `{ kids?: unknown /* recursive $ref # */[] }`},
	{"mutually recursive $refs", `{"$ref":"#/$defs/A","$defs":{"A":{"properties":{"b":{"$ref":"#/$defs/B"}}},"B":{"properties":{"a":{"$ref":"#/$defs/A"}}}}}`,
		`{ b?: { a?: unknown /* recursive $ref #/$defs/A */ } }`},
	{"$ref to another document", `{"$ref":"https://example.com/schema.json#/x"}`, `unknown /* $ref https://example.com/schema.json#/x */`},
	{"$ref to an anchor", `{"$ref":"#node"}`, `unknown /* $ref #node */`},
	{"$ref not found", `{"$ref":"#/$defs/Nope"}`, `unknown /* $ref #/$defs/Nope not found */`},
	{"$ref and a comment close", `{"$ref":"x*/y"}`, `unknown /* $ref x*\/y */`},
	{"$ref with siblings", `{"$ref":"#/$defs/A","required":["id"],"properties":{"id":{"type":"string"}},"$defs":{"A":{"properties":{"name":{"type":"string"}}}}}`,
		`{ name?: string } & { id: string }`},

	{"descriptions, one per line", `{"type":"object","properties":{"repo":{"type":"string","description":"The repository,\n  as owner/name."},"state":{"enum":["open","closed"]}},"required":["repo"]}`,
		"{\n  /** The repository, as owner/name. */\n  repo: string;\n  state?: \"open\" | \"closed\";\n}"},
	{"description of a $ref target", `{"properties":{"u":{"$ref":"#/$defs/U"}},"$defs":{"U":{"type":"string","description":"A user."}}}`,
		"{\n  /** A user. */\n  u?: string;\n}"},
	{"descriptions, nested", `{"properties":{"a":{"type":"object","properties":{"b":{"type":"string","description":"B."}}},"c":{"type":"number"}}}`,
		"{\n  a?: {\n    /** B. */\n    b?: string;\n  };\n  c?: number;\n}"},
	{"description cut, comment closed", `{"properties":{"a":{"type":"string","description":"` + strings.Repeat("x", 150) + ` */ end"}}}`,
		"{\n  /** " + strings.Repeat("x", 119) + "… */\n  a?: string;\n}"},
	{"description with */", `{"properties":{"a":{"description":"a */ b /* c"}}}`, "{\n  /** a *\\/ b /* c */\n  a?: unknown;\n}"},

	{"depth cut", nestedSchema(12), `{ a?: { a?: { a?: { a?: { a?: { a?: { a?: { a?: { a?: unknown /* … */ } } } } } } } } }`},
	{"too deep to check", nestedSchema(300), `unknown /* … */`},
	{"not JSON", `{"type":`, `unknown`},
	{"trailing bytes", `{"type":"string"} x`, `unknown`},
	{"a number", `5`, `unknown`},
	{"empty bytes", ``, `unknown`},
	{"null", `null`, `unknown`},
}

// nestedSchema is n objects, each the property "a" of the one before.
func nestedSchema(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
}

func TestTSType(t *testing.T) {
	if len(tsTypeCases) < 20 {
		t.Fatalf("%d cases, want at least 20", len(tsTypeCases))
	}
	for _, tc := range tsTypeCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderTSType(json.RawMessage(tc.schema)); got != tc.want {
				t.Errorf("renderTSType(%s)\n got %s\nwant %s", tc.schema, got, tc.want)
			}
		})
	}
}

func TestTSDecl(t *testing.T) {
	for _, tc := range []struct {
		name string
		tool wire.Tool
		want string
	}{
		{
			"identifiers",
			wire.Tool{Server: "github", Name: "list_issues", Description: "List issues.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"repo":{"type":"string"},"state":{"type":"string","enum":["open","closed"]},"limit":{"type":"integer"}},"required":["repo"]}`)},
			"    /** List issues. */\n" +
				`    list_issues(args: { repo: string; state?: "open" | "closed"; limit?: number }): Promise<ToolResult>;`,
		},
		{
			"brackets and an output schema",
			wire.Tool{Server: "my-server", Name: "get-issue",
				InputSchema:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`),
				OutputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}}},"required":["title"]}`)},
			`    "get-issue"(args: { id: number }): Promise<ToolResult<{ title: string; labels?: string[] }>>;`,
		},
		{
			"no input schema",
			wire.Tool{Server: "s", Name: "ping"},
			`    ping(args: { [key: string]: unknown }): Promise<ToolResult>;`,
		},
		{
			"a description of several lines",
			wire.Tool{Server: "s", Name: "t", Description: "\n\nFirst line.\r\n\r\n\r\nSecond */ line.  \n\tIndented.\n\n",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"The query."}}}`)},
			"    /**\n     * First line.\n     *\n     * Second *\\/ line.\n     * Indented.\n     */\n" +
				"    t(args: {\n      /** The query. */\n      q?: string;\n    }): Promise<ToolResult>;",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TSDecl(tc.tool); got != tc.want {
				t.Errorf("TSDecl\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestTSAccess(t *testing.T) {
	for _, tc := range []struct{ server, tool, access, key string }{
		{"github", "list_issues", `tools.github.list_issues`, `list_issues`},
		{"my-server", "get-issue", `tools["my-server"]["get-issue"]`, `"get-issue"`},
		{"gh", "get-issue", `tools.gh["get-issue"]`, `"get-issue"`},
		{"$srv", "_t1", `tools.$srv._t1`, `_t1`},
		{"s", "1st", `tools.s["1st"]`, `"1st"`},
		{"s", "delete", `tools.s["delete"]`, `delete`}, // a reserved word is a fine key, and bracketed in access
		{"s", "ünï", `tools.s["ünï"]`, `"ünï"`},
		{"s", `a"b\c`, `tools.s["a\"b\\c"]`, `"a\"b\\c"`},
		{"s", "a.b", `tools.s["a.b"]`, `"a.b"`},
		{"s", "", `tools.s[""]`, `""`},
	} {
		tool := wire.Tool{Server: tc.server, Name: tc.tool}
		if got := toolKey(tool); got != tc.access {
			t.Errorf("toolKey(%q, %q) = %s, want %s", tc.server, tc.tool, got, tc.access)
		}
		if got, want := TSDecl(tool), "    "+tc.key+"(args: "; !strings.HasPrefix(got, want) {
			t.Errorf("TSDecl(%q, %q) = %s, want it to start with %s", tc.server, tc.tool, got, want)
		}
	}
}

// tsBalanced reports whether the brackets of a declaration pair up, outside
// strings and comments: a check that a cut left well-formed text.
func tsBalanced(s string) bool {
	var stack []byte
	pairs := map[byte]byte{')': '(', ']': '[', '}': '{', '>': '<'}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return false
			}
			i += end + 3
		case c == '(' || c == '[' || c == '{' || c == '<':
			stack = append(stack, c)
		case c == ')' || c == ']' || c == '}' || c == '>':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0
}

func TestTSDeclHostile(t *testing.T) {
	var props, enum, anyOf strings.Builder
	for i := range 5000 {
		if i > 0 {
			props.WriteByte(',')
			enum.WriteByte(',')
			anyOf.WriteByte(',')
		}
		fmt.Fprintf(&props, `"property_%d":{"type":"string","description":"Property number %d."}`, i, i)
		fmt.Fprintf(&enum, `"value-%d"`, i)
		fmt.Fprintf(&anyOf, `{"properties":{"k%d":{"type":"integer"}}}`, i)
	}
	// Each definition refers twice to the next: inlining all of it would
	// take 2^40 copies.
	var laughs strings.Builder
	laughs.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
	for i := range 40 {
		fmt.Fprintf(&laughs, `"d%d":{"properties":{"x":{"$ref":"#/$defs/d%d"},"y":{"$ref":"#/$defs/d%d"}}},`, i, i+1, i+1)
	}
	laughs.WriteString(`"d40":{"type":"string"}}}`)
	// anyOf in anyOf, 120 levels: under MaxSchemaDepth, past maxTSNest.
	nestedAnyOf := strings.Repeat(`{"anyOf":[{"type":"null"},`, 120) + `{"type":"string"}` + strings.Repeat(`]}`, 120)

	for _, tc := range []struct {
		name  string
		tool  wire.Tool
		cut   bool // the declaration says where it was cut
		bound int  // bytes at most
	}{
		{"1e4 levels deep", wire.Tool{Server: "s", Name: "t", InputSchema: json.RawMessage(nestedSchema(10_000))}, true, 300},
		{"1e4 levels deep, as output", wire.Tool{Server: "s", Name: "t", OutputSchema: json.RawMessage(nestedSchema(10_000))}, true, 300},
		{"5000 properties", wire.Tool{Server: "s", Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{` + props.String() + `}}`)}, true, MaxTSDeclBytes},
		{"5000 properties in and out", wire.Tool{Server: "s", Name: "t",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{` + props.String() + `}}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{` + props.String() + `}}`)}, true, MaxTSDeclBytes},
		{"5000 enum values", wire.Tool{Server: "s", Name: "t", InputSchema: json.RawMessage(`{"properties":{"e":{"enum":[` + enum.String() + `]}}}`)}, true, MaxTSDeclBytes},
		{"5000 anyOf branches", wire.Tool{Server: "s", Name: "t", InputSchema: json.RawMessage(`{"anyOf":[` + anyOf.String() + `]}`)}, true, MaxTSDeclBytes},
		{"2^40 inlined refs", wire.Tool{Server: "s", Name: "t", InputSchema: json.RawMessage(laughs.String())}, true, MaxTSDeclBytes},
		{"anyOf 120 deep", wire.Tool{Server: "s", Name: "t", InputSchema: json.RawMessage(nestedAnyOf)}, true, MaxTSDeclBytes},
		{"a long property name", wire.Tool{Server: "s", Name: "t", InputSchema: json.RawMessage(`{"properties":{"` + strings.Repeat("k", 20_000) + `":{}}}`)}, true, MaxTSDeclBytes},
		{"a long const", wire.Tool{Server: "s", Name: "t", InputSchema: json.RawMessage(`{"properties":{"c":{"const":"` + strings.Repeat("v", 20_000) + `"}}}`)}, true, MaxTSDeclBytes},
		{"a long description", wire.Tool{Server: "s", Name: "t", Description: strings.Repeat("word ", 10_000) + "\n" + strings.Repeat("line\n", 5000)}, false, 2 * maxTSToolDoc},
		{"a long tool name", wire.Tool{Server: "s", Name: strings.Repeat("n", 20_000)}, false, 200}, // left out, with a comment
		{"a 2 MiB schema", wire.Tool{Server: "s", Name: "t", InputSchema: json.RawMessage(`{"enum":["` + strings.Repeat("x", 2<<20) + `"]}`)}, true, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			within(t, time.Second, "TSDecl bounds (MaxTSDeclBytes, MaxTSDepth, maxTSNest, MaxSchemaBytes, MaxSchemaDepth)", func() {
				got = TSDecl(tc.tool)
			})
			if len(got) > tc.bound {
				t.Errorf("%d bytes, want at most %d", len(got), tc.bound)
			}
			if tc.cut != strings.Contains(got, tsCut) {
				t.Errorf("contains %s: %v, want %v", tsCut, !tc.cut, tc.cut)
			}
			if (!strings.HasSuffix(got, ">;") && !strings.HasSuffix(got, "left out */")) || !tsBalanced(got) {
				t.Errorf("not a whole declaration:\n%s", got)
			}
			if s := renderTSType(tc.tool.InputSchema); len(s) > MaxTSDeclBytes || !tsBalanced(s) {
				t.Errorf("renderTSType: %d bytes, balanced: %v", len(s), tsBalanced(s))
			}
		})
	}
}

// FuzzTSDecl: no schema makes TSDecl panic, pass its bound, or leave
// brackets open; the same schema never makes newArgsValidator panic.
func FuzzTSDecl(f *testing.F) {
	for _, tc := range tsTypeCases {
		f.Add(tc.schema)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		got := TSDecl(wire.Tool{Server: "s", Name: "t", InputSchema: json.RawMessage(schema), OutputSchema: json.RawMessage(schema)})
		if len(got) > MaxTSDeclBytes || !tsBalanced(got) {
			t.Errorf("TSDecl(%q) = %d bytes, balanced %v:\n%s", schema, len(got), tsBalanced(got), got)
		}
		v, _ := newArgsValidator([]wire.Tool{{Server: "s", Name: "t", InputSchema: json.RawMessage(schema)}})
		_ = v.Validate("s", "t", []byte(`{"a":[1,"x",{"b":null}],"c":1.5}`))
	})
}
