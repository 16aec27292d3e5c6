package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// TestAdmitInProgramOrder: Request.Admit sees a program's calls in the
// order the program made them (eight calls made without awaiting, as a
// Promise.all does), each once, on one goroutine; Perform runs later on its
// own; an Admission without Perform reaches the program as its outcome.
// Before admission was ordered, each call entered its handler from its own
// goroutine, so a FIFO lane behind it saw them in any order.
func TestAdmitInProgramOrder(t *testing.T) {
	t.Parallel()
	for round := range 5 { // the old race showed within a few rounds
		var mu sync.Mutex
		var admitted []string
		admit := func(ctx context.Context, c Call) Admission {
			var a struct{ I int }
			_ = json.Unmarshal(c.Args, &a)
			mu.Lock()
			admitted = append(admitted, fmt.Sprint(a.I))
			mu.Unlock()
			if a.I == 3 {
				return Admission{Outcome: Refuse("lane_full", "tools.issues.get_issue: refused at admission")}
			}
			return Admission{Perform: func(ctx context.Context) Outcome { return echoCall(ctx, c) }}
		}
		e := runProgram(t, Request{Admit: admit, Code: `
			const ps = []
			for (let i = 0; i < 8; i++) ps.push(tools.issues.get_issue({i}))
			const r = await Promise.allSettled(ps)
			return r.map(x => x.status === 'fulfilled' ? x.value.structuredContent.i : x.reason.code)`})
		wantStatus(t, e, wire.StatusReturned)
		if string(e.Value) != `[0,1,2,"lane_full",4,5,6,7]` {
			t.Fatalf("round %d: value %s", round, e.Value)
		}
		if got := fmt.Sprint(admitted); got != "[0 1 2 3 4 5 6 7]" {
			t.Fatalf("round %d: admitted in order %s, want the program's order", round, got)
		}
		if e.Calls.Total != 8 || e.Calls.Answered != 7 || e.Calls.Refused != 1 {
			t.Fatalf("round %d: ledger %+v", round, e.Calls)
		}
	}
}
