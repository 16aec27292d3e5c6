package mcpgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// The JSON Schema Test Suite (tests/draft7, tests/draft2020-12, remotes/)
// is data kept beside the repository, not in it:
// <repo root>/../shared/testdata/json-schema-test-suite. suiteDirEnv names
// another directory. Without the suite TestSchemaSuite skips, unless
// suiteRequiredEnv is "required" (.ci/run sets it when the directory is
// there), which makes a suite that cannot be found a failure.
const (
	suiteDirEnv      = "RUN_JS_SERVER_SCHEMA_SUITE_DIR"
	suiteRequiredEnv = "RUN_JS_SERVER_SCHEMA_SUITE"
)

// suiteDir finds the suite, or skips (fails when it is required).
func suiteDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(suiteDirEnv)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			suiteMissing(t, err.Error())
		}
		dir = filepath.Join(root, "..", "shared", "testdata", "json-schema-test-suite")
	}
	if _, err := os.Stat(filepath.Join(dir, "tests")); err != nil {
		suiteMissing(t, fmt.Sprintf("not found at %s (set %s to its directory): %v", dir, suiteDirEnv, err))
	}
	return dir
}

func suiteMissing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(suiteRequiredEnv) == "required" {
		t.Fatalf("JSON Schema Test Suite %s; %s=required makes this a failure", why, suiteRequiredEnv)
	}
	t.Skipf("JSON Schema Test Suite %s", why)
}

// repoRoot is the directory holding go.mod, found by walking up from the
// test's working directory (its package's).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && fi.Mode().IsRegular() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not found: no go.mod above the test's directory")
		}
		dir = parent
	}
}

// TestRepoRoot: the walk finds this repository's go.mod, whose module is
// this one.
func TestRepoRoot(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module github.com/run-js-server/run-js-server\n") {
		t.Fatalf("repoRoot() = %s, whose go.mod is not this module's: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "pkg", "mcpgw", "schema_test.go")); err != nil {
		t.Fatalf("repoRoot() = %s does not hold this package: %v", root, err)
	}
}

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// suiteDeviation is a case where the product, as configured, answers other
// than the suite expects. Each entry must still be met: when the library or
// the configuration changes, the test says which entry to drop. test "*"
// means the group's schema is a schemaProblem.
type suiteDeviation struct {
	draft, file, group, test, reason string
}

// suiteDeviations lists the cases skipped, with the reason. It is empty: with
// the library's defaults (format asserted only up to draft-07, content never)
// every required case of both drafts passes. Not run at all: the suite's
// optional/ directory (bignum, float-overflow, ecmascript-regex, format
// assertions), which this copy of the suite leaves out; bignum and regex
// behaviour are tested below instead (TestValidatorNumbers,
// TestValidatorHostileSchemas). Remote references are not listed here: they
// are asserted to be schemaProblems (TestSchemaSuite).
var suiteDeviations = []suiteDeviation{}

// suiteRun counts one draft's cases.
type suiteRun struct {
	passed, remote, deviated int
	remoteGroups             []string
}

func TestSchemaSuite(t *testing.T) {
	dir := suiteDir(t)
	used := map[suiteDeviation]bool{}
	for _, draft := range []struct {
		name         string
		dollarSchema string // added to object schemas without $schema: the product's default is 2020-12
		floor        int    // passing cases at least
		remoteGroups int    // groups whose schema needs a remote document
	}{
		{"draft7", "http://json-schema.org/draft-07/schema#", 904, 11},
		{"draft2020-12", "", 1250, 22},
	} {
		t.Run(draft.name, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(dir, "tests", draft.name, "*.json"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no suite files for %s: %v", draft.name, err)
			}
			var run suiteRun
			for _, file := range files {
				runSuiteFile(t, dir, draft.name, draft.dollarSchema, file, &run, used)
			}
			t.Logf("%s: %d cases pass, %d refused as remote references (never fetched), %d listed deviations; remote groups: %s",
				draft.name, run.passed, run.remote, run.deviated, strings.Join(run.remoteGroups, "; "))
			if run.passed < draft.floor {
				t.Errorf("%s: %d cases pass, below the floor of %d", draft.name, run.passed, draft.floor)
			}
			if len(run.remoteGroups) != draft.remoteGroups {
				t.Errorf("%s: %d groups refused as remote references, want %d", draft.name, len(run.remoteGroups), draft.remoteGroups)
			}
		})
	}
	for _, d := range suiteDeviations {
		if !used[d] {
			t.Errorf("deviation no longer met, drop it from suiteDeviations: %+v", d)
		}
	}
}

// remoteURL finds the URL a remote-reference problem names.
var remoteURL = regexp.MustCompile(`refers to "(http://localhost:1234/[^"#]*)`)

func runSuiteFile(t *testing.T, dir, draft, dollarSchema, file string, run *suiteRun, used map[suiteDeviation]bool) {
	base := filepath.Base(file)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var groups []suiteGroup
	if err := json.Unmarshal(raw, &groups); err != nil {
		t.Fatalf("%s: %v", base, err)
	}
	// One validator per file, one tool per group: the groups reuse $ids,
	// so this also shows that each tool's schema is compiled on its own.
	tools := make([]wire.Tool, len(groups))
	for i, g := range groups {
		tools[i] = wire.Tool{Server: "suite", Name: strconv.Itoa(i), InputSchema: withDollarSchema(g.Schema, dollarSchema)}
	}
	v, problems := newArgsValidator(tools)
	problemOf := map[string]string{}
	for _, p := range problems {
		problemOf[p.Tool] = p.Reason
	}
	deviation := func(group, test string) (suiteDeviation, bool) {
		for _, d := range suiteDeviations {
			if d.draft == draft && d.file == base && d.group == group && (d.test == test || d.test == "*") {
				return d, true
			}
		}
		return suiteDeviation{}, false
	}
	for i, g := range groups {
		name := strconv.Itoa(i)
		if reason, ok := problemOf[name]; ok {
			if d, ok := deviation(g.Description, "*"); ok {
				used[d] = true
				run.deviated += len(g.Tests)
				continue
			}
			m := remoteURL.FindStringSubmatch(reason)
			if m == nil {
				t.Errorf("%s %q: unexpected schemaProblem: %s", base, g.Description, reason)
				continue
			}
			// A remote reference: the suite serves remotes/ at
			// localhost:1234. The product never fetches, so the schema
			// must be a problem, naming one of those documents.
			rel := strings.TrimPrefix(m[1], "http://localhost:1234/")
			if _, err := os.Stat(filepath.Join(dir, "remotes", filepath.FromSlash(rel))); err != nil {
				t.Errorf("%s %q: refused %s, which is not in remotes/: %v", base, g.Description, m[1], err)
			}
			if !bytes.Contains(g.Schema, []byte("http://localhost:1234")) {
				t.Errorf("%s %q: remote problem for a schema that does not name localhost:1234: %s", base, g.Description, reason)
			}
			run.remote += len(g.Tests)
			run.remoteGroups = append(run.remoteGroups, base+": "+g.Description)
			continue
		}
		if base == "refRemote.json" {
			t.Errorf("%s %q compiled, but every group there needs a remote document", base, g.Description)
		}
		for _, c := range g.Tests {
			err := suiteValidate(v, name, c.Data)
			var ae *argsError
			if err != nil && !errors.As(err, &ae) {
				t.Errorf("%s %q / %q: not an *argsError: %v", base, g.Description, c.Description, err)
			}
			got := err == nil
			if d, ok := deviation(g.Description, c.Description); ok {
				used[d] = true
				run.deviated++
				if got == c.Valid {
					t.Errorf("%s %q / %q: listed as a deviation (%s) but now passes", base, g.Description, c.Description, d.reason)
				}
				continue
			}
			if got != c.Valid {
				t.Errorf("%s %q / %q: valid=%v, want %v (err: %v)", base, g.Description, c.Description, got, c.Valid, err)
				continue
			}
			run.passed++
		}
	}
}

// suiteValidate runs a case through the product: objects through Validate;
// any other value through the same decoding and compiled schema
// (decodeInstance and validateValue), since Validate only takes objects.
func suiteValidate(v *argsValidator, tool string, data json.RawMessage) error {
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return v.Validate("suite", tool, data)
	}
	inst, problems, err := decodeInstance(data)
	if err != nil {
		return err
	}
	if problems != nil {
		return &argsError{Problems: problems}
	}
	return v.validateValue("suite", tool, inst)
}

// withDollarSchema adds "$schema" to an object schema that has none.
func withDollarSchema(schema json.RawMessage, dollarSchema string) json.RawMessage {
	s := bytes.TrimSpace(schema)
	if dollarSchema == "" || !bytes.HasPrefix(s, []byte("{")) {
		return schema
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(s, &probe) == nil {
		if _, ok := probe["$schema"]; ok {
			return schema
		}
	}
	head := `{"$schema":` + strconv.Quote(dollarSchema)
	rest := bytes.TrimSpace(s[1:])
	if bytes.Equal(rest, []byte("}")) {
		return json.RawMessage(head + "}")
	}
	return json.RawMessage(head + "," + string(rest))
}

// tool is a catalog entry with an input schema.
func tool(name, schema string) wire.Tool {
	return wire.Tool{Server: "srv", Name: name, InputSchema: json.RawMessage(schema)}
}

// within fails the test when f is still running long after d, naming the
// guard that failed. d is what f takes on an idle machine; the watchdog
// allows twenty times that, so a loaded machine never trips it while a guard
// that failed (work that grows exponentially or without bound) always does.
// It measures no speed: speed is for benchmarks.
func within(t *testing.T, d time.Duration, guard string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(20 * d):
		t.Fatalf("%s: still running after %v: the guard failed to bound the work", guard, 20*d)
	}
}

func TestValidatorHostileSchemas(t *testing.T) {
	// A file that exists and holds a valid schema: a $ref to it must still
	// fail, which shows the loader never reads files.
	file := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A server that would answer with a valid schema: it must never be asked.
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()

	deep := strings.Repeat(`{"not":`, 100_000) + "{}" + strings.Repeat("}", 100_000)
	big := `{"enum":["` + strings.Repeat("x", 2<<20) + `"]}`
	for _, tc := range []struct {
		name, schema string
		reason       string // substring of the problem's reason
	}{
		{"1e5 levels deep", deep, "nested deeper than 256 levels"},
		{"2 MiB", big, "above the cap of 1048576"},
		{"ref to https", `{"$ref":"https://example.com/x"}`, `refers to "https://example.com/x", outside the schema`},
		{"ref to /etc/passwd", `{"$ref":"file:///etc/passwd"}`, `refers to "file:///etc/passwd"`},
		{"ref to an existing schema file", `{"$ref":"file://` + filepath.ToSlash(file) + `"}`, "never loads schemas from files or the network"},
		{"ref to a live HTTP server", `{"$ref":"` + srv.URL + `/schema.json"}`, "never loads schemas from files or the network"},
		{"relative ref", `{"properties":{"a":{"$ref":"other.json#/x"}}}`, `refers to "other.json"`},
		{"unknown $schema", `{"$schema":"https://example.com/meta","type":"object"}`, `refers to "https://example.com/meta"`},
		{"ref to a missing definition", `{"$ref":"#/$defs/missing"}`, `"#/$defs/missing" not found`},
		{"type is a number", `{"type":5}`, "not a valid JSON Schema: at /type:"},
		{"schema is a number", `5`, "not a valid JSON Schema: at (root): got number, want boolean or object"},
		{"not JSON", `{"type":`, "not valid JSON"},
		{"two values", `{} {}`, "not valid JSON"},
		{"lookahead, unsupported by Go regexp", `{"properties":{"e":{"type":"string","pattern":"^(?!\\.)[a-z.]+$"}}}`, "invalid or unsupported Perl syntax"},
		{"regexp too large", `{"properties":{"s":{"pattern":"(a{1000}){1000}"}}}`, "invalid repeat count"},
		{"exponent beyond bound", `{"properties":{"n":{"maximum":1e999999}}}`, "1e999999 at /properties/n/maximum has more than 100 characters or an exponent beyond ±400"},
		{"too many digits", `{"enum":[` + strings.Repeat("9", 101) + `]}`, "at /enum/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v *argsValidator
			var problems []schemaProblem
			within(t, time.Second, "schema guards (size, depth, loader)", func() {
				v, problems = newArgsValidator([]wire.Tool{tool("t", tc.schema)})
			})
			if len(problems) != 1 || problems[0].Server != "srv" || problems[0].Tool != "t" {
				t.Fatalf("problems = %+v, want one for srv/t", problems)
			}
			if r := problems[0].Reason; !strings.Contains(r, tc.reason) || strings.Contains(r, "\n") || len(r) > maxReason {
				t.Errorf("reason = %q, want one bounded line containing %q", r, tc.reason)
			}
			// The tool stays callable without validation.
			if err := v.Validate("srv", "t", []byte(`{"anything":[1,2,3]}`)); err != nil {
				t.Errorf("Validate = %v, want nil for a tool whose schema is a problem", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the HTTP server got %d requests, want none", n)
	}
}

func TestValidatorNoSchema(t *testing.T) {
	v, problems := newArgsValidator([]wire.Tool{
		tool("absent", ""), tool("null", "null"), tool("blank", " \n"), tool("true", "true"), tool("empty", "{}"),
		tool("false", "false"),
	})
	if len(problems) != 0 {
		t.Fatalf("problems = %+v, want none", problems)
	}
	for _, name := range []string{"absent", "null", "blank", "true", "empty", "unknown-tool"} {
		if err := v.Validate("srv", name, []byte(`{"a":1}`)); err != nil {
			t.Errorf("%s: Validate = %v, want nil", name, err)
		}
		// No schema, no decoding: even bytes that are not JSON pass.
		if name != "true" && name != "empty" {
			if err := v.Validate("srv", name, []byte(`not json`)); err != nil {
				t.Errorf("%s: Validate(not json) = %v, want nil", name, err)
			}
		}
	}
	if err := v.Validate("srv", "false", []byte(`{}`)); err == nil {
		t.Error("false schema: Validate = nil, want an error")
	}
}

func TestValidatorDuplicateTool(t *testing.T) {
	v, problems := newArgsValidator([]wire.Tool{tool("t", `{"required":["a"]}`), tool("t", `{"required":["b"]}`)})
	if len(problems) != 1 || !strings.Contains(problems[0].Reason, "twice") {
		t.Fatalf("problems = %+v, want one saying the tool is listed twice", problems)
	}
	if err := v.Validate("srv", "t", []byte(`{"b":1}`)); err == nil {
		t.Error("Validate = nil, want the first entry's schema (requires a)")
	}
}

func TestValidatorRecursiveRef(t *testing.T) {
	v, problems := newArgsValidator([]wire.Tool{tool("tree", `{
		"type": "object",
		"properties": {"n": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
		"additionalProperties": false
	}`)})
	if len(problems) != 0 {
		t.Fatalf("problems = %+v", problems)
	}
	if err := v.Validate("srv", "tree", []byte(`{"n":1,"kids":[{"n":2,"kids":[{"n":3}]},{"n":4}]}`)); err != nil {
		t.Errorf("valid tree: %v", err)
	}
	err := v.Validate("srv", "tree", []byte(`{"n":1,"kids":[{"n":2,"kids":[{"n":"three"}]}]}`))
	var ae *argsError
	if !errors.As(err, &ae) || len(ae.Problems) != 1 || ae.Problems[0].Path != "/kids/0/kids/0/n" {
		t.Errorf("invalid tree: %v, want one problem at /kids/0/kids/0/n", err)
	}
	// Arguments as deep as wire allows (MaxJSONDepth) validate quickly.
	depth := wire.DefaultMaxJSONDepth/2 - 1
	deep := strings.Repeat(`{"kids":[`, depth) + `{"n":1}` + strings.Repeat(`]}`, depth)
	within(t, 2*time.Second, "validation of deep arguments", func() {
		if err := v.Validate("srv", "tree", []byte(deep)); err != nil {
			t.Errorf("deep tree: %v", err)
		}
	})
}

// Go's regexp (RE2, which the library uses by default and we keep) runs in
// time linear in the input: no pattern backtracks. Patterns it cannot run
// in linear time (lookaround, backreferences) do not compile, and the schema
// is a schemaProblem (TestValidatorHostileSchemas).
func TestValidatorCatastrophicPattern(t *testing.T) {
	for _, pattern := range []string{`^(a+)+$`, `^(a|a)*$`, `^(a|aa)+$`, `^(.*a){20}$`} {
		t.Run(pattern, func(t *testing.T) {
			schema, _ := json.Marshal(map[string]any{"properties": map[string]any{"s": map[string]any{"pattern": pattern}}})
			v, problems := newArgsValidator([]wire.Tool{tool("t", string(schema))})
			if len(problems) != 0 {
				t.Fatalf("problems = %+v", problems)
			}
			// A backtracking engine takes 2^30000 steps here.
			args := `{"s":"` + strings.Repeat("a", 30_000) + `!"}`
			within(t, 2*time.Second, "linear-time pattern matching", func() {
				err := v.Validate("srv", "t", []byte(args))
				var ae *argsError
				if !errors.As(err, &ae) || ae.Problems[0].Path != "/s" {
					t.Errorf("Validate = %v, want a problem at /s", err)
				}
			})
		})
	}
}

func TestValidatorArgsErrors(t *testing.T) {
	const schema = `{
		"type": "object",
		"required": ["repo"],
		"additionalProperties": false,
		"properties": {
			"repo": {"type": "string"},
			"state": {"enum": ["open", "closed"]},
			"filter": {"type": "object", "properties": {"label": {"type": "string"}}},
			"ids": {"type": "array", "items": {"type": "integer"}},
			"note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
			"a/b": {"properties": {"c~d": {"const": 1}}}
		}
	}`
	v, problems := newArgsValidator([]wire.Tool{tool("t", schema)})
	if len(problems) != 0 {
		t.Fatalf("problems = %+v", problems)
	}
	for _, tc := range []struct {
		name, args string
		want       []argProblem
	}{
		{"valid", `{"repo":"o/r","state":"open","ids":[1,2],"note":null}`, nil},
		{"missing required", `{}`, []argProblem{{"", "missing property 'repo'"}}},
		{"additional property", `{"repo":"o/r","extra":1}`, []argProblem{{"", "additional properties 'extra' not allowed"}}},
		{"wrong type", `{"repo":5}`, []argProblem{{"/repo", "got number, want string"}}},
		{"nested property", `{"repo":"o/r","filter":{"label":true}}`, []argProblem{{"/filter/label", "got boolean, want string"}}},
		{"array index", `{"repo":"o/r","ids":[1,"two",3,4.5]}`, []argProblem{{"/ids/1", "got string, want integer"}, {"/ids/3", "got number, want integer"}}},
		{"enum", `{"repo":"o/r","state":"merged"}`, []argProblem{{"/state", "value must be one of 'open', 'closed'"}}},
		{"nullable", `{"repo":"o/r","note":5}`, []argProblem{{"/note", "got number, want string or null"}}},
		{"escaped pointer", `{"repo":"o/r","a/b":{"c~d":2}}`, []argProblem{{"/a~1b/c~0d", "value must be 1"}}},
		{"not an object", `[1]`, []argProblem{{"", "the arguments must be a JSON object"}}},
		{"not JSON", `{"repo":`, []argProblem{{"", "the arguments are not valid JSON: unexpected EOF"}}},
		{"ordered by place", `{"ids":[0,1,2,3,4,5,6,7,8,9,"ten","x"],"repo":1,"extra":true}`, []argProblem{
			{"", "additional properties 'extra' not allowed"}, {"/ids/10", "got string, want integer"},
			{"/ids/11", "got string, want integer"}, {"/repo", "got number, want string"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Validate("srv", "t", []byte(tc.args))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var ae *argsError
			if !errors.As(err, &ae) {
				t.Fatalf("Validate = %v, want an *argsError", err)
			}
			if ae.Server != "srv" || ae.Tool != "t" || ae.More != 0 {
				t.Errorf("argsError = %+v, want srv/t and nothing left out", ae)
			}
			if fmt.Sprint(ae.Problems) != fmt.Sprint(tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", ae.Problems, tc.want)
			}
		})
	}
}

func TestValidatorArgsErrorText(t *testing.T) {
	v, _ := newArgsValidator([]wire.Tool{tool("t", `{"properties":{"xs":{"items":{"type":"string"}}},"required":["id"]}`)})
	err := v.Validate("srv", "t", []byte(`{"xs":[1,2]}`))
	want := "(root): missing property 'id'\n/xs/0: got number, want string\n/xs/1: got number, want string"
	if err == nil || err.Error() != want {
		t.Errorf("Error() =\n%v\nwant\n%s", err, want)
	}

	// The cap: 30 wrong items, 20 listed.
	err = v.Validate("srv", "t", []byte(`{"id":1,"xs":[`+strings.TrimSuffix(strings.Repeat("1,", 30), ",")+`]}`))
	var ae *argsError
	if !errors.As(err, &ae) || len(ae.Problems) != MaxArgProblems || ae.More != 30-MaxArgProblems {
		t.Fatalf("Validate = %#v, want %d problems and %d more", err, MaxArgProblems, 30-MaxArgProblems)
	}
	lines := strings.Split(ae.Error(), "\n")
	if len(lines) != MaxArgProblems+1 || lines[0] != "/xs/0: got number, want string" || lines[MaxArgProblems] != "... and 10 more" {
		t.Errorf("Error() lines = %q", lines)
	}

	// Hostile arguments: a long key and a long value are quoted in part only.
	long := strings.Repeat("k", 10_000)
	v, _ = newArgsValidator([]wire.Tool{tool("t", `{"additionalProperties":{"const":"x"},"properties":{"e":{"enum":["`+strings.Repeat("v", 5000)+`"]}}}`)})
	err = v.Validate("srv", "t", []byte(`{"`+long+`":"y","e":"z"}`))
	if !errors.As(err, &ae) || len(ae.Problems) != 2 {
		t.Fatalf("Validate = %v, want two problems", err)
	}
	for _, p := range ae.Problems {
		if len(p.Path) > maxProblemPath || len(p.Message) > maxProblemMessage {
			t.Errorf("problem not bounded: path %d bytes, message %d bytes", len(p.Path), len(p.Message))
		}
	}
}

func TestValidatorNumbers(t *testing.T) {
	v, problems := newArgsValidator([]wire.Tool{
		tool("max", `{"properties":{"n":{"maximum":18446744073709551615}}}`),
		tool("int", `{"properties":{"n":{"type":"integer"}}}`),
		tool("cents", `{"properties":{"n":{"multipleOf":0.01}}}`),
		tool("unique", `{"properties":{"n":{"uniqueItems":true}}}`),
	})
	if len(problems) != 0 {
		t.Fatalf("problems = %+v", problems)
	}
	for _, tc := range []struct {
		tool, n string
		valid   bool
	}{
		{"max", "18446744073709551615", true},
		{"max", "18446744073709551616", false}, // 2^64: equal to max as a float64
		{"max", "18446744073709551615.000000001", false},
		{"int", "123456789012345678901234567890", true},
		{"int", "1.0", true},
		{"int", "1e2", true},
		{"int", "1.0000000000000000001", false}, // 1 as a float64
		{"cents", "19.99", true},                // 1998.9999999999998 in float64
		{"cents", "0.3", true},
		{"cents", "0.001", false},
		{"unique", "[1, 1.0]", false},
		{"unique", "[9007199254740993, 9007199254740992]", true}, // equal as float64
		// Beyond the number bounds: refused before the schema sees them.
		{"int", "1e401", false},
		{"int", "1e-401", false},
		{"int", "1" + strings.Repeat("0", MaxNumberChars), false},
		{"int", "1e400", true},
	} {
		err := v.Validate("srv", tc.tool, []byte(`{"n":`+tc.n+`}`))
		if (err == nil) != tc.valid {
			t.Errorf("%s %s: Validate = %v, want valid=%v", tc.tool, tc.n, err, tc.valid)
		}
	}

	// A program cannot make validation slow with numbers: 100 000 of
	// 1e400 (the largest allowed) against uniqueItems, which converts each
	// to an exact rational.
	items := strings.TrimSuffix(strings.Repeat("1e400,", 50_000)+strings.Repeat("2e-400,", 50_000), ",")
	within(t, 5*time.Second, "MaxNumberExponent", func() {
		if err := v.Validate("srv", "unique", []byte(`{"n":[`+items+`]}`)); err == nil {
			t.Error("uniqueItems over duplicates: Validate = nil, want an error")
		}
	})
	within(t, 3*time.Second, "MaxNumberExponent", func() {
		err := v.Validate("srv", "unique", []byte(`{"n":[`+strings.TrimSuffix(strings.Repeat("1e999999,", 100_000), ",")+`]}`))
		var ae *argsError
		if !errors.As(err, &ae) || len(ae.Problems) != MaxArgProblems || ae.More != 100_000-MaxArgProblems || ae.Problems[1].Path != "/n/1" {
			t.Errorf("Validate = %v, want the numbers out of bounds listed in order", err)
		}
	})
}

func TestValidatorDrafts(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		problem      bool
		args         string
		valid        bool
	}{
		// No $schema: 2020-12, where items takes one schema.
		{"default is 2020-12", `{"properties":{"t":{"items":[{"type":"string"}]}}}`, true, "", false},
		{"2020-12 prefixItems", `{"properties":{"t":{"prefixItems":[{"type":"string"}]}}}`, false, `{"t":[1]}`, false},
		{"draft-07 items array", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"t":{"items":[{"type":"string"}]}}}`, false, `{"t":[1]}`, false},
		{"draft-04 boolean exclusiveMaximum", `{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"maximum":5,"exclusiveMaximum":true}}}`, false, `{"n":5}`, false},
		{"draft-06 numeric exclusiveMaximum", `{"$schema":"http://json-schema.org/draft-06/schema#","properties":{"n":{"exclusiveMaximum":5}}}`, false, `{"n":5}`, false},
		{"2019-09 dependentRequired", `{"$schema":"https://json-schema.org/draft/2019-09/schema","dependentRequired":{"a":["b"]}}`, false, `{"a":1}`, false},
		{"draft-07 ignores dependentRequired", `{"$schema":"http://json-schema.org/draft-07/schema#","dependentRequired":{"a":["b"]}}`, false, `{"a":1}`, true},
		// format: an annotation in 2019-09 and 2020-12, asserted up to draft-07.
		{"2020-12 format not asserted", `{"properties":{"e":{"format":"email"}}}`, false, `{"e":"not an email"}`, true},
		{"2019-09 format not asserted", `{"$schema":"https://json-schema.org/draft/2019-09/schema","properties":{"e":{"format":"date-time"}}}`, false, `{"e":"yesterday"}`, true},
		{"draft-07 format asserted", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"e":{"format":"email"}}}`, false, `{"e":"not an email"}`, false},
		{"draft-07 unknown format ignored", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"e":{"format":"github-repo"}}}`, false, `{"e":"x"}`, true},
		// content: never asserted.
		{"contentEncoding not asserted", `{"properties":{"b":{"contentEncoding":"base64","contentMediaType":"application/json"}}}`, false, `{"b":"%%% not base64"}`, true},
		{"draft-07 contentEncoding not asserted", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"b":{"contentEncoding":"base64"}}}`, false, `{"b":"%%%"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, problems := newArgsValidator([]wire.Tool{tool("t", tc.schema)})
			if (len(problems) != 0) != tc.problem {
				t.Fatalf("problems = %+v, want a problem: %v", problems, tc.problem)
			}
			if tc.problem {
				return
			}
			if err := v.Validate("srv", "t", []byte(tc.args)); (err == nil) != tc.valid {
				t.Errorf("Validate = %v, want valid=%v", err, tc.valid)
			}
		})
	}
}

func TestValidatorConcurrent(t *testing.T) {
	v, _ := newArgsValidator([]wire.Tool{
		tool("a", `{"properties":{"n":{"type":"integer","maximum":10}},"required":["n"]}`),
		tool("b", `{"properties":{"s":{"type":"string","pattern":"^x+$"}}}`),
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := (g + i) % 20
				err := v.Validate("srv", "a", []byte(`{"n":`+strconv.Itoa(n)+`}`))
				if (err == nil) != (n <= 10) {
					t.Errorf("a n=%d: %v", n, err)
				}
				if err := v.Validate("srv", "b", []byte(`{"s":"xxy"}`)); err == nil {
					t.Error("b: want an error")
				}
			}
		}()
	}
	wg.Wait()
}
