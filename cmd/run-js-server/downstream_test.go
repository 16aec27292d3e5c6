package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolsResolvesRelativeCommand: a relative command with a slash is
// found beside the config file, not in the directory the gateway runs in
// (examples/demo.json names ../bin/run-js-server so).
func TestToolsResolvesRelativeCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cfg", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(os.Args[0], filepath.Join(dir, "cfg", "bin", "srv")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cfg", "gateway.json")
	writeFile(t, cfg, `{"mcpServers": {"demo": {"command": "./bin/srv", "args": ["demo-server"]}}}`)
	var out, errb bytes.Buffer
	code := toolsCmd([]string{"--config", cfg, "--log-level", "warn"}, &out, &errb)
	if code != exitReturned {
		t.Fatalf("tools: exit %d; stderr:\n%s", code, &errb)
	}
	var catalog []struct{ Server, Name string }
	if err := json.Unmarshal(out.Bytes(), &catalog); err != nil || len(catalog) != 3 || catalog[0].Server != "demo" {
		t.Fatalf("tools printed %s (%v), want the demo's 3 tools", &out, err)
	}
}

// TestToolsWithEveryServerUnavailable: tools says why and exits 1, not
// "null" and 0.
func TestToolsWithEveryServerUnavailable(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gateway.json")
	writeFile(t, cfg, `{"mcpServers": {"gone": {"command": "./no-such-server"}}}`)
	var out, errb bytes.Buffer
	code := toolsCmd([]string{"--config", cfg, "--log-level", "error"}, &out, &errb)
	if code != exitEnded {
		t.Fatalf("tools: exit %d, want %d; stderr:\n%s", code, exitEnded, &errb)
	}
	if strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("stdout %q, want []", out.String())
	}
	for _, want := range []string{"server gone is unavailable: cannot start " + filepath.Join(filepath.Dir(cfg), "no-such-server"), "none of the 1 servers could be used"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, &errb)
		}
	}
}

// TestLogLevel: a bad --log-level or $RUN_JS_SERVER_LOG_LEVEL is a usage
// error naming both; the variable sets the default.
func TestLogLevel(t *testing.T) {
	var out, errb bytes.Buffer
	if code := toolsCmd([]string{"--log-level", "loud"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), `log level "loud" is not one of debug, info, warn, error (from --log-level or $RUN_JS_SERVER_LOG_LEVEL)`) {
		t.Fatalf("exit %d, stderr %q", code, &errb)
	}
	t.Setenv(logLevelEnv, "chatty")
	errb.Reset()
	if code := toolsCmd(nil, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), `log level "chatty"`) {
		t.Fatalf("from the environment: exit %d, stderr %q", code, &errb)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
