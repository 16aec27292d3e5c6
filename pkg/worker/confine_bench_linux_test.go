package worker

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// BenchmarkConfinementSetup measures, inside fresh workers, what confining
// adds to a cold start: the constructor that drops privileges (before the
// Go runtime) and the ladder after the engine is prepared (Landlock,
// rlimits, seccomp, the report). Both run before the start frame is read,
// so a spare pays them while idle.
func BenchmarkConfinementSetup(b *testing.B) {
	var ladder, early []time.Duration
	for b.Loop() {
		e := runWith(b, testConfig("attack-all"), Request{Input: json.RawMessage(`{"attack":"time-confinement"}`)})
		var s string
		if e.Status != wire.StatusReturned || json.Unmarshal(e.Value, &s) != nil {
			b.Fatalf("ended %s: %s", e.Status, e.Value)
		}
		f := strings.Fields(s)
		l, _ := strconv.ParseInt(f[0], 10, 64)
		c, _ := strconv.ParseInt(f[1], 10, 64)
		ladder, early = append(ladder, time.Duration(l)), append(early, time.Duration(c))
	}
	b.ReportMetric(median(ladder).Seconds()*1e6, "µs-ladder-p50")
	b.ReportMetric(median(early).Seconds()*1e6, "µs-constructor-p50")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkConfinementColdStart: spawn → ending of `return 1`, a worker per
// run, with confinement off and on.
func BenchmarkConfinementColdStart(b *testing.B) {
	for _, c := range []Confinement{ConfineOff, ConfineBestEffort} {
		b.Run(c.String(), func(b *testing.B) {
			cfg := testConfig("")
			cfg.Confinement = c
			var d []time.Duration
			for b.Loop() {
				t0 := time.Now()
				e := runWith(b, cfg, Request{Code: "return 1"})
				d = append(d, time.Since(t0))
				if e.Status != wire.StatusReturned {
					b.Fatalf("ended %s", e.Status)
				}
			}
			b.ReportMetric(median(d).Seconds()*1e3, "ms-p50")
		})
	}
}

// BenchmarkConfinementCalls: 1,000 sequential awaited calls in a real
// worker, with confinement off and on; the metric is per call. The seccomp
// filter runs on every system call the worker makes.
func BenchmarkConfinementCalls(b *testing.B) {
	for _, c := range []Confinement{ConfineOff, ConfineBestEffort} {
		b.Run(c.String(), func(b *testing.B) {
			cfg := testConfig("")
			cfg.Confinement = c
			var per []time.Duration
			for b.Loop() {
				var first, last time.Time
				call := func(ctx context.Context, call Call) Outcome {
					now := time.Now()
					if first.IsZero() {
						first = now
					}
					last = now
					return echoCall(ctx, call)
				}
				e := runWith(b, cfg, Request{Code: `for (let i = 0; i < 1000; i++) await tools.issues.list_issues({i}); return 1`, Call: call})
				if e.Status != wire.StatusReturned {
					b.Fatalf("ended %s", e.Status)
				}
				per = append(per, last.Sub(first)/999)
			}
			b.ReportMetric(float64(median(per).Nanoseconds())/1e3, "µs/call-p50")
		})
	}
}
