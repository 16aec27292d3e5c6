package worker

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Rule names a rule of the protocol that a worker can break. Breaking any of
// them ends the run as crashed, with the rule in the ending.
type Rule string

// The rules, checked in the parent on every frame from the worker, which is
// untrusted: it runs the program, and a defect in the engine could hand the
// program the worker's pen.
const (
	ruleUndecodable      Rule = "undecodable_frame"
	ruleFrameTooLarge    Rule = "frame_too_large"
	ruleHandshake        Rule = "bad_handshake"
	ruleNoHandshake      Rule = "handshake_timeout"
	ruleUnexpected       Rule = "unexpected_frame"
	ruleUnknownRun       Rule = "unknown_run"
	ruleCallIDOutOfOrder Rule = "call_id_out_of_order"
	ruleUnknownTool      Rule = "unknown_tool"
	ruleBadArguments     Rule = "invalid_arguments"
	ruleArgsTooLarge     Rule = "arguments_too_large"
	ruleTooManyCalls     Rule = "too_many_calls_in_flight"
	ruleBadEnd           Rule = "invalid_end"
	ruleAfterEnd         Rule = "frame_after_end"
	ruleExitBeforeEnd    Rule = "exit_before_end"
	ruleConfinement      Rule = "confinement"
)

// rules says, for a person reading a crashed ending, what each rule is.
var rules = map[Rule]string{
	ruleUndecodable:      "every frame must decode: a known type, a header that is the message's JSON",
	ruleFrameTooLarge:    "no frame from a worker may exceed " + strconv.Itoa(wire.MaxWorkerFrame) + " bytes",
	ruleHandshake:        "the first frame must be hello with this build's protocol version",
	ruleNoHandshake:      "hello must arrive before the handshake timeout",
	ruleUnexpected:       "a worker sends only hello (once, first), call, output, tools request (at most once) and end (once, last)",
	ruleUnknownRun:       "every call and end must name the run the worker was given",
	ruleCallIDOutOfOrder: "call ids start at 1 and increase by one per call",
	ruleUnknownTool:      "a call must name a tool of the run's catalog",
	ruleBadArguments:     "a call's arguments must be a JSON object",
	ruleArgsTooLarge:     "a call's arguments must fit the byte, value and nesting caps",
	ruleTooManyCalls:     "no more calls in flight than the run's cap",
	ruleBadEnd:           "the end frame must carry a known status and, for returned, a value that is JSON within its cap",
	ruleAfterEnd:         "nothing may follow the end frame",
	ruleExitBeforeEnd:    "a worker must send end before it exits",
	ruleConfinement:      "a worker stays inside its confinement: no system call outside its seccomp policy, and with strict confinement every layer applied before it reads a program",
}

// violation is a broken rule with what was seen.
type violation struct {
	Rule   Rule
	Detail string
}

func (v *violation) Error() string {
	return fmt.Sprintf("worker broke the protocol (%s: %s): %s", v.Rule, rules[v.Rule], v.Detail)
}

func broke(r Rule, format string, args ...any) *violation {
	return &violation{Rule: r, Detail: fmt.Sprintf(format, args...)}
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
	// toolsRequestMsg: the program read ALL_TOOLS.
	toolsRequestMsg struct{}
)

// checker holds what the parent knows of one run's protocol state and checks
// each frame against it. It is not safe for concurrent use: the reader
// (check) and the call goroutines (answered) share it under supervisor.mu.
type checker struct {
	runID    string
	limits   wire.Limits
	tools    *wire.Catalog
	setting  Confinement // what hello's report is checked against
	hello    bool
	ended    bool
	asked    bool // a tools request came
	lastID   uint64
	inflight int
}

func newChecker(runID string, l wire.Limits, catalog *wire.Catalog) *checker {
	return &checker{runID: runID, limits: l, tools: catalog}
}

// readError classifies an error from wire.Reader.Next.
func readError(err error) *violation {
	switch {
	case errors.Is(err, wire.ErrFrameTooLarge):
		return broke(ruleFrameTooLarge, "%v", err)
	case errors.Is(err, wire.ErrBadFrame):
		return broke(ruleUndecodable, "%s", cutPeer(err.Error()))
	}
	return nil
}

// check validates one frame and returns its decoded message: *wire.Hello,
// *callMsg, *outputMsg or *endMsg.
func (c *checker) check(f wire.Frame) (any, *violation) {
	if c.ended {
		return nil, broke(ruleAfterEnd, "a %s frame after end", f.Type)
	}
	if !c.hello {
		if f.Type != wire.TypeHello {
			return nil, broke(ruleHandshake, "first frame is %s, not hello", f.Type)
		}
		var h wire.Hello
		if err := f.Decode(&h); err != nil {
			return nil, broke(ruleUndecodable, "%s", cutPeer(err.Error()))
		}
		if h.Protocol != wire.ProtocolVersion {
			return nil, broke(ruleHandshake, "worker speaks protocol %d, this parent %d: the worker binary is from another build; rebuild run-js-server", h.Protocol, wire.ProtocolVersion)
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
			return nil, broke(ruleUndecodable, "%s", cutPeer(err.Error()))
		}
		m.Args = f.Payload
		if m.RunID != c.runID {
			return nil, broke(ruleUnknownRun, "call names run %s", quote(m.RunID))
		}
		if m.ID != c.lastID+1 {
			return nil, broke(ruleCallIDOutOfOrder, "call id %d after %d", m.ID, c.lastID)
		}
		if !c.tools.Has(m.Server, m.Tool) {
			return nil, broke(ruleUnknownTool, "call %d names %s.%s", m.ID, quote(m.Server), quote(m.Tool))
		}
		if c.inflight >= c.limits.MaxInFlight {
			return nil, broke(ruleTooManyCalls, "call %d would be number %d in flight; the cap is %d", m.ID, c.inflight+1, c.limits.MaxInFlight)
		}
		if err := c.limits.CheckArgs(m.Args); err != nil {
			if errors.Is(err, wire.ErrTooLarge) {
				return nil, broke(ruleArgsTooLarge, "call %d: %v", m.ID, err)
			}
			return nil, broke(ruleBadArguments, "call %d: %v", m.ID, err)
		}
		c.lastID = m.ID
		c.inflight++
		return &m, nil
	case wire.TypeOutput:
		var o wire.Output
		if err := f.Decode(&o); err != nil {
			return nil, broke(ruleUndecodable, "%s", cutPeer(err.Error()))
		}
		if o.Skip < 0 {
			return nil, broke(ruleUndecodable, "output skip %d is negative", o.Skip)
		}
		return &outputMsg{Skip: o.Skip, Text: f.Payload}, nil
	case wire.TypeToolsRequest:
		if c.asked {
			return nil, broke(ruleUnexpected, "a second tools request")
		}
		if err := f.Decode(&struct{}{}); err != nil || len(f.Payload) != 0 {
			return nil, broke(ruleUndecodable, "a tools request carries nothing but {}")
		}
		c.asked = true
		return &toolsRequestMsg{}, nil
	case wire.TypeEnd:
		var m endMsg
		if err := f.Decode(&m.End); err != nil {
			return nil, broke(ruleUndecodable, "%s", cutPeer(err.Error()))
		}
		m.Value = f.Payload
		if m.RunID != c.runID {
			return nil, broke(ruleUnknownRun, "end names run %s", quote(m.RunID))
		}
		if v := c.checkEnd(&m); v != nil {
			return nil, v
		}
		c.ended = true
		return &m, nil
	}
	return nil, broke(ruleUnexpected, "a %s frame", f.Type)
}

func (c *checker) checkEnd(m *endMsg) *violation {
	if !m.Status.FromWorker() {
		return broke(ruleBadEnd, "status %s", quote(string(m.Status)))
	}
	if m.Status == wire.StatusReturned {
		if len(m.Value) > c.limits.MaxReturnBytes {
			return broke(ruleBadEnd, "value of %d bytes; the cap is %d", len(m.Value), c.limits.MaxReturnBytes)
		}
		if _, err := wire.ScanJSON(m.Value, 0, 0); err != nil {
			return broke(ruleBadEnd, "value: %v", err)
		}
	} else {
		if len(m.Value) != 0 {
			return broke(ruleBadEnd, "a value with status %s", m.Status)
		}
		if m.Error == nil {
			return broke(ruleBadEnd, "status %s without an error", m.Status)
		}
	}
	if e := m.Error; e != nil && len(e.Name)+len(e.Message)+len(e.Stack) > 3*wire.MaxErrorChars+200 {
		return broke(ruleBadEnd, "error description of %d bytes", len(e.Name)+len(e.Message)+len(e.Stack))
	}
	if m.NeverSent < 0 {
		return broke(ruleBadEnd, "neverSent %d", m.NeverSent)
	}
	if len(m.Unsettled) > c.limits.MaxInFlight {
		return broke(ruleBadEnd, "%d unsettled calls; at most %d can be", len(m.Unsettled), c.limits.MaxInFlight)
	}
	for _, id := range m.Unsettled {
		if id == 0 || id > c.lastID {
			return broke(ruleBadEnd, "unsettled call %d was never sent", id)
		}
	}
	return nil
}

// answered records that a result for one call went to the worker.
func (c *checker) answered() { c.inflight-- }

// quote quotes and cuts bytes from the peer before they enter a message.
func quote(s string) string {
	return strconv.Quote(wire.Cut(s, 80))
}

// cutPeer cuts an error text that may quote the peer's bytes (a decoder's
// message names the offending field or value) to a readable length.
func cutPeer(s string) string { return wire.Cut(s, 300) }
