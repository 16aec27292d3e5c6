package worker

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// BenchmarkParentRoundTrip measures the parent's side of a call: a worker
// without JavaScript makes 1000 sequential calls; the metric is per call.
func BenchmarkParentRoundTrip(b *testing.B) {
	for b.Loop() {
		var first, last time.Time
		n := 0
		call := func(ctx context.Context, c Call) Outcome {
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			last = now
			n++
			return echoCall(ctx, c)
		}
		e := runWith(b, testConfig("ping-pong"), Request{Code: "1", Call: call})
		if e.Status != wire.StatusReturned || n != 1000 {
			b.Fatalf("ended %s after %d calls", e.Status, n)
		}
		b.ReportMetric(float64(last.Sub(first).Microseconds())/999, "µs/call")
	}
}

// BenchmarkIPCFloor is the floor under BenchmarkParentRoundTrip: a worker
// process spawned the same way echoes 4 bytes; the parent writes and reads
// them back on the same netpoll socket, with no frames, goroutines or checks.
func BenchmarkIPCFloor(b *testing.B) {
	p, err := spawn(testConfig("echo-bytes"))
	if err != nil {
		b.Fatal(err)
	}
	defer p.discard()
	buf := make([]byte, 4)
	for b.Loop() {
		if _, err := p.conn.Write([]byte("ping")); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(p.conn, buf); err != nil {
			b.Fatal(err)
		}
	}
}
