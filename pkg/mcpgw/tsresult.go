package mcpgw

// This file declares, in TypeScript, what a program gets besides the tools
// themselves: the result of a call (ToolResult, with the content blocks a
// result carries as normalizeResult gives them), the errors a call throws,
// and the other globals. The content blocks are rendered from a table that
// a test holds against what normalizeResult really emits, so the two agree.

import "strings"

// tsField is one property of a declared object type.
type tsField struct {
	name, ts string
	optional bool
	doc      string // a one-line doc comment, or ""
}

// tsMetaType is _meta, and any object of unknown keys.
const tsMetaType = "{ [key: string]: unknown }"

// tsContentBlocks are the content blocks a tool result can carry, as the
// go-sdk encodes them (mcp.TextContent, ImageContent, AudioContent,
// ResourceLink, EmbeddedResource), each with its fields in order.
var tsContentBlocks = []struct {
	typ    string
	fields []tsField
}{
	{"text", []tsField{{name: "text", ts: "string"}}},
	{"image", []tsField{{name: "data", ts: "string", doc: "base64"}, {name: "mimeType", ts: "string"}}},
	{"audio", []tsField{{name: "data", ts: "string", doc: "base64"}, {name: "mimeType", ts: "string"}}},
	{"resource_link", []tsField{
		{name: "uri", ts: "string"}, {name: "name", ts: "string"},
		{name: "title", ts: "string", optional: true}, {name: "description", ts: "string", optional: true},
		{name: "mimeType", ts: "string", optional: true}, {name: "size", ts: "number", optional: true},
		{name: "icons", ts: `{ src: string; mimeType?: string; sizes?: string[]; theme?: "light" | "dark" }[]`, optional: true},
	}},
	{"resource", []tsField{{name: "resource", ts: "EmbeddedResource"}}},
}

// tsBlockCommon are the fields every content block may carry after its own.
var tsBlockCommon = []tsField{
	{name: "annotations", ts: "Annotations", optional: true},
	{name: "_meta", ts: tsMetaType, optional: true},
}

// tsEmbeddedResource is mcp.ResourceContents: a resource's text, or its
// bytes in base64.
var tsEmbeddedResource = []tsField{
	{name: "uri", ts: "string"},
	{name: "mimeType", ts: "string", optional: true},
	{name: "text", ts: "string", optional: true},
	{name: "blob", ts: "string", optional: true, doc: "base64"},
	{name: "_meta", ts: tsMetaType, optional: true},
}

// tsToolResult is what every call resolves to: normalizeResult's object,
// with every field present (structuredContent null when the tool gave none).
var tsToolResult = []tsField{
	{name: "content", ts: "ContentBlock[]"},
	{name: "structuredContent", ts: "S | null", doc: "typed by the tool's outputSchema; null when the tool gave none"},
	{name: "isError", ts: "boolean", doc: "true: the tool reports an error of its own"},
}

// tsFields renders fields as the members of an object type on one line.
func tsFields(fields []tsField) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		doc := ""
		if f.doc != "" {
			doc = "/** " + f.doc + " */ "
		}
		opt := ""
		if f.optional {
			opt = "?"
		}
		parts[i] = doc + f.name + opt + ": " + f.ts
	}
	return "{ " + strings.Join(parts, "; ") + " }"
}

// tsSharedTypes declares the types every tool's declaration uses, and the
// program's other globals. It is TypeScript that parses, and esbuild strips
// whole.
var tsSharedTypes = func() string {
	var sb strings.Builder
	sb.WriteString("/** What a call resolves to. A call refused before sending throws ToolRefused; one sent without a usable answer throws ToolFailed. */\n")
	sb.WriteString("interface ToolResult<S = unknown> " + tsFields(tsToolResult) + "\n")
	sb.WriteString("type ContentBlock =\n")
	for i, b := range tsContentBlocks {
		fields := append([]tsField{{name: "type", ts: tsQuote(b.typ)}}, b.fields...)
		fields = append(fields, tsBlockCommon...)
		sb.WriteString("  | " + tsFields(fields))
		if i == len(tsContentBlocks)-1 {
			sb.WriteString(";")
		}
		sb.WriteString("\n")
	}
	sb.WriteString("interface EmbeddedResource " + tsFields(tsEmbeddedResource) + "\n")
	sb.WriteString(`interface Annotations { audience?: ("user" | "assistant")[]; priority?: number; lastModified?: string }` + "\n")
	sb.WriteString("/** Refused before anything was sent (unknown tool, invalid arguments, server unavailable, lane full): safe to retry. */\n")
	sb.WriteString("declare class ToolRefused extends Error { code: string; server: string; tool: string; matches: readonly string[]; mayHaveRun: false }\n")
	sb.WriteString("/** Sent, but no usable answer came (transport error, timeout, result too large): the call may have taken effect. */\n")
	sb.WriteString("declare class ToolFailed extends Error { code: string; server: string; tool: string; mayHaveRun: true }\n")
	sb.WriteString("/** run_js's input argument. */\n")
	sb.WriteString("declare const input: unknown;\n")
	sb.WriteString("declare const ALL_TOOLS: readonly { server: string; name: string; description: string; inputSchema: " + tsMetaType +
		" | null; outputSchema: " + tsMetaType + " | null; annotations: " + tsMetaType + " | null }[];\n")
	sb.WriteString("/** Writes to the run's output, as console.log does. */\n")
	sb.WriteString("declare function print(...values: unknown[]): void;\n")
	return sb.String()
}()
