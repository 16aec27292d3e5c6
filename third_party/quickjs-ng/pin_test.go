package quickjsng_test

// The pin test: the vendored binding under quickjs-go/ is exactly the
// pristine module named in PIN plus the patches under patches/, in order, and
// it is what go.mod builds. README.md says what each check guards.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
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

// pinName and patchDir are relative to this package directory (the test's cwd).
const (
	pinName  = "PIN"
	patchDir = "patches"
)

// pin is the parsed content of PIN.
type pin struct {
	Module, Version, H1, Dir                                     string
	Engine, EngineVersion, Upstream, UpstreamTag, UpstreamCommit string
	// Patches in the order they apply.
	Patches []pinPatch
	// Files maps every file of the pristine module, by its '/'-separated
	// path inside the module, to its pristine hash and whether we vendor it.
	Files map[string]pinFile
}

type pinPatch struct{ SHA256, Name string }

type pinFile struct {
	SHA256   string
	Vendored bool
}

var (
	hexSHA256Re = regexp.MustCompile(`^[0-9a-f]{64}$`)
	patchNameRe = regexp.MustCompile(`^[0-9]{4}-[a-z0-9][a-z0-9-]*\.patch$`)
	goVersionRe = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
	semverRe    = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
	commitRe    = regexp.MustCompile(`^[0-9a-f]{40}$`)
	h1Re        = regexp.MustCompile(`^h1:[A-Za-z0-9+/]{43}=$`)
	defineRe    = regexp.MustCompile(`(?m)^\s*#\s*define\s+(QJS_VERSION_(?:MAJOR|MINOR|PATCH|SUFFIX))\s+(\S+)\s*$`)
	includeRe   = regexp.MustCompile(`(?m)^\s*#\s*include\s+"(deps/quickjs/[^"]+)"`)
	envRe       = regexp.MustCompile(`(?m)^([A-Z_][A-Z0-9_]*)="?([^"\n]*)"?\s*$`)
)

// parsePin parses PIN strictly and reports every malformed line, not just
// the first. Lines: blank, '#' comment, KEY=VALUE (each scalar key exactly
// once), "patch <sha256> <name>" (in application order) or
// "file <sha256> <vendored|omitted> <path>".
func parsePin(data []byte) (*pin, []error) {
	p := &pin{Files: map[string]pinFile{}}
	scalars := map[string]*string{
		"module": &p.Module, "version": &p.Version, "h1": &p.H1, "dir": &p.Dir,
		"engine": &p.Engine, "engine_version": &p.EngineVersion, "upstream": &p.Upstream,
		"upstream_tag": &p.UpstreamTag, "upstream_commit": &p.UpstreamCommit,
	}
	formats := map[string]*regexp.Regexp{
		"version": goVersionRe, "h1": h1Re, "engine_version": semverRe, "upstream_tag": goVersionRe,
		"upstream_commit": commitRe, "dir": regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`),
	}
	var errs []error
	seen := map[string]int{}
	patchSeen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("PIN line %d %q: %s", n, truncate(line, 100), fmt.Sprintf(format, args...)))
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line != strings.TrimSpace(line) || strings.Contains(line, "\t") || strings.Contains(line, "  ") {
			bad("leading, trailing or repeated whitespace, or a tab")
			continue
		}
		f := strings.Split(line, " ")
		switch {
		case f[0] == "patch":
			if len(f) != 3 || !hexSHA256Re.MatchString(f[1]) || !patchNameRe.MatchString(f[2]) {
				bad("want: patch <64 lowercase hex> NNNN-short-name.patch")
				continue
			}
			if patchSeen[f[2]] {
				bad("patch %s listed twice", f[2])
				continue
			}
			if len(p.Patches) > 0 && f[2] <= p.Patches[len(p.Patches)-1].Name {
				bad("patches must be listed in increasing NNNN order")
			}
			patchSeen[f[2]] = true
			p.Patches = append(p.Patches, pinPatch{SHA256: f[1], Name: f[2]})
		case f[0] == "file":
			if len(f) != 4 || !hexSHA256Re.MatchString(f[1]) || (f[2] != "vendored" && f[2] != "omitted") {
				bad("want: file <64 lowercase hex> vendored|omitted <path>")
				continue
			}
			rel := f[3]
			if path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, `\`) {
				bad("path must be clean, relative and '/'-separated")
				continue
			}
			if _, dup := p.Files[rel]; dup {
				bad("file %s listed twice", rel)
				continue
			}
			p.Files[rel] = pinFile{SHA256: f[1], Vendored: f[2] == "vendored"}
		default:
			key, val, ok := strings.Cut(line, "=")
			dst, known := scalars[key]
			switch {
			case !ok || strings.Contains(line, " "):
				bad("want KEY=VALUE without spaces, \"patch ...\" or \"file ...\"")
			case !known:
				bad("unknown key %q", key)
			case seen[key] != 0:
				bad("duplicate key %q (first on line %d)", key, seen[key])
			case formats[key] != nil && !formats[key].MatchString(val):
				bad("malformed %s (want %s)", key, formats[key])
			default:
				seen[key] = n
				*dst = val
			}
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("reading PIN: %w", err))
	}
	var missing []string
	for k, v := range scalars {
		if *v == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		errs = append(errs, fmt.Errorf("PIN: missing keys: %s", strings.Join(missing, ", ")))
	}
	if len(p.Files) == 0 {
		errs = append(errs, errors.New(`PIN: no "file" lines`))
	}
	return p, errs
}

// tree is what the pin test reads from disk.
type tree struct {
	Vendored map[string][]byte // path inside the module -> bytes as vendored
	Patches  map[string][]byte // file name under patches/ -> bytes
}

// readTree reads every file under dir (the vendored module) and patches/.
// A non-regular file is an error: the build must see plain files only.
func readTree(dir string) (*tree, error) {
	t := &tree{Vendored: map[string][]byte{}, Patches: map[string][]byte{}}
	err := filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, name)
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", name)
		}
		b, err := os.ReadFile(name)
		t.Vendored[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(patchDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("%s/%s is not a regular file", patchDir, e.Name())
		}
		b, err := os.ReadFile(filepath.Join(patchDir, e.Name()))
		if err != nil {
			return nil, err
		}
		t.Patches[e.Name()] = b
	}
	return t, nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// hash1 is golang.org/x/mod/sumdb/dirhash.Hash1, the go.sum "h1:" hash of a
// module zip: the SHA-256 of the sorted lines "<hex sha256>  <module>@<version>/<path>\n",
// base64-encoded.
func hash1(module, version string, fileSHA256 map[string]string) string {
	names := make([]string, 0, len(fileSHA256))
	for rel := range fileSHA256 {
		names = append(names, rel)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, rel := range names {
		fmt.Fprintf(h, "%s  %s@%s/%s\n", fileSHA256[rel], module, version, rel)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// verify checks t against p and returns every difference, and the pristine
// vendored files it reconstructed (nil if a patch did not undo cleanly).
func verify(p *pin, t *tree) (problems []string, pristine map[string][]byte) {
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	sortedKeys := func(m map[string][]byte) []string {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}

	// 1. The vendored directory holds exactly PIN's vendored files.
	for _, rel := range sortedKeys(t.Vendored) {
		if f, ok := p.Files[rel]; !ok {
			problem("%s/%s is vendored but not a file of %s@%s in PIN (remove it)", p.Dir, rel, p.Module, p.Version)
		} else if !f.Vendored {
			problem("%s/%s is vendored but PIN marks it omitted", p.Dir, rel)
		}
	}
	var pinRels []string
	for rel := range p.Files {
		pinRels = append(pinRels, rel)
	}
	sort.Strings(pinRels)
	for _, rel := range pinRels {
		if _, ok := t.Vendored[rel]; p.Files[rel].Vendored && !ok {
			problem("%s/%s is marked vendored in PIN but missing", p.Dir, rel)
		}
	}

	// 2. patches/ holds exactly PIN's patches, each with its hash.
	listed := map[string]bool{}
	for _, pp := range p.Patches {
		listed[pp.Name] = true
		b, ok := t.Patches[pp.Name]
		if !ok {
			problem("patch %s is listed in PIN but missing from %s/", pp.Name, patchDir)
		} else if got := sha256Hex(b); got != pp.SHA256 {
			problem("patch %s: sha256 %s, PIN has %s", pp.Name, got, pp.SHA256)
		}
	}
	for _, name := range sortedKeys(t.Patches) {
		if !listed[name] {
			problem("%s/%s is not listed in PIN (add a \"patch\" line, or remove it)", patchDir, name)
		}
	}

	// 3. Undo the patches, last first, from the vendored bytes.
	sets := make([]*patchSet, len(p.Patches))
	for i, pp := range p.Patches {
		b, ok := t.Patches[pp.Name]
		if !ok {
			return problems, nil
		}
		ps, err := parsePatch(b)
		if err != nil {
			problem("patch %s: %v", pp.Name, err)
			return problems, nil
		}
		if !strings.Contains(ps.Header, "Why") || !strings.Contains(ps.Header, "Upstream") {
			problem("patch %s: its header must say why (a \"Why\" paragraph) and name the upstream fix (an \"Upstream\" paragraph)", pp.Name)
		}
		sets[i] = ps
	}
	pristine = map[string][]byte{}
	for rel, b := range t.Vendored {
		pristine[rel] = b
	}
	for i := len(sets) - 1; i >= 0; i-- {
		if err := applySet(pristine, sets[i], true); err != nil {
			problem("patch %s does not undo cleanly from the vendored files (a patched file was edited outside the patch, or the patches are out of order): %v",
				p.Patches[i].Name, err)
			return problems, nil
		}
	}

	// 4. What remains is the pristine module, file by file.
	for _, rel := range sortedKeys(pristine) {
		f, ok := p.Files[rel]
		if !ok {
			continue // reported in 1
		}
		if got := sha256Hex(pristine[rel]); got != f.SHA256 {
			problem("%s/%s: with the patches undone its sha256 is %s, PIN has %s (edited outside a patch?)", p.Dir, rel, got, f.SHA256)
		}
	}

	// 5. The patches, applied in order to the pristine files, give the vendored bytes.
	forward := map[string][]byte{}
	for rel, b := range pristine {
		forward[rel] = b
	}
	for i, ps := range sets {
		before := map[string]string{}
		for _, fp := range ps.Files {
			before[fp.Path] = sha256Hex(forward[fp.Path])
		}
		if err := applySet(forward, ps, false); err != nil {
			problem("patch %s does not apply forward onto pristine + the patches before it: %v", p.Patches[i].Name, err)
			break
		}
		for _, fp := range ps.Files {
			if sha256Hex(forward[fp.Path]) == before[fp.Path] {
				problem("patch %s changes nothing in %s", p.Patches[i].Name, fp.Path)
			}
		}
	}
	for _, rel := range sortedKeys(t.Vendored) {
		if !bytes.Equal(forward[rel], t.Vendored[rel]) {
			problem("%s/%s: pristine + patches differs from the vendored file", p.Dir, rel)
		}
	}

	// 6. The module's go.sum hash, from the pristine vendored files and PIN's
	// hashes of the files we do not vendor.
	all := map[string]string{}
	for rel, f := range p.Files {
		all[rel] = f.SHA256
		if b, ok := pristine[rel]; ok && f.Vendored {
			all[rel] = sha256Hex(b)
		}
	}
	if got := hash1(p.Module, p.Version, all); got != p.H1 {
		problem("%s@%s: the module hash from the pristine files and PIN is %s, PIN (go.sum) has %s", p.Module, p.Version, got, p.H1)
	}

	// 7. The pristine module is the engine PIN names.
	if b, ok := pristine["deps/quickjs/quickjs.h"]; !ok {
		problem("deps/quickjs/quickjs.h is not vendored")
	} else if v, err := headerVersion(b); err != nil {
		problem("deps/quickjs/quickjs.h: %v", err)
	} else if v != p.EngineVersion {
		problem("deps/quickjs/quickjs.h: QJS_VERSION_* is %s, PIN engine_version=%s", v, p.EngineVersion)
	}
	if b, ok := pristine["deps/quickjs-release.env"]; !ok {
		problem("deps/quickjs-release.env (the binding's record of the engine tag) is not vendored")
	} else {
		env := map[string]string{}
		for _, m := range envRe.FindAllStringSubmatch(string(b), -1) {
			env[m[1]] = m[2]
		}
		if repo := "https://github.com/" + env["QUICKJS_NG_REPO"]; repo != p.Upstream {
			problem("deps/quickjs-release.env: QUICKJS_NG_REPO=%q, PIN upstream=%s", env["QUICKJS_NG_REPO"], p.Upstream)
		}
		if env["QUICKJS_NG_TAG"] != p.UpstreamTag || p.UpstreamTag != "v"+p.EngineVersion {
			problem("deps/quickjs-release.env: QUICKJS_NG_TAG=%q, PIN upstream_tag=%s, engine_version=%s", env["QUICKJS_NG_TAG"], p.UpstreamTag, p.EngineVersion)
		}
	}

	// 8. Everything the build needs is vendored: the root's non-test Go, C
	// and header files, the licenses, go.mod, and each engine file the
	// root's C files #include.
	for _, rel := range pinRels {
		f := p.Files[rel]
		base := path.Base(rel)
		needed := base == "LICENSE" || rel == "go.mod" ||
			(!strings.Contains(rel, "/") && !strings.HasSuffix(rel, "_test.go") &&
				(strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, ".c") || strings.HasSuffix(rel, ".h")))
		if needed && !f.Vendored {
			problem("%s is needed by the build (or is a license) but PIN marks it omitted", rel)
		}
	}
	for _, rel := range sortedKeys(pristine) {
		if !strings.HasPrefix(path.Base(rel), "qjs_") || !strings.HasSuffix(rel, ".c") {
			continue
		}
		for _, m := range includeRe.FindAllStringSubmatch(string(pristine[rel]), -1) {
			if _, ok := t.Vendored[m[1]]; !ok {
				problem("%s #includes %s, which is not vendored", rel, m[1])
			}
		}
	}
	// 9. The build cache key: Go's build cache hashes only the files in the
	// package directory, not the engine sources the wrappers #include from
	// deps/, so a patched engine could be linked from an object cached for
	// the pristine one (with -trimpath the cache key is even the same as the
	// module cache's). qjs_quickjs.c carries the hash of deps/ as vendored.
	if b, ok := t.Vendored[cacheKeyFile]; !ok {
		problem("%s is not vendored", cacheKeyFile)
	} else {
		want := engineSourcesKey(t.Vendored)
		switch m := cacheKeyRe.FindAllSubmatch(b, -1); {
		case len(m) != 1:
			problem("%s: want exactly one line %q (patch 0001 adds it); found %d", cacheKeyFile, cacheKeyPrefix+want, len(m))
		case string(m[0][1]) != want:
			problem("%s: %s%s, but deps/ as vendored hashes to %s: run go test ./third_party/quickjs-ng -run TestBuildCacheKey -update-cache-key, and carry the change in the patch that changed deps/",
				cacheKeyFile, cacheKeyPrefix, m[0][1], want)
		}
	}
	return problems, pristine
}

// cacheKeyFile holds the build cache key (see verify, step 9).
const (
	cacheKeyFile   = "qjs_quickjs.c"
	cacheKeyPrefix = "   engine-sources-sha256: "
)

var cacheKeyRe = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(cacheKeyPrefix) + `([0-9a-f]{64}) \*/$`)

// engineSourcesKey is the SHA-256 of the lines "<sha256>  <path>\n" of
// every vendored file under deps/, sorted by path.
func engineSourcesKey(vendored map[string][]byte) string {
	var names []string
	for rel := range vendored {
		if strings.HasPrefix(rel, "deps/") {
			names = append(names, rel)
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, rel := range names {
		fmt.Fprintf(h, "%s  %s\n", sha256Hex(vendored[rel]), rel)
	}
	return hex.EncodeToString(h.Sum(nil))
}

var updateCacheKey = flag.Bool("update-cache-key", false, "rewrite the engine-sources-sha256 line of the vendored "+cacheKeyFile)

// TestBuildCacheKey rewrites the cache key line with -update-cache-key; the
// check itself is step 9 of TestVendoredTreeIsPristinePlusPatches.
func TestBuildCacheKey(t *testing.T) {
	if !*updateCacheKey {
		t.Skip("checked by TestVendoredTreeIsPristinePlusPatches; -update-cache-key rewrites it")
	}
	p := loadPin(t)
	tr, err := readTree(p.Dir)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(p.Dir, cacheKeyFile)
	b := tr.Vendored[cacheKeyFile]
	if len(cacheKeyRe.FindAll(b, -1)) != 1 {
		t.Fatalf("%s: want exactly one line starting %q to rewrite", name, cacheKeyPrefix)
	}
	b = cacheKeyRe.ReplaceAll(b, []byte(cacheKeyPrefix+engineSourcesKey(tr.Vendored)+" */"))
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// headerVersion returns MAJOR.MINOR.PATCH[SUFFIX] from quickjs.h.
func headerVersion(b []byte) (string, error) {
	defs := map[string]string{}
	for _, m := range defineRe.FindAllStringSubmatch(string(b), -1) {
		defs[m[1]] = m[2]
	}
	for _, k := range []string{"QJS_VERSION_MAJOR", "QJS_VERSION_MINOR", "QJS_VERSION_PATCH"} {
		if defs[k] == "" {
			return "", fmt.Errorf("#define %s not found", k)
		}
	}
	return defs["QJS_VERSION_MAJOR"] + "." + defs["QJS_VERSION_MINOR"] + "." + defs["QJS_VERSION_PATCH"] +
		strings.Trim(defs["QJS_VERSION_SUFFIX"], `"`), nil
}

// loadPin reads and parses PIN, failing the test with every parse error.
func loadPin(t *testing.T) *pin {
	t.Helper()
	data, err := os.ReadFile(pinName)
	if err != nil {
		t.Fatal(err)
	}
	p, errs := parsePin(data)
	if len(errs) > 0 {
		t.Fatalf("PIN is malformed:\n  - %s", strings.Join(errorStrings(errs), "\n  - "))
	}
	return p
}

func errorStrings(errs []error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

const fixHint = "\n\nThe vendored tree must be the pristine module plus the patches, in order " +
	"(third_party/quickjs-ng/README.md, BUILD.md \"The engine\"). To change engine code, add a patch; " +
	"to bump, follow BUILD.md's bump procedure."

// TestVendoredTreeIsPristinePlusPatches is the pin check.
func TestVendoredTreeIsPristinePlusPatches(t *testing.T) {
	p := loadPin(t)
	tr, err := readTree(p.Dir)
	if err != nil {
		t.Fatal(err)
	}
	problems, _ := verify(p, tr)
	if len(problems) > 0 {
		t.Fatalf("third_party/quickjs-ng differs from PIN:\n  - %s%s", strings.Join(problems, "\n  - "), fixHint)
	}
}

// goModule is the subset of `go list -m -json` output the test uses.
type goModule struct {
	Path, Version, Dir string
	Replace            *goModule
	Error              *struct{ Err string }
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

func goOutput(t *testing.T, args ...string) []byte {
	t.Helper()
	goBin, err := goCommand()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestBuildBindsVendoredModule: go.mod requires the pinned version and
// replaces it with the vendored directory, so the build compiles our tree.
func TestBuildBindsVendoredModule(t *testing.T) {
	p := loadPin(t)
	var m goModule
	out := goOutput(t, "list", "-m", "-json", p.Module)
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("decoding go list output: %v\n%s", err, out)
	}
	if m.Error != nil {
		t.Fatalf("go list -m %s: %s", p.Module, m.Error.Err)
	}
	want, err := filepath.Abs(p.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	if m.Version != p.Version {
		problems = append(problems, fmt.Sprintf("go.mod requires %s %s, PIN version=%s", p.Module, m.Version, p.Version))
	}
	switch {
	case m.Replace == nil:
		problems = append(problems, fmt.Sprintf("go.mod does not replace %s; want: replace %s => ./third_party/quickjs-ng/%s", p.Module, p.Module, p.Dir))
	case m.Replace.Version != "" || filepath.Clean(m.Replace.Dir) != want:
		problems = append(problems, fmt.Sprintf("go.mod replaces %s with %s %s (dir %q); want the directory %s",
			p.Module, m.Replace.Path, m.Replace.Version, m.Replace.Dir, want))
	}
	if len(problems) > 0 {
		t.Fatalf("the build does not compile the vendored engine:\n  - %s", strings.Join(problems, "\n  - "))
	}
}

// TestPinMatchesModuleCache cross-checks PIN against the module as the Go
// module cache holds it, when this machine has it (the zip's hash, and every
// extracted file). The authoritative check is the h1 in
// TestVendoredTreeIsPristinePlusPatches, which needs no cache; this one names
// the exact file when PIN and the module disagree.
func TestPinMatchesModuleCache(t *testing.T) {
	p := loadPin(t)
	cache := strings.TrimSpace(string(goOutput(t, "env", "GOMODCACHE")))
	escaped := regexp.MustCompile(`[A-Z]`).ReplaceAllStringFunc(p.Module, func(s string) string { return "!" + strings.ToLower(s) })
	ziphash, err := os.ReadFile(filepath.Join(cache, "cache", "download", filepath.FromSlash(escaped), "@v", p.Version+".ziphash"))
	if err != nil {
		t.Skipf("%s@%s is not in the module cache (%v); the vendored tree and PIN's h1 are checked without it", p.Module, p.Version, err)
	}
	if got := strings.TrimSpace(string(ziphash)); got != p.H1 {
		t.Errorf("module cache: %s@%s has hash %s, PIN has %s", p.Module, p.Version, got, p.H1)
	}
	dir := filepath.Join(cache, filepath.FromSlash(escaped)+"@"+p.Version)
	seen := map[string]bool{}
	err = filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, name)
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		if f, ok := p.Files[rel]; !ok {
			t.Errorf("module cache: %s is not listed in PIN", rel)
		} else if got := sha256Hex(b); got != f.SHA256 {
			t.Errorf("module cache: %s has sha256 %s, PIN has %s", rel, got, f.SHA256)
		}
		return nil
	})
	if err != nil {
		t.Skipf("cannot read the extracted module in the cache: %v", err)
	}
	for rel := range p.Files {
		if !seen[rel] {
			t.Errorf("PIN lists %s, which the module in the cache does not have", rel)
		}
	}
}
