package mcpgw

// This file holds the renderer of one JSON Schema as a TypeScript type,
// within a byte budget: keywords to types, unions and intersections, object
// layout, and $ref inlining.

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

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

	props, _ := s.get("properties")
	pobj, _ := props.(*tsObject)
	members, cut := r.properties(pobj, tsRequired(s), depth, nest)
	if !cut {
		members, cut = r.requiredOnly(s, pobj, members)
	}
	indexed := "" // { [key: string]: T }
	if !cut {
		indexed = r.indexSignature(s, pobj, level, depth, nest)
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

// tsRequired is the set of names an object schema's "required" lists.
func tsRequired(s *tsObject) map[string]bool {
	required := map[string]bool{}
	if req, ok := s.array("required"); ok {
		for _, n := range req {
			if n, ok := n.(string); ok {
				required[n] = true
			}
		}
	}
	return required
}

// properties renders an object's properties, each with its doc comment and
// with `?` when not required. cut reports that the budget ended the list (its
// last member is then /* … */).
func (r *tsRenderer) properties(pobj *tsObject, required map[string]bool, depth, nest int) (members []tsMember, cut bool) {
	if pobj == nil {
		return nil, false
	}
	for i, k := range pobj.keys {
		if r.over(len(k) + 16) {
			return append(members, tsMember{text: r.emit(tsCut)}), true
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
	return members, false
}

// requiredOnly adds the names required without a property, as `unknown`.
// cut reports that the budget ended the list.
func (r *tsRenderer) requiredOnly(s, pobj *tsObject, members []tsMember) ([]tsMember, bool) {
	req, ok := s.array("required")
	if !ok {
		return members, false
	}
	for _, n := range req {
		n, ok := n.(string)
		if !ok || (pobj != nil && pobj.has(n)) {
			continue
		}
		if r.over(len(n) + 16) {
			return append(members, tsMember{text: r.emit(tsCut)}), true
		}
		members = append(members, tsMember{text: r.key(n) + r.emit(": unknown")})
	}
	return members, false
}

// indexSignature renders patternProperties and additionalProperties as
// { [key: string]: T }, or "" when the object has none. An object with no
// properties allows any key unless additionalProperties is false.
func (r *tsRenderer) indexSignature(s, pobj *tsObject, level, depth, nest int) string {
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
	if len(index) == 0 {
		return ""
	}
	return r.layout([]tsMember{{text: r.emit("[key: string]: ") + r.union(index).s}}, level)
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

// key renders a property name (see tsKey).
func (r *tsRenderer) key(k string) string { return r.emit(tsKey(k)) }

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
