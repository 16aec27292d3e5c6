package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/run-js-server/run-js-server/pkg/mcpgw"
	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// benchCmd is `run-js-server bench`: it measures the platform's floors,
// real workers of this binary on this host (with an in-process echo tool),
// and run_js over MCP against gateways of this binary, and prints Markdown
// tables with each figure beside its floor and its goal, from the one run.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", 200, "runs per measurement")
	calls := fs.Int("calls", 1000, "calls per program in the per-call measurements")
	warmup := fs.Int("warmup", 20, "runs before measuring")
	pause := fs.Duration("pause", 20*time.Millisecond, "idle time between the latency runs (an agent's runs come seconds apart; spares refill in it)")
	mcpRuns := fs.Int("mcp", 100, "run_js calls over MCP per measurement (0: skip the MCP measurements)")
	only := fs.Bool("mcp-only", false, "measure only the floors and run_js over MCP")
	catalog := fs.Int("catalog", 2000, "downstream tools of the large catalog")
	bigMiB := fs.Int("big-mib", 20, "MiB of the large result")
	sparesN := fs.Int("spares", 2, fmt.Sprintf("spare workers for the warm measurements (1 to %d)", worker.MaxSpares))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: run-js-server bench [flags]\n\nMeasures the platform's floors (a minimal static binary started as a worker is,\nbuilt with the go command), real workers of this binary on this host (cold: a\nworker spawned per run; warm: spare workers kept ahead) with an in-process echo\ntool, and run_js over MCP against gateways of this binary, and prints Markdown\ntables with each figure beside its floor and goal.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitReturned
		}
		return exitUsage
	}
	if *runs < 1 || *calls < 2 || *warmup < 0 || *sparesN < 1 || *sparesN > worker.MaxSpares || *mcpRuns < 0 || *catalog < 1 || *catalog >= mcpgw.MaxToolsPerServer || *bigMiB < 1 || *bigMiB > 80 {
		fmt.Fprintf(stderr, "run-js-server bench: --runs must be ≥ 1, --calls ≥ 2, --warmup ≥ 0, --mcp ≥ 0, --catalog 1 to %d, --big-mib 1 to 80, --spares 1 to %d\n", mcpgw.MaxToolsPerServer-1, worker.MaxSpares)
		return exitUsage
	}
	fl := measureFloors(max(*runs/4, 20), *pause)
	if fl.cleanup != nil {
		defer fl.cleanup()
	}
	fmt.Fprintf(stdout, "### Floors (measured first, in this run)\n\n")
	if fl.err != nil {
		fmt.Fprintf(stdout, "not measured: %v\n", fl.err)
	} else {
		fmt.Fprintf(stdout, "| floor | figure |\n| --- | --- |\n")
		fmt.Fprintf(stdout, "| spawn → first byte of a minimal static binary, started as a worker is (p50) | %s |\n", ms(fl.spawn))
		fmt.Fprintf(stdout, "| socket ping-pong, 4 bytes (median of 5 × 2,000) | %s |\n", us(fl.pingPong))
	}
	if !*only {
		for _, spares := range []int{0, *sparesN} {
			l, err := worker.NewLauncher(worker.Config{Spares: spares})
			if err != nil {
				fmt.Fprintf(stderr, "run-js-server bench: %v\n", err)
				return exitUsage
			}
			l.SetCatalog(benchCatalog) // spares hold it, as a gateway's do
			if spares == 0 {
				fmt.Fprintf(stdout, "\n### Cold: a worker spawned per run (spawn → …)\n\n")
			} else {
				fmt.Fprintf(stdout, "\n### Warm: %d spare workers kept ahead (request → …)\n\n", spares)
			}
			err = (&bench{l: l, pause: *pause, cold: spares == 0, fl: fl}).do(stdout, *runs, *calls, *warmup)
			l.Close()
			if err != nil {
				fmt.Fprintf(stderr, "run-js-server bench: %v\n", err)
				return exitEnded
			}
		}
	}
	if *mcpRuns > 0 {
		f, err := benchMCP(*mcpRuns, *catalog, *bigMiB, *pause)
		if err != nil {
			fmt.Fprintf(stderr, "run-js-server bench: %v\n", err)
			return exitEnded
		}
		f.print(stdout, *mcpRuns, *pause)
	}
	return exitReturned
}

// print writes the MCP figures as a table, each with its goal.
func (f *mcpFigures) print(w io.Writer, runs int, pause time.Duration) {
	fmt.Fprintf(w, "\n### run_js over MCP stdio (%d calls per figure, %s apart)\n\n", runs, pause)
	fmt.Fprintf(w, "| figure | p50 | p90 | goal | met |\n| --- | --- | --- | --- | --- |\n")
	one := pct(f.oneCall, 50)
	fmt.Fprintf(w, "| run_js, one downstream call (demo), request → response | %s | %s | ≤ 3.6 ms | %s |\n", ms(one), ms(pct(f.oneCall, 90)), met(one <= 3600*time.Microsecond))
	e2a := pct(f.endToAnswer, 50)
	fmt.Fprintf(w, "| the same, end frame checked → response at the client (in process) | %s | %s | ≤ 0.3 ms | %s |\n", ms(e2a), ms(pct(f.endToAnswer, 90)), met(e2a <= 300*time.Microsecond))
	fmt.Fprintf(w, "\n| figure | none | %d tools | ratio | goal | met |\n| --- | --- | --- | --- | --- | --- |\n", f.catalogN)
	fmt.Fprintf(w, "| `return 1`, request → response (p50 of 3 alternating rounds' p50s) | %s | %s | %s | ≤ 1.2× | %s |\n",
		ms(f.empty0), ms(f.emptyN), ratio(f.emptyN, f.empty0), met(float64(f.emptyN) <= 1.2*float64(f.empty0)))
	fmt.Fprintf(w, "| worker peak RSS with %d tools (most of the runs) | | %.2f MiB | | ≤ 8 MiB | %s |\n", f.catalogN, float64(f.peakN)/1024, met(f.peakN <= 8<<10))
	fmt.Fprintf(w, "\n| %d MiB result into a 256 MiB program (median of 3) | figure | goal | met |\n| --- | --- | --- | --- |\n", f.bigMiB)
	fmt.Fprintf(w, "| the call, as the program times it | %s | ≤ 0.5 s | %s |\n", ms(f.bigCall), met(f.bigCall <= 500*time.Millisecond))
	fmt.Fprintf(w, "| gateway peak RSS above its RSS before the call | %.1f MiB (%.2f× the result; peak %.1f MiB) | ≤ 3× the result | %s |\n",
		float64(f.bigGrowth)/1024, float64(f.bigGrowth)/float64(f.bigMiB<<10), float64(f.bigPeak)/1024, met(f.bigGrowth <= int64(3*f.bigMiB)<<10))
}

// bench runs its programs through a Launcher: with spares, the figures are
// request → first call; without, spawn → first call.
type bench struct {
	l     *worker.Launcher
	pause time.Duration
	cold  bool   // no spares: first call is measured from the spawn
	fl    floors // measured in the same run
	// spawnFloors are the spawn floor's samples taken between the cold
	// latency runs.
	spawnFloors []time.Duration
}

// benchCatalog is prepared once, as a gateway prepares its catalog.
var benchCatalog = func() *wire.Catalog {
	c, err := wire.NewCatalog([]wire.Tool{{Server: "bench", Name: "echo", InputSchema: []byte(`{"type":"object"}`)}}, nil)
	if err != nil {
		panic(err) // our own constant catalog
	}
	return c
}()

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
	r, err := b.l.Start(context.Background(), worker.Request{Code: code, Tools: benchCatalog, Admit: admit})
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

	fl := b.fl
	fmt.Fprintf(w, "| measure | p50 | p90 | floor | ratio | goal | met |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	firstGoal, firstMet, floor := "", "", fl.spawn
	if b.cold && len(b.spawnFloors) > 0 {
		floor = pct(b.spawnFloors, 50) // the samples paired with these runs
		firstGoal, firstMet = "≤ 3× spawn floor", met(float64(pct(first, 50)) <= 3*float64(floor))
	}
	fmt.Fprintf(w, "| → first call (%d runs, %s apart) | %s | %s | %s | %s | %s | %s |\n", runs, b.pause, ms(pct(first, 50)), ms(pct(first, 90)),
		ms(floor), ratio(pct(first, 50), floor), firstGoal, firstMet)
	fmt.Fprintf(w, "| → ending given | %s | %s | | | | |\n", ms(pct(end, 50)), ms(pct(end, 90)))
	fmt.Fprintf(w, "| worker peak RSS (VmHWM) | %.2f MiB | %.2f MiB | | | ≤ 8 MiB | %s |\n", float64(pct(peak, 50))/1024, float64(pct(peak, 90))/1024, met(pct(peak, 50) <= 8<<10))
	fmt.Fprintf(w, "| per call, %d sequential awaits (10 runs) | %s | %s | %s | %s | ≤ 3.5× | %s |\n", calls, us(pct(seq, 50)), us(pct(seq, 90)),
		us(fl.pingPong), ratio(pct(seq, 50), fl.pingPong), met(float64(pct(seq, 50)) <= 3.5*float64(fl.pingPong)))
	fmt.Fprintf(w, "| per call, %d in Promise.all (10 runs) | %s | %s | %s | %s | ≤ 1.5× | %s |\n", calls, us(pct(all, 50)), us(pct(all, 90)),
		us(fl.pingPong), ratio(pct(all, 50), fl.pingPong), met(float64(pct(all, 50)) <= 1.5*float64(fl.pingPong)))
	fmt.Fprintf(w, "\n| throughput, runs back to back | runs/s |\n| --- | --- |\n| 1-way | %.0f |\n| 4-way | %.0f |\n", rps1, rps4)
	return nil
}

// benchOneCall is the program of the latency and throughput runs.
const benchOneCall = `return (await tools.bench.echo({x: 1})).structuredContent.x`

// latency runs programs one at a time, b.pause apart: each one's time to
// its first call and to its ending, and its peak memory.
//
// Cold, each run follows a sample of the spawn floor (paired, so that both
// see the machine as it is at that moment): b.spawnFloors.
func (b *bench) latency(runs int) (first, end []time.Duration, peak []int64, err error) {
	for i := 0; i < runs; i++ {
		if b.cold && b.fl.err == nil {
			time.Sleep(b.pause)
			d, err := worker.SpawnFloor(b.fl.cfg)
			if err != nil {
				return nil, nil, nil, err
			}
			b.spawnFloors = append(b.spawnFloors, d)
		}
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
