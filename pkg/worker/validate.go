package worker

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Rule names a rule of the protocol that a worker can break. Breaking any of
// them ends the run as crashed, with the rule in the ending.
type Rule string

// The rules, checked in the parent on every frame from the worker, which is
// untrusted: it runs the program, and a defect in the engine could hand the
// program the worker's pen.
const (
	RuleUndecodable   Rule = "undecodable_frame"
	RuleFrameTooLarge Rule = "frame_too_large"
	RuleHandshake     Rule = "bad_handshake"
	RuleNoHandshake   Rule = "handshake_timeout"
	RuleUnexpected    Rule = "unexpected_frame"
	RuleUnknownRun    Rule = "unknown_run"
	RuleReusedCallID  Rule = "reused_call_id"
	RuleUnknownTool   Rule = "unknown_tool"
	RuleBadArguments  Rule = "invalid_arguments"
	RuleArgsTooLarge  Rule = "arguments_too_large"
	RuleTooManyCalls  Rule = "too_many_calls_in_flight"
	RuleBadEnd        Rule = "invalid_end"
	RuleAfterEnd      Rule = "frame_after_end"
	RuleExitBeforeEnd Rule = "exit_before_end"
	RuleConfinement   Rule = "confinement"
)

// rules says, for a person reading a crashed ending, what each rule is.
var rules = map[Rule]string{
	RuleUndecodable:   "every frame must decode: a known type, a header that is the message's JSON",
	RuleFrameTooLarge: "no frame from a worker may exceed " + strconv.Itoa(wire.MaxWorkerFrame) + " bytes",
	RuleHandshake:     "the first frame must be hello with this build's protocol version",
	RuleNoHandshake:   "hello must arrive before the handshake timeout",
	RuleUnexpected:    "a worker sends only hello (once, first), call, output and end (once, last)",
	RuleUnknownRun:    "every call and end must name the run the worker was given",
	RuleReusedCallID:  "call ids start at 1 and increase by one per call",
	RuleUnknownTool:   "a call must name a tool of the run's catalog",
	RuleBadArguments:  "a call's arguments must be a JSON object",
	RuleArgsTooLarge:  "a call's arguments must fit the byte, value and nesting caps",
	RuleTooManyCalls:  "no more calls in flight than the run's cap",
	RuleBadEnd:        "the end frame must carry a known status and, for returned, a value that is JSON within its cap",
	RuleAfterEnd:      "nothing may follow the end frame",
	RuleExitBeforeEnd: "a worker must send end before it exits",
	RuleConfinement:   "a worker stays inside its confinement: no system call outside its seccomp policy, and with strict confinement every layer applied before it reads a program",
}

// Violation is a broken rule with what was seen.
type Violation struct {
	Rule   Rule
	Detail string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("worker broke the protocol (%s: %s): %s", v.Rule, rules[v.Rule], v.Detail)
}

func violation(r Rule, format string, args ...any) *Violation {
	return &Violation{Rule: r, Detail: fmt.Sprintf(format, args...)}
}

// Decoded messages from a worker.
type (
	callMsg struct {
		wire.Call
		Args []byte
	}
	outputMsg struct {
		Skip int64
		Text []byte
	}
	endMsg struct {
		wire.End
		Value []byte
	}
)

// checker holds what the parent knows of one run's protocol state and checks
// each frame against it. Owned by one goroutine.
type checker struct {
	runID    string
	limits   wire.Limits
	tools    map[string]bool // "server\x00tool"
	setting  Confinement     // what hello's report is checked against
	hello    bool
	ended    bool
	lastID   uint64
	inflight int
}

func newChecker(runID string, l wire.Limits, catalog []wire.Tool) *checker {
	c := &checker{runID: runID, limits: l, tools: make(map[string]bool, len(catalog))}
	for _, t := range catalog {
		c.tools[t.Server+"\x00"+t.Name] = true
	}
	return c
}

// readError classifies an error from wire.Reader.Next.
func readError(err error) *Violation {
	switch {
	case errors.Is(err, wire.ErrFrameTooLarge):
		return violation(RuleFrameTooLarge, "%v", err)
	case errors.Is(err, wire.ErrBadFrame):
		return violation(RuleUndecodable, "%s", cutPeer(err.Error()))
	}
	return nil
}

// check validates one frame and returns its decoded message: *wire.Hello,
// *callMsg, *outputMsg or *endMsg.
func (c *checker) check(f wire.Frame) (any, *Violation) {
	if c.ended {
		return nil, violation(RuleAfterEnd, "a %s frame after end", f.Type)
	}
	if !c.hello {
		if f.Type != wire.TypeHello {
			return nil, violation(RuleHandshake, "first frame is %s, not hello", f.Type)
		}
		var h wire.Hello
		if err := f.Decode(&h); err != nil {
			return nil, violation(RuleUndecodable, "%s", cutPeer(err.Error()))
		}
		if h.Protocol != wire.ProtocolVersion {
			return nil, violation(RuleHandshake, "worker speaks protocol %d, this parent %d: the worker binary is from another build; rebuild run-js-server", h.Protocol, wire.ProtocolVersion)
		}
		if v := checkConfinement(c.setting, h.Confinement); v != nil {
			return nil, v
		}
		c.hello = true
		return &h, nil
	}
	switch f.Type {
	case wire.TypeCall:
		var m callMsg
		if err := f.Decode(&m.Call); err != nil {
			return nil, violation(RuleUndecodable, "%s", cutPeer(err.Error()))
		}
		m.Args = f.Payload
		if m.RunID != c.runID {
			return nil, violation(RuleUnknownRun, "call names run %s", quote(m.RunID))
		}
		if m.ID != c.lastID+1 {
			return nil, violation(RuleReusedCallID, "call id %d after %d", m.ID, c.lastID)
		}
		if !c.tools[m.Server+"\x00"+m.Tool] {
			return nil, violation(RuleUnknownTool, "call %d names %s.%s", m.ID, quote(m.Server), quote(m.Tool))
		}
		if c.inflight >= c.limits.MaxInFlight {
			return nil, violation(RuleTooManyCalls, "call %d would be number %d in flight; the cap is %d", m.ID, c.inflight+1, c.limits.MaxInFlight)
		}
		if err := c.limits.CheckArgs(m.Args); err != nil {
			if errors.Is(err, wire.ErrTooLarge) {
				return nil, violation(RuleArgsTooLarge, "call %d: %v", m.ID, err)
			}
			return nil, violation(RuleBadArguments, "call %d: %v", m.ID, err)
		}
		c.lastID = m.ID
		c.inflight++
		return &m, nil
	case wire.TypeOutput:
		var o wire.Output
		if err := f.Decode(&o); err != nil {
			return nil, violation(RuleUndecodable, "%s", cutPeer(err.Error()))
		}
		if o.Skip < 0 {
			return nil, violation(RuleUndecodable, "output skip %d is negative", o.Skip)
		}
		return &outputMsg{Skip: o.Skip, Text: f.Payload}, nil
	case wire.TypeEnd:
		var m endMsg
		if err := f.Decode(&m.End); err != nil {
			return nil, violation(RuleUndecodable, "%s", cutPeer(err.Error()))
		}
		m.Value = f.Payload
		if m.RunID != c.runID {
			return nil, violation(RuleUnknownRun, "end names run %s", quote(m.RunID))
		}
		if v := c.checkEnd(&m); v != nil {
			return nil, v
		}
		c.ended = true
		return &m, nil
	}
	return nil, violation(RuleUnexpected, "a %s frame", f.Type)
}

func (c *checker) checkEnd(m *endMsg) *Violation {
	if !wire.WorkerStatuses[m.Status] {
		return violation(RuleBadEnd, "status %s", quote(string(m.Status)))
	}
	if m.Status == wire.StatusReturned {
		if len(m.Value) > c.limits.MaxReturnBytes {
			return violation(RuleBadEnd, "value of %d bytes; the cap is %d", len(m.Value), c.limits.MaxReturnBytes)
		}
		if _, err := wire.ScanJSON(m.Value, 0, 0); err != nil {
			return violation(RuleBadEnd, "value: %v", err)
		}
	} else {
		if len(m.Value) != 0 {
			return violation(RuleBadEnd, "a value with status %s", m.Status)
		}
		if m.Error == nil {
			return violation(RuleBadEnd, "status %s without an error", m.Status)
		}
	}
	if e := m.Error; e != nil && len(e.Name)+len(e.Message)+len(e.Stack) > 3*wire.MaxErrorChars+200 {
		return violation(RuleBadEnd, "error description of %d bytes", len(e.Name)+len(e.Message)+len(e.Stack))
	}
	if m.NeverSent < 0 {
		return violation(RuleBadEnd, "neverSent %d", m.NeverSent)
	}
	if len(m.Unsettled) > c.limits.MaxInFlight {
		return violation(RuleBadEnd, "%d unsettled calls; at most %d can be", len(m.Unsettled), c.limits.MaxInFlight)
	}
	for _, id := range m.Unsettled {
		if id == 0 || id > c.lastID {
			return violation(RuleBadEnd, "unsettled call %d was never sent", id)
		}
	}
	return nil
}

// answered records that a result for one call went to the worker.
func (c *checker) answered() { c.inflight-- }

// quote quotes and cuts bytes from the peer before they enter a message.
func quote(s string) string {
	return strconv.Quote(cutBytes(s, 80))
}

// cutPeer cuts an error text that may quote the peer's bytes (a decoder's
// message names the offending field or value) to a readable length.
func cutPeer(s string) string { return cutBytes(s, 300) }

// cutBytes cuts s to at most n bytes, on a rune boundary, marking the cut.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
