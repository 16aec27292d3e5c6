package quickjsng_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// pinFile is the pin, relative to this package directory (the test's cwd).
const pinFile = "PIN"

// upstreamRepo is the GitHub repository the binding must say it vendored.
const upstreamRepo = "quickjs-ng/quickjs"

// pin is the parsed content of PIN.
type pin struct {
	Binding        string
	BindingVersion string
	Engine         string
	EngineVersion  string
	// SHA256 maps a '/'-separated path relative to the binding's module
	// directory to the lowercase hex SHA-256 of that file.
	SHA256 map[string]string
}

var (
	hexSHA256   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	semverLike  = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
	goModVerRe  = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
	includeRe   = regexp.MustCompile(`(?m)^\s*#\s*include\s+"(deps/quickjs/[^"]+\.c)"`)
	defineRe    = regexp.MustCompile(`(?m)^\s*#\s*define\s+(QJS_VERSION_(?:MAJOR|MINOR|PATCH|SUFFIX))\s+(\S+)\s*$`)
	envAssignRe = regexp.MustCompile(`^([A-Z_][A-Z0-9_]*)=(.*)$`)
)

// parsePin parses PIN strictly: blank lines and '#' comments are skipped;
// every other line must be KEY=VALUE with a known key. Unknown keys,
// duplicates, malformed values and missing keys are errors naming the line.
func parsePin(data []byte) (*pin, error) {
	p := &pin{SHA256: map[string]string{}}
	scalars := map[string]*string{
		"binding":         &p.Binding,
		"binding_version": &p.BindingVersion,
		"engine":          &p.Engine,
		"engine_version":  &p.EngineVersion,
	}
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		raw := sc.Text()
		line := strings.TrimSuffix(raw, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("PIN line %d %q: %s", n, raw, fmt.Sprintf(format, args...))
		}
		if line != strings.TrimSpace(line) {
			return nil, bad("leading or trailing whitespace")
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, bad("want KEY=VALUE")
		}
		if key == "" || val == "" {
			return nil, bad("empty key or value")
		}
		if strings.TrimSpace(key) != key || strings.TrimSpace(val) != val {
			return nil, bad("no spaces allowed around '='")
		}
		if prev, dup := seen[key]; dup {
			return nil, bad("duplicate key %q (first on line %d)", key, prev)
		}
		seen[key] = n
		if dst, ok := scalars[key]; ok {
			if strings.ContainsAny(val, " \t") {
				return nil, bad("value must not contain spaces")
			}
			switch key {
			case "binding_version":
				if !goModVerRe.MatchString(val) {
					return nil, bad("binding_version must be a Go module version like v1.2.3")
				}
			case "engine_version":
				if !semverLike.MatchString(val) {
					return nil, bad("engine_version must look like 1.2.3 (no leading v)")
				}
			}
			*dst = val
			continue
		}
		rel, isHash := strings.CutPrefix(key, "sha256 ")
		if !isHash {
			return nil, bad("unknown key %q (known: binding, binding_version, engine, engine_version, \"sha256 <path>\")", key)
		}
		if rel == "" || strings.ContainsAny(rel, " \t\\") || path.IsAbs(rel) ||
			path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, bad("sha256 path must be a clean, relative, '/'-separated path without spaces")
		}
		if !hexSHA256.MatchString(val) {
			return nil, bad("sha256 value must be 64 lowercase hex digits")
		}
		p.SHA256[rel] = val
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading PIN: %w", err)
	}
	var missing []string
	for _, k := range []string{"binding", "binding_version", "engine", "engine_version"} {
		if *scalars[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(p.SHA256) == 0 {
		missing = append(missing, `"sha256 <path>" (at least one)`)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("PIN: missing keys: %s", strings.Join(missing, ", "))
	}
	return p, nil
}

// goModule is the subset of `go list -m -json` output the test uses.
type goModule struct {
	Path    string
	Version string
	Dir     string
	Replace *goModule
	Error   *struct{ Err string }
}

// goCommand returns the go binary: `go test` puts $GOROOT/bin first on
// PATH, and runtime.GOROOT is the fallback.
func goCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := runtime.GOROOT(); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("go binary not found on PATH or in runtime.GOROOT()/bin")
}

func listModule(t *testing.T, modPath string) *goModule {
	t.Helper()
	goBin, err := goCommand()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "list", "-m", "-json", modPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s list -m -json %s: %v\n%s", goBin, modPath, err, stderr.String())
	}
	var m goModule
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("decoding go list output: %v\n%s", err, out)
	}
	if m.Error != nil {
		t.Fatalf("go list -m %s: %s", modPath, m.Error.Err)
	}
	return &m
}

// readEnvFile parses the binding's deps/quickjs-release.env (KEY="value").
func readEnvFile(name string) (map[string]string, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	vals := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := envAssignRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		vals[m[1]] = strings.Trim(m[2], `"'`)
	}
	return vals, nil
}

// headerVersion returns MAJOR.MINOR.PATCH[SUFFIX] from quickjs.h.
func headerVersion(name string) (string, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	defs := map[string]string{}
	for _, m := range defineRe.FindAllStringSubmatch(string(data), -1) {
		defs[m[1]] = m[2]
	}
	for _, k := range []string{"QJS_VERSION_MAJOR", "QJS_VERSION_MINOR", "QJS_VERSION_PATCH"} {
		if defs[k] == "" {
			return "", fmt.Errorf("%s: #define %s not found", name, k)
		}
	}
	suffix, err := unquoteC(defs["QJS_VERSION_SUFFIX"])
	if err != nil {
		return "", fmt.Errorf("%s: QJS_VERSION_SUFFIX: %v", name, err)
	}
	return defs["QJS_VERSION_MAJOR"] + "." + defs["QJS_VERSION_MINOR"] + "." +
		defs["QJS_VERSION_PATCH"] + suffix, nil
}

func unquoteC(s string) (string, error) {
	if s == "" {
		return "", nil // macro absent: no suffix
	}
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' || strings.ContainsAny(s[1:len(s)-1], `"\`) {
		return "", fmt.Errorf("want a simple string literal, got %s", s)
	}
	return s[1 : len(s)-1], nil
}

func fileSHA256(name string) (string, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// compiledSources returns the deps/quickjs/*.c files that the binding's
// root qjs_*.c files #include, i.e. the engine C code cgo compiles.
func compiledSources(dir string) ([]string, error) {
	wrappers, err := filepath.Glob(filepath.Join(dir, "qjs_*.c"))
	if err != nil {
		return nil, err
	}
	if len(wrappers) == 0 {
		return nil, fmt.Errorf("no qjs_*.c files in %s: the binding's layout changed", dir)
	}
	set := map[string]bool{}
	for _, w := range wrappers {
		data, err := os.ReadFile(w)
		if err != nil {
			return nil, err
		}
		for _, m := range includeRe.FindAllStringSubmatch(string(data), -1) {
			set[m[1]] = true
		}
	}
	var out []string
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

func TestBoundModuleCarriesPinnedEngine(t *testing.T) {
	data, err := os.ReadFile(pinFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parsePin(data)
	if err != nil {
		t.Fatal(err)
	}
	if p.Engine != "quickjs-ng" {
		t.Fatalf("PIN: engine=%s, but this check only knows how to verify quickjs-ng", p.Engine)
	}

	var problems []string
	problem := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	defer func() {
		if len(problems) == 0 {
			return
		}
		t.Fatalf("the bound engine differs from third_party/quickjs-ng/PIN:\n  - %s\n\n"+
			"If this change is intended (a version bump), review the upstream diff "+
			"(https://github.com/%s/compare/v<old>...v<new> and the changelog, "+
			"security fixes first), then update PIN deliberately as described in "+
			"third_party/quickjs-ng/README.md. If it is not intended, restore go.mod "+
			"and go.sum and run `go mod verify` to check the module cache.",
			strings.Join(problems, "\n  - "), upstreamRepo)
	}()

	m := listModule(t, p.Binding)
	if m.Replace != nil {
		problem("go.mod replaces %s %s with %s %s; the pin covers the unreplaced module "+
			"(patches belong in third_party/quickjs-ng as .patch files, see README.md)",
			m.Path, m.Version, m.Replace.Path, m.Replace.Version)
		return
	}
	if m.Version != p.BindingVersion {
		problem("go.mod binds %s %s, PIN says binding_version=%s", m.Path, m.Version, p.BindingVersion)
	}
	if m.Dir == "" {
		problem("%s %s is not in the module cache (run go mod download)", m.Path, m.Version)
		return
	}

	env, err := readEnvFile(filepath.Join(m.Dir, "deps", "quickjs-release.env"))
	if err != nil {
		problem("reading the binding's release record: %v", err)
	} else {
		if got := env["QUICKJS_NG_REPO"]; got != upstreamRepo {
			problem("deps/quickjs-release.env: QUICKJS_NG_REPO=%q, want %q", got, upstreamRepo)
		}
		if got, want := env["QUICKJS_NG_TAG"], "v"+p.EngineVersion; got != want {
			problem("deps/quickjs-release.env: QUICKJS_NG_TAG=%q, PIN engine_version=%s wants %q",
				got, p.EngineVersion, want)
		}
	}

	hv, err := headerVersion(filepath.Join(m.Dir, "deps", "quickjs", "quickjs.h"))
	if err != nil {
		problem("%v", err)
	} else if hv != p.EngineVersion {
		problem("deps/quickjs/quickjs.h: QJS_VERSION_* = %s, PIN engine_version=%s", hv, p.EngineVersion)
	}

	required := []string{"deps/quickjs/quickjs.h"}
	srcs, err := compiledSources(m.Dir)
	if err != nil {
		problem("finding compiled engine sources: %v", err)
	}
	required = append(required, srcs...)
	for _, f := range required {
		if _, ok := p.SHA256[f]; !ok {
			problem("%s is compiled into the binary but has no \"sha256 %s=...\" line in PIN", f, f)
		}
	}

	rels := make([]string, 0, len(p.SHA256))
	for rel := range p.SHA256 {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		got, err := fileSHA256(filepath.Join(m.Dir, filepath.FromSlash(rel)))
		if err != nil {
			problem("sha256 %s: %v", rel, err)
			continue
		}
		if want := p.SHA256[rel]; got != want {
			problem("sha256 %s: module has %s, PIN has %s", rel, got, want)
		}
	}

	// No patches are carried. If one is added, PIN and this test must be
	// extended to verify it before it can land.
	patches, _ := filepath.Glob("*.patch")
	if len(patches) > 0 {
		problem("found %s, but PIN has no patch entries yet: extend PIN and pin_test.go to verify patches",
			strings.Join(patches, ", "))
	}
}

func TestParsePinIsStrict(t *testing.T) {
	const h = "ce9a95d3c011f255c1facb7d4361c71209e71ba58d84acd3281a755d0686a285"
	const base = "binding=example.com/b\nbinding_version=v1.2.3\nengine=quickjs-ng\nengine_version=1.2.3\n"
	good := base + "# comment\n\nsha256 deps/x.c=" + h + "\n"
	p, err := parsePin([]byte(good))
	if err != nil {
		t.Fatalf("valid PIN rejected: %v", err)
	}
	if p.Binding != "example.com/b" || p.BindingVersion != "v1.2.3" || p.Engine != "quickjs-ng" ||
		p.EngineVersion != "1.2.3" || p.SHA256["deps/x.c"] != h {
		t.Fatalf("parsed wrongly: %+v", p)
	}

	bad := []struct {
		name, text, wantErr string
	}{
		{"unknown key", good + "colour=blue\n", `line 8 "colour=blue": unknown key`},
		{"no equals", good + "binding\n", `line 8 "binding": want KEY=VALUE`},
		{"duplicate", good + "engine=quickjs-ng\n", `duplicate key "engine"`},
		{"space around =", base + "sha256 deps/x.c = " + h + "\n", "no spaces allowed"},
		{"leading space", base + " sha256 deps/x.c=" + h + "\n", "leading or trailing whitespace"},
		{"short hash", base + "sha256 deps/x.c=abc\n", "64 lowercase hex"},
		{"upper hash", base + "sha256 deps/x.c=" + strings.ToUpper(h) + "\n", "64 lowercase hex"},
		{"dotdot path", base + "sha256 ../x.c=" + h + "\n", "clean, relative"},
		{"absolute path", base + "sha256 /x.c=" + h + "\n", "clean, relative"},
		{"unclean path", base + "sha256 deps//x.c=" + h + "\n", "clean, relative"},
		{"empty value", base + "sha256 deps/x.c=\n", "empty key or value"},
		{"engine version with v", strings.Replace(good, "engine_version=1.2.3", "engine_version=v1.2.3", 1), "no leading v"},
		{"binding version without v", strings.Replace(good, "binding_version=v1.2.3", "binding_version=1.2.3", 1), "Go module version"},
		{"missing key", strings.Replace(good, "engine=quickjs-ng\n", "", 1), "missing keys: engine"},
		{"no hashes", base, "missing keys"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parsePin([]byte(tc.text))
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.text)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}
