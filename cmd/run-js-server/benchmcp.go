package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/mcpgw"
	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// benchServerCmd is `run-js-server bench-server [--tools N]`, a downstream
// MCP server on stdio for `bench`: blob({mib}) answers with a text of that
// many MiB, and --tools adds N small tools (t0001, t0002, ...) so that the
// catalog has that many. It speaks JSON-RPC itself and writes each answer
// as one prepared line, so that what `bench` times is the gateway and the
// worker, not a server's encoding of 20 MiB.
func benchServerCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("tools", 0, "small tools to add to the catalog")
	if err := fs.Parse(args); err != nil || *n < 0 || *n > mcpgw.MaxToolsPerServer-1 {
		fmt.Fprintf(stderr, "run-js-server bench-server: --tools 0 to %d\n", mcpgw.MaxToolsPerServer-1)
		return exitUsage
	}
	tools := []map[string]any{{"name": "blob", "description": "Answer with a text of the given size.",
		"inputSchema": json.RawMessage(`{"type":"object","properties":{"mib":{"type":"integer","minimum":0,"maximum":100}},"required":["mib"]}`)}}
	for i := 1; i <= *n; i++ {
		tools = append(tools, map[string]any{"name": fmt.Sprintf("t%04d", i), "description": "Tool number " + strconv.Itoa(i) + " of the bench catalog: it answers with its name.",
			"inputSchema": json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer","description":"any number"}}}`)})
	}
	in := bufio.NewReaderSize(stdin, 1<<20)
	out := bufio.NewWriterSize(stdout, 1<<20)
	answer := func(id json.RawMessage, result any) error {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		if err != nil {
			return err
		}
		if _, err := out.Write(append(b, '\n')); err != nil {
			return err
		}
		return out.Flush()
	}
	blobs := map[int][]byte{} // MiB -> the answer's text, as JSON, once
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return exitReturned // stdin closed: the gateway is done with us
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
			continue // a notification, or not for us
		}
		switch req.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(req.Params, &p)
			err = answer(req.ID, map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "run-js-server-bench", "version": version}})
		case "tools/list":
			err = answer(req.ID, map[string]any{"tools": tools})
		case "ping":
			err = answer(req.ID, map[string]any{})
		case "tools/call":
			var p struct {
				Name      string `json:"name"`
				Arguments struct {
					MiB int `json:"mib"`
				} `json:"arguments"`
			}
			_ = json.Unmarshal(req.Params, &p)
			if p.Name != "blob" {
				err = answer(req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": p.Name}}})
				break
			}
			mib := min(max(p.Arguments.MiB, 0), 100)
			text, ok := blobs[mib]
			if !ok {
				text = []byte(`"` + strings.Repeat("x", mib<<20) + `"`)
				blobs[mib] = text
			}
			for _, part := range [][]byte{[]byte(`{"jsonrpc":"2.0","id":`), req.ID, []byte(`,"result":{"content":[{"type":"text","text":`), text, []byte("}]}}\n")} {
				if _, err = out.Write(part); err != nil {
					break
				}
			}
			if err == nil {
				err = out.Flush()
			}
		default:
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "no method " + req.Method}})
			_, err = out.Write(append(b, '\n'))
			if err == nil {
				err = out.Flush()
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "run-js-server bench-server: %v\n", err)
			return exitEnded
		}
	}
}

// gatewayProc is a run-js-server serving MCP on stdio, as an agent starts
// it, with a go-sdk client connected.
type gatewayProc struct {
	cmd     *exec.Cmd
	session *mcp.ClientSession
}

// startBenchGateway starts `run-js-server --config FILE` with the given
// servers' config and waits until server_info shows each ready.
func startBenchGateway(exe, dir, name, servers string, ready int) (*gatewayProc, error) {
	cfgPath := filepath.Join(dir, name+".json")
	if err := os.WriteFile(cfgPath, []byte(`{"mcpServers": {`+servers+`}, "limits": {"maxMemory": "512MiB"}}`), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "--config", cfgPath, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	session, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: version}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("start run-js-server --config %s: %w", cfgPath, err)
	}
	g := &gatewayProc{cmd: cmd, session: session}
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "server_info", Arguments: map[string]any{}})
		if err != nil {
			g.close()
			return nil, err
		}
		var info struct {
			Servers []struct{ State string } `json:"servers"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &info)
		n := 0
		for _, s := range info.Servers {
			if s.State == "ready" {
				n++
			}
		}
		if n == ready {
			return g, nil
		}
		if time.Now().After(deadline) {
			g.close()
			return nil, fmt.Errorf("gateway %s: %d of %d servers ready after 60 s", name, n, ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *gatewayProc) close() { _ = g.session.Close() }

// runJS calls run_js and returns the time it took and the ending.
func runJS(s *mcp.ClientSession, code string, memoryMB int) (time.Duration, map[string]any, error) {
	d, _, e, err := runJSAt(s, code, memoryMB)
	return d, e, err
}

// runJSAt is runJS that also says when the response arrived.
func runJSAt(s *mcp.ClientSession, code string, memoryMB int) (time.Duration, time.Time, map[string]any, error) {
	args := map[string]any{"code": code}
	if memoryMB > 0 {
		args["memory_mb"] = memoryMB
	}
	t0 := time.Now()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_js", Arguments: args})
	at := time.Now()
	d := at.Sub(t0)
	if err != nil {
		return 0, at, nil, err
	}
	var e map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &e)
	if res.IsError || e["status"] != "returned" {
		return 0, at, nil, fmt.Errorf("run_js did not return: %s", wire.Cut(string(b), 2000))
	}
	return d, at, e, nil
}

// statusKiB reads a field of /proc/PID/status, in KiB.
func statusKiB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// mcpFigures are the measurements over MCP.
type mcpFigures struct {
	oneCall     []time.Duration // run_js with one downstream call, request → response
	endToAnswer []time.Duration // end frame checked → response at the client, in process
	empty0      time.Duration   // return 1, p50 of the alternating rounds, no downstream tools
	emptyN      time.Duration   // the same with the big catalog
	peakN       int64           // worker peak (KiB) of return 1 with the big catalog
	catalogN    int
	bigCall     time.Duration // the large result, as the program timed the call (median)
	bigGrowth   int64         // the gateway's peak RSS above its RSS before the call (KiB, median)
	bigPeak     int64         // the gateway's peak RSS during the call (KiB, median)
	bigMiB      int
}

// benchMCP measures run_js as an agent sees it, against gateways started
// as agents start them (this executable, --config, stdio).
func benchMCP(runs, catalog, bigMiB int, pause time.Duration) (*mcpFigures, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "run-js-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	q := strconv.Quote
	demo := `"demo": {"command": ` + q(exe) + `, "args": ["demo-server"]}`
	f := &mcpFigures{catalogN: catalog, bigMiB: bigMiB}

	// One downstream call, as the demo's.
	ga, err := startBenchGateway(exe, dir, "demo", demo, 1)
	if err != nil {
		return nil, err
	}
	oneCall := "return (await tools.demo.get_issue({id: 101})).structuredContent.issue.id"
	for i := 0; i < 10; i++ {
		if _, _, err := runJS(ga.session, oneCall, 0); err != nil {
			ga.close()
			return nil, err
		}
	}
	for i := 0; i < runs; i++ {
		time.Sleep(pause)
		d, _, err := runJS(ga.session, oneCall, 0)
		if err != nil {
			ga.close()
			return nil, err
		}
		f.oneCall = append(f.oneCall, d)
	}
	ga.close()

	// End frame → response, in process: the same gateway and demo server,
	// an MCP client over in-memory transports, the end frame's time from
	// the ending itself.
	if f.endToAnswer, err = benchEndToAnswer(exe, runs, pause); err != nil {
		return nil, err
	}

	// return 1 with no downstream tools, and with a large catalog.
	g0, err := startBenchGateway(exe, dir, "none", "", 0)
	if err != nil {
		return nil, err
	}
	defer g0.close()
	big := `"big": {"command": ` + q(exe) + `, "args": ["bench-server", "--tools", "` + strconv.Itoa(catalog) + `"]}`
	gn, err := startBenchGateway(exe, dir, "many", big, 1)
	if err != nil {
		return nil, err
	}
	defer gn.close()
	var r0, rn []time.Duration
	for round := 0; round < 3; round++ {
		for _, side := range []struct {
			g   *gatewayProc
			out *[]time.Duration
		}{{g0, &r0}, {gn, &rn}} {
			var ds []time.Duration
			for i := 0; i < max(runs/3, 5); i++ {
				time.Sleep(pause)
				d, e, err := runJS(side.g.session, "return 1", 0)
				if err != nil {
					return nil, err
				}
				ds = append(ds, d)
				if side.g == gn {
					if kib, ok := e["peakMemoryKiB"].(float64); ok && int64(kib) > f.peakN {
						f.peakN = int64(kib)
					}
				}
			}
			*side.out = append(*side.out, pct(ds, 50))
		}
	}
	f.empty0, f.emptyN = pct(r0, 50), pct(rn, 50)

	// The large result, into a program with 256 MiB: each time in a fresh
	// gateway (a Go heap that has held one large result keeps the memory
	// for a while, and the next would reuse it unseen).
	blob := `"big": {"command": ` + q(exe) + `, "args": ["bench-server"]}`
	bigCode := fmt.Sprintf("const t = Date.now(); const r = await tools.big.blob({mib: %d}); const ms = Date.now() - t; return [ms, r.content[0].text.length]", bigMiB)
	var calls []time.Duration
	var growths, peaks []int64
	for i := 0; i < 3; i++ {
		gb, err := startBenchGateway(exe, dir, fmt.Sprintf("blob%d", i), blob, 1)
		if err != nil {
			return nil, err
		}
		call, growth, peak, err := bigOnce(gb, bigCode, bigMiB)
		gb.close()
		if err != nil {
			return nil, err
		}
		calls, growths, peaks = append(calls, call), append(growths, growth), append(peaks, peak)
	}
	f.bigCall, f.bigGrowth, f.bigPeak = pct(calls, 50), pct(growths, 50), pct(peaks, 50)
	return f, nil
}

// bigOnce makes one run that receives the large result, in gateway g, and
// returns the call as the program timed it, and the gateway's peak RSS
// above its RSS before the run, and the peak itself (KiB).
func bigOnce(g *gatewayProc, code string, mib int) (time.Duration, int64, int64, error) {
	pid := g.cmd.Process.Pid
	for i := 0; i < 3; i++ { // the spares, the demo session: settled before measuring
		if _, _, err := runJS(g.session, "return 1", 0); err != nil {
			return 0, 0, 0, err
		}
	}
	time.Sleep(200 * time.Millisecond)
	rss, err := statusKiB(pid, "VmRSS")
	if err != nil {
		return 0, 0, 0, err
	}
	// Writing 5 to clear_refs resets the peak (VmHWM) to the current RSS.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return 0, 0, 0, fmt.Errorf("reset the gateway's peak RSS: %w", err)
	}
	_, e, err := runJS(g.session, code, 256)
	if err != nil {
		return 0, 0, 0, err
	}
	hwm, err := statusKiB(pid, "VmHWM")
	if err != nil {
		return 0, 0, 0, err
	}
	v, _ := e["value"].([]any)
	if len(v) != 2 || v[1] != float64(mib<<20) {
		return 0, 0, 0, fmt.Errorf("the large result came back as %v", e["value"])
	}
	ms, _ := v[0].(float64)
	return time.Duration(ms) * time.Millisecond, hwm - rss, hwm, nil
}

// benchEndToAnswer runs a gateway in this process (the demo server as its
// downstream, two spares) and an MCP client over in-memory transports, and
// times each run_js from the end frame to the response at the client.
func benchEndToAnswer(exe string, runs int, pause time.Duration) ([]time.Duration, error) {
	cfg, err := mcpgw.ParseConfig("bench.json", []byte(`{"mcpServers": {"demo": {"command": `+strconv.Quote(exe)+`, "args": ["demo-server"]}}}`), os.LookupEnv)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var endAt time.Time
	g, err := mcpgw.New(cfg, mcpgw.Options{Version: version, Log: slog.New(slog.DiscardHandler), Worker: worker.Config{Spares: mcpgw.DefaultSpares},
		OnEnding: func(e *worker.Ending) { mu.Lock(); endAt = e.EndFrameAt; mu.Unlock() }})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	g.Connect(context.Background())
	g.Settle(context.Background())
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcpgw.NewServer(g).Connect(context.Background(), st, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: version}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	code := "return (await tools.demo.get_issue({id: 101})).structuredContent.issue.id"
	var out []time.Duration
	for i := 0; i < runs+10; i++ {
		time.Sleep(pause)
		_, now, _, err := runJSAt(cs, code, 0)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		at := endAt
		mu.Unlock()
		if at.IsZero() {
			return nil, errors.New("the ending carried no end frame time")
		}
		if i >= 10 {
			out = append(out, now.Sub(at))
		}
	}
	return out, nil
}
