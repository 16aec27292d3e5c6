package interop

// The gateway's memory through large results: a real gateway process (built
// without the race detector), driven by the go-sdk client, whose downstream
// (this test binary in "big" mode) answers with 50 MiB of text. Its peak RSS
// (VmHWM) must stay under memoryGoal.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modeEnv, set in a server's env by the config, makes this test binary a
// downstream server instead of running tests.
const modeEnv = "RUNJS_INTEROP_MODE"

// bigResult is the size of the big tool's text: the 50 MiB.
const bigResult = 50 << 20

// memoryGoal bounds the gateway's peak RSS through one accepted 50 MiB
// result and three refused ones (issue 12; README "Memory").
const memoryGoal = 384 << 20

// serveBig is this test binary as the "big" downstream server: one tool
// whose answer is bigResult bytes of text. It serves stdio, then exits.
func serveBig() {
	s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "test"}, nil)
	s.AddTool(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", bigResult)}}}, nil
	})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// vmHWM reads a process's peak resident set size, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the gateway's status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status (Linux only)")
	return 0
}

// TestGatewayMemoryThroughLargeResults: one 50 MiB result accepted (by a
// program of 256 MiB, whose cap is 85 MiB) and three refused (programs of
// 64 MiB, whose cap is 21 MiB: refused while the answer streams past).
func TestGatewayMemoryThroughLargeResults(t *testing.T) {
	dir := testDir(t)
	gateway := buildGateway(t, dir)
	cfg := map[string]any{"mcpServers": map[string]any{
		"big": map[string]any{"command": os.Args[0], "env": map[string]string{modeEnv: "big"}},
	}}
	b, _ := json.Marshal(cfg)
	config := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gateway, "--config", config, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "memory-test", Version: "test"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to the gateway: %v", err)
	}
	defer cs.Close()
	pid := cmd.Process.Pid

	runJS := func(memoryMB int) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_js", Arguments: map[string]any{
			"memory_mb": memoryMB, "timeout_ms": 120_000, "yield_ms": 120_000,
			"code": `try { return (await tools.big.big({})).content[0].text.length } catch (e) { return e.code + ": " + e.message }`}})
		if err != nil {
			t.Fatalf("run_js: %v", err)
		}
		st, _ := res.StructuredContent.(map[string]any)
		return st
	}
	start := vmHWM(t, pid)
	if st := runJS(256); st["status"] != "returned" || st["value"] != float64(bigResult) {
		t.Fatalf("the accepted result: %v", st)
	}
	afterAccepted := vmHWM(t, pid)
	for i := range 3 {
		if st := runJS(64); st["status"] != "returned" || !strings.HasPrefix(fmt.Sprint(st["value"]), "result_too_large") {
			t.Fatalf("refused result %d: %v", i+1, st)
		}
	}
	peak := vmHWM(t, pid)
	t.Logf("gateway VmHWM: %d MiB at start, %d MiB after the accepted 50 MiB result, %d MiB after three refused (goal: under %d MiB)",
		start>>20, afterAccepted>>20, peak>>20, memoryGoal>>20)
	if peak >= memoryGoal {
		t.Fatalf("the gateway's peak RSS was %d MiB, over the goal of %d MiB", peak>>20, memoryGoal>>20)
	}
}
