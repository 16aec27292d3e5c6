// TypeScript declarations of tools, as search_tools shows them to an agent.

package mcpgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"slices"
	"strconv"
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

// TSDecl renders a tool as a TypeScript declaration an agent can read:
//
//	/** List issues. */
//	tools.github.list_issues(args: { repo: string; state?: "open" | "closed"; limit?: number }): Promise<{ content: ContentBlock[]; structuredContent?: unknown; isError?: boolean }>
//
// Server and tool are accessed with brackets when they are not JavaScript
// identifiers (tools["my-server"]["get-issue"]), by the rule the gateway
// names tools everywhere. The tool's description becomes a doc comment and
// properties' descriptions one-line doc comments; an object with described
// properties is laid out one property per line. outputSchema, when present,
// types structuredContent. The result is at most MaxTSDeclBytes; types are
// cut at MaxTSDepth, and where anything is cut /* … */ says so. ContentBlock
// is the MCP content type, declared elsewhere.
func TSDecl(t wire.Tool) string {
	const tail1 = "): Promise<{ content: ContentBlock[]; structuredContent?: "
	const tail2 = "; isError?: boolean }>"
	var sb strings.Builder
	sb.WriteString(tsDoc(t.Description))
	sb.WriteString("tools")
	sb.WriteString(tsAccess(t.Server))
	sb.WriteString(tsAccess(t.Name))
	sb.WriteString("(args: ")
	budget := MaxTSDeclBytes - tsReserve - sb.Len() - len(tail1) - len(tail2)
	hasOutput := !tsEmpty(t.OutputSchema)
	inBudget := budget
	if hasOutput {
		inBudget = budget * 2 / 3
	}
	in, used := tsAnyArgs, 0
	if !tsEmpty(t.InputSchema) {
		in, used = tsRender(t.InputSchema, inBudget)
	}
	out := "unknown"
	if hasOutput {
		out, _ = tsRender(t.OutputSchema, budget-used)
	}
	sb.WriteString(in)
	sb.WriteString(tail1)
	sb.WriteString(out)
	sb.WriteString(tail2)
	if sb.Len() <= MaxTSDeclBytes {
		return sb.String()
	}
	// Only names and a description too long to show get here: keep the
	// call's shape and say what was left out.
	access := tsAccess(t.Server) + tsAccess(t.Name)
	if len(access) > MaxTSDeclBytes/2 {
		access = "[" + tsCut + "]"
	}
	return "tools" + access + "(args: " + tsUnknownCut + tail1 + "unknown" + tail2
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
	s, _ := tsRender(schema, MaxTSDeclBytes-tsReserve)
	return s
}

// tsEmpty reports whether a schema is absent: no bytes, blanks, or null.
func tsEmpty(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// tsRender renders schema within budget bytes (give or take what closing
// the open types takes) and says how many it used.
func tsRender(schema json.RawMessage, budget int) (string, int) {
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
	r := &tsRenderer{root: root, budget: budget, active: map[string]bool{"": true}}
	s := r.render(root, 0, 0).s
	if len(s) > MaxTSDeclBytes {
		return tsUnknownCut, len(tsUnknownCut) // unreachable while the accounting holds
	}
	return s, len(s)
}

// Precedence of a rendered type, for parentheses.
const (
	tsAtom  = iota // keyword, literal, object, array, tuple
	tsInter        // A & B
	tsUnion        // A | B
)

type tsType struct {
	s    string
	prec int
	alts []tsType // a union's members, so that unions of unions flatten
}

// tsRenderer renders one schema document. used counts every byte it makes,
// once, when made; loops stop at the budget and mark the cut, so the work
// done is bounded by the budget too.
type tsRenderer struct {
	root   any
	used   int
	budget int
	active map[string]bool // $ref pointers being expanded; "" is the root
	indent int             // level of the object being rendered
}

// emit counts s as made.
func (r *tsRenderer) emit(s string) string {
	r.used += len(s)
	return s
}

// over reports whether n more bytes would pass the budget.
func (r *tsRenderer) over(n int) bool { return r.used+n > r.budget }

func (r *tsRenderer) atom(s string) tsType { return tsType{s: r.emit(s), prec: tsAtom} }

// render renders schema s, depth levels of properties and items, and nest
// levels of recursion, below the root.
func (r *tsRenderer) render(s any, depth, nest int) tsType {
	if depth > MaxTSDepth || nest > maxTSNest || r.over(0) {
		return r.atom(tsUnknownCut)
	}
	switch s := s.(type) {
	case bool:
		if s {
			return r.atom("unknown")
		}
		return r.atom("never")
	case *tsObject:
		return r.schema(s, depth, nest)
	}
	return r.atom("unknown")
}

func (r *tsRenderer) schema(s *tsObject, depth, nest int) tsType {
	var parts []tsType
	// draft-07 ignores the siblings of $ref and 2020-12 applies them; both
	// come out the same when the siblings are annotations, as they mostly are.
	if ref, ok := s.get("$ref"); ok {
		if ref, ok := ref.(string); ok {
			parts = append(parts, r.ref(ref, depth, nest))
		}
	}
	parts = append(parts, r.base(s, depth, nest))
	if all, ok := s.array("allOf"); ok {
		parts = append(parts, r.each(all, depth, nest+1)...)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := s.array(kw); ok {
			parts = append(parts, r.union(r.each(alts, depth, nest+1)))
		}
	}
	t := r.intersect(parts)
	if n, _ := s.get("nullable"); n == true {
		t = r.union([]tsType{t, r.atom("null")})
	}
	return t
}

// each renders the schemas of an array, stopping at the budget.
func (r *tsRenderer) each(schemas []any, depth, nest int) []tsType {
	var out []tsType
	for _, m := range schemas {
		if r.over(0) {
			out = append(out, r.atom(tsUnknownCut))
			break
		}
		out = append(out, r.render(m, depth, nest))
	}
	return out
}

// base is the type a schema's own keywords give: const, enum, type, or the
// type implied by object or array keywords.
func (r *tsRenderer) base(s *tsObject, depth, nest int) tsType {
	if c, ok := s.get("const"); ok {
		return r.literal(c)
	}
	if e, ok := s.array("enum"); ok {
		var lits []tsType
		for _, v := range e {
			if r.over(0) {
				lits = append(lits, r.atom(tsUnknownCut))
				break
			}
			lits = append(lits, r.literal(v))
		}
		return r.union(lits)
	}
	var types []string
	switch t, _ := s.get("type"); t := t.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if e, ok := e.(string); ok {
				types = append(types, e)
			}
		}
	}
	if len(types) == 0 {
		switch {
		case s.has("properties") || s.has("additionalProperties") || s.has("patternProperties"):
			types = []string{"object"}
		case s.has("items") || s.has("prefixItems"):
			types = []string{"array"}
		default:
			return r.atom("unknown")
		}
	}
	var members []tsType
	for _, t := range types {
		if r.over(0) {
			members = append(members, r.atom(tsUnknownCut))
			break
		}
		switch t {
		case "string", "boolean", "null":
			members = append(members, r.atom(t))
		case "number", "integer":
			members = append(members, r.atom("number"))
		case "array":
			members = append(members, r.array(s, depth, nest))
		case "object":
			members = append(members, r.object(s, depth, nest))
		default:
			members = append(members, r.atom("unknown"))
		}
	}
	return r.union(members)
}

// union joins types with |, flattening unions of unions. A member
// `unknown` makes the union unknown; `never` members drop out; repeats show
// once.
func (r *tsRenderer) union(members []tsType) tsType {
	var out []tsType
	for _, m := range members {
		alts := m.alts
		if alts == nil {
			alts = []tsType{m}
		}
		for _, a := range alts {
			switch {
			case a.s == "unknown":
				return r.atom("unknown")
			case a.s == "never" || slices.ContainsFunc(out, func(o tsType) bool { return o.s == a.s }):
				continue
			}
			out = append(out, a)
		}
	}
	switch len(out) {
	case 0:
		return r.atom("never")
	case 1:
		return out[0]
	}
	strs := make([]string, len(out))
	for i, a := range out {
		strs[i] = a.s
	}
	return tsType{s: r.join(strs, " | "), prec: tsUnion, alts: out}
}

// intersect joins types with &. `unknown` parts drop out; repeats show once.
func (r *tsRenderer) intersect(parts []tsType) tsType {
	var kept []tsType
	for _, p := range parts {
		if p.s == "unknown" || slices.ContainsFunc(kept, func(k tsType) bool { return k.s == p.s }) {
			continue
		}
		kept = append(kept, p)
	}
	switch len(kept) {
	case 0:
		return r.atom("unknown")
	case 1:
		return kept[0]
	}
	out := make([]string, len(kept))
	for i, p := range kept {
		out[i] = p.s
		if p.prec == tsUnion {
			out[i] = r.emit("(") + p.s + r.emit(")")
		}
	}
	return tsType{s: r.join(out, " & "), prec: tsInter}
}

// join is strings.Join, counting the separators made.
func (r *tsRenderer) join(items []string, sep string) string {
	if len(items) > 1 {
		r.used += len(sep) * (len(items) - 1)
	}
	return strings.Join(items, sep)
}

// literal renders a JSON value as a literal type; JSON text is TypeScript
// type syntax (strings, numbers, true, false, null, tuples, object types).
func (r *tsRenderer) literal(v any) tsType {
	var sb strings.Builder
	if !tsWriteJSON(&sb, v, r.budget-r.used) {
		return r.atom(tsUnknownCut)
	}
	return r.atom(sb.String())
}

func (r *tsRenderer) array(s *tsObject, depth, nest int) tsType {
	if pre, ok := s.array("prefixItems"); ok {
		rest, _ := s.get("items")
		return r.tuple(pre, rest, depth, nest)
	}
	if pre, ok := s.array("items"); ok { // draft-07 and earlier
		rest, _ := s.get("additionalItems")
		return r.tuple(pre, rest, depth, nest)
	}
	items, ok := s.get("items")
	if !ok {
		return r.atom("unknown[]")
	}
	return tsType{s: r.arrayOf(r.render(items, depth+1, nest+1)), prec: tsAtom}
}

// arrayOf is T[], with parentheses when T needs them.
func (r *tsRenderer) arrayOf(t tsType) string {
	if t.prec != tsAtom {
		return r.emit("(") + t.s + r.emit(")[]")
	}
	return t.s + r.emit("[]")
}

// tuple renders prefix items, then the rest: absent or true is
// ...unknown[], false closes the tuple, a schema is ...T[].
func (r *tsRenderer) tuple(pre []any, rest any, depth, nest int) tsType {
	var elems []string
	cut := false
	for _, e := range pre {
		if r.over(0) {
			elems = append(elems, r.emit(tsCut))
			cut = true
			break
		}
		elems = append(elems, r.render(e, depth+1, nest+1).s)
	}
	if !cut {
		switch rest := rest.(type) {
		case nil:
			elems = append(elems, r.emit("...unknown[]"))
		case bool:
			if rest {
				elems = append(elems, r.emit("...unknown[]"))
			}
		default:
			elems = append(elems, r.emit("...")+r.arrayOf(r.render(rest, depth+1, nest+1)))
		}
	}
	return tsType{s: r.emit("[") + r.join(elems, ", ") + r.emit("]"), prec: tsAtom}
}

// tsMember is one line of an object type: an optional doc comment and the
// member itself.
type tsMember struct{ doc, text string }

// object renders an object type: its properties, then the names required
// without a property, then an index signature for additionalProperties and
// patternProperties.
func (r *tsRenderer) object(s *tsObject, depth, nest int) tsType {
	level := r.indent
	r.indent++
	defer func() { r.indent-- }()

	var members []tsMember
	indexed := "" // { [key: string]: T }
	cut := false
	cutHere := func() {
		members = append(members, tsMember{text: r.emit(tsCut)})
		cut = true
	}
	required := map[string]bool{}
	if req, ok := s.array("required"); ok {
		for _, n := range req {
			if n, ok := n.(string); ok {
				required[n] = true
			}
		}
	}
	props, _ := s.get("properties")
	pobj, _ := props.(*tsObject)
	if pobj != nil {
		for i, k := range pobj.keys {
			if r.over(len(k) + 16) {
				cutHere()
				break
			}
			v := pobj.vals[i]
			doc := r.propDoc(v)
			text := r.key(k)
			if !required[k] {
				text += r.emit("?")
			}
			text += r.emit(": ") + r.render(v, depth+1, nest+1).s
			members = append(members, tsMember{doc, text})
		}
	}
	if !cut {
		if req, ok := s.array("required"); ok {
			for _, n := range req {
				n, ok := n.(string)
				if !ok || (pobj != nil && pobj.has(n)) {
					continue
				}
				if r.over(len(n) + 16) {
					cutHere()
					break
				}
				members = append(members, tsMember{text: r.key(n) + r.emit(": unknown")})
			}
		}
	}
	if !cut {
		var index []tsType
		pattern, _ := s.get("patternProperties")
		if pp, ok := pattern.(*tsObject); ok {
			index = append(index, r.each(pp.vals, depth+1, nest+1)...)
		}
		switch a, present := s.get("additionalProperties"); a := a.(type) {
		case *tsObject:
			index = append(index, r.render(a, depth+1, nest+1))
		case bool:
			if a && pobj == nil && len(index) == 0 {
				index = append(index, r.atom("unknown"))
			}
		default:
			if !present && pobj == nil && len(index) == 0 {
				index = append(index, r.atom("unknown"))
			}
		}
		if len(index) > 0 {
			indexed = r.layout([]tsMember{{text: r.emit("[key: string]: ") + r.union(index).s}}, level)
		}
	}
	switch {
	case len(members) == 0 && indexed == "":
		return r.atom("{}")
	case len(members) == 0:
		return tsType{s: indexed, prec: tsAtom}
	case indexed == "":
		return tsType{s: r.layout(members, level), prec: tsAtom}
	}
	// An index signature beside properties of other types is an error in
	// TypeScript; as an intersection it is not.
	return tsType{s: r.layout(members, level) + r.emit(" & ") + indexed, prec: tsInter}
}

// layout writes an object type's members: one per line, indented for the
// object's level, when one has a doc comment or spans lines; else on one
// line.
func (r *tsRenderer) layout(members []tsMember, level int) string {
	multi := false
	for _, m := range members {
		if m.doc != "" || strings.Contains(m.text, "\n") {
			multi = true
		}
	}
	var sb strings.Builder
	if !multi {
		sb.WriteString(r.emit("{ "))
		for i, m := range members {
			if i > 0 {
				sb.WriteString(r.emit("; "))
			}
			sb.WriteString(m.text)
		}
		sb.WriteString(r.emit(" }"))
		return sb.String()
	}
	in := strings.Repeat("  ", level+1)
	sb.WriteString(r.emit("{\n"))
	for _, m := range members {
		if m.doc != "" {
			sb.WriteString(r.emit(in))
			sb.WriteString(m.doc)
			sb.WriteString(r.emit("\n"))
		}
		sb.WriteString(r.emit(in))
		sb.WriteString(m.text)
		if m.text != tsCut {
			sb.WriteString(r.emit(";"))
		}
		sb.WriteString(r.emit("\n"))
	}
	sb.WriteString(r.emit(strings.Repeat("  ", level) + "}"))
	return sb.String()
}

// key renders a property name: bare when it is an identifier (reserved words
// included, as TypeScript allows), else quoted.
func (r *tsRenderer) key(k string) string {
	if tsIdentifier(k) {
		return r.emit(k)
	}
	return r.emit(tsQuote(k))
}

// propDoc is a property's description as a one-line doc comment, or "". A
// property that is only a $ref takes the description of its target.
func (r *tsRenderer) propDoc(v any) string {
	o, ok := v.(*tsObject)
	if !ok {
		return ""
	}
	d, _ := o.get("description")
	desc, ok := d.(string)
	if !ok {
		ref, _ := o.get("$ref")
		if ref, ok := ref.(string); ok {
			if ptr, ok := tsRefPointer(ref); ok {
				if target, ok := tsLookup(r.root, ptr).(*tsObject); ok {
					d, _ := target.get("description")
					desc, _ = d.(string)
				}
			}
		}
	}
	text := tsCommentText(desc, maxTSPropDoc)
	if text == "" {
		return ""
	}
	return r.emit("/** " + text + " */")
}

// ref inlines the target of a $ref into this schema. One that recurses, that
// leaves the schema or that is not found renders unknown with a comment.
func (r *tsRenderer) ref(ref string, depth, nest int) tsType {
	shown := tsCommentText(ref, maxTSRefShown)
	ptr, ok := tsRefPointer(ref)
	if !ok {
		return r.atom("unknown /* $ref " + shown + " */")
	}
	if r.active[ptr] {
		return r.atom("unknown /* recursive $ref " + shown + " */")
	}
	target := tsLookup(r.root, ptr)
	if target == nil {
		return r.atom("unknown /* $ref " + shown + " not found */")
	}
	r.active[ptr] = true
	defer delete(r.active, ptr)
	return r.render(target, depth, nest+1)
}

// tsRefPointer is the JSON pointer of a $ref within the document: "#" is ""
// and "#/$defs/X" is "/$defs/X". ok is false for any other $ref (another
// document, an anchor).
func tsRefPointer(ref string) (string, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return "", false
	}
	frag, err := url.PathUnescape(frag)
	if err != nil || (frag != "" && !strings.HasPrefix(frag, "/")) {
		return "", false
	}
	return frag, true
}

// tsLookup resolves a JSON pointer in a decoded document; nil when it is not
// there.
func tsLookup(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch d := doc.(type) {
		case *tsObject:
			v, ok := d.get(tok)
			if !ok {
				return nil
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(d) {
				return nil
			}
			doc = d[i]
		default:
			return nil
		}
	}
	return doc
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

func tsWriteString(sb *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	sb.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// tsWriteJSON writes v as compact JSON, keys in their order, and reports
// false (having written part) when it would pass limit bytes.
func tsWriteJSON(sb *strings.Builder, v any, limit int) bool {
	if sb.Len() > limit {
		return false
	}
	switch v := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString(strconv.FormatBool(v))
	case json.Number:
		sb.WriteString(string(v))
	case string:
		if sb.Len()+len(v) > limit {
			return false
		}
		tsWriteString(sb, v)
	case []any:
		sb.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				sb.WriteString(", ")
			}
			if !tsWriteJSON(sb, e, limit) {
				return false
			}
		}
		sb.WriteByte(']')
	case *tsObject:
		sb.WriteString("{ ")
		for i, k := range v.keys {
			if i > 0 {
				sb.WriteString(", ")
			}
			if !tsWriteJSON(sb, k, limit) {
				return false
			}
			sb.WriteString(": ")
			if !tsWriteJSON(sb, v.vals[i], limit) {
				return false
			}
		}
		sb.WriteString(" }")
	}
	return sb.Len() <= limit
}

// tsObject is a JSON object with its keys in order. A repeated key keeps its
// first place and its last value, as decoders do.
type tsObject struct {
	keys  []string
	vals  []any
	index map[string]int
}

func (o *tsObject) get(k string) (any, bool) {
	i, ok := o.index[k]
	if !ok {
		return nil, false
	}
	return o.vals[i], true
}

func (o *tsObject) has(k string) bool {
	_, ok := o.index[k]
	return ok
}

func (o *tsObject) array(k string) ([]any, bool) {
	v, _ := o.get(k)
	a, ok := v.([]any)
	return a, ok
}

// tsDecode decodes one JSON value with objects as *tsObject and numbers as
// json.Number. Its recursion follows the nesting, which checkSchemaBytes
// has bounded.
func tsDecode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := tsDecodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func tsDecodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := tsDecodeValue(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token() // ]
		return arr, err
	case json.Delim('{'):
		o := &tsObject{index: map[string]int{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := tsDecodeValue(dec)
			if err != nil {
				return nil, err
			}
			if i, ok := o.index[k]; ok {
				o.vals[i] = v
				continue
			}
			o.index[k] = len(o.keys)
			o.keys = append(o.keys, k)
			o.vals = append(o.vals, v)
		}
		_, err := dec.Token() // }
		return o, err
	}
	return tok, nil
}
