package worker

// This file renders what an agent reads of a run: the ending, and the
// progress of a run still going. The gateway's own lines and the program's
// text are kept apart: every line that came from the program (its value,
// its error and stack, its output) or from its worker (a crashed worker's
// stderr) starts with ProgramLinePrefix, and no line of the gateway's does,
// so no text a program writes can pass for a line of the gateway's.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// ProgramLinePrefix starts every line of program text in a rendering ("|"
// alone on an empty line). The gateway's own lines never start with "|".
const ProgramLinePrefix = "| "

// statusLines says, per ending, what it means for the agent reading it.
var statusLines = map[wire.Status]string{
	wire.StatusReturned:    "the program returned",
	wire.StatusThrew:       "the program threw",
	wire.StatusStalled:     "the program stalled: it waited for something that could never happen",
	wire.StatusTimedOut:    "the program ran out of time",
	wire.StatusOutOfMemory: "the program ran out of memory",
	wire.StatusStopped:     "the program was stopped",
	wire.StatusCrashed:     "the worker running the program crashed",
}

// Text renders the ending for an agent to read. The gateway's lines come
// first: the status, the call counts, the calls whose answer the program
// never saw. Then, under a line of the gateway's naming each, the program's
// value or error (with its stack), a crashed worker's stderr, and the
// output (with what was cut), every line of them marked with
// ProgramLinePrefix.
func (e *Ending) Text() string {
	var b strings.Builder
	status, ok := statusLines[e.Status]
	if !ok {
		status = "the run ended"
	}
	fmt.Fprintf(&b, "%s: %s (%d ms)\n", oneLine(string(e.Status)), status, e.DurationMs)
	writeCalls(&b, "calls: ", e.Calls)

	switch {
	case e.Status == wire.StatusReturned:
		b.WriteString("value (JSON):\n")
		writeProgramText(&b, jsonLineBreaks.Replace(indentJSON(e.Value)))
	case e.Error != nil:
		b.WriteString("error:\n")
		writeProgramText(&b, e.Error.Name+": "+e.Error.Message)
		if stack := strings.TrimRight(e.Error.Stack, "\n"); stack != "" {
			writeProgramText(&b, stack)
		}
		if e.Crash != nil && e.Crash.Stderr != "" {
			b.WriteString("worker stderr (head and tail):\n")
			writeProgramText(&b, strings.TrimRight(e.Crash.Stderr, "\n"))
		}
	}
	writeOutput(&b, "output", e.Output)
	return b.String()
}

// Text renders a running program's progress: its calls so far, and the
// output it wrote since the last progress, marked as the program's.
func (p Progress) Text() string {
	var b strings.Builder
	writeCalls(&b, "calls so far: ", p.Calls)
	writeOutput(&b, "output since the last return", p.Output)
	return b.String()
}

// Sent is how many calls were sent to their tools: answered, or sent
// without an answer the program saw. Refused calls and calls never sent are
// not among them.
func (c Calls) Sent() int { return c.Answered + len(c.Unseen) + c.UnseenMore }

// Summary is the call record in one line: calls sent (answered, and
// without a seen answer), refused before sending, never sent, and the calls
// per tool, e.g. "1 sent (1 answered), 1 refused (not sent); demo.get_issue ×2".
// A refused call is never counted as sent.
func (c Calls) Summary() string {
	var b strings.Builder
	sent := c.Sent()
	fmt.Fprintf(&b, "%d sent", sent)
	if sent > 0 {
		fmt.Fprintf(&b, " (%d answered", c.Answered)
		if n := len(c.Unseen) + c.UnseenMore; n > 0 {
			fmt.Fprintf(&b, ", %d without a seen answer", n)
		}
		b.WriteString(")")
	}
	if c.Refused > 0 {
		fmt.Fprintf(&b, ", %d refused (not sent)", c.Refused)
	}
	if c.NeverSent > 0 {
		fmt.Fprintf(&b, ", %d never sent", c.NeverSent)
	}
	tools := make([]string, 0, len(c.ByTool))
	for t := range c.ByTool {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for i, t := range tools {
		sep := "; "
		if i > 0 {
			sep = ", "
		}
		fmt.Fprintf(&b, "%s%s ×%d", sep, oneLine(t), c.ByTool[t])
	}
	return b.String()
}

// writeCalls writes the call counts after label, and the calls that may
// have taken effect without the program seeing the answer; nothing when no
// call was made.
func writeCalls(b *strings.Builder, label string, c Calls) {
	if c.Total == 0 && c.NeverSent == 0 {
		return
	}
	b.WriteString(label)
	b.WriteString(c.Summary())
	b.WriteString("\n")
	if len(c.Unseen) > 0 {
		b.WriteString("calls that may have taken effect without the program seeing the answer:\n")
		for _, u := range c.Unseen {
			fmt.Fprintf(b, "  #%d %s %s (%s)\n", u.ID, oneLine(u.Tool), oneLine(u.Args), strings.ReplaceAll(oneLine(string(u.State)), "_", " "))
		}
		if c.UnseenMore > 0 {
			fmt.Fprintf(b, "  … and %d more\n", c.UnseenMore)
		}
	}
}

// writeOutput writes an output section under its label: nothing when there
// was no output.
func writeOutput(b *strings.Builder, label string, o OutputText) {
	if o.Text == "" && o.CutChars <= 0 {
		return
	}
	if o.CutChars > 0 {
		fmt.Fprintf(b, "%s (%d characters cut from the middle):\n", label, o.CutChars)
	} else {
		b.WriteString(label + ":\n")
	}
	if o.CutChars > 0 && o.markAt <= len(o.Text) && strings.HasPrefix(o.Text[o.markAt:], cutMarker(o.CutChars)) {
		// The marker is the gateway's line; what is around it, the
		// program's (which could print the marker's very characters).
		head, tail := o.Text[:o.markAt], o.Text[o.markAt+len(cutMarker(o.CutChars)):]
		if head != "" {
			writeProgramText(b, head)
		}
		fmt.Fprintf(b, "[… %d characters cut …]\n", o.CutChars)
		if tail != "" {
			writeProgramText(b, strings.TrimSuffix(tail, "\n"))
		}
		return
	}
	if o.Text != "" {
		writeProgramText(b, strings.TrimSuffix(o.Text, "\n"))
	}
}

// writeProgramText writes text as the program's: every line, split at any
// line break a reader might honour (\n, \r, \r\n, \v, \f, U+0085, U+2028,
// U+2029), starts with ProgramLinePrefix. It ends with a newline.
func writeProgramText(b *strings.Builder, text string) {
	line := func(s string) {
		if s == "" {
			b.WriteString(strings.TrimRight(ProgramLinePrefix, " "))
		} else {
			b.WriteString(ProgramLinePrefix)
			b.WriteString(s)
		}
		b.WriteByte('\n')
	}
	start := 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch r {
		case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
			line(text[start:i])
			if r == '\r' && i+1 < len(text) && text[i+1] == '\n' {
				size = 2
			}
			start = i + size
		}
		i += size
	}
	line(text[start:])
}

// oneLine keeps text the gateway puts on one of its own lines (tool names,
// arguments, which come from servers and programs) on that line: control
// characters and the other line breaks are written as \uXXXX escapes.
func oneLine(s string) string {
	clean := true
	for _, r := range s {
		if lineBreaking(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if lineBreaking(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lineBreaking reports whether r is a control character or a line or
// paragraph separator.
func lineBreaking(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == '\u2028' || r == '\u2029'
}

// jsonLineBreaks escapes the line breaks JSON lets stand raw in a string,
// so that a string of the value stays on its line.
var jsonLineBreaks = strings.NewReplacer("\u0085", `\u0085`, "\u2028", `\u2028`, "\u2029", `\u2029`)

// indentJSON pretty-prints small values and leaves large ones compact.
func indentJSON(v []byte) string {
	if len(v) > 64<<10 {
		return string(v)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, v, "", "  "); err != nil {
		return string(v)
	}
	return out.String()
}
