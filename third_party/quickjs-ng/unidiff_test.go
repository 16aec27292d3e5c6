package quickjsng_test

// This file holds a strict unified-diff reader and applier for the pin test:
// enough of the format that `diff -u` and `git diff` write to check that our
// patches turn the pristine files into the vendored ones and back, with no
// fuzz, no offsets and no guessing.

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// patchSet is one .patch file: its free-text header and the file changes.
type patchSet struct {
	Header string
	Files  []filePatch
}

// filePatch is the change to one file: its path relative to the module root
// (the "a/" and "b/" prefixes removed) and its hunks in file order.
type filePatch struct {
	Path  string
	Hunks []hunk
}

// hunk is one "@@ -oldStart,oldLen +newStart,newLen @@" block.
type hunk struct {
	OldStart, OldLen int
	NewStart, NewLen int
	Lines            []hunkLine
}

// hunkLine is one line of a hunk: Op is ' ', '-' or '+'; Text excludes the
// line's newline; NoEOL is set when "\ No newline at end of file" follows.
type hunkLine struct {
	Op    byte
	Text  string
	NoEOL bool
}

var hunkHeaderRe = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// parsePatch reads a unified diff. Text before the first "diff --git " or
// "--- " line is the header. Only modifications of existing files are
// accepted: creations, deletions, renames, mode changes and binary diffs are
// errors, since a patch must apply to a pristine file of the module.
func parsePatch(data []byte) (*patchSet, error) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("patch must end with a newline")
	}
	lines := strings.Split(string(data[:len(data)-1]), "\n")
	i := 0
	for i < len(lines) && !strings.HasPrefix(lines[i], "diff --git ") && !strings.HasPrefix(lines[i], "--- ") {
		i++
	}
	ps := &patchSet{Header: strings.Join(lines[:i], "\n")}
	lineErr := func(n int, format string, args ...any) error {
		return fmt.Errorf("line %d %q: %s", n+1, truncate(lines[n], 80), fmt.Sprintf(format, args...))
	}
	for i < len(lines) {
		// Optional git extended header: "diff --git" then "index".
		if strings.HasPrefix(lines[i], "diff --git ") {
			i++
			for i < len(lines) && !strings.HasPrefix(lines[i], "--- ") {
				if !strings.HasPrefix(lines[i], "index ") {
					return nil, lineErr(i, "unsupported git header line (only changes to existing files, no mode changes, renames or binary diffs)")
				}
				i++
			}
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i], "--- ") || !strings.HasPrefix(lines[i+1], "+++ ") {
			return nil, lineErr(min(i, len(lines)-1), `want a "--- a/PATH" line followed by "+++ b/PATH"`)
		}
		oldPath, err := diffPath(lines[i][4:], "a/")
		if err != nil {
			return nil, lineErr(i, "%v", err)
		}
		newPath, err := diffPath(lines[i+1][4:], "b/")
		if err != nil {
			return nil, lineErr(i+1, "%v", err)
		}
		if oldPath != newPath {
			return nil, lineErr(i+1, "renames are not supported (%s -> %s)", oldPath, newPath)
		}
		fp := filePatch{Path: oldPath}
		i += 2
		for i < len(lines) && strings.HasPrefix(lines[i], "@@ ") {
			m := hunkHeaderRe.FindStringSubmatch(lines[i])
			if m == nil {
				return nil, lineErr(i, "malformed hunk header")
			}
			h := hunk{OldStart: atoi(m[1]), OldLen: atoiOr1(m[2]), NewStart: atoi(m[3]), NewLen: atoiOr1(m[4])}
			hdr := i
			i++
			oldLeft, newLeft := h.OldLen, h.NewLen
			for oldLeft > 0 || newLeft > 0 {
				if i >= len(lines) {
					return nil, lineErr(hdr, "hunk ends early: %d old and %d new lines missing", oldLeft, newLeft)
				}
				l := lines[i]
				if l == "" {
					return nil, lineErr(i, `empty line inside a hunk (a context line must start with " "; was the patch re-saved by an editor?)`)
				}
				op := l[0]
				switch op {
				case ' ':
					oldLeft--
					newLeft--
				case '-':
					oldLeft--
				case '+':
					newLeft--
				case '\\':
					if len(h.Lines) == 0 {
						return nil, lineErr(i, "no-newline marker before any line")
					}
					h.Lines[len(h.Lines)-1].NoEOL = true
					i++
					continue
				default:
					return nil, lineErr(i, "unexpected line in a hunk")
				}
				if oldLeft < 0 || newLeft < 0 {
					return nil, lineErr(i, "hunk has more lines than its header says")
				}
				h.Lines = append(h.Lines, hunkLine{Op: op, Text: l[1:]})
				i++
			}
			if i < len(lines) && strings.HasPrefix(lines[i], `\`) {
				h.Lines[len(h.Lines)-1].NoEOL = true
				i++
			}
			fp.Hunks = append(fp.Hunks, h)
		}
		if len(fp.Hunks) == 0 {
			return nil, fmt.Errorf("file %s: no hunks", fp.Path)
		}
		ps.Files = append(ps.Files, fp)
		if i < len(lines) && !strings.HasPrefix(lines[i], "diff --git ") && !strings.HasPrefix(lines[i], "--- ") {
			return nil, lineErr(i, "unexpected text after the hunks of %s", fp.Path)
		}
	}
	if len(ps.Files) == 0 {
		return nil, fmt.Errorf("no file changes found")
	}
	seen := map[string]bool{}
	for _, f := range ps.Files {
		if seen[f.Path] {
			return nil, fmt.Errorf("file %s appears twice", f.Path)
		}
		seen[f.Path] = true
	}
	return ps, nil
}

// diffPath turns "a/deps/x.c" (optionally followed by a tab and a
// timestamp, as diff -u writes) into "deps/x.c".
func diffPath(s, prefix string) (string, error) {
	if tab := strings.IndexByte(s, '\t'); tab >= 0 {
		s = s[:tab]
	}
	if s == "/dev/null" {
		return "", fmt.Errorf("creating or deleting files is not supported")
	}
	p, ok := strings.CutPrefix(s, prefix)
	if !ok || p == "" || strings.Contains(p, "..") || strings.HasPrefix(p, "/") || strings.ContainsAny(p, " \\") {
		return "", fmt.Errorf("path %q must be %sRELATIVE/PATH inside the module, without spaces or '..'", s, prefix)
	}
	return p, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s) // the regexp admits digits only
	return n
}

func atoiOr1(s string) int {
	if s == "" {
		return 1
	}
	return atoi(s)
}

// splitKeep splits b into lines that keep their "\n"; the last one may lack it.
func splitKeep(b []byte) []string {
	var out []string
	for len(b) > 0 {
		n := bytes.IndexByte(b, '\n')
		if n < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:n+1]))
		b = b[n+1:]
	}
	return out
}

// applyFile applies fp to src exactly: each hunk must sit at the line its
// header names (given the earlier hunks) and its context and removed lines
// must match byte for byte. With reverse set it undoes fp instead.
func applyFile(src []byte, fp filePatch, reverse bool) ([]byte, error) {
	lines := splitKeep(src)
	var out []string
	cur := 0
	remove, add := byte('-'), byte('+')
	if reverse {
		remove, add = '+', '-'
	}
	for hi, h := range fp.Hunks {
		oldStart, oldLen, newStart, newLen := h.OldStart, h.OldLen, h.NewStart, h.NewLen
		if reverse {
			oldStart, oldLen, newStart, newLen = newStart, newLen, oldStart, oldLen
		}
		pos := oldStart - 1
		if oldLen == 0 {
			pos = oldStart // an insertion goes after line oldStart
		}
		if pos < cur || pos > len(lines) {
			return nil, fmt.Errorf("%s hunk %d: starts at line %d, outside the file (%d lines) or before the end of the previous hunk",
				fp.Path, hi+1, oldStart, len(lines))
		}
		out = append(out, lines[cur:pos]...)
		wantNew := len(out) + 1
		if newLen == 0 {
			wantNew = len(out)
		}
		if newStart != wantNew {
			return nil, fmt.Errorf("%s hunk %d: header puts the result at line %d, but it lands at line %d", fp.Path, hi+1, newStart, wantNew)
		}
		k := pos
		for _, l := range h.Lines {
			text := l.Text
			if !l.NoEOL {
				text += "\n"
			}
			switch l.Op {
			case ' ', remove:
				if k >= len(lines) || lines[k] != text {
					got := "end of file"
					if k < len(lines) {
						got = strconv.Quote(truncate(lines[k], 80))
					}
					return nil, fmt.Errorf("%s hunk %d: line %d is %s, the patch expects %q", fp.Path, hi+1, k+1, got, truncate(text, 80))
				}
				if l.Op == ' ' {
					out = append(out, text)
				}
				k++
			case add:
				out = append(out, text)
			}
		}
		cur = k
	}
	out = append(out, lines[cur:]...)
	return []byte(strings.Join(out, "")), nil
}

// applySet applies (or, reversed, undoes) every file change of ps to files,
// in place. Every file it names must be in files.
func applySet(files map[string][]byte, ps *patchSet, reverse bool) error {
	for _, fp := range ps.Files {
		src, ok := files[fp.Path]
		if !ok {
			return fmt.Errorf("changes %s, which is not a vendored file", fp.Path)
		}
		dst, err := applyFile(src, fp, reverse)
		if err != nil {
			return err
		}
		files[fp.Path] = dst
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
