// Validation of a call's arguments against the tool's inputSchema.

package mcpgw

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Limits on schemas and arguments. Schemas come from downstream servers and
// arguments from programs; neither is trusted. Each bound is checked before
// the bytes are decoded or the numbers converted.
const (
	// MaxSchemaBytes bounds one tool's inputSchema: real schemas are a few
	// KiB, and the largest generated ones (big enums, OpenAPI imports) stay
	// far below this. A larger schema is a schemaProblem.
	MaxSchemaBytes = 1 << 20
	// MaxSchemaDepth bounds a schema's JSON nesting (arrays and objects):
	// real schemas nest a few dozen levels. Decoding, compiling and
	// rendering recurse along the nesting, so this keeps their stacks small.
	// A deeper schema is a schemaProblem.
	MaxSchemaDepth = 256

	// MaxNumberChars and MaxNumberExponent bound every number in a schema
	// and in arguments. Numbers are compared exactly, as big.Rat, and the
	// cost of converting one grows with the square of its digits and with
	// 10^exponent: 1e1000000 alone takes 30 ms, a million digits 2 s. The
	// bounds are far beyond any id, amount or float64 (1.8e308).
	MaxNumberChars    = 100
	MaxNumberExponent = 400

	// MaxArgProblems is how many problems an argsError lists: enough to fix
	// a call in one go, short enough to read. The rest are counted in More.
	MaxArgProblems = 20
	// maxProblemPath and maxProblemMessage bound what one problem quotes of
	// the arguments (property names, values) and of the schema (an enum's
	// values).
	maxProblemPath    = 200
	maxProblemMessage = 300
	// maxReason bounds a schemaProblem's reason, which quotes the schema.
	maxReason = 500
)

// schemaURL is where a tool's inputSchema sits while it is compiled: each tool
// has its own compiler, so every schema has this URL. A relative $ref resolves
// against it to a URL the loader refuses; .invalid never resolves (RFC 2606).
// Reasons show URLs relative to it.
const (
	schemaBase = "https://mcpgw.invalid/"
	schemaURL  = schemaBase + "inputSchema.json"
)

// errExternalRef is what the loader answers every load with.
var errExternalRef = errors.New("the gateway never loads schemas from files or the network")

// refuseLoader is every compiler's only loader: it loads nothing. A $ref or
// $schema that leaves the tool's own inputSchema fails compilation. The JSON
// Schema metaschemas are built into the library and never reach a loader.
type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) { return nil, errExternalRef }

// problemPrinter renders the library's error messages.
var problemPrinter = message.NewPrinter(language.English)

// argsValidator holds the compiled input schemas of one catalog version. Safe for
// concurrent use after construction: compiled schemas are never modified.
//
// Drafts: a schema without $schema is draft 2020-12; an explicit $schema of
// draft-04, -06, -07, 2019-09 or 2020-12 is honoured, and any other $schema is
// a schemaProblem (its metaschema would have to be fetched).
//
// format and content keep the library's defaults. format is asserted for
// draft-04/06/07 (their specifications let a validator assert it, and the
// library does) and is only an annotation for 2019-09 and 2020-12, as their
// specifications make the default. That suits MCP: servers use format
// loosely (a "uri" that is a bare path, a "date-time" without a zone), and
// refusing such calls would break tools that accept them; a draft-07 schema
// gets what its author asked for. Unknown formats are ignored.
// contentEncoding, contentMediaType and contentSchema are never asserted.
//
// Cost: validation has no deadline. Arguments are capped before they reach
// the validator (wire.Limits.CheckArgs) and every number is bounded here, so
// a program cannot make validation slow against a plain schema. A hostile
// schema can: an enum of 50 000 values checked against 100 000 array items,
// or an anyOf that recurses through $ref, costs the gateway CPU on each call
// to that tool. Its size and depth are capped, its run time is not.
type argsValidator struct {
	schemas map[wire.ToolKey]*jsonschema.Schema
}

// schemaProblem is a tool whose inputSchema could not be compiled. The tool
// stays callable, without validation. Reason says why, in one line.
type schemaProblem struct {
	Server, Tool, Reason string
}

// newArgsValidator compiles the input schemas of a catalog, each once, each with
// its own compiler (so one tool's $id can neither collide with nor be
// referenced from another's). Tools with an empty, absent or null
// inputSchema are not validated and are no problem. A tool that appears
// twice is validated against its first entry, and the second is reported.
// Nothing is read from files or the network.
func newArgsValidator(tools []wire.Tool) (*argsValidator, []schemaProblem) {
	v := &argsValidator{schemas: make(map[wire.ToolKey]*jsonschema.Schema, len(tools))}
	var problems []schemaProblem
	seen := make(map[wire.ToolKey]bool, len(tools))
	for _, t := range tools {
		k := t.Key()
		if seen[k] {
			problems = append(problems, schemaProblem{t.Server, t.Name, "the catalog lists this tool twice; its first inputSchema is used"})
			continue
		}
		seen[k] = true
		sch, err := compileSchema(t.InputSchema)
		if err != nil {
			problems = append(problems, schemaProblem{t.Server, t.Name, schemaReason(err)})
			continue
		}
		if sch != nil {
			v.schemas[k] = sch
		}
	}
	return v, problems
}

// Errors of compileSchema that are not the library's.
var (
	errSchemaTooLarge = errors.New("schema too large")
	errSchemaNumber   = errors.New("schema number out of range")
)

// compileSchema compiles one inputSchema. It returns nil, nil when there is
// nothing to compile.
func compileSchema(raw json.RawMessage) (sch *jsonschema.Schema, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if err := checkSchemaBytes(raw); err != nil {
		return nil, err
	}
	doc, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	if bad := checkNumbers(doc); bad != nil {
		return nil, fmt.Errorf("%w: %s at %s has more than %d characters or an exponent beyond ±%d",
			errSchemaNumber, wire.Cut(bad[0].num, 40), displayPath(bad[0].path), MaxNumberChars, MaxNumberExponent)
	}
	// The library is third-party code fed with a downstream server's bytes:
	// a panic in it is turned into a problem with this tool, never a crash
	// of the gateway.
	defer func() {
		if p := recover(); p != nil {
			sch, err = nil, fmt.Errorf("the schema compiler panicked: %v", p)
		}
	}()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// checkSchemaBytes applies MaxSchemaBytes and MaxSchemaDepth to a schema's
// bytes, and checks they are one JSON value, without recursion and before
// anything is decoded. renderTSType uses it too.
func checkSchemaBytes(raw []byte) error {
	if len(raw) > MaxSchemaBytes {
		return fmt.Errorf("%w: %d bytes, above the cap of %d", errSchemaTooLarge, len(raw), MaxSchemaBytes)
	}
	if _, err := wire.ScanJSON(raw, 0, MaxSchemaDepth); err != nil {
		if errors.Is(err, wire.ErrTooDeep) {
			return fmt.Errorf("%w: nested deeper than %d levels", errSchemaTooLarge, MaxSchemaDepth)
		}
		return fmt.Errorf("schema is not valid JSON: %w", err)
	}
	return nil
}

// schemaReason says in one bounded line why a schema was not compiled.
func schemaReason(err error) string {
	var load *jsonschema.LoadURLError
	var invalid *jsonschema.SchemaValidationError
	var reason string
	switch {
	case errors.As(err, &load):
		reason = fmt.Sprintf("the schema refers to %s, outside the schema itself; only references within the schema work, since %v",
			strconv.Quote(wire.Cut(load.URL, 200)), errExternalRef)
	case errors.As(err, &invalid):
		reason = "the schema is not a valid JSON Schema: " + invalid.Err.Error()
		var ve *jsonschema.ValidationError
		if errors.As(invalid.Err, &ve) {
			var sb strings.Builder
			problems, _ := problemList(ve, 3)
			for i, p := range problems {
				if i > 0 {
					sb.WriteString("; ")
				}
				fmt.Fprintf(&sb, "at %s: %s", displayPointer(p.Path), p.Message)
			}
			reason = "the schema is not a valid JSON Schema: " + sb.String()
		}
	default:
		reason = err.Error()
	}
	reason = strings.ReplaceAll(reason, schemaURL, "")
	reason = strings.ReplaceAll(reason, schemaBase, "")
	return wire.Cut(oneLine(reason), maxReason)
}

// Validate checks args, the bytes of a JSON object, against the input schema
// of server's tool. It returns nil when they are valid or when the tool has
// no compiled schema (none, or a schemaProblem). Otherwise the error is an
// *argsError listing each problem with its place in the arguments, except
// when the validator itself failed (it panicked), which is a plain error: the
// call should be refused then too. Args are expected to have passed
// wire.Limits.CheckArgs; Validate bounds every number again and refuses
// arguments that are not a JSON object.
func (v *argsValidator) Validate(server, tool string, args []byte) error {
	if v.schemas[wire.ToolKey{Server: server, Tool: tool}] == nil {
		return nil
	}
	inst, problems, err := decodeInstance(args)
	switch {
	case err != nil:
		problems = []argProblem{{Message: wire.Cut(oneLine("the arguments are not valid JSON: "+err.Error()), maxProblemMessage)}}
	case problems == nil:
		if _, ok := inst.(map[string]any); !ok {
			problems = []argProblem{{Message: "the arguments must be a JSON object"}}
		}
	}
	if problems != nil {
		ae := &argsError{Server: server, Tool: tool, Problems: problems}
		if len(problems) > MaxArgProblems {
			ae.Problems, ae.More = problems[:MaxArgProblems], len(problems)-MaxArgProblems
		}
		return ae
	}
	return v.validateValue(server, tool, inst)
}

// validateValue checks one decoded JSON value (from decodeInstance) against
// the tool's compiled schema. It is Validate without the decoding and the
// object check: the test suite runs its non-object cases through it.
func (v *argsValidator) validateValue(server, tool string, inst any) (err error) {
	sch := v.schemas[wire.ToolKey{Server: server, Tool: tool}]
	if sch == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("mcpgw: validating the arguments of %q on %q: the validator panicked: %v", tool, server, p)
		}
	}()
	verr := sch.Validate(inst)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return fmt.Errorf("mcpgw: validating the arguments of %q on %q: %w", tool, server, verr)
	}
	return problemsOf(server, tool, ve)
}

// decodeInstance decodes one JSON value, keeping numbers as json.Number so
// that big integers and decimals validate exactly. A number beyond
// MaxNumberChars or MaxNumberExponent is a problem, reported before any
// schema sees it.
func decodeInstance(b []byte) (any, []argProblem, error) {
	inst, err := decodeJSON(b)
	if err != nil {
		return nil, nil, err
	}
	bad := checkNumbers(inst)
	if bad == nil {
		return inst, nil, nil
	}
	var problems []argProblem
	for _, b := range bad {
		problems = append(problems, argProblem{
			Path: wire.Cut(pointerOf(b.path), maxProblemPath),
			Message: fmt.Sprintf("the number %s is beyond what the gateway checks (at most %d characters, exponent within ±%d)",
				wire.Cut(b.num, 40), MaxNumberChars, MaxNumberExponent),
		})
	}
	return nil, problems, nil
}

// decodeJSON decodes exactly one JSON value with json.Number for numbers.
// encoding/json refuses nesting deeper than 10000, so the value can be walked
// recursively.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// badNumber is a number beyond MaxNumberChars or MaxNumberExponent, and
// where it is.
type badNumber struct {
	path []string
	num  string
}

// checkNumbers finds the numbers beyond MaxNumberChars or MaxNumberExponent
// in a decoded value, ordered by place.
func checkNumbers(v any) []badNumber {
	var bad []badNumber
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch v := v.(type) {
		case json.Number:
			if !numberInBounds(string(v)) {
				bad = append(bad, badNumber{slices.Clone(path), string(v)})
			}
		case []any:
			for i, e := range v {
				walk(e, append(path, strconv.Itoa(i)))
			}
		case map[string]any:
			for k, e := range v {
				walk(e, append(path, k))
			}
		}
	}
	walk(v, nil)
	slices.SortFunc(bad, func(a, b badNumber) int { return comparePaths(a.path, b.path) })
	return bad
}

// numberInBounds applies MaxNumberChars and MaxNumberExponent to a JSON
// number's text.
func numberInBounds(s string) bool {
	if len(s) > MaxNumberChars {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	return err == nil && exp >= -MaxNumberExponent && exp <= MaxNumberExponent
}

// argsError is a call's arguments failing the tool's inputSchema. Problems
// lists at most MaxArgProblems of them, ordered by their place in the
// arguments; More counts those left out.
type argsError struct {
	Server, Tool string
	Problems     []argProblem
	More         int
}

// argProblem is one way the arguments fail the schema. Path is the JSON
// pointer (RFC 6901) of the offending value in the arguments, "" for the
// arguments as a whole; Message says what was expected. Both are bounded and
// quote the arguments only in part.
type argProblem struct {
	Path, Message string
}

// Error gives one line per problem, "/path/in/args: message", with "(root)"
// for the arguments as a whole, and a last line "... and N more" when
// problems were left out.
func (e *argsError) Error() string {
	var sb strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(displayPointer(p.Path))
		sb.WriteString(": ")
		sb.WriteString(p.Message)
	}
	if e.More > 0 {
		fmt.Fprintf(&sb, "\n... and %d more", e.More)
	}
	return sb.String()
}

// problemsOf is the argsError of a failed validation.
func problemsOf(server, tool string, root *jsonschema.ValidationError) *argsError {
	problems, more := problemList(root, MaxArgProblems)
	return &argsError{Server: server, Tool: tool, Problems: problems, More: more}
}

// problemList flattens the library's error tree into problems: each leaf is
// one, at its instance location, ordered by location. Leaves under anyOf and
// oneOf are each branch's reason, except that branches failing only on type
// are merged ("got number, want string or null"). At most max problems are
// kept, and their messages are the only ones made; more counts the rest.
func problemList(root *jsonschema.ValidationError, max int) (problems []argProblem, more int) {
	var leaves []*jsonschema.ValidationError
	stack := []*jsonschema.ValidationError{root}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if merged := mergeTypes(e); merged != nil {
			leaves = append(leaves, merged)
			continue
		}
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			continue
		}
		for i := len(e.Causes) - 1; i >= 0; i-- {
			stack = append(stack, e.Causes[i])
		}
	}
	slices.SortStableFunc(leaves, func(a, b *jsonschema.ValidationError) int {
		return comparePaths(a.InstanceLocation, b.InstanceLocation)
	})
	seen := make(map[argProblem]bool)
	for i, leaf := range leaves {
		if len(problems) == max {
			return problems, len(leaves) - i
		}
		p := argProblem{
			Path:    wire.Cut(pointerOf(leaf.InstanceLocation), maxProblemPath),
			Message: wire.Cut(oneLine(leaf.ErrorKind.LocalizedString(problemPrinter)), maxProblemMessage),
		}
		if !seen[p] {
			seen[p] = true
			problems = append(problems, p)
		}
	}
	return problems, 0
}

// mergeTypes turns an anyOf or oneOf whose every branch failed only on type,
// at the same place, into one type error listing all the types wanted. It
// returns nil for any other error.
func mergeTypes(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
	default:
		return nil
	}
	if len(e.Causes) < 2 {
		return nil
	}
	merged := &kind.Type{}
	for _, c := range e.Causes {
		t, ok := c.ErrorKind.(*kind.Type)
		if !ok || len(c.Causes) > 0 || !slices.Equal(c.InstanceLocation, e.InstanceLocation) {
			return nil
		}
		merged.Got = t.Got
		for _, w := range t.Want {
			if !slices.Contains(merged.Want, w) {
				merged.Want = append(merged.Want, w)
			}
		}
	}
	return &jsonschema.ValidationError{SchemaURL: e.SchemaURL, InstanceLocation: e.InstanceLocation, ErrorKind: merged}
}

// comparePaths orders instance locations token by token, array indices
// numerically, a parent before its children.
func comparePaths(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			return cmp.Compare(ai, bi)
		}
		return strings.Compare(a[i], b[i])
	}
	return cmp.Compare(len(a), len(b))
}

// pointerOf is the JSON pointer of an instance location.
func pointerOf(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return sb.String()
}

// displayPointer shows a JSON pointer, "(root)" for the whole document.
func displayPointer(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func displayPath(tokens []string) string {
	return displayPointer(wire.Cut(pointerOf(tokens), maxProblemPath))
}

// oneLine replaces each run of whitespace and control characters with one
// space, so that a peer's text cannot add lines to a message.
func oneLine(s string) string {
	var sb strings.Builder
	space := false
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 {
			space = true
			continue
		}
		if space && sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		space = false
		sb.WriteRune(r)
	}
	return sb.String()
}
