package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

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

// Text renders the ending for an agent to read: the ending first, then the
// calls, the value or error, and the output with what was cut.
func (e *Ending) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (%d ms)\n", e.Status, statusLines[e.Status], e.DurationMs)

	c := e.Calls
	if c.Total > 0 || c.NeverSent > 0 {
		fmt.Fprintf(&b, "calls: %d sent, %d answered", c.Total, c.Answered)
		if c.Refused > 0 {
			fmt.Fprintf(&b, ", %d refused", c.Refused)
		}
		if n := len(c.Unseen) + c.UnseenMore; n > 0 {
			fmt.Fprintf(&b, ", %d without a seen answer", n)
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
			fmt.Fprintf(&b, "%s%s ×%d", sep, t, c.ByTool[t])
		}
		b.WriteString("\n")
		if len(c.Unseen) > 0 {
			b.WriteString("calls that may have taken effect without the program seeing the answer:\n")
			for _, u := range c.Unseen {
				fmt.Fprintf(&b, "  #%d %s %s (%s)\n", u.ID, u.Tool, u.Args, strings.ReplaceAll(string(u.State), "_", " "))
			}
			if c.UnseenMore > 0 {
				fmt.Fprintf(&b, "  … and %d more\n", c.UnseenMore)
			}
		}
	}

	switch {
	case e.Status == wire.StatusReturned:
		b.WriteString("value:\n")
		b.WriteString(indentJSON(e.Value))
		b.WriteString("\n")
	case e.Error != nil:
		fmt.Fprintf(&b, "error: %s: %s\n", e.Error.Name, e.Error.Message)
		if e.Error.Stack != "" {
			b.WriteString(strings.TrimRight(e.Error.Stack, "\n"))
			b.WriteString("\n")
		}
		if e.Crash != nil && e.Crash.Stderr != "" {
			b.WriteString("worker stderr (head and tail):\n")
			b.WriteString(strings.TrimRight(e.Crash.Stderr, "\n"))
			b.WriteString("\n")
		}
	}

	if e.Output.Text != "" || e.Output.CutChars > 0 {
		if e.Output.CutChars > 0 {
			fmt.Fprintf(&b, "output (%d characters cut from the middle):\n", e.Output.CutChars)
		} else {
			b.WriteString("output:\n")
		}
		b.WriteString(e.Output.Text)
		if !strings.HasSuffix(e.Output.Text, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

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
