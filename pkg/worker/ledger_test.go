package worker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

func ledgerCall(id uint64, server, tool string) wire.Call {
	return wire.Call{RunID: "run-ledger", ID: id, Server: server, Tool: tool}
}

// TestLedgerStates: each outcome the parent hands to the worker puts its call
// in one state, and record counts and lists it accordingly.
func TestLedgerStates(t *testing.T) {
	tests := []struct {
		name string
		o    Outcome
		want CallState
	}{
		{"ok", Answer(json.RawMessage(`{"content":[]}`)), CallAnswered},
		{"ok with an error result", Answer(json.RawMessage(`{"isError":true}`)), CallAnswered},
		{"refused", Refuse(wire.CodeUnknownTool, "no such tool", "read"), CallRefused},
		{"refused with a timeout code", Refuse(wire.CodeTimeout, "refused all the same"), CallRefused},
		{"refused run stopping", Refuse(wire.CodeRunStopping, "stopping"), CallRefused},
		{"failed timeout", Fail(wire.CodeTimeout, "no answer in 30s"), CallTimedOut},
		{"failed result too large", Fail(wire.CodeResultTooLarge, "40 MB"), CallTooLarge},
		{"failed call failed", Fail(wire.CodeCallFailed, "connection reset"), CallFailed},
		{"failed a gateway's own code", Fail("upstream_502", "bad gateway"), CallFailed},
		{"failed no code", Fail("", ""), CallFailed},
		{"an unknown kind", Outcome{Kind: "maybe", Code: wire.CodeTimeout}, CallTimedOut},
		{"no kind", Outcome{}, CallFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger()
			l.add(ledgerCall(1, "files", "read"), []byte(`{"path":"/a"}`))
			l.answer(1, tt.o)
			if got := l.entries[1].state; got != tt.want {
				t.Fatalf("state %s, want %s", got, tt.want)
			}
			c := l.record(0)
			if c.Total != 1 || c.ByTool["files.read"] != 1 {
				t.Fatalf("total %d, byTool %v", c.Total, c.ByTool)
			}
			wantAnswered, wantRefused, wantUnseen := 0, 0, 0
			switch tt.want {
			case CallAnswered:
				wantAnswered = 1
			case CallRefused:
				wantRefused = 1
			default:
				wantUnseen = 1
			}
			if c.Answered != wantAnswered || c.Refused != wantRefused || len(c.Unseen) != wantUnseen || c.UnseenMore != 0 {
				t.Fatalf("record: %+v", c)
			}
			if wantUnseen == 1 {
				want := UnseenCall{ID: 1, Tool: "files.read", Args: `{"path":"/a"}`, State: tt.want}
				if c.Unseen[0] != want {
					t.Fatalf("unseen %+v, want %+v", c.Unseen[0], want)
				}
			}
		})
	}
}

func TestLedgerNeverAnsweredStaysInFlight(t *testing.T) {
	l := newLedger()
	l.add(ledgerCall(1, "files", "read"), []byte(`{}`))
	l.add(ledgerCall(2, "mail", "send"), []byte(`{"to":"x"}`))
	l.add(ledgerCall(3, "files", "read"), []byte(`{"n":3}`))
	l.answer(2, Answer(json.RawMessage(`{}`)))
	if n := l.inFlight(); n != 2 {
		t.Fatalf("inFlight %d, want 2", n)
	}
	c := l.record(0)
	want := []UnseenCall{
		{ID: 1, Tool: "files.read", Args: `{}`, State: CallInFlight},
		{ID: 3, Tool: "files.read", Args: `{"n":3}`, State: CallInFlight},
	}
	if fmt.Sprint(c.Unseen) != fmt.Sprint(want) || c.Answered != 1 || c.Total != 3 {
		t.Fatalf("record: %+v", c)
	}
}

func TestLedgerAnswerUnknownIDIsIgnored(t *testing.T) {
	l := newLedger()
	l.add(ledgerCall(1, "files", "read"), []byte(`{}`))
	l.answer(7, Answer(json.RawMessage(`{}`)))
	l.answer(0, Refuse(wire.CodeUnknownTool, "x"))
	if len(l.entries) != 1 || l.entries[1].state != CallInFlight {
		t.Fatalf("entries after answers for unknown ids: %+v", l.entries)
	}
	if c := l.record(0); c.Total != 1 || c.Answered != 0 || c.Refused != 0 || len(c.Unseen) != 1 {
		t.Fatalf("record: %+v", c)
	}
}

// TestLedgerUnseen: ids the worker names turn from answered back to in
// flight; nothing else moves.
func TestLedgerUnseen(t *testing.T) {
	l := newLedger()
	outcomes := map[uint64]Outcome{
		1: Answer(json.RawMessage(`{}`)),
		2: Answer(json.RawMessage(`{}`)),
		3: Refuse(wire.CodeUnknownTool, "x"),
		4: Fail(wire.CodeTimeout, "late"),
		5: Answer(json.RawMessage(`{}`)),
		// 6 never answered
	}
	for id := uint64(1); id <= 6; id++ {
		l.add(ledgerCall(id, "files", "read"), []byte(`{}`))
		if o, ok := outcomes[id]; ok {
			l.answer(id, o)
		}
	}
	l.unseen([]uint64{2, 3, 4, 6, 99, 0})
	want := map[uint64]CallState{1: CallAnswered, 2: CallInFlight, 3: CallRefused, 4: CallTimedOut, 5: CallAnswered, 6: CallInFlight}
	for id, st := range want {
		if got := l.entries[id].state; got != st {
			t.Errorf("call %d: %s, want %s", id, got, st)
		}
	}
	if len(l.entries) != 6 {
		t.Errorf("unseen added entries: %d", len(l.entries))
	}
	c := l.record(0)
	if c.Answered != 2 || c.Refused != 1 || len(c.Unseen) != 3 {
		t.Fatalf("record: %+v", c)
	}
	for i, id := range []uint64{2, 4, 6} {
		if c.Unseen[i].ID != id {
			t.Fatalf("unseen %+v: want ids 2, 4, 6", c.Unseen)
		}
	}
	l.unseen(nil) // nothing to do
	if c2 := l.record(0); c2.Answered != 2 {
		t.Fatalf("unseen(nil) changed the record: %+v", c2)
	}
}

// TestLedgerRecordCapsTheList: at most MaxUnseenListed calls are named, the
// oldest first, and the rest are counted.
func TestLedgerRecordCapsTheList(t *testing.T) {
	const n = 40
	l := newLedger()
	for id := uint64(1); id <= n; id++ {
		tool := []string{"read", "write", "list"}[id%3]
		l.add(ledgerCall(id, "files", tool), []byte(fmt.Sprintf(`{"n":%d}`, id)))
		switch {
		case id%4 == 0:
			l.answer(id, Answer(json.RawMessage(`{}`))) // 10 answered: 4, 8, ..., 40
		case id%4 == 1:
			l.answer(id, Refuse(wire.CodeInvalidArguments, "bad")) // 10 refused: 1, 5, ..., 37
		case id%4 == 2:
			l.answer(id, Fail(wire.CodeTimeout, "slow")) // 10 timed out: 2, 6, ..., 38
		}
		// id%4 == 3: in flight (10)
	}
	c := l.record(5)
	if c.Total != n || c.Answered != 10 || c.Refused != 10 || c.NeverSent != 5 {
		t.Fatalf("counts: %+v", c)
	}
	if len(c.Unseen) != MaxUnseenListed || c.UnseenMore != 20-MaxUnseenListed {
		t.Fatalf("unseen %d listed, %d more; want %d and %d", len(c.Unseen), c.UnseenMore, MaxUnseenListed, 20-MaxUnseenListed)
	}
	wantIDs := []uint64{2, 3, 6, 7, 10, 11, 14, 15, 18, 19}
	for i, u := range c.Unseen {
		if u.ID != wantIDs[i] {
			t.Fatalf("unseen ids %v, want %v (the oldest first)", unseenIDs(c.Unseen), wantIDs)
		}
		wantState := CallTimedOut
		if u.ID%4 == 3 {
			wantState = CallInFlight
		}
		if u.State != wantState || u.Args != fmt.Sprintf(`{"n":%d}`, u.ID) || !strings.HasPrefix(u.Tool, "files.") {
			t.Fatalf("unseen %+v", u)
		}
	}
	if c.ByTool["files.read"]+c.ByTool["files.write"]+c.ByTool["files.list"] != n || len(c.ByTool) != 3 {
		t.Fatalf("byTool %v", c.ByTool)
	}
	if c.ByTool["files.read"] != 13 || c.ByTool["files.write"] != 14 || c.ByTool["files.list"] != 13 {
		t.Fatalf("byTool %v", c.ByTool)
	}
}

func TestLedgerRecordExactlyTheCap(t *testing.T) {
	l := newLedger()
	for id := uint64(1); id <= MaxUnseenListed; id++ {
		l.add(ledgerCall(id, "s", "t"), []byte(`{}`))
	}
	if c := l.record(0); len(c.Unseen) != MaxUnseenListed || c.UnseenMore != 0 {
		t.Fatalf("%d listed, %d more", len(c.Unseen), c.UnseenMore)
	}
	l.add(ledgerCall(MaxUnseenListed+1, "s", "t"), []byte(`{}`))
	if c := l.record(0); len(c.Unseen) != MaxUnseenListed || c.UnseenMore != 1 || c.Unseen[MaxUnseenListed-1].ID != MaxUnseenListed {
		t.Fatalf("%v listed, %d more", unseenIDs(c.Unseen), c.UnseenMore)
	}
}

func unseenIDs(us []UnseenCall) []uint64 {
	ids := make([]uint64, len(us))
	for i, u := range us {
		ids[i] = u.ID
	}
	return ids
}

// TestLedgerRecordJSON: an empty record shows [] and {}, never null, and
// ByTool keys are "server.tool".
func TestLedgerRecordJSON(t *testing.T) {
	c := newLedger().record(3)
	if c.Unseen == nil || len(c.Unseen) != 0 || c.ByTool == nil {
		t.Fatalf("empty record: %#v", c)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"total":0,"answered":0,"refused":0,"byTool":{},"unseen":[],"unseenMore":0,"neverSent":3,"queuedMs":0}`; string(b) != want {
		t.Fatalf("JSON %s, want %s", b, want)
	}

	l := newLedger()
	l.add(ledgerCall(1, "my-srv", "echo-back"), []byte(`{"a":1}`))
	l.answer(1, Answer(json.RawMessage(`{}`)))
	b, _ = json.Marshal(l.record(0))
	if want := `{"total":1,"answered":1,"refused":0,"byTool":{"my-srv.echo-back":1},"unseen":[],"unseenMore":0,"neverSent":0,"queuedMs":0}`; string(b) != want {
		t.Fatalf("JSON %s, want %s", b, want)
	}
}

// TestLedgerKeepsCutArgs: the ledger holds its own copy of the arguments, cut.
func TestLedgerKeepsCutArgs(t *testing.T) {
	args := []byte(`{"body":"` + strings.Repeat("a", 5000) + `"}`)
	l := newLedger()
	l.add(ledgerCall(1, "mail", "send"), args)
	copy(args, "XXXXXXXX") // the frame's buffer may be reused by the caller
	u := l.record(0).Unseen[0]
	if utf8.RuneCountInString(u.Args) != MaxLedgerArgChars || !strings.HasPrefix(u.Args, `{"body":"aaa`) || !strings.HasSuffix(u.Args, "…") {
		t.Fatalf("args %q", u.Args)
	}
}

func TestCutArgs(t *testing.T) {
	tests := []struct {
		name string
		args string
	}{
		{"empty", ``},
		{"short", `{"path":"/etc/motd"}`},
		{"short multi-byte", `{"q":"日本語 😀 é"}`},
		{"exactly the cap", `{"a":"` + strings.Repeat("x", MaxLedgerArgChars-8) + `"}`},
		{"exactly the cap in 4-byte runes", `{"a":"` + strings.Repeat("😀", MaxLedgerArgChars-8) + `"}`},
		{"one past the cap", `{"a":"` + strings.Repeat("x", MaxLedgerArgChars-7) + `"}`},
		{"10 KB ASCII", `{"a":"` + strings.Repeat("x", 10<<10) + `"}`},
		{"10 KB 2-byte", `{"a":"` + strings.Repeat("é", 5<<10) + `"}`},
		{"10 KB 3-byte", `{"a":"` + strings.Repeat("語", 10<<10/3) + `"}`},
		{"10 KB 4-byte", `{"a":"` + strings.Repeat("😀", 10<<10/4) + `"}`},
		{"10 KB mixed", `{"a":"` + strings.Repeat("a€😀é", 1<<10) + `"}`},
		{"mixed runes around the byte pre-cut", `{"` + strings.Repeat("😀", 197) + `a` + strings.Repeat("語", 100) + `"}`},
		{"10 KB with escapes", `{"a":"` + strings.Repeat(`\u00e9\n`, 1<<10) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cutArgs([]byte(tt.args))
			if !utf8.ValidString(got) {
				t.Fatalf("cutArgs split a rune: %q", got)
			}
			n := utf8.RuneCountInString(tt.args)
			if n <= MaxLedgerArgChars {
				if got != tt.args {
					t.Fatalf("short args changed: %q → %q", tt.args, got)
				}
				return
			}
			if c := utf8.RuneCountInString(got); c != MaxLedgerArgChars {
				t.Fatalf("%d runes, want exactly %d", c, MaxLedgerArgChars)
			}
			if !strings.HasSuffix(got, "…") {
				t.Fatalf("a cut without …: %q", got)
			}
			if kept := strings.TrimSuffix(got, "…"); !strings.HasPrefix(tt.args, kept) {
				t.Fatalf("the kept part is not the start of the args: %q", kept)
			}
		})
	}
}

// TestCutArgsInvalidUTF8: bytes that are not UTF-8 (JSON strings may hold
// them) come out as valid UTF-8, within the cap.
func TestCutArgsInvalidUTF8(t *testing.T) {
	for _, args := range []string{
		"{\"a\":\"\xff\xfe\"}",
		"{\"a\":\"" + strings.Repeat("\xed\xa0\x80", 1000) + "\"}",
		"{\"a\":\"" + strings.Repeat("\xf0\x9f\x98", 1000) + "\"}",
	} {
		got := cutArgs([]byte(args))
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxLedgerArgChars {
			t.Fatalf("cutArgs(%.20q…) = %q", args, got)
		}
	}
}

// TestCutArgsWithoutASCIIPrefix documents an edge found while writing these
// tests (reported, not fixed here): cutArgs first cuts to 4×MaxLedgerArgChars
// bytes; when those bytes are exactly MaxLedgerArgChars 4-byte runes the rune
// count is not above the cap, so the cut is silent (no "…"). Arguments that
// passed the checker start with '{' (or whitespace), which makes this
// unreachable in a run today.
func TestCutArgsWithoutASCIIPrefix(t *testing.T) {
	got := cutArgs([]byte(strings.Repeat("😀", 10<<10/4)))
	if !strings.HasSuffix(got, "…") || utf8.RuneCountInString(got) != MaxLedgerArgChars {
		t.Fatalf("cut to %d runes, ends in %q", utf8.RuneCountInString(got), got[len(got)-4:])
	}
}
