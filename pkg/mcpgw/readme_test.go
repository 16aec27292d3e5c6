package mcpgw

// This file checks README.md's table of limits against the code: every row
// names a constant and gives its value, and every limit of the packages
// below is a row.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/lanes"
	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// readmeLimits is every limit the README's table may name, with its value:
// a constant added to the table must be added here, where the compiler
// checks the name.
var readmeLimits = map[string]any{
	"wire.DefaultTimeout":         wire.DefaultTimeout,
	"wire.MinTimeout":             wire.MinTimeout,
	"wire.MaxTimeout":             wire.MaxTimeout,
	"wire.DefaultMemory":          wire.DefaultMemory,
	"wire.MinMemory":              wire.MinMemory,
	"wire.MaxMemory":              wire.MaxMemory,
	"wire.DefaultStack":           wire.DefaultStack,
	"wire.DefaultMaxInFlight":     wire.DefaultMaxInFlight,
	"wire.DefaultMaxArgBytes":     wire.DefaultMaxArgBytes,
	"wire.DefaultMaxArgValues":    wire.DefaultMaxArgValues,
	"wire.DefaultMaxJSONDepth":    wire.DefaultMaxJSONDepth,
	"wire.ResultMemoryShare":      wire.ResultMemoryShare,
	"wire.DefaultMaxReturnBytes":  wire.DefaultMaxReturnBytes,
	"wire.MaxWorkerFrame":         wire.MaxWorkerFrame,
	"wire.MaxStartFrame":          wire.MaxStartFrame,
	"wire.MaxCodeBytes":           wire.MaxCodeBytes,
	"wire.MaxInputBytes":          wire.MaxInputBytes,
	"wire.OutputHeadChars":        wire.OutputHeadChars,
	"wire.OutputTailChars":        wire.OutputTailChars,
	"wire.MaxErrorChars":          wire.MaxErrorChars,
	"wire.MaxLayerText":           wire.MaxLayerText,
	"worker.DefaultGrace":         worker.DefaultGrace,
	"worker.MaxSpares":            worker.MaxSpares,
	"worker.MaxUnseenListed":      worker.MaxUnseenListed,
	"worker.MaxLedgerArgChars":    worker.MaxLedgerArgChars,
	"mcpgw.MaxRunningPrograms":    MaxRunningPrograms,
	"mcpgw.DefaultSpares":         DefaultSpares,
	"mcpgw.MaxRunningPerSession":  MaxRunningPerSession,
	"mcpgw.KeptEndingsPerSession": KeptEndingsPerSession,
	"mcpgw.MinYield":              MinYield,
	"mcpgw.DefaultYield":          DefaultYield,
	"mcpgw.MaxYield":              MaxYield,
	"lanes.DefaultMaxActive":      lanes.DefaultMaxActive,
	"lanes.DefaultMaxOutstanding": lanes.DefaultMaxOutstanding,
	"lanes.MaxOutstandingLimit":   lanes.MaxOutstandingLimit,
	"mcpgw.DefaultStartTimeout":   DefaultStartTimeout,
	"mcpgw.MinStartTimeout":       MinStartTimeout,
	"mcpgw.MaxStartTimeout":       MaxStartTimeout,
	"mcpgw.MaxEnvFileBytes":       MaxEnvFileBytes,
	"mcpgw.MaxToolsPerServer":     MaxToolsPerServer,
	"mcpgw.MaxToolsInDescription": MaxToolsInDescription,
	"mcpgw.MaxSearchResults":      MaxSearchResults,
	"mcpgw.DefaultSearchResults":  DefaultSearchResults,
	"mcpgw.MaxTSDeclBytes":        MaxTSDeclBytes,
	"mcpgw.MaxTSDepth":            MaxTSDepth,
	"mcpgw.MaxSchemaBytes":        MaxSchemaBytes,
	"mcpgw.MaxSchemaDepth":        MaxSchemaDepth,
	"mcpgw.MaxNumberChars":        MaxNumberChars,
	"mcpgw.MaxNumberExponent":     MaxNumberExponent,
	"mcpgw.MaxArgProblems":        MaxArgProblems,
	"mcpgw.MaxConfigBytes":        MaxConfigBytes,
	"mcpgw.MaxConfigDepth":        MaxConfigDepth,
	"mcpgw.MaxConfigServers":      MaxConfigServers,
	"mcpgw.MaxServerNameBytes":    MaxServerNameBytes,
	"mcpgw.MaxConfigProblems":     MaxConfigProblems,
	"mcpgw.MaxRequestBytes":       MaxRequestBytes,
	"mcpgw.DefaultSessionIdle":    DefaultSessionIdle,
	"mcpgw.DefaultMaxSessions":    DefaultMaxSessions,
	"mcpgw.MinTokenBytes":         MinTokenBytes,
	"mcpgw.HeaderTimeout":         HeaderTimeout,
	"mcpgw.KeepAliveTimeout":      KeepAliveTimeout,
	"mcpgw.DrainTimeout":          DrainTimeout,
}

// notLimits are exported numeric constants of the scanned packages that are
// not limits, with why.
var notLimits = map[string]string{
	"wire.ProtocolVersion": "a version number",
	"worker.WorkerFD":      "a descriptor number",
}

// readmeRow is one row of the table: its limit, its value cell, and the
// constant it names.
type readmeRow struct {
	line         int
	limit, value string
	constant     string
}

// readmeTable reads the table under "## Limits" in README.md.
func readmeTable(t *testing.T) []readmeRow {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := -1
	for i, l := range lines {
		if l == "## Limits" {
			start = i
		}
	}
	if start < 0 {
		t.Fatal(`README.md has no "## Limits" section`)
	}
	var rows []readmeRow
	inTable := false
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break // one table
			}
			continue
		}
		if !inTable {
			if l != "| limit | value | constant |" {
				t.Fatalf("README.md:%d: the table's header is %q, want | limit | value | constant |", i+1, l)
			}
			inTable = true
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), " | ")
		if strings.HasPrefix(l, "| ---") {
			continue
		}
		if len(cells) != 3 {
			t.Fatalf("README.md:%d: a row of %d cells, want 3: %s", i+1, len(cells), l)
		}
		c := strings.TrimSpace(cells[2])
		if !strings.HasPrefix(c, "`") || !strings.HasSuffix(c, "`") {
			t.Fatalf("README.md:%d: the constant cell %q is not one `pkg.Name`", i+1, c)
		}
		rows = append(rows, readmeRow{line: i + 1, limit: strings.TrimSpace(cells[0]), value: strings.TrimSpace(cells[1]), constant: strings.Trim(c, "`")})
	}
	if len(rows) == 0 {
		t.Fatal("README.md: no rows in the limits table")
	}
	return rows
}

// readmeQuantity reads the number and unit a value cell starts with:
// "64 MiB of JSON", "30 s", "100,000", "2,000 levels".
var readmeQuantity = regexp.MustCompile(`^([0-9][0-9,]*)(?: (ms|s|min|bytes|KiB|MiB|GiB)\b)?`)

// readmeValue is the value a cell states: a time.Duration for ms, s and
// min, else an int64 (bytes for a size unit, a count without one).
func readmeValue(cell string) (any, error) {
	m := readmeQuantity.FindStringSubmatch(cell)
	if m == nil {
		return nil, fmt.Errorf("%q does not start with a number", cell)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	if err != nil {
		return nil, err
	}
	switch m[2] {
	case "ms":
		return time.Duration(n) * time.Millisecond, nil
	case "s":
		return time.Duration(n) * time.Second, nil
	case "min":
		return time.Duration(n) * time.Minute, nil
	case "KiB":
		return n << 10, nil
	case "MiB":
		return n << 20, nil
	case "GiB":
		return n << 30, nil
	}
	return n, nil
}

// TestREADMELimits: each row of README's limits table states its constant's
// value; each constant named exists; no constant is named twice.
func TestREADMELimits(t *testing.T) {
	named := map[string]int{}
	for _, r := range readmeTable(t) {
		if prev, ok := named[r.constant]; ok {
			t.Errorf("README.md:%d: %s is named again (first at line %d)", r.line, r.constant, prev)
		}
		named[r.constant] = r.line
		want, ok := readmeLimits[r.constant]
		if !ok {
			t.Errorf("README.md:%d: %s is not a limit this test knows: add it to readmeLimits (readme_test.go)", r.line, r.constant)
			continue
		}
		got, err := readmeValue(r.value)
		if err != nil {
			t.Errorf("README.md:%d (%s): %v", r.line, r.limit, err)
			continue
		}
		switch w := want.(type) {
		case time.Duration:
			if g, ok := got.(time.Duration); !ok || g != w {
				t.Errorf("README.md:%d (%s): says %q, but %s is %s", r.line, r.limit, r.value, r.constant, w)
			}
		default:
			if g, ok := got.(int64); !ok || g != readmeInt(w) {
				t.Errorf("README.md:%d (%s): says %q, but %s is %v", r.line, r.limit, r.value, r.constant, w)
			}
		}
	}
	for c := range readmeLimits {
		if _, ok := named[c]; !ok {
			t.Errorf("%s is in readmeLimits but not in README.md's table: add a row", c)
		}
	}
}

// readmeInt is an integer constant's value as an int64.
func readmeInt(v any) int64 {
	switch v := v.(type) {
	case int:
		return int64(v)
	case int64:
		return v
	}
	panic(fmt.Sprintf("readmeLimits holds a %T; add its case", v))
}

// TestREADMELimitsComplete: every exported numeric constant of the packages
// that hold limits is a row of README's table (or in notLimits), so a limit
// added to the code without the README fails here.
func TestREADMELimitsComplete(t *testing.T) {
	named := map[string]bool{}
	for _, r := range readmeTable(t) {
		named[r.constant] = true
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"wire", "worker", "lanes", "mcpgw"} {
		for _, name := range exportedNumericConsts(t, filepath.Join(root, "pkg", pkg)) {
			q := pkg + "." + name
			if _, skip := notLimits[q]; skip || named[q] {
				continue
			}
			t.Errorf("%s is a limit of the code missing from README.md's table: add a row (and to readmeLimits), or to notLimits if it is no limit", q)
		}
	}
}

// exportedNumericConsts lists the exported constants of the Go files of dir
// (tests left out) whose value is a number or a duration: untyped, or of
// type time.Duration, and not a string.
func exportedNumericConsts(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if vs.Type != nil && typeName(vs.Type) != "time.Duration" {
					continue // typed: a Status, a Transport, a frame Type...
				}
				for i, id := range vs.Names {
					if !id.IsExported() || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						continue
					}
					if _, ok := vs.Values[i].(*ast.BinaryExpr); ok && strings.Contains(exprString(vs.Values[i]), `"`) {
						continue // a string built from others
					}
					out = append(out, id.Name)
				}
			}
		}
	}
	return out
}

// typeName is a type expression's text, for the few forms constants use.
func typeName(e ast.Expr) string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		if x, ok := s.X.(*ast.Ident); ok {
			return x.Name + "." + s.Sel.Name
		}
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// exprString is enough of an expression's text to tell a string from a
// number.
func exprString(e ast.Expr) string {
	var b strings.Builder
	ast.Inspect(e, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok {
			b.WriteString(lit.Value)
		}
		return true
	})
	return b.String()
}
