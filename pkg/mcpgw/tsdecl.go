// TypeScript declarations of tools, as search_tools shows them to an agent.

package mcpgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Bounds of a declaration. The schemas come from downstream servers, so a
// hostile one must not make search_tools large or slow.
const (
	// MaxTSDeclBytes bounds one tool's declaration: search_tools lists up to
	// MaxSearchResults of them and an agent reads them all. What does not
	// fit is cut, with /* … */ where it was cut.
	MaxTSDeclBytes = 8 << 10
	// MaxTSDepth bounds how deeply object properties, array items and tuple
	// elements nest below a schema's root: deeper types render as
	// `unknown /* … */`. Real arguments are rarely deeper; an agent learns
	// the rest from the error of a wrong call.
	MaxTSDepth = 8
	// maxTSNest bounds the recursion of the renderer over everything,
	// allOf/anyOf/oneOf and $ref included, which MaxTSDepth does not count.
	maxTSNest = 4 * MaxTSDepth
	// maxTSPropDoc and maxTSToolDoc bound descriptions, in characters: a
	// property's is one line, a tool's keeps its lines.
	maxTSPropDoc = 120
	maxTSToolDoc = 1000
	// maxTSRefShown bounds how much of a $ref a comment quotes.
	maxTSRefShown = 60
	// tsReserve is kept back from the budget for closing what is open when
	// the budget runs out, and for the declaration's fixed text.
	tsReserve = 1 << 10
)

const (
	tsCut        = "/* … */"
	tsUnknownCut = "unknown " + tsCut
	// tsAnyArgs is the arguments of a tool without an input schema.
	tsAnyArgs = "{ [key: string]: unknown }"
)

// TSDecl renders a tool as the member of the servers' object that
// TSDeclarations declares, indented as it stands there:
//
//	/** List issues. */
//	list_issues(args: { repo: string; state?: "open" | "closed"; limit?: number }): Promise<ToolResult>;
//
// A name that is not a JavaScript identifier is quoted ("get-issue"(args:
// …)); programs reach it as tools["my-server"]["get-issue"]. The tool's
// description becomes a doc comment and properties' descriptions one-line
// doc comments; an object with described properties is laid out one
// property per line. outputSchema, when present, types structuredContent:
// Promise<ToolResult<{ … }>>. The result is at most MaxTSDeclBytes; types
// are cut at MaxTSDepth, and where anything is cut /* … */ says so.
// ToolResult and the types it uses are declared by tsSharedTypes.
func TSDecl(t wire.Tool) string {
	const indent = "    "
	var sb strings.Builder
	for _, line := range strings.SplitAfter(tsDoc(t.Description), "\n") {
		if line != "" {
			sb.WriteString(indent + line)
		}
	}
	key := tsKey(t.Name)
	if len(key) > MaxTSDeclBytes/2 {
		return indent + fmt.Sprintf("/* a tool whose name is %d bytes long is left out */", len(t.Name))
	}
	sb.WriteString(indent + key + "(args: ")
	const tail = ">;"
	budget := MaxTSDeclBytes - tsReserve - sb.Len() - len("): Promise<ToolResult<") - len(tail)
	hasOutput := !tsEmpty(t.OutputSchema)
	inBudget := budget
	if hasOutput {
		inBudget = budget * 2 / 3
	}
	in, used := tsAnyArgs, 0
	if !tsEmpty(t.InputSchema) {
		in, used = tsRender(t.InputSchema, inBudget, tsMemberLevel)
	}
	result := "ToolResult"
	if hasOutput {
		out, _ := tsRender(t.OutputSchema, budget-used, tsMemberLevel)
		result = "ToolResult<" + out + ">"
	}
	sb.WriteString(in)
	sb.WriteString("): Promise<" + result + tail)
	if sb.Len() <= MaxTSDeclBytes {
		return sb.String()
	}
	// Only a description too long to show gets here: keep the call's shape
	// and say what was left out.
	return indent + key + "(args: " + tsUnknownCut + "): Promise<ToolResult>;"
}

// tsMemberLevel is the nesting at which a tool's argument and result types
// stand in TSDeclarations: inside `declare const tools: {` and the server's
// object.
const tsMemberLevel = 2

// TSDeclarations renders tools as one TypeScript file that parses (esbuild
// strips it whole): `declare const tools: { server: { tool(args): … } }`,
// the servers in the order their first tool comes in tools, then the types
// every tool shares (tsSharedTypes). An agent can read it, and a program
// can begin with it.
func TSDeclarations(tools []wire.Tool) string {
	var order []string
	byServer := map[string][]wire.Tool{}
	for _, t := range tools {
		if _, ok := byServer[t.Server]; !ok {
			order = append(order, t.Server)
		}
		byServer[t.Server] = append(byServer[t.Server], t)
	}
	var sb strings.Builder
	sb.WriteString("declare const tools: {\n")
	for _, server := range order {
		sb.WriteString("  " + tsKey(server) + ": {\n")
		for _, t := range byServer[server] {
			sb.WriteString(TSDecl(t))
			sb.WriteString("\n")
		}
		sb.WriteString("  };\n")
	}
	sb.WriteString("};\n\n")
	sb.WriteString(tsSharedTypes)
	return sb.String()
}

// tsKey renders a name as a property of an object type: bare when it is an
// identifier (reserved words included, as TypeScript allows), else quoted.
func tsKey(k string) string {
	if tsIdentifier(k) {
		return k
	}
	return tsQuote(k)
}

// renderTSType renders a JSON Schema as a TypeScript type: `unknown` for bytes that
// are not JSON, `unknown /* … */` for a schema beyond MaxSchemaBytes or
// MaxSchemaDepth, and for an empty schema `unknown`. The result is at most
// MaxTSDeclBytes.
//
// The mapping: string, number (and integer), boolean, null; arrays as T[],
// prefixItems (or an items array) as tuples; objects with their properties,
// `?` on those not required, required names without a property as
// `unknown`, and additionalProperties / patternProperties as an index
// signature (beside properties, intersected with them, as TypeScript
// requires: { a: string } & { [key: string]: number }); type arrays, anyOf and oneOf as unions, allOf (and siblings of
// $ref) as intersections; enum and const as literal types; OpenAPI's
// `nullable: true` as `| null`. A $ref into the schema (#/$defs/X,
// #/definitions/X, any JSON pointer) is inlined where it is used; one that
// recurses renders `unknown` with a comment naming it, and one that leaves
// the schema `unknown` with the $ref. not, if/then/else and the validation
// keywords (minimum, pattern, ...) are not shown.
func renderTSType(schema json.RawMessage) string {
	if tsEmpty(schema) {
		return "unknown"
	}
	s, _ := tsRender(schema, MaxTSDeclBytes-tsReserve, 0)
	return s
}

// tsEmpty reports whether a schema is absent: no bytes, blanks, or null.
func tsEmpty(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// tsRender renders schema within budget bytes (give or take what closing
// the open types takes), with objects laid out for nesting level, and says
// how many bytes it used.
func tsRender(schema json.RawMessage, budget, level int) (string, int) {
	if err := checkSchemaBytes(bytes.TrimSpace(schema)); err != nil {
		if errors.Is(err, errSchemaTooLarge) {
			return tsUnknownCut, len(tsUnknownCut)
		}
		return "unknown", len("unknown")
	}
	root, err := tsDecode(schema)
	if err != nil {
		return "unknown", len("unknown")
	}
	r := &tsRenderer{root: root, budget: budget, active: map[string]bool{"": true}, indent: level}
	s := r.render(root, 0, 0).s
	if len(s) > MaxTSDeclBytes {
		return tsUnknownCut, len(tsUnknownCut) // unreachable while the accounting holds
	}
	return s, len(s)
}

// tsDoc renders a tool's description as a doc comment, keeping its lines
// (at most maxTSToolDoc characters); "" when there is none.
func tsDoc(desc string) string {
	var lines []string
	n := 0
	for _, line := range strings.Split(strings.ReplaceAll(desc, "\r\n", "\n"), "\n") {
		line = tsCommentText(line, maxTSToolDoc)
		if line == "" && (len(lines) == 0 || lines[len(lines)-1] == "") {
			continue
		}
		if c := utf8.RuneCountInString(line); n+c > maxTSToolDoc {
			lines = append(lines, wire.CutChars(line, maxTSToolDoc-n))
			break
		} else {
			n += c
		}
		lines = append(lines, line)
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	switch len(lines) {
	case 0:
		return ""
	case 1:
		return "/** " + lines[0] + " */\n"
	}
	var sb strings.Builder
	sb.WriteString("/**\n")
	for _, l := range lines {
		sb.WriteString(strings.TrimRight(" * "+l, " "))
		sb.WriteByte('\n')
	}
	sb.WriteString(" */\n")
	return sb.String()
}

// tsCommentText makes text safe inside a /* */ comment, on one line, at
// most max characters.
func tsCommentText(s string, max int) string {
	return strings.ReplaceAll(wire.CutChars(oneLine(s), max), "*/", "*\\/")
}

// tsAccess is how a program reaches a server or tool by name: ".name" for a
// JavaScript identifier that is not a reserved word, else ["name"].
func tsAccess(name string) string {
	if tsIdentifier(name) && !tsReserved[name] {
		return "." + name
	}
	return "[" + tsQuote(name) + "]"
}

// tsIdentifier reports whether s is an ASCII JavaScript identifier.
func tsIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c == '$' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (i > 0 && '0' <= c && c <= '9') {
			continue
		}
		return false
	}
	return true
}

// tsReserved are the words the gateway brackets in the names of tools
// (search_tools and run_js's description both use tsAccess).
var tsReserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`break case catch class const continue debugger default delete do else enum
		export extends false finally for function if import in instanceof new null return super switch this
		throw true try typeof var void while with yield let static implements interface package private
		protected public await`) {
		m[w] = true
	}
	return m
}()

// tsQuote is s as a JSON string, which is a JavaScript string literal.
func tsQuote(s string) string {
	var sb strings.Builder
	tsWriteString(&sb, s)
	return sb.String()
}
