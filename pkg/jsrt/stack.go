package jsrt

import (
	"strconv"
	"strings"
)

// stackMaxFrames is the most frames ProgramStack returns before summing up the rest in one line.
const stackMaxFrames = 50

// ProgramStack rewrites a QuickJS-ng stack trace so it shows only the program's own frames with the program's own
// line numbers: frames in <input> are kept and renamed to program.js with lineOffset subtracted from the line
// (never below 1); the frame of the program's body (function name "anonymous") is named "<program>"; frames in any other
// file, native frames and unparseable lines are dropped. The result ends without a trailing newline.
//
// QuickJS-ng writes one frame a line, "    at NAME (FILE:LINE:COLUMN)", or "    at NAME (native)" for native
// functions; a SyntaxError's stack starts with a line without a name, "    at <input>:LINE:COLUMN", giving where
// parsing failed. Such a position line is kept (as "    at program.js:LINE:COLUMN") only when no frame in <input>
// follows it, that is when the host was compiling the program; when the program's frames follow, the position is
// in a text the program itself handed to eval, Function or JSON.parse, and it is dropped. Columns are kept as they are
// (the wrapper adds lines, not columns). Other limits of what a stack string can tell: code the program builds at run
// time with eval or Function also runs in <input>, its frames are kept like the program's, with positions in that code
// (eval's frame is named "<eval>", Function's body "anonymous" like the program's); and a function's name may contain
// anything, even a line break, so a name that looks like a frame is taken for one.
//
// At most 50 frames are returned; when more remain, a last line "    ... N more frames" says how many. A negative
// lineOffset counts as 0. Time is linear in len(stack).
func ProgramStack(stack string, lineOffset int) string {
	lineOffset = max(lineOffset, 0)
	type frame struct {
		name      string // "" for a position line
		line, col string
	}
	var frames []frame
	for rest := stack; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		at, ok := strings.CutPrefix(strings.TrimLeft(strings.TrimSuffix(line, "\r"), " \t"), "at ")
		if !ok {
			continue
		}
		f := frame{}
		loc := at
		if strings.HasSuffix(at, ")") {
			k := strings.LastIndex(at, " (")
			if k < 0 {
				continue
			}
			f.name, loc = at[:k], at[k+2:len(at)-1]
			if f.name == "" {
				continue
			}
			if f.name == "anonymous" {
				f.name = "<program>"
			}
		}
		if f.line, f.col, ok = stackInputPosition(loc, lineOffset); ok {
			frames = append(frames, f)
		}
	}

	// Drop position lines that have a frame of the program after them.
	lastNamed := -1
	for i, f := range frames {
		if f.name != "" {
			lastNamed = i
		}
	}
	kept := frames[:0]
	for i, f := range frames {
		if f.name != "" || i > lastNamed {
			kept = append(kept, f)
		}
	}

	var b strings.Builder
	for i, f := range kept[:min(len(kept), stackMaxFrames)] {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("    at ")
		if f.name != "" {
			b.WriteString(f.name)
			b.WriteString(" (program.js:")
		} else {
			b.WriteString("program.js:")
		}
		b.WriteString(f.line)
		b.WriteByte(':')
		b.WriteString(f.col)
		if f.name != "" {
			b.WriteByte(')')
		}
	}
	if n := len(kept) - stackMaxFrames; n > 0 {
		b.WriteString("\n    ... ")
		b.WriteString(strconv.Itoa(n))
		b.WriteString(" more frames")
	}
	return b.String()
}

// stackInputPosition parses "<input>:LINE:COLUMN" and returns the line, less lineOffset but at least 1, and the
// column, both in decimal.
func stackInputPosition(loc string, lineOffset int) (line, col string, ok bool) {
	rest, ok := strings.CutPrefix(loc, "<input>:")
	if !ok {
		return "", "", false
	}
	lineStr, col, ok := strings.Cut(rest, ":")
	if !ok || !stackDigits(lineStr) || !stackDigits(col) {
		return "", "", false
	}
	n, err := strconv.Atoi(lineStr)
	if err != nil {
		return "", "", false
	}
	return strconv.Itoa(max(n-lineOffset, 1)), col, true
}

// stackDigits reports whether s is a non-empty run of ASCII digits.
func stackDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
