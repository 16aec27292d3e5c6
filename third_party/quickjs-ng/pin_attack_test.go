package quickjsng_test

// Attacks on the pin check: each row changes the real tree or PIN the way a
// careless edit or a tampered checkout would, and the check must name it.

import (
	"bytes"
	"maps"
	"strings"
	"testing"
)

func loadReal(t *testing.T) (*pin, *tree) {
	t.Helper()
	p := loadPin(t)
	tr, err := readTree(p.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Patches) == 0 {
		t.Fatal("these attacks need at least one patch in PIN")
	}
	return p, tr
}

func clone(p *pin, tr *tree) (*pin, *tree) {
	q := *p
	q.Patches = append([]pinPatch(nil), p.Patches...)
	q.Files = maps.Clone(p.Files)
	return &q, &tree{Vendored: maps.Clone(tr.Vendored), Patches: maps.Clone(tr.Patches)}
}

func TestPinCheckCatchesTampering(t *testing.T) {
	p, tr := loadReal(t)
	if problems, _ := verify(p, tr); len(problems) > 0 {
		t.Fatalf("the real tree must verify before it is tampered with: %q", problems)
	}
	_, pristine := verify(p, tr)
	first := p.Patches[0]
	firstSet, err := parsePatch(tr.Patches[first.Name])
	if err != nil {
		t.Fatal(err)
	}
	patched := firstSet.Files[0].Path // a file the first patch changes

	tests := []struct {
		name   string
		change func(p *pin, tr *tree)
		want   string
	}{
		{"a vendored file edited outside any patch", func(p *pin, tr *tree) {
			b := bytes.Clone(tr.Vendored["bridge.c"])
			b[len(b)/2] ^= 1
			tr.Vendored["bridge.c"] = b
		}, "bridge.c: with the patches undone its sha256"},
		{"a patched file edited where the patch touches it", func(p *pin, tr *tree) {
			h := firstSet.Files[0].Hunks[0]
			for _, l := range h.Lines {
				if l.Op == '+' {
					tr.Vendored[patched] = bytes.Replace(tr.Vendored[patched], []byte(l.Text), []byte(l.Text+" "), 1)
					return
				}
			}
		}, "does not undo cleanly"},
		{"a patched file reverted to pristine while the patch stays", func(p *pin, tr *tree) {
			tr.Vendored[patched] = pristine[patched]
		}, "does not undo cleanly"},
		{"an extra file in the vendored tree", func(p *pin, tr *tree) {
			tr.Vendored["extra.c"] = []byte("int x;\n")
		}, "extra.c is vendored but not a file of"},
		{"an omitted file vendored", func(p *pin, tr *tree) {
			tr.Vendored["README.md"] = []byte("x\n")
		}, "README.md is vendored but PIN marks it omitted"},
		{"a vendored file missing", func(p *pin, tr *tree) {
			delete(tr.Vendored, "value.go")
		}, "value.go is marked vendored in PIN but missing"},
		{"a file the build needs marked omitted", func(p *pin, tr *tree) {
			f := p.Files["value.go"]
			f.Vendored = false
			p.Files["value.go"] = f
			delete(tr.Vendored, "value.go")
		}, "value.go is needed by the build"},
		{"a patch's bytes changed", func(p *pin, tr *tree) {
			tr.Patches[first.Name] = append(bytes.Clone(tr.Patches[first.Name]), '\n')
		}, "patch " + first.Name + ": sha256"},
		{"a patch on disk not in PIN", func(p *pin, tr *tree) {
			tr.Patches["9999-stray.patch"] = []byte("x\n")
		}, "9999-stray.patch is not listed in PIN"},
		{"a patch in PIN missing on disk", func(p *pin, tr *tree) {
			delete(tr.Patches, first.Name)
		}, "listed in PIN but missing"},
		{"a patch dropped from PIN and disk, its change left in", func(p *pin, tr *tree) {
			p.Patches = p.Patches[1:]
			delete(tr.Patches, first.Name)
		}, patched + ": with the patches undone its sha256"},
		{"PIN's hash of an omitted file changed", func(p *pin, tr *tree) {
			f := p.Files["README.md"]
			f.SHA256 = strings.Repeat("0", 64)
			p.Files["README.md"] = f
		}, "the module hash from the pristine files and PIN is"},
		{"PIN's hash of a vendored file changed", func(p *pin, tr *tree) {
			f := p.Files["bridge.c"]
			f.SHA256 = strings.Repeat("0", 64)
			p.Files["bridge.c"] = f
		}, "bridge.c: with the patches undone its sha256"},
		{"PIN names another engine version", func(p *pin, tr *tree) {
			p.EngineVersion = "0.16.2"
		}, "QJS_VERSION_* is 0.15.1, PIN engine_version=0.16.2"},
		{"PIN names another module version", func(p *pin, tr *tree) {
			p.Version = "v0.7.8"
		}, "the module hash from the pristine files and PIN is"},
		{"a patch without a reason", func(p *pin, tr *tree) {
			b := bytes.Replace(tr.Patches[first.Name], []byte("Why"), []byte("Wny"), -1)
			b = bytes.Replace(b, []byte("Upstream"), []byte("Upstrem"), -1)
			tr.Patches[first.Name] = b
			p.Patches[0].SHA256 = sha256Hex(b)
		}, "its header must say why"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p2, tr2 := clone(p, tr)
			tc.change(p2, tr2)
			problems, _ := verify(p2, tr2)
			for _, pr := range problems {
				if strings.Contains(pr, tc.want) {
					return
				}
			}
			t.Fatalf("the check did not report %q; it reported %q", tc.want, problems)
		})
	}
}

func TestParsePinIsStrict(t *testing.T) {
	const h = "ce9a95d3c011f255c1facb7d4361c71209e71ba58d84acd3281a755d0686a285"
	const base = "module=example.com/b\nversion=v1.2.3\nh1=h1:kuG3d0Vnn7LBvO64vgW+fwSZ5E3XK5pcYDttiIYmatw=\ndir=b\n" +
		"engine=quickjs-ng\nengine_version=1.2.3\nupstream=https://example.com/x\nupstream_tag=v1.2.3\n" +
		"upstream_commit=fd0a0210b7be00957751871e7e01b8291268fc29\n"
	good := base + "# comment\n\npatch " + h + " 0001-a.patch\npatch " + h + " 0002-b.patch\nfile " + h + " vendored deps/x.c\nfile " + h + " omitted README.md\n"
	p, errs := parsePin([]byte(good))
	if len(errs) > 0 {
		t.Fatalf("valid PIN rejected: %v", errs)
	}
	if p.Module != "example.com/b" || p.Version != "v1.2.3" || len(p.Patches) != 2 || p.Patches[1].Name != "0002-b.patch" ||
		!p.Files["deps/x.c"].Vendored || p.Files["README.md"].Vendored || p.Files["README.md"].SHA256 != h {
		t.Fatalf("parsed wrongly: %+v", p)
	}
	bad := []struct{ name, text, want string }{
		{"unknown key", good + "colour=blue\n", `unknown key "colour"`},
		{"duplicate key", good + "engine=quickjs-ng\n", `duplicate key "engine"`},
		{"missing key", strings.Replace(good, "dir=b\n", "", 1), "missing keys: dir"},
		{"bad version", strings.Replace(good, "version=v1.2.3", "version=1.2.3", 1), "malformed version"},
		{"bad h1", strings.Replace(good, "h1=h1:", "h1=sha:", 1), "malformed h1"},
		{"space around =", good + "engine = x\n", "want KEY=VALUE"},
		{"trailing space", good + "file " + h + " omitted y \n", "whitespace"},
		{"short hash", good + "file abc omitted y\n", "want: file"},
		{"upper hash", good + "file " + strings.ToUpper(h) + " omitted y\n", "want: file"},
		{"bad mark", good + "file " + h + " maybe y\n", "want: file"},
		{"dotdot path", good + "file " + h + " omitted ../y\n", "clean, relative"},
		{"duplicate file", good + "file " + h + " omitted README.md\n", "listed twice"},
		{"bad patch name", good + "patch " + h + " fix.diff\n", "want: patch"},
		{"patches out of order", strings.Replace(good, "0002-b.patch", "0000-b.patch", 1), "increasing NNNN order"},
		{"no files", base, `no "file" lines`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := parsePin([]byte(tc.text))
			for _, e := range errs {
				if strings.Contains(e.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("want an error containing %q, got %v", tc.want, errs)
		})
	}
	// Every error is reported, not only the first.
	_, errs = parsePin([]byte(good + "colour=blue\nfile x omitted y\n"))
	if len(errs) != 2 {
		t.Fatalf("want 2 errors, got %v", errs)
	}
}

func TestUnidiffAppliesExactly(t *testing.T) {
	src := []byte("one\ntwo\nthree\nfour\nfive")
	patch := []byte("why\n--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n+2b\n three\n@@ -4,2 +5,2 @@\n four\n-five\n\\ No newline at end of file\n+five\n")
	ps, err := parsePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	if ps.Header != "why" || len(ps.Files) != 1 || ps.Files[0].Path != "f.c" || len(ps.Files[0].Hunks) != 2 {
		t.Fatalf("parsed wrongly: %+v", ps)
	}
	got, err := applyFile(src, ps.Files[0], false)
	if want := "one\nTWO\n2b\nthree\nfour\nfive\n"; err != nil || string(got) != want {
		t.Fatalf("forward: %q, %v; want %q", got, err, want)
	}
	back, err := applyFile(got, ps.Files[0], true)
	if err != nil || !bytes.Equal(back, src) {
		t.Fatalf("reverse: %q, %v; want %q", back, err, src)
	}
	// No fuzz: a moved or altered context is refused.
	if _, err := applyFile([]byte("zero\n"+string(src)), ps.Files[0], false); err == nil {
		t.Fatal("a hunk applied at an offset")
	}
	if _, err := applyFile([]byte("one\ntwo\nTHREE\nfour\nfive"), ps.Files[0], false); err == nil {
		t.Fatal("a hunk applied over a changed context line")
	}
	if _, err := applyFile(got, ps.Files[0], false); err == nil {
		t.Fatal("a patch applied twice")
	}
	for name, text := range map[string]string{
		"creates a file": "--- /dev/null\n+++ b/f.c\n@@ -0,0 +1 @@\n+x\n",
		"renames":        "--- a/f.c\n+++ b/g.c\n@@ -1 +1 @@\n-x\n+y\n",
		"short hunk":     "--- a/f.c\n+++ b/f.c\n@@ -1,2 +1,2 @@\n-x\n+y\n",
		"empty line":     "--- a/f.c\n+++ b/f.c\n@@ -1,2 +1,2 @@\n-x\n\n+y\n",
		"mode change":    "diff --git a/f.c b/f.c\nold mode 100644\nnew mode 100755\n",
		"no changes":     "just text\n",
	} {
		if _, err := parsePatch([]byte(text)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}
