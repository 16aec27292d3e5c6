package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// benchCmd is `run-js-server bench`: it measures real workers of this binary
// on this host, with an in-process echo tool, and prints a Markdown table.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", 200, "runs per measurement")
	calls := fs.Int("calls", 1000, "calls per program in the per-call measurements")
	warmup := fs.Int("warmup", 20, "runs before measuring")
	pause := fs.Duration("pause", 20*time.Millisecond, "idle time between the latency runs (an agent's runs come seconds apart; spares refill in it)")
	mcpRuns := fs.Int("mcp", 0, "instead: this many run_js calls over MCP stdio to run-js-server --demo, each making one downstream call")
	sparesN := fs.Int("spares", 2, fmt.Sprintf("spare workers for the warm measurements (1 to %d)", worker.MaxSpares))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: run-js-server bench [flags]\n\nMeasures real workers of this binary on this host (cold: a worker spawned per\nrun; warm: spare workers kept ahead), with an in-process echo tool, and prints\nMarkdown tables. With --mcp N it measures run_js over MCP stdio instead.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitReturned
		}
		return exitUsage
	}
	if *runs < 1 || *calls < 2 || *warmup < 0 || *sparesN < 1 || *sparesN > worker.MaxSpares {
		fmt.Fprintf(stderr, "run-js-server bench: --runs must be ≥ 1, --calls ≥ 2, --warmup ≥ 0, --spares 1 to %d\n", worker.MaxSpares)
		return exitUsage
	}
	if *mcpRuns > 0 {
		if err := benchMCP(stdout, *mcpRuns, *pause); err != nil {
			fmt.Fprintf(stderr, "run-js-server bench: %v\n", err)
			return exitEnded
		}
		return exitReturned
	}
	for _, spares := range []int{0, *sparesN} {
		l, err := worker.NewLauncher(worker.Config{Spares: spares})
		if err != nil {
			fmt.Fprintf(stderr, "run-js-server bench: %v\n", err)
			return exitUsage
		}
		if spares == 0 {
			fmt.Fprintf(stdout, "### Cold: a worker spawned per run (spawn → …)\n\n")
		} else {
			fmt.Fprintf(stdout, "\n### Warm: %d spare workers kept ahead (request → …)\n\n", spares)
		}
		err = (&bench{l: l, pause: *pause}).do(stdout, *runs, *calls, *warmup)
		l.Close()
		if err != nil {
			fmt.Fprintf(stderr, "run-js-server bench: %v\n", err)
			return exitEnded
		}
	}
	return exitReturned
}

// bench runs its programs through a Launcher: with spares, the figures are
// request → first call; without, spawn → first call.
type bench struct {
	l     *worker.Launcher
	pause time.Duration
}

var benchCatalog = []wire.Tool{{Server: "bench", Name: "echo", InputSchema: []byte(`{"type":"object"}`)}}

// echo answers every call at once, so what is measured is the isolate.
func echo(_ context.Context, c worker.Call) worker.Outcome {
	return worker.Answer([]byte(`{"content":[{"type":"text","text":"ok"}],"structuredContent":` + string(c.Args) + `,"isError":false}`))
}

// runTimes is what oneRun measured of one run: spawn (or request) → first
// call, → ending, the span of its calls, and how it ended.
type runTimes struct {
	firstCall, end  time.Duration
	callSpan        time.Duration // first call → last call
	calls           int64
	peakKiB         int64
	status          wire.Status
	errText         string
	lastCallArrival time.Time
}

// oneRun runs code and times it.
func (b *bench) oneRun(code string) runTimes {
	var first, last atomic.Int64
	var n atomic.Int64
	start := time.Now()
	// An in-process tool answers at once: its Admission carries the
	// outcome, which the run writes back from its reader goroutine.
	admit := func(ctx context.Context, c worker.Call) worker.Admission {
		t := time.Since(start).Nanoseconds()
		first.CompareAndSwap(0, t)
		last.Store(t)
		n.Add(1)
		return worker.Admission{Outcome: echo(ctx, c)}
	}
	var e *worker.Ending
	r, err := b.l.Start(context.Background(), worker.Request{Code: code, Catalog: benchCatalog, Admit: admit})
	if err == nil {
		e = r.Wait()
	}
	rt := runTimes{end: time.Since(start)}
	if err != nil {
		rt.status, rt.errText = wire.StatusCrashed, err.Error()
		return rt
	}
	rt.firstCall = time.Duration(first.Load())
	rt.callSpan = time.Duration(last.Load() - first.Load())
	rt.calls = n.Load()
	rt.peakKiB = e.PeakMemoryKiB
	rt.status = e.Status
	if e.Error != nil {
		rt.errText = e.Error.Name + ": " + e.Error.Message
	}
	return rt
}

// do runs the warm-up, then each measurement, and prints the tables.
func (b *bench) do(w io.Writer, runs, calls, warmup int) error {
	for i := 0; i < warmup; i++ {
		if rt := b.oneRun(benchOneCall); rt.status != wire.StatusReturned {
			return fmt.Errorf("warm-up run ended %s: %s", rt.status, rt.errText)
		}
	}
	first, end, peak, err := b.latency(runs)
	if err != nil {
		return err
	}
	rps1, err := b.throughput(runs, 1)
	if err != nil {
		return err
	}
	rps4, err := b.throughput(runs, 4)
	if err != nil {
		return err
	}
	seq, err := b.perCall(calls, fmt.Sprintf(`let s = 0; for (let i = 0; i < %d; i++) s += (await tools.bench.echo({i})).structuredContent.i; return s`, calls))
	if err != nil {
		return err
	}
	all, err := b.perCall(calls, fmt.Sprintf(`const r = await Promise.all(Array.from({length: %d}, (_, i) => tools.bench.echo({i}))); return r.length`, calls))
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "| measure | p50 | p90 |\n| --- | --- | --- |\n")
	fmt.Fprintf(w, "| → first call (%d runs, %s apart) | %s | %s |\n", runs, b.pause, ms(pct(first, 50)), ms(pct(first, 90)))
	fmt.Fprintf(w, "| → ending, process reaped | %s | %s |\n", ms(pct(end, 50)), ms(pct(end, 90)))
	fmt.Fprintf(w, "| worker peak RSS (VmHWM) | %.2f MiB | %.2f MiB |\n", float64(pct(peak, 50))/1024, float64(pct(peak, 90))/1024)
	fmt.Fprintf(w, "| per call, %d sequential awaits (10 runs) | %s | %s |\n", calls, us(pct(seq, 50)), us(pct(seq, 90)))
	fmt.Fprintf(w, "| per call, %d in Promise.all (10 runs) | %s | %s |\n", calls, us(pct(all, 50)), us(pct(all, 90)))
	fmt.Fprintf(w, "\n| throughput, runs back to back | runs/s |\n| --- | --- |\n| 1-way | %.0f |\n| 4-way | %.0f |\n", rps1, rps4)
	return nil
}

// benchOneCall is the program of the latency and throughput runs.
const benchOneCall = `return (await tools.bench.echo({x: 1})).structuredContent.x`

// latency runs programs one at a time, b.pause apart: each one's time to
// its first call and to its ending, and its peak memory.
func (b *bench) latency(runs int) (first, end []time.Duration, peak []int64, err error) {
	for i := 0; i < runs; i++ {
		time.Sleep(b.pause)
		rt := b.oneRun(benchOneCall)
		if rt.status != wire.StatusReturned {
			return nil, nil, nil, fmt.Errorf("run %d ended %s: %s", i, rt.status, rt.errText)
		}
		first = append(first, rt.firstCall)
		end = append(end, rt.end)
		peak = append(peak, rt.peakKiB)
	}
	return first, end, peak, nil
}

// throughput runs programs back to back, c at once, and gives runs per
// second.
func (b *bench) throughput(runs, c int) (float64, error) {
	var wg sync.WaitGroup
	var failed atomic.Value
	next := atomic.Int64{}
	t0 := time.Now()
	for g := 0; g < c; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(runs) {
				if rt := b.oneRun(benchOneCall); rt.status != wire.StatusReturned {
					failed.Store(fmt.Errorf("a run at %d-way ended %s: %s", c, rt.status, rt.errText))
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return 0, err
	}
	return float64(runs) / time.Since(t0).Seconds(), nil
}

// perCall runs code, which makes calls calls, 10 times and gives each run's
// time per call (from its first call to its last).
func (b *bench) perCall(calls int, code string) ([]time.Duration, error) {
	var per []time.Duration
	for i := 0; i < 10; i++ {
		rt := b.oneRun(code)
		if rt.status != wire.StatusReturned || rt.calls != int64(calls) {
			return nil, fmt.Errorf("per-call run ended %s after %d calls: %s", rt.status, rt.calls, rt.errText)
		}
		per = append(per, rt.callSpan/time.Duration(calls-1))
	}
	return per, nil
}

func pct[T int64 | time.Duration](xs []T, p int) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := (len(s) - 1) * p / 100
	return s[i]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond)) }

// benchMCP measures run_js as an agent sees it: a go-sdk client starts
// `run-js-server --demo` over stdio and calls run_js with a program that
// makes one call to the demo server (itself over MCP stdio).
func benchMCP(w io.Writer, runs int, pause time.Duration) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx := context.Background()
	cmd := exec.Command(exe, "--demo")
	cmd.Stderr = os.Stderr
	session, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: version}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("start run-js-server --demo: %w", err)
	}
	defer session.Close()
	call := func() (time.Duration, error) {
		t0 := time.Now()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{
			"code": "return (await tools.demo.get_issue({id: 101})).structuredContent.issue.id"}})
		d := time.Since(t0)
		if err != nil {
			return 0, err
		}
		if res.IsError {
			return 0, fmt.Errorf("run_js failed: %v", res.Content)
		}
		return d, nil
	}
	for i := 0; i < 10; i++ { // warm-up: spares, the demo server's session
		if _, err := call(); err != nil {
			return err
		}
	}
	var ds []time.Duration
	for i := 0; i < runs; i++ {
		time.Sleep(pause)
		d, err := call()
		if err != nil {
			return err
		}
		ds = append(ds, d)
	}
	fmt.Fprintf(w, "| run_js over MCP stdio, one downstream call (%d calls, %s apart) | p50 | p90 |\n| --- | --- | --- |\n| request → result | %s | %s |\n",
		runs, pause, ms(pct(ds, 50)), ms(pct(ds, 90)))
	return nil
}
