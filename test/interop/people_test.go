package interop

// Servers as people run them, from npm, started through npx from this
// directory's node_modules (npx --no-install: nothing is downloaded), one of
// them 20 s slow to start; server-everything's get-env to see what a server
// is given; a remote server whose URL carries a secret in its path.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// slowStart is how long the wrapper keeps a server from starting: longer
// than any handshake, so an agent that waited for it would be seen waiting.
const slowStart = 20

// serverInfoLine finds client.mjs's "client: server_info WHEN: {...}" line.
func serverInfoLine(t *testing.T, stderr, when string) map[string]map[string]any {
	t.Helper()
	prefix := "client: server_info " + when + ": "
	for _, line := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			var info struct {
				Servers []map[string]any `json:"servers"`
			}
			if err := json.Unmarshal([]byte(rest), &info); err != nil {
				t.Fatalf("server_info %s: %v", when, err)
			}
			out := map[string]map[string]any{}
			for _, s := range info.Servers {
				out[s["name"].(string)] = s
			}
			return out
		}
	}
	t.Fatalf("no %q line in the client's stderr:\n%s", prefix, stderr)
	return nil
}

func TestServersAsPeopleRunThem(t *testing.T) {
	e := setup(t)
	for _, bin := range []string{"mcp-server-memory", "mcp-server-filesystem"} {
		if !fileExists(filepath.Join(e.dir, "node_modules", ".bin", bin)) {
			prerequisite(t, "test/interop/node_modules lacks "+bin+"; "+npmHint)
		}
	}
	files := t.TempDir()
	slow := filepath.Join(t.TempDir(), "slow-memory.sh")
	if err := os.WriteFile(slow, []byte(fmt.Sprintf("#!/bin/sh\n# a first npx run, fetching the package\nsleep %d\nexec npx --no-install mcp-server-memory\n", slowStart)), 0o755); err != nil {
		t.Fatal(err)
	}
	const urlSecret = "url-S3CRET-77c1d0"
	const sentinel = "gateway-SENTINEL-5e2b"
	deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no token", http.StatusUnauthorized)
	}))
	t.Cleanup(deny.Close)

	cfg := map[string]any{"mcpServers": map[string]any{
		"memory": map[string]any{"command": "npx", "args": []string{"--no-install", "mcp-server-memory"}, "cwd": e.dir,
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
		"files": map[string]any{"command": "npx", "args": []string{"--no-install", "mcp-server-filesystem", files}, "cwd": e.dir},
		"slow": map[string]any{"command": slow, "cwd": e.dir,
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "slow.jsonl")}},
		"everything": map[string]any{"command": e.node, "args": []string{filepath.Join(e.dir, everythingEntry), "stdio"}},
		"locked":     map[string]any{"type": "http", "url": deny.URL + "/${INTEROP_URL_SECRET}/mcp"},
	}}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	e.config = filepath.Join(t.TempDir(), "people.json")
	if err := os.WriteFile(e.config, b, 0o600); err != nil {
		t.Fatal(err)
	}

	program := `
const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
await tools.memory.create_entities({ entities: [{ name: "gateway", entityType: "program", observations: ["made by run_js"] }] });
const graph = text(await tools.memory.read_graph({}));
await tools.files.write_file({ path: input.dir + "/note.txt", content: "hello from run_js" });
const note = text(await tools.files.read_text_file({ path: input.dir + "/note.txt" }));
const env = text(await tools.everything["get-env"]({}));
const slow = text(await tools.slow.read_graph({}));
return { graph, note, env, slow };
`
	res, raw, stderr := runJSWithInput(t, e, program, map[string]any{"dir": files}, 90_000,
		[]string{"INTEROP_URL_SECRET=" + urlSecret, "RUNJS_INTEROP_SENTINEL=" + sentinel})

	// The handshake and the first server_info were answered while the slow
	// server was still starting: a state, not a timing.
	before := serverInfoLine(t, stderr, "before")
	if before["slow"]["state"] != "starting" {
		t.Errorf("server_info right after the handshake: slow is %v, want starting", before["slow"])
	}
	end := res.StructuredContent
	if end.Status != "returned" {
		t.Fatalf("run_js ended %s:\n%s\nstderr:\n%s", end.Status, indent(raw), stderr)
	}
	var v struct{ Graph, Note, Env, Slow string }
	if err := json.Unmarshal(end.Value, &v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Graph, `"gateway"`) || v.Note != "hello from run_js" || !strings.Contains(v.Slow, "entities") {
		t.Errorf("results: %+v", v)
	}
	// get-env: only what every server gets (and nothing of the gateway's).
	var env map[string]string
	if err := json.Unmarshal([]byte(v.Env), &env); err != nil {
		t.Fatalf("get-env: %v: %s", err, v.Env)
	}
	allowed := map[string]bool{"HOME": true, "LOGNAME": true, "PATH": true, "SHELL": true, "TERM": true, "USER": true}
	for k := range env {
		if !allowed[k] {
			t.Errorf("server-everything was given %s, which its entry does not give it", k)
		}
	}
	after := serverInfoLine(t, stderr, "after")
	if r, _ := after["locked"]["reason"].(string); after["locked"]["state"] == "ready" || !strings.Contains(r, "HTTP 401 Unauthorized") {
		t.Errorf("locked: %v, want unavailable with the HTTP status", after["locked"])
	}
	for _, secret := range []string{urlSecret, sentinel} {
		if strings.Contains(string(raw), secret) || strings.Contains(stderr, secret) {
			t.Errorf("%q shows in the client's output or the gateway's log:\n%s\n%s", secret, raw, stderr)
		}
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr)
	}
}
