package worker

import (
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// BenchmarkOutputFlood measures a program printing 1,000,000 lines of 100
// characters (99 and the newline) in a real worker, from the start frame to
// the end frame: the worker keeps the head, then only a tail and a count.
// The metric is lines per second; the goal (issue 11) is at least 1,000,000.
func BenchmarkOutputFlood(b *testing.B) {
	const n = 1_000_000
	code := `const s = 'x'.repeat(99); for (let i = 0; i < 1000000; i++) console.log(s)`
	var total time.Duration
	runs := 0
	for b.Loop() {
		_, end, elapsed := rawRun(b, code, wire.Limits{TimeoutMs: 120_000})
		if end.Status != wire.StatusReturned {
			b.Fatalf("ended %s: %+v", end.Status, end.Error)
		}
		total += elapsed
		runs++
	}
	b.ReportMetric(float64(n*runs)/total.Seconds(), "lines/s")
}

// BenchmarkOutputFloodRun is BenchmarkOutputFlood through the parent's own
// supervision (Start to Done, spawn included): what a caller of run_js waits.
func BenchmarkOutputFloodRun(b *testing.B) {
	const n = 1_000_000
	code := `const s = 'x'.repeat(99); for (let i = 0; i < 1000000; i++) console.log(s)`
	var total time.Duration
	runs := 0
	for b.Loop() {
		t0 := time.Now()
		e := runWith(b, testConfig(""), Request{Code: code, Limits: wire.Limits{TimeoutMs: 120_000}})
		total += time.Since(t0)
		runs++
		if e.Status != wire.StatusReturned || e.Output.CutChars != n*100-wire.OutputHeadChars-wire.OutputTailChars {
			b.Fatalf("ended %s with %d characters cut", e.Status, e.Output.CutChars)
		}
	}
	b.ReportMetric(float64(n*runs)/total.Seconds(), "lines/s")
}
