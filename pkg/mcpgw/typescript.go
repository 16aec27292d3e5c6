package mcpgw

// This file holds TypeScript programs: the parent strips their types with
// esbuild's Transform before a worker sees them (the worker never links a
// TypeScript compiler), and points the positions of the run's errors and
// stack frames back at the TypeScript. Types are not checked.

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// Language is what a program is written in. A program is TypeScript only
// when its caller says so (run_js's language argument; for `run`, a .ts,
// .mts or .cts file or --language): detection would cost every JavaScript
// program a parse, and TypeScript and JavaScript read a few texts
// differently (f<T>(x) is a call in one and two comparisons in the other).
type Language string

// The languages of a program.
const (
	JavaScript Language = "javascript"
	TypeScript Language = "typescript"
)

// Languages are the values of Language, in the order the tools list them.
var Languages = []Language{JavaScript, TypeScript}

// ParseLanguage reads a language name: "javascript" or "typescript" (also
// "js" and "ts"); "" is JavaScript.
func ParseLanguage(s string) (Language, error) {
	switch strings.ToLower(s) {
	case "", "javascript", "js":
		return JavaScript, nil
	case "typescript", "ts":
		return TypeScript, nil
	}
	return "", fmt.Errorf("unknown language %s: use %q or %q", quoteValue(s), JavaScript, TypeScript)
}

// LanguageOfFile is the language of a program file by its name: TypeScript
// for .ts, .mts and .cts, JavaScript for anything else.
func LanguageOfFile(name string) Language {
	switch strings.ToLower(path.Ext(name)) {
	case ".ts", ".mts", ".cts":
		return TypeScript
	}
	return JavaScript
}

// tsHead and tsTail make a program the body of an async function for
// esbuild, as the worker runs it, so that top-level await and return parse.
// The head is one line of its own: the program's line n is line n+1.
const (
	tsFuncName = "__run_js_program__"
	tsHead     = "async function " + tsFuncName + "() {\n"
	tsTail     = "\n}\n"
)

// tsFile is the name positions in a TypeScript program are given under,
// as program.js names JavaScript ones.
const tsFile = "program.ts"

// tsTransformOptions: TypeScript to JavaScript of the same syntax level
// (QuickJS-ng runs modern JavaScript), non-ASCII text kept as it is.
var tsTransformOptions = api.TransformOptions{
	Loader:   api.LoaderTS,
	Charset:  api.CharsetUTF8,
	LogLevel: api.LogLevelSilent,
}

// tsMapOptions are tsTransformOptions with a source map of the positions.
// The map costs about a sixth more, so it is made only when a position is
// to be mapped: esbuild prints the same code with or without it.
var tsMapOptions = func() api.TransformOptions {
	o := tsTransformOptions
	o.Sourcemap, o.SourcesContent = api.SourceMapExternal, api.SourcesContentExclude
	return o
}()

// TSProgram is a TypeScript program with its types stripped: the
// JavaScript a worker runs, and what it takes to point positions in that
// JavaScript back at the TypeScript. Safe for concurrent use.
type TSProgram struct {
	// JS is the program's JavaScript: the body of the async function
	// esbuild printed (its runtime helpers, if any, first).
	JS string

	wrapped  string   // what esbuild was given
	code     string   // what esbuild printed
	source   []string // the TypeScript's lines
	jsLines  []string // JS's lines
	genLines []int    // for each line of JS, its 0-based line in esbuild's output

	once sync.Once
	m    *sourceMap // the source map of code, made on first use; nil when it could not be
}

// TSSyntaxError says where a TypeScript program does not parse. Line and
// Column are 1-based, the column in bytes of the line, as QuickJS gives
// JavaScript positions.
type TSSyntaxError struct {
	Line, Column int
	Message      string
	More         int // further errors esbuild found
}

func (e *TSSyntaxError) Error() string {
	s := fmt.Sprintf("%s:%d:%d: %s", tsFile, e.Line, e.Column, e.Message)
	if e.More > 0 {
		s += fmt.Sprintf(" (and %d more errors)", e.More)
	}
	return s
}

// Ending is how a run of a program that does not parse ends: threw, with a
// SyntaxError at its position, as a JavaScript program QuickJS cannot parse
// does. Nothing ran and no call was made.
func (e *TSSyntaxError) Ending(runID string) *worker.Ending {
	msg := e.Message
	if e.More > 0 {
		msg += fmt.Sprintf(" (and %d more errors)", e.More)
	}
	return &worker.Ending{
		RunID: runID, Status: wire.StatusThrew, Value: json.RawMessage("null"),
		Error: &wire.ErrorInfo{Name: "SyntaxError", Message: msg, Stack: fmt.Sprintf("    at %s:%d:%d", tsFile, e.Line, e.Column)},
		Calls: worker.Calls{ByTool: map[string]int{}, Unseen: []worker.UnseenCall{}},
	}
}

// errTSOutput: esbuild printed something other than the one function it
// was given. Not expected; the program is refused rather than run wrong.
var errTSOutput = errors.New("typescript: esbuild's output is not the program's function")

// CompileTS strips the types of a TypeScript program (the body of an async
// function) with esbuild, without checking them. A program that does not
// parse gives a *TSSyntaxError. The source must be at most wire.MaxCodeBytes,
// which bounds the work; a larger one is refused.
func CompileTS(source string) (*TSProgram, error) {
	if len(source) > wire.MaxCodeBytes {
		return nil, fmt.Errorf("%w: the program is %s, above the cap of %s", worker.ErrBadRequest, FormatSize(int64(len(source))), FormatSize(wire.MaxCodeBytes))
	}
	p := &TSProgram{source: splitLines(source), wrapped: tsHead + source + tsTail}
	r := api.Transform(p.wrapped, tsTransformOptions)
	if len(r.Errors) > 0 {
		return nil, p.syntaxError(r.Errors)
	}
	p.code = string(r.Code)
	out := strings.Split(strings.TrimSuffix(p.code, "\n"), "\n") // esbuild ends lines with \n only
	head, tail := -1, -1
	for i, l := range out {
		if l+"\n" == tsHead && head < 0 {
			head = i
		}
		if l == "}" {
			tail = i
		}
	}
	if head < 0 || tail <= head {
		return nil, errTSOutput
	}
	for i, l := range out {
		if i == head || i == tail {
			continue
		}
		p.jsLines = append(p.jsLines, l)
		p.genLines = append(p.genLines, i)
	}
	p.JS = strings.Join(p.jsLines, "\n")
	return p, nil
}

// syntaxError turns esbuild's first error into a TSSyntaxError with the
// program's own position (the head is line 1 of what esbuild saw).
func (p *TSProgram) syntaxError(msgs []api.Message) *TSSyntaxError {
	m := msgs[0]
	e := &TSSyntaxError{Line: 1, Column: 1, Message: m.Text, More: len(msgs) - 1}
	if loc := m.Location; loc != nil {
		e.Line, e.Column = loc.Line-1, loc.Column+1
		switch {
		case e.Line < 1: // in the head: not reached, the head parses
			e.Line, e.Column = 1, 1
		case e.Line > len(p.source): // at the tail: the program ended too early
			e.Line = max(len(p.source), 1)
			e.Column = len(p.lineOf(e.Line)) + 1
		}
	}
	return e
}

// lineOf is the program's line n (1-based), or "".
func (p *TSProgram) lineOf(n int) string {
	if n < 1 || n > len(p.source) {
		return ""
	}
	return p.source[n-1]
}

// Position maps a position in JS (1-based line, 1-based column in bytes) to
// the TypeScript (the same units). ok is false when it cannot be mapped.
func (p *TSProgram) Position(line, col int) (tsLine, tsCol int, ok bool) {
	p.once.Do(p.makeMap)
	if p.m == nil || line < 1 || line > len(p.jsLines) || col < 1 {
		return 0, 0, false
	}
	js := p.jsLines[line-1]
	at := utf16Column(js, col-1)
	seg, ok := p.m.lookup(p.genLines[line-1], at)
	if !ok {
		return 0, 0, false
	}
	// A segment points at a token; esbuild starts a statement's segment
	// before its indentation, so the distance into the token counts from
	// the first character that is not a blank.
	srcLine, srcCol := seg.srcLine, seg.srcCol
	if seg.genCol >= 0 && at > seg.genCol {
		start := byteColumn(js, seg.genCol)
		for start < len(js) && (js[start] == ' ' || js[start] == '\t') {
			start++
		}
		srcCol += max(at-utf16Column(js, start), 0)
	}
	// The map's lines count the head: the program's line n is its line n.
	if srcLine < 1 {
		return 1, 1, true
	}
	if srcLine > len(p.source) { // the tail
		srcLine = len(p.source)
	}
	src := p.lineOf(srcLine)
	return srcLine, min(byteColumn(src, srcCol), len(src)) + 1, true
}

// makeMap transforms the program again, with a source map, and keeps the
// map if the code is the same as the first time.
func (p *TSProgram) makeMap() {
	r := api.Transform(p.wrapped, tsMapOptions)
	if len(r.Errors) > 0 || string(r.Code) != p.code {
		return // not expected: esbuild is deterministic; positions stay as they are
	}
	p.m, _ = parseSourceMap(r.Map)
}

// tsFrame matches a line of a stack that names a position in program.js,
// as pkg/jsrt writes them: "    at NAME (program.js:L:C)" or
// "    at program.js:L:C".
var tsFrame = regexp.MustCompile(`^(\s*at (?:.* \()?)program\.js:(\d+):(\d+)(\)?)$`)

// MapText rewrites the stack frames of text that point into the program's
// JavaScript to point into its TypeScript: "program.js:L:C" becomes
// "program.ts:L':C'". Other lines are left as they are.
func (p *TSProgram) MapText(text string) string {
	if !strings.Contains(text, "program.js:") {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		m := tsFrame.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		line, err1 := strconv.Atoi(m[2])
		col, err2 := strconv.Atoi(m[3])
		if err1 != nil || err2 != nil {
			continue
		}
		if tl, tc, ok := p.Position(line, col); ok {
			lines[i] = fmt.Sprintf("%s%s:%d:%d%s", m[1], tsFile, tl, tc, m[4])
		}
	}
	return strings.Join(lines, "\n")
}

// MapEnding returns a copy of e whose error stack and output point into the
// TypeScript (see MapText); e is not changed.
func (p *TSProgram) MapEnding(e *worker.Ending) *worker.Ending {
	if e == nil {
		return nil
	}
	out := *e
	if e.Error != nil {
		info := *e.Error
		info.Stack = p.MapText(info.Stack)
		out.Error = &info
	}
	out.Output.Text = p.MapText(e.Output.Text)
	return &out
}

// ParsesAsTypeScript reports whether a run of source as JavaScript ended
// because it did not compile (a SyntaxError whose stack is only the
// position QuickJS gives while compiling, before any call or output) and
// source parses as TypeScript. Only a program that failed to compile pays
// for the parse.
func ParsesAsTypeScript(source string, e *worker.Ending) bool {
	if e == nil || e.Status != wire.StatusThrew || e.Error == nil || e.Error.Name != "SyntaxError" ||
		e.Calls.Total != 0 || e.Output.Text != "" ||
		!strings.HasPrefix(e.Error.Stack, "    at program.js:") || strings.Contains(e.Error.Stack, "\n") {
		return false
	}
	_, err := CompileTS(source)
	return err == nil
}

// splitLines splits a program at its line terminators as JavaScript (and
// esbuild's positions) count them: \n, \r\n, \r, U+2028 and U+2029.
func splitLines(s string) []string {
	return strings.Split(jsLineBreaks.Replace(s), "\n")
}

var jsLineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u2028", "\n", "\u2029", "\n")

// utf16Column converts a 0-based byte column of line to UTF-16 code units;
// past the end, the excess counts one unit a byte.
func utf16Column(line string, b int) int {
	if b > len(line) {
		return utf16Len(line) + b - len(line)
	}
	return utf16Len(line[:b])
}

// byteColumn converts a 0-based UTF-16 column of line to bytes; past the
// end, the excess counts one byte a unit.
func byteColumn(line string, u int) int {
	n := 0
	for i, r := range line {
		if n >= u {
			return i
		}
		n += utf16.RuneLen(r)
	}
	return len(line) + max(u-n, 0)
}

func utf16Len(s string) int {
	n := 0
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		n += max(utf16.RuneLen(r), 1)
		s = s[size:]
	}
	return n
}
