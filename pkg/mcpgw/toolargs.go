package mcpgw

// This file holds the arguments of the gateway's own six tools: one table
// per tool, from which both the tool's inputSchema and the check of a
// call's arguments are made, so the two cannot disagree. The ranges come
// from the limits' constants and the config in force. A bad argument is
// refused with a message in the user's units (ms, MiB) that says what to
// send instead.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// argKind is the JSON type an argument takes.
type argKind int

const (
	argString     argKind = iota // a string
	argInteger                   // a whole number, in unit, within [min, max]
	argStringList                // an array of strings
	argAny                       // any JSON value
)

// argSpec is one argument of one of the gateway's tools.
type argSpec struct {
	name     string
	kind     argKind
	required bool
	doc      string // the schema's description

	// Strings: nonEmpty refuses "" (and blanks); maxBytes bounds the length
	// (for any JSON, its text); enum, when set, lists the values allowed.
	nonEmpty bool
	maxBytes int
	enum     []string

	// Integers: the range and the default, in unit ("ms", "MiB", or "" for
	// a count); human renders a value of the unit for people (100 ms, 2 GiB).
	min, max, def int64
	unit          string
	human         func(int64) string

	// Lists: at most maxItems entries, each at most maxBytes.
	maxItems int
}

// toolArgs are the checked arguments of one call: each present argument's
// JSON, known to be of its spec's kind and within its bounds.
type toolArgs map[string]json.RawMessage

func (a toolArgs) has(name string) bool { _, ok := a[name]; return ok }

// str is a string argument, or "" when absent.
func (a toolArgs) str(name string) string {
	var s string
	_ = json.Unmarshal(a[name], &s) // checked
	return s
}

// integer is an integer argument, or def when absent.
func (a toolArgs) integer(name string, def int64) int64 {
	raw, ok := a[name]
	if !ok {
		return def
	}
	f, _ := strconv.ParseFloat(string(raw), 64) // checked: a whole number within an int64 range
	return int64(f)
}

// list is a string-list argument, or nil when absent.
func (a toolArgs) list(name string) []string {
	var l []string
	_ = json.Unmarshal(a[name], &l) // checked
	return l
}

// maxArgsBytes bounds the arguments of a call of one of our tools: a
// program (wire.MaxCodeBytes) and its input (wire.MaxInputBytes), with room
// for the rest. A larger call is refused before it is decoded.
const maxArgsBytes = 6 << 20

// checkArgs checks the arguments of a call of tool against specs. raw must
// be a JSON object (absent counts as {}) whose every member is a spec's,
// once, of its kind and within its bounds, with every required one there.
func checkArgs(tool string, specs []argSpec, raw json.RawMessage) (toolArgs, error) {
	fail := func(format string, a ...any) (toolArgs, error) {
		return nil, fmt.Errorf(tool+": "+format, a...)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if len(raw) > maxArgsBytes {
		return fail("the arguments are %s of JSON, above the cap of %s", FormatSize(int64(len(raw))), FormatSize(maxArgsBytes))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fail("the arguments must be a JSON object, like %s, not %s", argsExample(specs), jsonKind(raw))
	}
	byName := map[string]*argSpec{}
	names := make([]string, len(specs))
	for i := range specs {
		byName[specs[i].name] = &specs[i]
		names[i] = specs[i].name
	}
	args := toolArgs{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail("the arguments are not valid JSON: %v", err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return fail("the arguments are not valid JSON: %v", err)
		}
		spec := byName[key]
		if spec == nil {
			return fail("%s", unknownArg(tool, key, names))
		}
		if args.has(key) {
			return fail("%s appears twice; send it once", key)
		}
		if err := spec.check(val); err != nil {
			return fail("%s", err)
		}
		args[key] = val
	}
	if _, err := dec.Token(); err != nil {
		return fail("the arguments are not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("the arguments are not one JSON object")
	}
	for _, s := range specs {
		if s.required && !args.has(s.name) {
			return fail("%s is missing: %s", s.name, s.doc)
		}
	}
	return args, nil
}

// unknownArg says that key is not an argument of tool, with the closest
// argument name or the list of them.
func unknownArg(tool, key string, names []string) string {
	if len(names) == 0 {
		return fmt.Sprintf("unknown argument %s: %s takes no arguments; send {}", quoteValue(key), tool)
	}
	s := suggest(key, names)
	for _, n := range names { // timeout for timeout_ms, memory for memory_mb
		if s == "" && len(key) >= 4 && strings.HasPrefix(n, key) {
			s = n
		}
	}
	if s != "" {
		return fmt.Sprintf("unknown argument %s; did you mean %q? (%s takes %s)", quoteValue(key), s, tool, strings.Join(names, ", "))
	}
	return fmt.Sprintf("unknown argument %s; %s takes %s", quoteValue(key), tool, strings.Join(names, ", "))
}

// argsExample is a call's arguments as a reader writes them: the required
// ones, with a placeholder value.
func argsExample(specs []argSpec) string {
	var parts []string
	for _, s := range specs {
		if s.required {
			parts = append(parts, fmt.Sprintf("%q: …", s.name))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// check checks one argument's JSON against the spec.
func (s *argSpec) check(val json.RawMessage) error {
	kind := jsonKind(val)
	switch s.kind {
	case argAny:
		if s.maxBytes > 0 && len(val) > s.maxBytes {
			return fmt.Errorf("%s is %s of JSON, above the cap of %s", s.name, FormatSize(int64(len(val))), FormatSize(int64(s.maxBytes)))
		}
		return nil
	case argString:
		var v string
		if kind != "a string" || json.Unmarshal(val, &v) != nil {
			return fmt.Errorf("%s must be a string, not %s", s.name, kind)
		}
		return s.checkString(v)
	case argStringList:
		var l []json.RawMessage
		if kind != "an array" || json.Unmarshal(val, &l) != nil {
			return fmt.Errorf("%s must be an array of strings, not %s", s.name, kind)
		}
		if len(l) > s.maxItems {
			return fmt.Errorf("%s has %d entries, above the cap of %d", s.name, len(l), s.maxItems)
		}
		for i, e := range l {
			var v string
			if k := jsonKind(e); k != "a string" || json.Unmarshal(e, &v) != nil {
				return fmt.Errorf("%s[%d] must be a string, not %s", s.name, i, k)
			}
			if err := s.checkString(v); err != nil {
				return fmt.Errorf("%s[%d]: %w", s.name, i, err)
			}
		}
		return nil
	case argInteger:
		return s.checkInteger(val, kind)
	}
	panic("mcpgw: argSpec " + s.name + " has an unknown kind") // our bug
}

func (s *argSpec) checkString(v string) error {
	switch {
	case s.nonEmpty && strings.TrimSpace(v) == "":
		return fmt.Errorf("%s is empty: %s", s.name, s.doc)
	case s.maxBytes > 0 && len(v) > s.maxBytes:
		return fmt.Errorf("%s is %s, above the cap of %s", s.name, FormatSize(int64(len(v))), FormatSize(int64(s.maxBytes)))
	case len(s.enum) > 0:
		for _, e := range s.enum {
			if v == e {
				return nil
			}
		}
		return fmt.Errorf("%s %s is not one of %s", s.name, quoteValue(v), quoteList(s.enum))
	}
	return nil
}

// checkInteger refuses what is not a whole number of the unit within
// [min, max]: other types, fractions, and values out of range however
// large (2^53-1 as memory_mb is out of range, never an overflow).
func (s *argSpec) checkInteger(val json.RawMessage, kind string) error {
	what := "a whole number"
	if s.unit != "" {
		what += " of " + unitName(s.unit)
	}
	leave := ""
	if !s.required {
		leave = fmt.Sprintf(", or leave it out for the default %s", s.show(s.def))
	}
	if kind != "a number" {
		return fmt.Errorf("%s must be %s, not %s; give %s%s", s.name, what, kindOrValue(val, kind), s.rangeText(), leave)
	}
	f, err := strconv.ParseFloat(string(val), 64)
	text := shortValue(string(val))
	switch {
	case err != nil && !math.IsInf(f, 0): // not reached: json.Number is a float's syntax
		return fmt.Errorf("%s %s is not a number; give %s%s", s.name, text, s.rangeText(), leave)
	case math.IsInf(f, 0) || f < float64(s.min) || f > float64(s.max):
		return fmt.Errorf("%s %s%s is out of range; give %s%s", s.name, text, s.unitSuffix(), s.rangeText(), leave)
	case f != math.Trunc(f):
		return fmt.Errorf("%s %s is not %s; give %s%s", s.name, text, what, s.rangeText(), leave)
	}
	return nil
}

// rangeText is the allowed range in the unit and for people: "100 to
// 600000 ms (100 ms to 10 min)".
func (s *argSpec) rangeText() string {
	t := fmt.Sprintf("%d to %d%s", s.min, s.max, s.unitSuffix())
	if s.human != nil {
		t += fmt.Sprintf(" (%s to %s)", s.human(s.min), s.human(s.max))
	}
	return t
}

func (s *argSpec) unitSuffix() string {
	if s.unit == "" {
		return ""
	}
	return " " + s.unit
}

// show is v in the unit, with the human form when it differs: "30000 ms
// (30 s)".
func (s *argSpec) show(v int64) string {
	t := strconv.FormatInt(v, 10) + s.unitSuffix()
	if s.human != nil {
		if h := s.human(v); h != t {
			t += " (" + h + ")"
		}
	}
	return t
}

// schema is the argument's JSON Schema.
func (s *argSpec) schema() map[string]any {
	m := map[string]any{}
	switch s.kind {
	case argString:
		m["type"] = "string"
		if s.nonEmpty {
			m["minLength"] = 1
			m["pattern"] = `\S` // not only blanks
		}
		if len(s.enum) > 0 {
			m["enum"] = s.enum
		}
	case argStringList:
		m["type"] = "array"
		m["items"] = map[string]any{"type": "string"}
		m["maxItems"] = s.maxItems
	case argInteger:
		m["type"] = "integer"
		m["minimum"], m["maximum"] = s.min, s.max
		if !s.required {
			m["default"] = s.def
		}
	}
	doc := s.doc
	if s.kind == argInteger {
		doc += "; " + s.rangeText()
		if !s.required {
			doc += ", default " + s.show(s.def)
		}
	}
	m["description"] = doc
	return m
}

// inputSchema is the JSON Schema of a tool's arguments: an object of the
// specs' properties and nothing else.
func inputSchema(specs []argSpec) json.RawMessage {
	props := map[string]any{}
	var required []string
	for i := range specs {
		props[specs[i].name] = specs[i].schema()
		if specs[i].required {
			required = append(required, specs[i].name)
		}
	}
	m := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		m["required"] = required
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic("mcpgw: an input schema does not encode: " + err.Error()) // our bug
	}
	return b
}

// unitName is how a message names a unit: "ms" as milliseconds.
func unitName(unit string) string {
	switch unit {
	case "ms":
		return "milliseconds"
	case "MiB":
		return "MiB"
	}
	return unit
}

// kindOrValue names a JSON value's kind, quoting a short string: `a string
// ("30s")`.
func kindOrValue(val json.RawMessage, kind string) string {
	if kind == "a string" && len(val) <= 40 && utf8.Valid(val) {
		return kind + " (" + string(val) + ")"
	}
	return kind
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, " or ")
}

// humanMs renders milliseconds for people: 100 ms, 30 s, 10 min, 1.5 s.
func humanMs(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
	}
	return fmt.Sprintf("%d ms", ms)
}

// humanMiB renders MiB for people: 64 MiB, 2 GiB.
func humanMiB(mib int64) string {
	if mib >= 1024 && mib%1024 == 0 {
		return fmt.Sprintf("%d GiB", mib/1024)
	}
	return fmt.Sprintf("%d MiB", mib)
}
