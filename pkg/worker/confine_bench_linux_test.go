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

// pairedMedians reports the medians of off and on, and the median of their
// paired differences: each iteration measures both, back to back, so that
// the load of a shared machine weighs on both alike.
func pairedMedians(b *testing.B, off, on []time.Duration, unit string, scale float64) {
	diff := make([]time.Duration, len(off))
	for i := range off {
		diff[i] = on[i] - off[i]
	}
	b.ReportMetric(median(off).Seconds()*scale, unit+"-off-p50")
	b.ReportMetric(median(on).Seconds()*scale, unit+"-on-p50")
	b.ReportMetric(median(diff).Seconds()*scale, unit+"-added-p50")
}

// BenchmarkConfinementColdStart: spawn → ending of `return 1`, a worker per
// run, with confinement off and best-effort in turn.
func BenchmarkConfinementColdStart(b *testing.B) {
	var off, on []time.Duration
	for b.Loop() {
		for _, c := range []Confinement{ConfineOff, ConfineBestEffort} {
			cfg := testConfig("")
			cfg.Confinement = c
			t0 := time.Now()
			e := runWith(b, cfg, Request{Code: "return 1"})
			d := time.Since(t0)
			if e.Status != wire.StatusReturned {
				b.Fatalf("ended %s", e.Status)
			}
			if c == ConfineOff {
				off = append(off, d)
			} else {
				on = append(on, d)
			}
		}
	}
	pairedMedians(b, off, on, "µs", 1e6)
}

// BenchmarkConfinementCalls: 1,000 sequential awaited calls in a real
// worker, with confinement off and best-effort in turn; the metric is per
// call. The seccomp filter runs on every system call the worker makes.
func BenchmarkConfinementCalls(b *testing.B) {
	var off, on []time.Duration
	for b.Loop() {
		for _, c := range []Confinement{ConfineOff, ConfineBestEffort} {
			cfg := testConfig("")
			cfg.Confinement = c
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
			if c == ConfineOff {
				off = append(off, last.Sub(first)/999)
			} else {
				on = append(on, last.Sub(first)/999)
			}
		}
	}
	pairedMedians(b, off, on, "µs/call", 1e6)
}

// BenchmarkConfinementSyscall: the cost of one system call in a worker
// with the filter (attack-all) and without (attack-none): getpid, which
// the kernel answers from its cache of calls allowed whatever their
// arguments, and kill(self, 0), whose argument the filter checks.
func BenchmarkConfinementSyscall(b *testing.B) {
	var cachedOff, cachedOn, checkedOff, checkedOn []time.Duration
	for b.Loop() {
		for _, mode := range []string{"attack-none", "attack-all"} {
			e := runWith(b, testConfig(mode), Request{Input: json.RawMessage(`{"attack":"time-syscalls"}`)})
			var s string
			if e.Status != wire.StatusReturned || json.Unmarshal(e.Value, &s) != nil {
				b.Fatalf("ended %s: %s", e.Status, e.Value)
			}
			f := strings.Fields(s)
			c, _ := strconv.ParseInt(f[0], 10, 64)
			k, _ := strconv.ParseInt(f[1], 10, 64)
			if mode == "attack-none" {
				cachedOff, checkedOff = append(cachedOff, time.Duration(c)), append(checkedOff, time.Duration(k))
			} else {
				cachedOn, checkedOn = append(cachedOn, time.Duration(c)), append(checkedOn, time.Duration(k))
			}
		}
	}
	b.ReportMetric(float64(median(cachedOff)), "ns-getpid-off")
	b.ReportMetric(float64(median(cachedOn)), "ns-getpid-on")
	b.ReportMetric(float64(median(checkedOff)), "ns-kill0-off")
	b.ReportMetric(float64(median(checkedOn)), "ns-kill0-on")
}
