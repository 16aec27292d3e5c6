package worker

import (
	"sort"
	"time"
	"unicode/utf8"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// CallState is where a call stands in the ledger.
type CallState string

// Call states. The last four are calls whose answer the program never saw.
const (
	CallAnswered CallState = "answered"  // the tool answered and the program got it
	CallRefused  CallState = "refused"   // refused before anything was sent
	CallInFlight CallState = "in_flight" // sent; no answer reached the program before the run ended
	CallTimedOut CallState = "timed_out" // sent; no answer in time
	CallTooLarge CallState = "too_large" // sent and answered, but the answer could not enter the program
	CallFailed   CallState = "failed"    // sent; the transport or server failed
	CallNotSent  CallState = "not_sent"  // accepted from the program, but never sent (refused after the run ended): counted in NeverSent
)

// Ledger limits: a run's ending names at most MaxUnseenListed calls, each
// with its arguments cut to MaxLedgerArgChars characters.
const (
	MaxUnseenListed   = 10
	MaxLedgerArgChars = 200
)

// UnseenCall is a call that may have taken effect without the program seeing
// its answer.
type UnseenCall struct {
	ID       uint64    `json:"id"`
	Tool     string    `json:"tool"`
	Args     string    `json:"args"`
	State    CallState `json:"state"`
	QueuedMs int64     `json:"queuedMs,omitempty"` // time it waited in its server's lane before it was sent
}

// Calls is the call record of a run.
type Calls struct {
	Total      int            `json:"total"`    // calls that reached the parent
	Answered   int            `json:"answered"` // answers the program saw
	Refused    int            `json:"refused"`  // refused before sending
	ByTool     map[string]int `json:"byTool"`   // "server.tool" → calls
	Unseen     []UnseenCall   `json:"unseen"`   // up to MaxUnseenListed, oldest first
	UnseenMore int            `json:"unseenMore"`
	NeverSent  int            `json:"neverSent"` // never sent to a tool: still waiting inside the program, or still queued in a lane, when the run ended
	QueuedMs   int64          `json:"queuedMs"`  // time all calls spent waiting in their servers' lanes
}

type ledgerEntry struct {
	id     uint64
	tool   string
	args   string
	state  CallState
	queued time.Duration
}

// ledger records every call of a run in the parent, from what the parent
// itself saw; the worker's end frame can only add which answers it did not
// take. It is not safe for concurrent use: the reader (add), the call
// goroutines (answer, notSent), finish and the progress readers (record)
// share it under supervisor.mu.
type ledger struct {
	entries map[uint64]*ledgerEntry
	order   []uint64
}

func newLedger() *ledger { return &ledger{entries: make(map[uint64]*ledgerEntry)} }

func (l *ledger) add(c wire.Call, args []byte) {
	e := &ledgerEntry{id: c.ID, tool: c.Server + "." + c.Tool, args: cutArgs(args), state: CallInFlight}
	l.entries[c.ID] = e
	l.order = append(l.order, c.ID)
}

// answer records the outcome handed to the worker.
func (l *ledger) answer(id uint64, o Outcome) {
	e := l.entries[id]
	if e == nil {
		return
	}
	e.queued = o.Queued
	switch o.Kind {
	case wire.OutcomeOK:
		e.state = CallAnswered
	case wire.OutcomeRefused:
		e.state = CallRefused
	default:
		switch o.Code {
		case wire.CodeTimeout:
			e.state = CallTimedOut
		case wire.CodeResultTooLarge:
			e.state = CallTooLarge
		default:
			e.state = CallFailed
		}
	}
}

// notSent records a call that was never sent: it was refused (for example
// dropped from its lane's queue) after the run had ended.
func (l *ledger) notSent(id uint64) {
	if e := l.entries[id]; e != nil && e.state == CallInFlight {
		e.state = CallNotSent
	}
}

// unseen marks answered calls whose answers the worker says the program
// never took (the run ended between the answer and its use).
func (l *ledger) unseen(ids []uint64) {
	for _, id := range ids {
		if e := l.entries[id]; e != nil && e.state == CallAnswered {
			e.state = CallInFlight
		}
	}
}

func (l *ledger) inFlight() int {
	n := 0
	for _, e := range l.entries {
		if e.state == CallInFlight {
			n++
		}
	}
	return n
}

func (l *ledger) record(neverSent int) Calls {
	c := Calls{Total: len(l.order), ByTool: map[string]int{}, Unseen: []UnseenCall{}, NeverSent: neverSent}
	for _, id := range l.order {
		e := l.entries[id]
		c.ByTool[e.tool]++
		c.QueuedMs += e.queued.Milliseconds()
		switch e.state {
		case CallAnswered:
			c.Answered++
		case CallRefused:
			c.Refused++
		case CallNotSent:
			c.NeverSent++
		default:
			if len(c.Unseen) < MaxUnseenListed {
				c.Unseen = append(c.Unseen, UnseenCall{ID: e.id, Tool: e.tool, Args: e.args, State: e.state, QueuedMs: e.queued.Milliseconds()})
			} else {
				c.UnseenMore++
			}
		}
	}
	sort.SliceStable(c.Unseen, func(i, j int) bool { return c.Unseen[i].ID < c.Unseen[j].ID })
	return c
}

// cutArgs renders arguments for the ledger: their JSON (compact, as the
// prelude's JSON.stringify made it) cut to MaxLedgerArgChars characters, as
// valid UTF-8 (a byte that is not UTF-8 is U+FFFD).
func cutArgs(args []byte) string {
	// More bytes than the cap's characters can take, so a cut here still
	// leaves more than the cap, and CutChars marks it.
	if n := (MaxLedgerArgChars + 1) * utf8.UTFMax; len(args) > n {
		args = args[:n]
	}
	return wire.CutChars(string([]rune(string(args))), MaxLedgerArgChars)
}
