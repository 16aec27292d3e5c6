package mcpgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/lanes"
	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// Names here start with config so they cannot clash with other tests of the
// package.

type configLane = struct{ MaxActive, MaxOutstanding int }

var configDefaultLane = configLane{lanes.DefaultMaxActive, lanes.DefaultMaxOutstanding}

// configEnv is a lookup over a fixed map: tests never read the real
// environment.
func configEnv(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// configMustFail parses src as "test.json" and returns the error text, after
// checking that it wraps ErrConfig, is a *ConfigError, and that every line
// starts with the file's name.
func configMustFail(t *testing.T, src string, env map[string]string) (string, *ConfigError) {
	t.Helper()
	cfg, err := ParseConfig("test.json", []byte(src), configEnv(env))
	if err == nil {
		t.Fatalf("ParseConfig succeeded, want an error; servers: %+v", cfg.Servers)
	}
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("error does not wrap ErrConfig: %v", err)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error is not a *ConfigError: %T %v", err, err)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, "test.json: ") {
			t.Errorf("line does not start with the file name: %q", line)
		}
	}
	return err.Error(), ce
}

func configMustParse(t *testing.T, src string, env map[string]string) *Config {
	t.Helper()
	cfg, err := ParseConfig("test.json", []byte(src), configEnv(env))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return cfg
}

// configServers wraps server entries into a file.
func configServers(servers string) string { return `{"mcpServers": {` + servers + `}}` }

func TestConfigFixtures(t *testing.T) {
	tests := []struct {
		name         string
		file         string
		env          map[string]string
		want         []ServerConfig
		wantWarnings []string
		limits       wire.Limits
		maxTimeout   time.Duration
		maxMemory    int64
	}{
		{
			name: "Claude Desktop",
			file: "claude_desktop_config.json",
			want: []ServerConfig{
				{Name: "brave-search", Transport: TransportStdio, Command: "npx",
					Args: []string{"-y", "@modelcontextprotocol/server-brave-search"},
					Env:  map[string]string{"BRAVE_API_KEY": "BSA-fixture-brave-key-0123456789"}, Lane: configDefaultLane},
				{Name: "fetch", Transport: TransportStdio, Command: "uvx", Args: []string{"mcp-server-fetch"}, Lane: configDefaultLane},
				{Name: "filesystem", Transport: TransportStdio, Command: "npx",
					Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/alice/Desktop", "/Users/alice/Downloads"}, Lane: configDefaultLane},
				{Name: "github", Transport: TransportStdio, Command: "npx",
					Args: []string{"-y", "@modelcontextprotocol/server-github"},
					Env:  map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_FIXTUREfixtureFIXTUREfixture0123"}, Lane: configDefaultLane},
				{Name: "postgres", Transport: TransportStdio, Command: "npx",
					Args: []string{"-y", "@modelcontextprotocol/server-postgres", "postgresql://app:pg-fixture-password@localhost:5432/app?sslmode=disable"}, Lane: configDefaultLane},
				{Name: "sqlite", Transport: TransportStdio, Command: "uvx",
					Args: []string{"mcp-server-sqlite", "--db-path", `C:\Users\alice\test.db`}, Lane: configDefaultLane},
			},
			wantWarnings: []string{
				"claude_desktop_config.json: globalShortcut: ignored; not a gateway setting",
				"claude_desktop_config.json: preferences: ignored; not a gateway setting",
			},
		},
		{
			name: "Claude Code .mcp.json",
			file: "claude_code.mcp.json",
			env:  map[string]string{"HOME": "/home/alice", "DB_DSN": "postgres://u:dsn-secret@db/x", "API_KEY": "sk-live-api-key"},
			want: []ServerConfig{
				{Name: "asana", Transport: TransportSSE, URL: "https://mcp.asana.com/sse", Lane: configDefaultLane},
				{Name: "db", Transport: TransportStdio, Command: "/home/alice/bin/db-mcp",
					Args: []string{"--dsn", "postgres://u:dsn-secret@db/x"}, Env: map[string]string{"LOG_LEVEL": "info"}, Lane: configDefaultLane},
				{Name: "internal-api", Transport: TransportHTTP, URL: "https://api.example.com/mcp",
					Headers: map[string]string{"Authorization": "Bearer sk-live-api-key", "X-Team": "platform"}, Lane: configDefaultLane},
				{Name: "playwright", Transport: TransportStdio, Command: "npx", Args: []string{"@playwright/mcp@latest"}, Lane: configDefaultLane},
				{Name: "sentry", Transport: TransportHTTP, URL: "https://mcp.sentry.dev/mcp", Lane: configDefaultLane},
			},
		},
		{
			name: "Cursor mcp.json",
			file: "cursor_mcp.json",
			env:  map[string]string{"CONTEXT7_API_KEY": "ctx7-key"},
			want: []ServerConfig{
				{Name: "context7", Transport: TransportAuto, URL: "https://mcp.context7.com/mcp",
					Headers: map[string]string{"CONTEXT7_API_KEY": "ctx7-key"}, Lane: configDefaultLane},
				{Name: "linear", Transport: TransportAuto, URL: "https://mcp.linear.app/sse", Lane: configDefaultLane},
				{Name: "memory", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}, Lane: configDefaultLane},
				{Name: "puppeteer", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-puppeteer"},
					Env: map[string]string{"PUPPETEER_LAUNCH_OPTIONS": `{"headless": true}`}, Lane: configDefaultLane},
			},
		},
		{
			name: "our additions",
			file: "gateway.json",
			env:  map[string]string{"GITHUB_TOKEN": "gh-token", "SEARCH_KEY": "search-key"},
			want: []ServerConfig{
				{Name: "github", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"},
					Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "gh-token"}, AllowTools: []string{"search_issues", "get_issue"},
					Lane: configLane{2, 16}, CallTimeout: 45 * time.Second},
				// Disabled: kept as written, ${VAR} not expanded (SCRATCH_BIN is unset and that is fine).
				{Name: "legacy", Transport: TransportSSE, URL: "https://legacy.example.com/sse", Lane: configDefaultLane, Disabled: true},
				{Name: "scratch", Transport: TransportStdio, Command: "${SCRATCH_BIN}", Lane: configDefaultLane, Disabled: true},
				{Name: "search", Transport: TransportHTTP, URL: "https://search.example.com/mcp?key=search-key", Lane: configLane{8, 64}},
			},
			wantWarnings: []string{
				`gateway.json: mcpServers.legacy: disabled ("disabled": true); skipped`,
				`gateway.json: mcpServers.scratch: disabled ("disabled": true); skipped`,
			},
			limits:     wire.Limits{TimeoutMs: 60_000, MemoryBytes: 128 << 20},
			maxTimeout: 5 * time.Minute,
			maxMemory:  512 << 20,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("testdata", "config", tt.file)
			cfg, err := LoadConfig(path, configEnv(tt.env))
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if cfg.Path != path {
				t.Errorf("Path = %q, want %q", cfg.Path, path)
			}
			for i := range tt.want {
				if tt.want[i].StartTimeout == 0 {
					tt.want[i].StartTimeout = DefaultStartTimeout
				}
			}
			for i := range cfg.Servers { // what the config keeps for itself is tested apart
				cfg.Servers[i].secrets, cfg.Servers[i].envFileVars, cfg.Servers[i].inherited = nil, nil, nil
			}
			if !reflect.DeepEqual(cfg.Servers, tt.want) {
				t.Errorf("servers differ")
				for i := range max(len(cfg.Servers), len(tt.want)) {
					var got, want ServerConfig
					if i < len(cfg.Servers) {
						got = cfg.Servers[i]
					}
					if i < len(tt.want) {
						want = tt.want[i]
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("server %d:\n got %#v\nwant %#v", i, got, want)
					}
				}
			}
			want := tt.wantWarnings
			for i := range want {
				want[i] = strings.Replace(want[i], tt.file, path, 1)
			}
			if !reflect.DeepEqual(cfg.Warnings, want) {
				t.Errorf("warnings:\n got %q\nwant %q", cfg.Warnings, want)
			}
			if tt.limits == (wire.Limits{}) {
				tt.limits = wire.Limits{TimeoutMs: wire.DefaultTimeout.Milliseconds(), MemoryBytes: wire.DefaultMemory}
				tt.maxTimeout, tt.maxMemory = wire.MaxTimeout, wire.MaxMemory
			}
			if cfg.Limits != tt.limits || cfg.MaxTimeout != tt.maxTimeout || cfg.MaxMemory != tt.maxMemory {
				t.Errorf("limits %+v, max %s %d; want %+v, max %s %d", cfg.Limits, cfg.MaxTimeout, cfg.MaxMemory, tt.limits, tt.maxTimeout, tt.maxMemory)
			}
			// No secret of the fixture, written or looked up, is in the view.
			view := configRedactedJSON(t, cfg)
			for _, secret := range []string{"ghp_FIXTURE", "BSA-fixture", "pg-fixture-password", "dsn-secret", "sk-live-api-key", "ctx7-key", "gh-token", "search-key"} {
				if strings.Contains(view, secret) {
					t.Errorf("Redacted shows %q:\n%s", secret, view)
				}
			}
		})
	}
}

// configRedactedJSON encodes the view as check-config prints it (without
// HTML escaping, so "<redacted>" reads as itself).
func configRedactedJSON(t *testing.T, cfg *Config) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg.Redacted()); err != nil {
		t.Fatalf("Redacted does not encode: %v", err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// TestConfigErrors: every rule, each with the exact pieces of its message:
// the file, the server, the field, what is wrong and the fix.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		env      map[string]string
		want     []string // each a substring of the error
		problems int      // if not 0, exactly this many
	}{
		// Misspelt fields: by edit distance, without case, and by hint.
		{"misspelt command", configServers(`"gh": {"comand": "npx"}`), nil, []string{
			`test.json: mcpServers.gh.comand: unknown field; did you mean "command"?`,
			`test.json: mcpServers.gh: has neither "command" nor "url"; add "command" for a local (stdio) server or "url" for a remote one`,
		}, 2},
		{"misspelt allowTools", configServers(`"gh": {"command": "npx", "alowTools": ["a"]}`), nil, []string{
			`test.json: mcpServers.gh.alowTools: unknown field; did you mean "allowTools"?`}, 1},
		{"arg for args", configServers(`"gh": {"command": "npx", "arg": ["-y"]}`), nil, []string{
			`test.json: mcpServers.gh.arg: unknown field; did you mean "args"?`}, 1},
		{"envs for env", configServers(`"gh": {"command": "npx", "envs": {"A": "b"}}`), nil, []string{
			`test.json: mcpServers.gh.envs: unknown field; did you mean "env"?`}, 1},
		{"header for headers", configServers(`"gh": {"url": "https://h/mcp", "header": {"A": "b"}}`), nil, []string{
			`test.json: mcpServers.gh.header: unknown field; did you mean "headers"?`}, 1},
		{"capitalised", configServers(`"gh": {"Command": "npx"}`), nil, []string{
			`test.json: mcpServers.gh.Command: unknown field; did you mean "command"?`}, 2},
		{"swapped letters", configServers(`"gh": {"command": "npx", "callTimoeut": "1s"}`), nil, []string{
			`test.json: mcpServers.gh.callTimoeut: unknown field; did you mean "callTimeout"?`}, 1},
		{"allowedTools", configServers(`"gh": {"command": "npx", "allowedTools": ["a"]}`), nil, []string{
			`test.json: mcpServers.gh.allowedTools: unknown field; did you mean "allowTools"?`}, 1},
		{"cmd by hint", configServers(`"gh": {"cmd": "npx"}`), nil, []string{
			`test.json: mcpServers.gh.cmd: unknown field; did you mean "command"?`}, 2},
		{"transport by hint", configServers(`"gh": {"command": "npx", "transport": "stdio"}`), nil, []string{
			`test.json: mcpServers.gh.transport: unknown field; did you mean "type"?`}, 1},
		{"unknown field far from any", configServers(`"gh": {"command": "npx", "colour": "red"}`), nil, []string{
			`test.json: mcpServers.gh.colour: unknown field; remove it (the fields are type, command, args, env, cwd, envFile, inheritEnv, startTimeout, url, headers, allowTools, lane, callTimeout, disabled)`}, 1},
		{"misspelt lane field", configServers(`"gh": {"command": "npx", "lane": {"maxActiv": 2}}`), nil, []string{
			`test.json: mcpServers.gh.lane.maxActiv: unknown field; did you mean "maxActive"?`}, 1},
		{"misspelt limits field", `{"mcpServers": {}, "limits": {"timout": "1s"}}`, nil, []string{
			`test.json: limits.timout: unknown field; did you mean "timeout"?`}, 1},
		{"odd field name quoted", configServers(`"gh": {"command": "npx", "a b\n": 1}`), nil, []string{
			`test.json: mcpServers.gh["a b\n"]: unknown field; remove it`}, 1},

		// Fields of the wrong transport.
		{"url and command", configServers(`"gh": {"command": "npx", "url": "https://h/mcp"}`), nil, []string{
			`test.json: mcpServers.gh: has both "command" (a stdio server) and "url" (a remote server); keep the one you mean`}, 1},
		{"headers on stdio", configServers(`"gh": {"command": "npx", "headers": {"A": "b"}}`), nil, []string{
			`test.json: mcpServers.gh.headers: "headers" does not belong on a stdio server (it has "command"); remove it: a stdio server takes "command", "args", "env" and "cwd"`}, 1},
		{"args on remote", configServers(`"gh": {"url": "https://h/mcp", "args": ["-y"]}`), nil, []string{
			`test.json: mcpServers.gh.args: "args" does not belong on a remote server (it has "url"); remove it: a remote server takes "url" and "headers"`}, 1},
		{"env on typed http", configServers(`"gh": {"type": "http", "url": "https://h/mcp", "env": {"A": "b"}}`), nil, []string{
			`test.json: mcpServers.gh.env: "env" does not belong on a remote server (its type is "http"); remove it`}, 1},
		{"cwd on sse", configServers(`"gh": {"type": "sse", "url": "https://h/sse", "cwd": "/tmp"}`), nil, []string{
			`test.json: mcpServers.gh.cwd: "cwd" does not belong on a remote server (its type is "sse")`}, 1},
		{"url on typed stdio", configServers(`"gh": {"type": "stdio", "url": "https://h/mcp"}`), nil, []string{
			`test.json: mcpServers.gh.command: missing; a stdio server (its type is "stdio") needs "command"`,
			`test.json: mcpServers.gh.url: "url" does not belong on a stdio server (its type is "stdio")`}, 2},
		{"typed http without url", configServers(`"gh": {"type": "http", "command": "npx"}`), nil, []string{
			`test.json: mcpServers.gh.url: missing; a remote server (its type is "http") needs "url"`,
			`test.json: mcpServers.gh.command: "command" does not belong on a remote server (its type is "http")`}, 2},
		{"neither command nor url", configServers(`"gh": {}`), nil, []string{
			`test.json: mcpServers.gh: has neither "command" nor "url"`}, 1},
		{"null command is absent", configServers(`"gh": {"command": null}`), nil, []string{
			`test.json: mcpServers.gh: has neither "command" nor "url"`}, 1},

		// Wrong JSON types.
		{"args a string", configServers(`"gh": {"command": "npx", "args": "-y pkg"}`), nil, []string{
			`test.json: mcpServers.gh.args: expected an array of strings, got a string; write it like ["a", "b"]`}, 1},
		{"args element a number", configServers(`"gh": {"command": "npx", "args": ["-p", 8080, true]}`), nil, []string{
			`test.json: mcpServers.gh.args[1]: expected a string, got a number; write it in double quotes`,
			`test.json: mcpServers.gh.args[2]: expected a string, got a boolean`}, 2},
		{"env value a number", configServers(`"gh": {"command": "npx", "env": {"PORT": 8080}}`), nil, []string{
			`test.json: mcpServers.gh.env.PORT: expected a string, got a number; write the value in double quotes`}, 1},
		{"env an array", configServers(`"gh": {"command": "npx", "env": ["A=b"]}`), nil, []string{
			`test.json: mcpServers.gh.env: expected an object of strings, got an array; write it like {"NAME": "value"}`}, 1},
		{"command a list", configServers(`"gh": {"command": ["npx", "-y"]}`), nil, []string{
			`test.json: mcpServers.gh.command: expected a string, got an array; write it in double quotes`}, 2},
		{"disabled a string", configServers(`"gh": {"command": "npx", "disabled": "true"}`), nil, []string{
			`test.json: mcpServers.gh.disabled: expected true or false, got a string; write true or false, without quotes`}, 1},
		{"allowTools element", configServers(`"gh": {"command": "npx", "allowTools": [{"name": "a"}]}`), nil, []string{
			`test.json: mcpServers.gh.allowTools[0]: expected a string, got an object`}, 1},
		{"lane a number", configServers(`"gh": {"command": "npx", "lane": 4}`), nil, []string{
			`test.json: mcpServers.gh.lane: expected an object, got a number; write it like {"maxActive": 4, "maxOutstanding": 64}`}, 1},
		{"lane field a string", configServers(`"gh": {"command": "npx", "lane": {"maxActive": "4"}}`), nil, []string{
			`test.json: mcpServers.gh.lane.maxActive: expected a whole number up to 100000, got a string; write it like 4, without quotes`}, 1},
		{"lane field a fraction", configServers(`"gh": {"command": "npx", "lane": {"maxActive": 1.5}}`), nil, []string{
			`test.json: mcpServers.gh.lane.maxActive: expected a whole number up to 100000, got 1.5`}, 1},
		{"callTimeout a number", configServers(`"gh": {"command": "npx", "callTimeout": 30}`), nil, []string{
			`test.json: mcpServers.gh.callTimeout: expected a string, got a number`}, 1},
		{"headers an array", configServers(`"gh": {"url": "https://h/mcp", "headers": ["A: b"]}`), nil, []string{
			`test.json: mcpServers.gh.headers: expected an object of strings, got an array`}, 1},
		{"server a string", configServers(`"gh": "npx -y pkg"`), nil, []string{
			`test.json: mcpServers.gh: expected an object with "command" or "url", got a string`}, 1},
		{"mcpServers an array", `{"mcpServers": [{"command": "npx"}]}`, nil, []string{
			`test.json: mcpServers: expected an object of servers by name, got an array`}, 1},
		{"mcpServers null", `{"mcpServers": null}`, nil, []string{
			`test.json: mcpServers: expected an object of servers by name, got null`}, 1},
		{"top level an array", `[{"mcpServers": {}}]`, nil, []string{
			`test.json: the top level is an array; it must be an object like {"mcpServers": {...}}`}, 1},
		{"top level a string", `"mcpServers"`, nil, []string{`test.json: the top level is a string`}, 1},

		// Types.
		{"unknown type", configServers(`"gh": {"type": "websocket", "url": "wss://h"}`), nil, []string{
			`test.json: mcpServers.gh.type: unknown type "websocket"; accepted: "stdio", "http", "streamable-http", "streamableHttp", "sse", or leave it out`,
			`test.json: mcpServers.gh.url: has scheme "wss"; the gateway speaks http:// and https:// only`}, 2},
		{"type near an accepted one", configServers(`"gh": {"type": "streamable_http", "url": "https://h/mcp"}`), nil, []string{
			`test.json: mcpServers.gh.type: unknown type "streamable_http"; did you mean "streamable-http"? accepted: "stdio"`}, 1},
		{"type in capitals", configServers(`"gh": {"type": "HTTP", "url": "https://h/mcp"}`), nil, []string{
			`unknown type "HTTP"; did you mean "http"?`}, 1},

		// Server names.
		{"empty name", configServers(`"": {"command": "npx"}`), nil, []string{
			`test.json: mcpServers[""]: server name is empty; give the server a name`}, 1},
		{"NUL in name", configServers(`"a\u0000b": {"command": "npx"}`), nil, []string{
			`test.json: mcpServers["a\x00b"]: server name holds a control character`}, 1},
		{"newline in name", configServers(`"a\nb": {"command": "npx"}`), nil, []string{
			`test.json: mcpServers["a\nb"]: server name holds a control character`}, 1},
		{"name too long", configServers(`"` + strings.Repeat("n", 65) + `": {"command": "npx"}`), nil, []string{
			`test.json: mcpServers["` + strings.Repeat("n", 61) + `…"]: server name is 65 bytes; at most 64`}, 1},
		{"duplicate server", configServers(`"a": {"command": "x"}, "a": {"command": "y"}`), nil, []string{
			`test.json: mcpServers.a: server name appears twice; JSON keeps only the last, so the first would be lost silently; rename one`}, 1},
		{"duplicate field", configServers(`"a": {"command": "x", "command": "y"}`), nil, []string{
			`test.json: mcpServers.a.command: appears twice`}, 1},
		{"duplicate env key", configServers(`"a": {"command": "x", "env": {"K": "1", "K": "2"}}`), nil, []string{
			`test.json: mcpServers.a.env.K: appears twice`}, 1},

		// The file's shape.
		{"no mcpServers", `{"globalShortcut": "Alt+Space"}`, nil, []string{
			`test.json: mcpServers: missing; add "mcpServers": {"name": {"command": ...}}`}, 1},
		{"VS Code's servers and mcpServers both", `{"servers": {"a": {"command": "x"}}, "mcpServers": {}}`, nil, []string{
			`test.json: mcpServers: the file has both "mcpServers" and "servers"; keep one`}, 1},
		{"VS Code's input variable", `{"servers": {"gh": {"type": "stdio", "command": "x", "env": {"T": "${input:gh_token}"}}}}`, nil, []string{
			`test.json: servers.gh.env.T: ${input:gh_token} is a VS Code input, which the editor prompts for; the gateway cannot prompt: write ${GH_TOKEN} and set GH_TOKEN in the gateway's environment, or put it in an envFile`}, 1},
		{"mcpServer", `{"mcpServer": {"a": {"command": "x"}}}`, nil, []string{
			`test.json: mcpServers: missing; the file has "mcpServer": rename it to "mcpServers"`}, 1},
		{"duplicate mcpServers", `{"mcpServers": {}, "mcpServers": {}}`, nil, []string{
			`test.json: mcpServers: appears twice`}, 1},
		{"too many servers", `{"mcpServers": {` + configManyServers(MaxConfigServers+1) + `}}`, nil, []string{
			`test.json: mcpServers: has 1001 servers; at most 1000`}, 1},

		// Other clients' fields.
		{"envFile missing", configServers(`"a": {"command": "x", "envFile": "no-such.env"}`), nil, []string{
			`test.json: mcpServers.a.envFile: cannot read "no-such.env": no such file or directory`}, 1},
		{"envFile on a remote server", configServers(`"a": {"url": "https://h/mcp", "envFile": ".env"}`), nil, []string{
			`test.json: mcpServers.a.envFile: "envFile" does not belong on a remote server`}, 1},
		{"startTimeout out of range", configServers(`"a": {"command": "x", "startTimeout": "500ms"}`), nil, []string{
			`test.json: mcpServers.a.startTimeout: 500ms is out of range; allowed 1s to 10m0s (the default is 1m0s)`}, 1},
		{"limits.startTimeout not a duration", `{"mcpServers": {}, "limits": {"startTimeout": "60"}}`, nil, []string{
			`test.json: limits.startTimeout: "60" has no unit; write it like "60s"`}, 1},
		{"inheritEnv name", configServers(`"a": {"command": "x", "inheritEnv": ["A=B"]}`), nil, []string{
			`test.json: mcpServers.a.inheritEnv[0]: is not a variable's name`}, 1},
		{"disabledTools", configServers(`"a": {"command": "x", "disabledTools": ["rm"]}`), nil, []string{
			`test.json: mcpServers.a.disabledTools: not supported: ignoring it would expose the tools it hides; list the tools to expose in "allowTools"`}, 1},
		{"serverUrl with url", configServers(`"a": {"url": "https://h/mcp", "serverUrl": "https://h/mcp"}`), nil, []string{
			`test.json: mcpServers.a.serverUrl: "serverUrl" is Windsurf's name for "url", and both are given; keep one`}, 1},

		// Our fields' values.
		{"callTimeout without unit", configServers(`"a": {"command": "x", "callTimeout": "30"}`), nil, []string{
			`test.json: mcpServers.a.callTimeout: "30" has no unit; write it like "30s"`}, 1},
		{"callTimeout not a duration", configServers(`"a": {"command": "x", "callTimeout": "soon"}`), nil, []string{
			`test.json: mcpServers.a.callTimeout: "soon" is not a duration; write it like "30s", "1m30s" or "500ms"`}, 1},
		{"callTimeout negative", configServers(`"a": {"command": "x", "callTimeout": "-1s"}`), nil, []string{
			`test.json: mcpServers.a.callTimeout: is negative`}, 1},
		{"callTimeout past any run", configServers(`"a": {"command": "x", "callTimeout": "11m"}`), nil, []string{
			`test.json: mcpServers.a.callTimeout: 11m0s is longer than the longest run (10m0s), so it could never fire; lower it`}, 1},
		{"lane negative", configServers(`"a": {"command": "x", "lane": {"maxActive": -1}}`), nil, []string{
			`test.json: mcpServers.a.lane.maxActive: is negative; write a number from 1, or 0 for the default`}, 1},
		{"lane too large", configServers(`"a": {"command": "x", "lane": {"maxOutstanding": 100001}}`), nil, []string{
			`test.json: mcpServers.a.lane.maxOutstanding: is 100001; at most 100000`}, 1},
		{"lane active above the default outstanding", configServers(`"a": {"command": "x", "lane": {"maxActive": 100}}`), nil, []string{
			`test.json: mcpServers.a.lane: maxActive 100 is above maxOutstanding 64 (the default); raise maxOutstanding or lower maxActive`}, 1},
		{"lane outstanding below the default active", configServers(`"a": {"command": "x", "lane": {"maxOutstanding": 2}}`), nil, []string{
			`test.json: mcpServers.a.lane: maxActive 4 (the default) is above maxOutstanding 2`}, 1},
		{"lane huge number", configServers(`"a": {"command": "x", "lane": {"maxActive": 1e400}}`), nil, []string{
			`test.json: mcpServers.a.lane.maxActive: expected a whole number up to 100000, got 1e400`}, 1},
		{"allowTools empty name", configServers(`"a": {"command": "x", "allowTools": ["ok", " "]}`), nil, []string{
			`test.json: mcpServers.a.allowTools[1]: is empty; write a tool's name, or leave allowTools out to allow every tool`}, 1},
		{"empty command", configServers(`"a": {"command": " "}`), nil, []string{
			`test.json: mcpServers.a.command: is empty; write the program to run, like "npx"`}, 1},
		{"command empty after expansion", configServers(`"a": {"command": "${BIN:-}"}`), nil, []string{
			`test.json: mcpServers.a.command: is empty`}, 1},
		{"NUL in an argument", configServers(`"a": {"command": "x", "args": ["a\u0000b"]}`), nil, []string{
			`test.json: mcpServers.a.args[0]: holds a NUL byte`}, 1},
		{"url scheme", configServers(`"a": {"url": "ftp://h/mcp"}`), nil, []string{
			`test.json: mcpServers.a.url: has scheme "ftp"; the gateway speaks http:// and https:// only`}, 1},
		{"url relative", configServers(`"a": {"url": "localhost:8080/mcp"}`), nil, []string{
			`test.json: mcpServers.a.url: has scheme "localhost"`}, 1},
		{"url no scheme", configServers(`"a": {"url": "/mcp"}`), nil, []string{
			`test.json: mcpServers.a.url: has no http:// or https:// scheme; write an absolute http:// or https:// URL`}, 1},
		{"url no host", configServers(`"a": {"url": "https:///mcp"}`), nil, []string{
			`test.json: mcpServers.a.url: has no host`}, 1},
		{"url does not parse", configServers(`"a": {"url": "http://[::1/mcp"}`), nil, []string{
			`test.json: mcpServers.a.url: is not a valid URL; write an absolute http:// or https:// URL`}, 1},
		{"header name", configServers(`"a": {"url": "https://h/mcp", "headers": {"Bad Header": "v"}}`), nil, []string{
			`test.json: mcpServers.a.headers["Bad Header"]: is not a valid header name; use letters, digits and '-', like "Authorization"`}, 1},
		{"header value with a line break", configServers(`"a": {"url": "https://h/mcp", "headers": {"X-Key": "v\r\nHost: evil"}}`), nil, []string{
			`test.json: mcpServers.a.headers.X-Key: the value holds a line break or NUL, which would split the request; remove it`}, 1},
		{"env name with =", configServers(`"a": {"command": "x", "env": {"A=B": "v"}}`), nil, []string{
			`test.json: mcpServers.a.env["A=B"]: a variable's name cannot hold '=' or NUL`}, 1},
		{"env name empty", configServers(`"a": {"command": "x", "env": {"": "v"}}`), nil, []string{
			`test.json: mcpServers.a.env[""]: a variable needs a name`}, 1},

		// Expansion, naming the variable, the server and the field.
		{"unset variable in env", configServers(`"gh": {"command": "npx", "env": {"TOKEN": "${GH_TOKEN}"}}`), nil, []string{
			`test.json: mcpServers.gh.env.TOKEN: ${GH_TOKEN} is not set; set GH_TOKEN in the gateway's environment, or give a default: ${GH_TOKEN:-value}`}, 1},
		{"unset variable in args", configServers(`"gh": {"command": "npx", "args": ["-y", "--root=${ROOT}"]}`), nil, []string{
			`test.json: mcpServers.gh.args[1]: ${ROOT} is not set`}, 1},
		{"unset variable in url", configServers(`"gh": {"url": "${BASE}/mcp"}`), nil, []string{
			`test.json: mcpServers.gh.url: ${BASE} is not set`}, 1},
		{"unset variable in a header", configServers(`"gh": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}`), nil, []string{
			`test.json: mcpServers.gh.headers.Authorization: ${TOKEN} is not set`}, 1},
		{"unset variable in command", configServers(`"gh": {"command": "${BIN}"}`), nil, []string{
			`test.json: mcpServers.gh.command: ${BIN} is not set`}, 1},
		{"unterminated", configServers(`"gh": {"command": "npx", "env": {"A": "x${A"}}`), nil, []string{
			`test.json: mcpServers.gh.env.A: unterminated "${" at byte 1; close it with "}"`}, 1},

		// Invalid JSON: line and column, and a hint.
		{"trailing comma", "{\n  \"mcpServers\": {},\n}", nil, []string{
			`test.json: line 3, column 1: invalid JSON: invalid character '}' looking for beginning of object key string; remove the trailing comma before it`}, 1},
		{"comment", "{\n  // my servers\n  \"mcpServers\": {}\n}", nil, []string{
			`test.json: line 2, column 3: invalid JSON: invalid character '/' looking for beginning of object key string; JSON has no comments; remove them`}, 1},
		{"single quotes", `{'mcpServers': {}}`, nil, []string{
			`test.json: line 1, column 2: invalid JSON: invalid character '\'' looking for beginning of object key string; JSON strings take double quotes`}, 1},
		{"cut short", `{"mcpServers": {`, nil, []string{
			`test.json: line 1, column 17: invalid JSON: unexpected end of JSON input; the file ends too early; close every { and [`}, 1},
		{"trailing data", `{"mcpServers": {}} {}`, nil, []string{
			`test.json: line 1, column 20: invalid JSON: invalid character '{' after top-level value`}, 1},
		{"empty file", " \n\t", nil, []string{`test.json: the file is empty; write {"mcpServers": {}} at least`}, 1},
		{"raw control character in a string", "{\"mcpServers\": {\"a\": {\"command\": \"x\ty\"}}}", nil, []string{
			`test.json: line 1, column 36: invalid JSON: invalid character '\t' in string literal; a string cannot hold a raw tab or line break; write \t or \n`}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, ce := configMustFail(t, tt.src, tt.env)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("error lacks\n  %s\ngot\n  %s", w, strings.ReplaceAll(text, "\n", "\n  "))
				}
			}
			if tt.problems != 0 && len(ce.Problems) != tt.problems {
				t.Errorf("%d problems, want %d:\n%s", len(ce.Problems), tt.problems, text)
			}
		})
	}
}

func configManyServers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"s%d": {"command": "x"}`, i)
	}
	return b.String()
}

// TestConfigAllProblems: one error lists every problem, across servers and
// limits, in file order.
func TestConfigAllProblems(t *testing.T) {
	src := `{
  "mcpServers": {
    "a": {"comand": "npx", "url": "https://h/mcp"},
    "b": {"command": "uvx", "args": "mcp-server-fetch"}
  },
  "limits": {"memory": "64MB"}
}`
	text, ce := configMustFail(t, src, nil)
	want := []string{
		`test.json: mcpServers.a.comand: unknown field; did you mean "command"?`,
		`test.json: mcpServers.b.args: expected an array of strings, got a string; write it like ["a", "b"]`,
		`test.json: limits.memory: "64MB" is ambiguous; did you mean "64MiB"? sizes use binary units B, KiB, MiB, GiB`,
	}
	if got := strings.Split(text, "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if len(ce.Problems) != 3 || ce.Problems[0].Where != "mcpServers.a.comand" {
		t.Errorf("problems: %+v", ce.Problems)
	}

	// Past MaxConfigProblems, the rest are counted.
	text, ce = configMustFail(t, `{"mcpServers": {`+strings.ReplaceAll(configManyServers(70), "command", "comand")+`}}`, nil)
	if len(ce.Problems) != MaxConfigProblems || ce.Omitted != 140-MaxConfigProblems {
		t.Errorf("%d problems listed and %d omitted, want %d and %d", len(ce.Problems), ce.Omitted, MaxConfigProblems, 140-MaxConfigProblems)
	}
	if !strings.HasSuffix(text, "\ntest.json: and 90 more problems") {
		t.Errorf("error does not end with the count of the rest: ...%s", text[max(0, len(text)-80):])
	}
}

// TestConfigAccepts: what real files and our rules allow.
func TestConfigAccepts(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		env   map[string]string
		check func(t *testing.T, c *Config)
	}{
		{"no servers", `{"mcpServers": {}}`, nil, func(t *testing.T, c *Config) {
			if len(c.Servers) != 0 || !reflect.DeepEqual(c.Warnings, []string{"test.json: mcpServers: no servers; programs will have no tools to call"}) {
				t.Errorf("servers %v, warnings %q", c.Servers, c.Warnings)
			}
		}},
		{"names differing in case", configServers(`"github": {"command": "a"}, "GitHub": {"command": "b"}`), nil, func(t *testing.T, c *Config) {
			if len(c.Servers) != 2 || c.Servers[0].Name != "GitHub" || c.Servers[1].Name != "github" || c.Servers[1].Command != "a" {
				t.Errorf("servers %+v", c.Servers)
			}
		}},
		{"name of 64 bytes and names with spaces and accents", configServers(`"` + strings.Repeat("n", 64) + `": {"command": "a"}, "my server": {"command": "b"}, "café": {"command": "c"}`), nil, func(t *testing.T, c *Config) {
			if len(c.Servers) != 3 {
				t.Errorf("servers %+v", c.Servers)
			}
		}},
		{"nulls are absent", configServers(`"a": {"command": "x", "args": null, "env": null, "cwd": null, "type": null, "allowTools": null, "lane": null, "callTimeout": null, "disabled": null}`), nil, func(t *testing.T, c *Config) {
			want := ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Lane: configDefaultLane, StartTimeout: DefaultStartTimeout}
			if !reflect.DeepEqual(c.Servers[0], want) {
				t.Errorf("got %#v", c.Servers[0])
			}
		}},
		{"empty lists and maps are nil", configServers(`"a": {"command": "x", "args": [], "env": {}, "allowTools": []}, "b": {"url": "https://h/mcp", "headers": {}}`), nil, func(t *testing.T, c *Config) {
			if a, b := c.Servers[0], c.Servers[1]; a.Args != nil || a.Env != nil || a.AllowTools != nil || b.Headers != nil {
				t.Errorf("got %#v and %#v", a, b)
			}
		}},
		{"lone dollars are literal", configServers(`"a": {"command": "$SHELL", "args": ["$HOME", "a$b", "$", "$$", "cost: $5", "{x}", "$${A}"]}`), map[string]string{"A": "v"}, func(t *testing.T, c *Config) {
			want := []string{"$HOME", "a$b", "$", "$$", "cost: $5", "{x}", "$v"}
			if c.Servers[0].Command != "$SHELL" || !reflect.DeepEqual(c.Servers[0].Args, want) {
				t.Errorf("command %q args %q", c.Servers[0].Command, c.Servers[0].Args)
			}
		}},
		{"serverUrl is Windsurf's url", configServers(`"a": {"serverUrl": "https://h/mcp"}`), nil, func(t *testing.T, c *Config) {
			if s := c.Servers[0]; s.URL != "https://h/mcp" || s.Transport != TransportAuto {
				t.Errorf("got %#v", s)
			}
		}},
		{"lane zero means default", configServers(`"a": {"command": "x", "lane": {"maxActive": 0, "maxOutstanding": 0}}, "b": {"command": "x", "lane": {"maxActive": 64}}`), nil, func(t *testing.T, c *Config) {
			if c.Servers[0].Lane != configDefaultLane || c.Servers[1].Lane != (configLane{64, 64}) {
				t.Errorf("lanes %+v %+v", c.Servers[0].Lane, c.Servers[1].Lane)
			}
		}},
		{"callTimeout", configServers(`"a": {"command": "x", "callTimeout": "1m30s"}, "b": {"command": "x", "callTimeout": "10m"}`), nil, func(t *testing.T, c *Config) {
			if c.Servers[0].CallTimeout != 90*time.Second || c.Servers[1].CallTimeout != 10*time.Minute {
				t.Errorf("timeouts %s %s", c.Servers[0].CallTimeout, c.Servers[1].CallTimeout)
			}
		}},
		{"disabled false is enabled", configServers(`"a": {"command": "x", "disabled": false}`), nil, func(t *testing.T, c *Config) {
			if c.Servers[0].Disabled || len(c.Warnings) != 0 {
				t.Errorf("got %#v, warnings %q", c.Servers[0], c.Warnings)
			}
		}},
		{"every server disabled", configServers(`"a": {"command": "x", "disabled": true}`), nil, func(t *testing.T, c *Config) {
			want := []string{`test.json: mcpServers.a: disabled ("disabled": true); skipped`, "test.json: mcpServers: every server is disabled; programs will have no tools to call"}
			if !reflect.DeepEqual(c.Warnings, want) {
				t.Errorf("warnings %q", c.Warnings)
			}
		}},
		{"disabled server still has its shape checked", configServers(`"a": {"command": "${UNSET}", "disabled": true}, "b": {"url": "not a url", "disabled": true}`), nil, func(t *testing.T, c *Config) {
			if c.Servers[0].Command != "${UNSET}" || c.Servers[1].URL != "not a url" {
				t.Errorf("got %#v", c.Servers)
			}
		}},
		{"byte order mark", "\uFEFF" + configServers(`"a": {"command": "x"}`), nil, func(t *testing.T, c *Config) {
			if len(c.Servers) != 1 {
				t.Errorf("servers %+v", c.Servers)
			}
		}},
		{"unknown top-level keys", `{"mcpServers": {}, "limit": {}, "$schema": "x", "projects": {"/a": {"mcpServers": {}}}}`, nil, func(t *testing.T, c *Config) {
			want := []string{
				"test.json: mcpServers: no servers; programs will have no tools to call",
			}
			for _, w := range []string{`test.json: limit: ignored; did you mean "limits"?`, `test.json: ["$schema"]: ignored; not a gateway setting`, "test.json: projects: ignored; not a gateway setting"} {
				want = append([]string{w}, want...)
			}
			got := append([]string(nil), c.Warnings...)
			if len(got) != 4 {
				t.Fatalf("warnings %q", got)
			}
			for _, w := range want {
				found := false
				for _, g := range got {
					found = found || g == w
				}
				if !found {
					t.Errorf("warnings %q lack %q", got, w)
				}
			}
		}},
		{"header names keep their case", configServers(`"a": {"url": "https://h/mcp", "headers": {"x-api-key": "k", "Authorization": "Bearer t"}}`), nil, func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c.Servers[0].Headers, map[string]string{"x-api-key": "k", "Authorization": "Bearer t"}) {
				t.Errorf("headers %v", c.Servers[0].Headers)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, configMustParse(t, tt.src, tt.env))
		})
	}
}

// TestConfigTransportTypes: one row per entry of the table of accepted types.
func TestConfigTransportTypes(t *testing.T) {
	for _, tt := range transportTypes {
		t.Run(tt.value, func(t *testing.T) {
			src := configServers(`"a": {"type": "` + tt.value + `", "url": "https://h/mcp"}`)
			if tt.transport == TransportStdio {
				src = configServers(`"a": {"type": "` + tt.value + `", "command": "x"}`)
			}
			c := configMustParse(t, src, nil)
			if c.Servers[0].Transport != tt.transport {
				t.Errorf("type %q gave %q, want %q", tt.value, c.Servers[0].Transport, tt.transport)
			}
		})
	}
	c := configMustParse(t, configServers(`"a": {"url": "https://h/mcp"}, "b": {"command": "x"}`), nil)
	if c.Servers[0].Transport != TransportAuto || c.Servers[1].Transport != TransportStdio {
		t.Errorf("without type: %q and %q", c.Servers[0].Transport, c.Servers[1].Transport)
	}
}

// TestConfigForeignFields: one row per other client's field: ignored with a
// warning, or an error that says what to write instead.
func TestConfigForeignFields(t *testing.T) {
	for field, f := range foreignFields {
		t.Run(field, func(t *testing.T) {
			src := configServers(`"a": {"command": "x", "` + field + `": {"SECRET": "foreign-SECRETVALUE"}}`)
			line := "test.json: mcpServers.a." + field + ": " + f.what
			if f.reject {
				text, _ := configMustFail(t, src, nil)
				if text != line {
					t.Errorf("got %q, want %q", text, line)
				}
				return
			}
			c := configMustParse(t, src, nil)
			if !reflect.DeepEqual(c.Warnings, []string{line}) {
				t.Errorf("warnings %q, want %q", c.Warnings, line)
			}
			if v := configRedactedJSON(t, c); strings.Contains(v, "SECRETVALUE") {
				t.Errorf("the view shows the ignored field: %s", v)
			}
		})
	}
}

// TestConfigFieldHints: one row per name people write for one of our fields.
func TestConfigFieldHints(t *testing.T) {
	for wrong, right := range fieldHints {
		t.Run(wrong, func(t *testing.T) {
			text, _ := configMustFail(t, configServers(`"a": {"url": "https://h/mcp", "`+wrong+`": 1}`), nil)
			if want := fmt.Sprintf("test.json: mcpServers.a.%s: unknown field; did you mean %q?", wrong, right); !strings.Contains(text, want) {
				t.Errorf("got\n%s\nwant a line\n%s", text, want)
			}
		})
	}
	for alias, a := range fieldAliases {
		t.Run(alias, func(t *testing.T) {
			c := configMustParse(t, configServers(`"a": {"`+alias+`": "https://h/mcp"}`), nil)
			if a.to != "url" || c.Servers[0].URL != "https://h/mcp" {
				t.Errorf("alias %q for %q gave %#v", alias, a.to, c.Servers[0])
			}
		})
	}
}

func TestConfigExpand(t *testing.T) {
	env := configEnv(map[string]string{"A": "alpha", "B": "beta", "EMPTY": "", "DOLLAR": "${A}", "HOME": "/home/u"})
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{"plain", "npx -y", "npx -y", ""},
		{"set", "${A}", "alpha", ""},
		{"inside text", "x-${A}-y", "x-alpha-y", ""},
		{"unset", "${NOPE}", "", "${NOPE} is not set; set NOPE in the gateway's environment, or give a default: ${NOPE:-value}"},
		{"default when unset", "${NOPE:-dflt}", "dflt", ""},
		{"set wins over default", "${A:-dflt}", "alpha", ""},
		{"empty default", "${NOPE:-}", "", ""},
		{"set but empty", "${EMPTY}", "", ""},
		{"default when empty, as in the shell", "${EMPTY:-dflt}", "dflt", ""},
		{"default holding colons and spaces", "${NOPE:-http://h:8080/a b}", "http://h:8080/a b", ""},
		{"two in a row", "${A}${B}", "alphabeta", ""},
		{"nested-looking", "${A}${B}${A}", "alphabetaalpha", ""},
		{"value is not expanded again", "${DOLLAR}", "${A}", ""},
		{"Cursor's env: prefix", "${env:A}", "alpha", ""},
		{"Cursor's env: prefix with default", "${env:NOPE:-d}", "d", ""},
		{"unterminated", "${A", "", `unterminated "${" at byte 0; close it with "}"`},
		{"unterminated after one", "${A}-${B", "", `unterminated "${" at byte 5`},
		{"lone dollar", "$", "$", ""},
		{"dollar then name", "$A", "$A", ""},
		{"double dollar", "$$", "$$", ""},
		{"dollar before expansion", "$${A}", "$alpha", ""},
		{"closing brace alone", "a}b", "a}b", ""},
		{"extra closing brace", "${A}}", "alpha}", ""},
		{"empty name", "${}", "", `bad variable name in "${...}" at byte 0`},
		{"name with a digit first", "${1A}", "", "bad variable name"},
		{"shell's dash without colon", "${A-x}", "", "bad variable name"},
		{"nested default", "${NOPE:-${A}}", "", `"${" inside "${...}" at byte 0; a default is plain text`},
		{"userHome is HOME", "${userHome}/x", "/home/u/x", ""},
		{"workspaceFolder", "${workspaceFolder}/data", "/proj/data", ""},
		{"workspaceFolderBasename", "${workspaceFolderBasename}", "proj", ""},
		{"pathSeparator", "a${pathSeparator}b${/}c", "a/b/c", ""},
		{"VS Code input", "${input:github-token}", "", "${input:github-token} is a VS Code input, which the editor prompts for; the gateway cannot prompt: write ${GITHUB_TOKEN} and set GITHUB_TOKEN in the gateway's environment, or put it in an envFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var secrets []string
			got, bad := expandVars(tt.in, varSource{lookup: env, workspace: "/proj", secrets: &secrets})
			if tt.wantErr != "" {
				if !strings.Contains(bad, tt.wantErr) {
					t.Errorf("expandVars(%q) problem %q, want it to hold %q", tt.in, bad, tt.wantErr)
				}
				return
			}
			if bad != "" || got != tt.want {
				t.Errorf("expandVars(%q) = %q, %q; want %q", tt.in, got, bad, tt.want)
			}
		})
	}
}

// TestConfigSecretsNeverLeak: secrets written in the file or looked up never
// appear in an error, a warning or the redacted view. Every secret here holds
// "SECRETVALUE"; no variable name does.
func TestConfigSecretsNeverLeak(t *testing.T) {
	env := map[string]string{"TOKEN": "tok-SECRETVALUE-1", "PASS": "pw-SECRETVALUE-2", "EMPTY_OK": ""}
	good := `{
  "mcpServers": {
    "stdio": {
      "command": "npx",
      "args": ["-y", "pkg", "--token=lit-SECRETVALUE-3", "--api-key", "lit-SECRETVALUE-4",
               "--header", "Authorization: Bearer lit-SECRETVALUE-5", "-H", "X-Key:lit-SECRETVALUE-6",
               "postgres://u:lit-SECRETVALUE-7@db/x?password=lit-SECRETVALUE-8", "${TOKEN}", "--pw=${PASS}"],
      "env": {"API_KEY": "lit-SECRETVALUE-9", "FROM_VAR": "${TOKEN}"},
      "cwd": "/srv/${TOKEN}",
      "auth": {"CLIENT_SECRET": "lit-SECRETVALUE-10"}
    },
    "remote": {
      "url": "https://user:lit-SECRETVALUE-11@mcp.example.com/${TOKEN}/mcp?key=lit-SECRETVALUE-12#lit-SECRETVALUE-13",
      "headers": {"Authorization": "Bearer ${TOKEN}", "X-Api-Key": "lit-SECRETVALUE-14"},
      "timeout": 30000
    }
  }
}`
	c := configMustParse(t, good, env)
	view := configRedactedJSON(t, c)
	for _, text := range append([]string{view}, c.Warnings...) {
		if strings.Contains(text, "SECRETVALUE") {
			t.Errorf("a secret shows in:\n%s", text)
		}
	}
	// The view still says what is configured.
	for _, want := range []string{
		`"API_KEY": "<redacted>"`, `"X-Api-Key": "<redacted>"`, `"--token=<redacted>"`, `"--api-key",`,
		`"Authorization:<redacted>"`, `"X-Key:<redacted>"`, `"postgres://<redacted>@db/x?<redacted>"`, `"${TOKEN}"`,
		`"url": "https://<redacted>@mcp.example.com/${TOKEN}/mcp?<redacted>"`, `"cwd": "/srv/${TOKEN}"`,
	} {
		if !strings.Contains(view, want) {
			t.Errorf("view lacks %s:\n%s", want, view)
		}
	}
	if c.Servers[1].Args[10] != "tok-SECRETVALUE-1" || c.Servers[0].URL != "https://user:lit-SECRETVALUE-11@mcp.example.com/tok-SECRETVALUE-1/mcp?key=lit-SECRETVALUE-12#lit-SECRETVALUE-13" {
		t.Errorf("the loaded config must hold the real values: %q %q", c.Servers[1].Args, c.Servers[0].URL)
	}

	bad := `{
  "mcpServers": {
    "a": {
      "command": "npx",
      "args": ["--token=lit-SECRETVALUE-20${MISSING}", "x${TOKEN"],
      "env": {"K1": "lit-SECRETVALUE-21${MISSING}", "K2": 12345, "K3": "lit-SECRETVALUE-22\u0000", "K=": "lit-SECRETVALUE-23",
              "K4": "${TOKEN}${MISSING}", "K5": "${PASS:-${TOKEN}}"}
    },
    "b": {
      "url": "ht!tp://u:lit-SECRETVALUE-24@h/mcp",
      "headers": {"Authorization": "Bearer lit-SECRETVALUE-25\r\nX: y", "Bad Name": "lit-SECRETVALUE-26", "X": "${TOKEN}\n"}
    },
    "c": {"url": "ftp://u:lit-SECRETVALUE-27@h/?k=lit-SECRETVALUE-28", "envFile": "lit-SECRETVALUE-29"},
    "d": {"url": "https://lit-SECRETVALUE-30@/x"},
    "e": {"url": "https://h/${TOKEN}${MISSING}", "headers": {"X": "lit-SECRETVALUE-31${"}}
  }
}`
	text, ce := configMustFail(t, bad, env)
	if strings.Contains(text, "SECRETVALUE") {
		t.Errorf("a secret shows in the error:\n%s", text)
	}
	if len(ce.Problems) < 12 {
		t.Errorf("only %d problems:\n%s", len(ce.Problems), text)
	}
}

func TestConfigRedacted(t *testing.T) {
	c, err := LoadConfig(filepath.Join("testdata", "config", "claude_code.mcp.json"),
		configEnv(map[string]string{"HOME": "/home/alice", "DB_DSN": "postgres://u:pw@db/x", "API_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	got := configRedactedJSON(t, c)
	want := `{
  "path": "testdata/config/claude_code.mcp.json",
  "limits": {
    "timeout": "30s",
    "memory": 67108864,
    "maxTimeout": "10m0s",
    "maxMemory": 2147483648,
    "startTimeout": "1m0s",
    "confinement": "best-effort"
  },
  "servers": [
    {
      "name": "asana",
      "transport": "sse",
      "url": "https://mcp.asana.com/sse",
      "lane": {
        "maxActive": 4,
        "maxOutstanding": 64
      }
    },
    {
      "name": "db",
      "transport": "stdio",
      "command": "${HOME}/bin/db-mcp",
      "args": [
        "--dsn",
        "${DB_DSN}"
      ],
      "env": {
        "LOG_LEVEL": "<redacted>"
      },
      "lane": {
        "maxActive": 4,
        "maxOutstanding": 64
      }
    },
    {
      "name": "internal-api",
      "transport": "http",
      "url": "${API_BASE_URL:-https://api.example.com}/mcp",
      "headers": {
        "Authorization": "<redacted>",
        "X-Team": "<redacted>"
      },
      "lane": {
        "maxActive": 4,
        "maxOutstanding": 64
      }
    },
    {
      "name": "playwright",
      "transport": "stdio",
      "command": "npx",
      "args": [
        "@playwright/mcp@latest"
      ],
      "lane": {
        "maxActive": 4,
        "maxOutstanding": 64
      }
    },
    {
      "name": "sentry",
      "transport": "http",
      "url": "https://mcp.sentry.dev/mcp",
      "lane": {
        "maxActive": 4,
        "maxOutstanding": 64
      }
    }
  ]
}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	// A Config built by hand has no as-written text: the values are redacted.
	hand := &Config{Servers: []ServerConfig{{Name: "h", Transport: TransportHTTP, URL: "https://u:pw-SECRETVALUE@h/p?q=SECRETVALUE",
		Headers: map[string]string{"A": "SECRETVALUE"}}}}
	if v := configRedactedJSON(t, hand); strings.Contains(v, "SECRETVALUE") || !strings.Contains(v, `"https://<redacted>@h/p?<redacted>"`) {
		t.Errorf("hand-built view:\n%s", v)
	}
}

func TestConfigRedactURL(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "https://h/mcp", "https://h/mcp"},
		{"userinfo", "https://u:p@h/mcp", "https://<redacted>@h/mcp"},
		{"query", "https://h/mcp?key=k&x=1", "https://h/mcp?<redacted>"},
		{"fragment", "https://h/mcp#t", "https://h/mcp#<redacted>"},
		{"all", "https://u:p@h:8443/a/b?k=v#f", "https://<redacted>@h:8443/a/b?<redacted>"},
		{"@ in the query", "https://h/mcp?email=a@b", "https://h/mcp?<redacted>"},
		{"@ in the password", "https://u:p@ss@h/", "https://<redacted>@h/"},
		{"host only", "https://u@h", "https://<redacted>@h"},
		{"template without a scheme", "${BASE}/mcp?k=${K}", redactedText},
		{"no scheme, no secret", "h/mcp", "h/mcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redactURL(tt.in); got != tt.want {
				t.Errorf("redactURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestConfigLimits(t *testing.T) {
	def := wire.Limits{TimeoutMs: wire.DefaultTimeout.Milliseconds(), MemoryBytes: wire.DefaultMemory}
	tests := []struct {
		name       string
		limits     string
		want       wire.Limits
		maxTimeout time.Duration
		maxMemory  int64
		// confinement is the setting read; the zero value is best-effort.
		confinement worker.Confinement
		wantWarning string
		wantErr     []string
	}{
		{name: "absent", limits: ``, want: def, maxTimeout: wire.MaxTimeout, maxMemory: wire.MaxMemory},
		{name: "null", limits: `, "limits": null`, want: def, maxTimeout: wire.MaxTimeout, maxMemory: wire.MaxMemory},
		{name: "empty", limits: `, "limits": {}`, want: def, maxTimeout: wire.MaxTimeout, maxMemory: wire.MaxMemory},
		{name: "all set", limits: `, "limits": {"timeout": "45s", "memory": "128MiB", "maxTimeout": "2m", "maxMemory": "1GiB"}`,
			want: wire.Limits{TimeoutMs: 45_000, MemoryBytes: 128 << 20}, maxTimeout: 2 * time.Minute, maxMemory: 1 << 30},
		{name: "memory in bytes", limits: `, "limits": {"memory": 8388608, "maxMemory": 16777216}`,
			want: wire.Limits{TimeoutMs: 30_000, MemoryBytes: 8 << 20}, maxTimeout: wire.MaxTimeout, maxMemory: 16 << 20},
		{name: "sizes with a space and in KiB", limits: `, "limits": {"memory": "8192 KiB", "maxMemory": "4194304B"}`,
			wantErr: []string{`test.json: limits.maxMemory: 4MiB is below limits.memory 8MiB; raise maxMemory or lower memory`}},
		{name: "bounds exactly", limits: `, "limits": {"timeout": "100ms", "memory": "4MiB", "maxTimeout": "10m", "maxMemory": "2GiB"}`,
			want: wire.Limits{TimeoutMs: 100, MemoryBytes: 4 << 20}, maxTimeout: 10 * time.Minute, maxMemory: 2 << 30},
		{name: "fractional seconds", limits: `, "limits": {"timeout": "1.5s"}`,
			want: wire.Limits{TimeoutMs: 1500, MemoryBytes: wire.DefaultMemory}, maxTimeout: wire.MaxTimeout, maxMemory: wire.MaxMemory},
		{name: "timeout below the minimum", limits: `, "limits": {"timeout": "50ms"}`,
			wantErr: []string{`test.json: limits.timeout: 50ms is out of range; allowed 100ms to 10m0s`}},
		{name: "timeout in microseconds", limits: `, "limits": {"timeout": "10us"}`,
			wantErr: []string{`test.json: limits.timeout: 10µs is out of range; allowed 100ms to 10m0s`}},
		{name: "timeout above the maximum", limits: `, "limits": {"timeout": "11m"}`,
			wantErr: []string{`test.json: limits.timeout: 11m0s is out of range; allowed 100ms to 10m0s`}},
		{name: "maxTimeout above the maximum", limits: `, "limits": {"maxTimeout": "1h"}`,
			wantErr: []string{`test.json: limits.maxTimeout: 1h0m0s is out of range; allowed 100ms to 10m0s`}},
		{name: "timeout zero", limits: `, "limits": {"timeout": "0s"}`,
			wantErr: []string{`test.json: limits.timeout: must be more than 0; leave it out for the default 30s`}},
		{name: "timeout a number", limits: `, "limits": {"timeout": 30}`,
			wantErr: []string{`test.json: limits.timeout: expected a string, got a number; write it in double quotes`}},
		{name: "timeout without unit", limits: `, "limits": {"timeout": "30"}`,
			wantErr: []string{`test.json: limits.timeout: "30" has no unit; write it like "30s"`}},
		{name: "memory in MB", limits: `, "limits": {"memory": "64MB"}`,
			wantErr: []string{`test.json: limits.memory: "64MB" is ambiguous; did you mean "64MiB"?`}},
		{name: "memory in lower case", limits: `, "limits": {"memory": "64mib"}`,
			wantErr: []string{`test.json: limits.memory: "64mib" is ambiguous; did you mean "64MiB"?`}},
		{name: "memory in G", limits: `, "limits": {"memory": "1G"}`,
			wantErr: []string{`did you mean "1GiB"?`}},
		{name: "memory not a size", limits: `, "limits": {"memory": "lots"}`,
			wantErr: []string{`test.json: limits.memory: "lots" is not a size; write a whole number with one of B, KiB, MiB, GiB, like "64MiB"`}},
		{name: "memory a fraction", limits: `, "limits": {"memory": "1.5GiB"}`,
			wantErr: []string{`"1.5GiB" is not a size`}},
		{name: "memory too small", limits: `, "limits": {"memory": "1MiB"}`,
			wantErr: []string{`test.json: limits.memory: 1MiB is out of range; allowed 4MiB to 2GiB`}},
		{name: "memory too large", limits: `, "limits": {"memory": "3GiB"}`,
			wantErr: []string{`test.json: limits.memory: 3GiB is out of range; allowed 4MiB to 2GiB`}},
		{name: "memory overflowing", limits: `, "limits": {"memory": "99999999999999999999GiB"}`,
			wantErr: []string{`test.json: limits.memory: "99999999999999999999GiB" is too large; at most 2GiB`}},
		{name: "memory float number", limits: `, "limits": {"memory": 6.4e7}`,
			wantErr: []string{`test.json: limits.memory: 6.4e7 is not a whole number of bytes`}},
		{name: "memory negative", limits: `, "limits": {"memory": -1}`,
			wantErr: []string{`test.json: limits.memory: must be more than 0; leave it out for the default 64MiB`}},
		{name: "memory a boolean", limits: `, "limits": {"memory": true}`,
			wantErr: []string{`test.json: limits.memory: expected a size like "64MiB" or a number of bytes, got a boolean`}},
		{name: "maxTimeout below the default timeout", limits: `, "limits": {"maxTimeout": "20s"}`,
			wantErr: []string{`test.json: limits.maxTimeout: 20s is below limits.timeout 30s; raise maxTimeout or lower timeout`}},
		{name: "maxMemory below the default memory", limits: `, "limits": {"maxMemory": "32MiB"}`,
			wantErr: []string{`test.json: limits.maxMemory: 32MiB is below limits.memory 64MiB; raise maxMemory or lower memory`}},
		{name: "limits an array", limits: `, "limits": []`,
			wantErr: []string{`test.json: limits: expected an object, got an array; write it like {"timeout": "30s", "memory": "64MiB"}`}},
		{name: "every field wrong", limits: `, "limits": {"timeout": "x", "memory": "y", "maxTimeout": 1, "maxMemory": "2TiB", "confinement": 1}`,
			wantErr: []string{"limits.timeout:", "limits.memory:", "limits.maxTimeout:", "limits.maxMemory:", "limits.confinement: expected a string"}},
		{name: "confinement strict", limits: `, "limits": {"confinement": "strict"}`,
			want: def, maxTimeout: wire.MaxTimeout, maxMemory: wire.MaxMemory, confinement: worker.ConfineStrict},
		{name: "confinement off", limits: `, "limits": {"confinement": "off"}`,
			want: def, maxTimeout: wire.MaxTimeout, maxMemory: wire.MaxMemory, confinement: worker.ConfineOff,
			wantWarning: `test.json: limits.confinement: "off": workers run unconfined`},
		{name: "confinement misspelt", limits: `, "limits": {"confinement": "strikt"}`,
			wantErr: []string{`test.json: limits.confinement: "strikt" is not a confinement setting; use "strict"`}},
		{name: "confinement empty", limits: `, "limits": {"confinement": ""}`,
			wantErr: []string{`test.json: limits.confinement: "" is not a confinement setting`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := `{"mcpServers": {}` + tt.limits + `}`
			if tt.wantErr != nil {
				text, _ := configMustFail(t, src, nil)
				for _, w := range tt.wantErr {
					if !strings.Contains(text, w) {
						t.Errorf("error lacks %q:\n%s", w, text)
					}
				}
				return
			}
			c := configMustParse(t, src, nil)
			if c.Limits != tt.want || c.MaxTimeout != tt.maxTimeout || c.MaxMemory != tt.maxMemory || c.Confinement != tt.confinement {
				t.Errorf("got %+v max %s %d %s; want %+v max %s %d %s", c.Limits, c.MaxTimeout, c.MaxMemory, c.Confinement, tt.want, tt.maxTimeout, tt.maxMemory, tt.confinement)
			}
			if w := strings.Join(c.Warnings, "\n"); !strings.Contains(w, tt.wantWarning) || (tt.wantWarning == "" && strings.Contains(w, "limits")) {
				t.Errorf("warnings %q; want %q", w, tt.wantWarning)
			}
			if _, err := c.Limits.Normalize(); err != nil {
				t.Errorf("wire refuses the limits: %v", err)
			}
		})
	}
}

// TestConfigSizeCap: a file past MaxConfigBytes is refused before it is
// parsed (the bytes here are not JSON, and the error is about the size), and
// LoadConfig does not read it.
func TestConfigSizeCap(t *testing.T) {
	big := bytes.Repeat([]byte("["), MaxConfigBytes+1)
	_, err := ParseConfig("big.json", big, nil)
	if !errors.Is(err, ErrConfig) || err.Error() != "big.json: is 4194305 bytes; a config may be at most 4MiB; name the right file" {
		t.Errorf("got %v", err)
	}

	dir := t.TempDir()
	sparse := filepath.Join(dir, "sparse.json")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // a GiB of zeros that takes no disk
		t.Fatal(err)
	}
	f.Close()
	_, err = LoadConfig(sparse, nil)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "sparse.json: is 1073741824 bytes; a config may be at most 4MiB") {
		t.Errorf("got %v", err)
	}

	// A file of exactly the cap loads.
	head := []byte(`{"mcpServers": {}, "pad": "`)
	exact := append(head, bytes.Repeat([]byte("x"), MaxConfigBytes-len(head)-2)...)
	exact = append(exact, '"', '}')
	path := filepath.Join(dir, "exact.json")
	if err := os.WriteFile(path, exact, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path, nil); err != nil {
		t.Errorf("a file of exactly MaxConfigBytes: %v", err)
	}
	// One byte more does not.
	if err := os.WriteFile(path, append(exact, ' '), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path, nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "a config may be at most 4MiB") {
		t.Errorf("a file one byte past the cap: %v", err)
	}
	// An endless file that is not regular, so has no size to check first:
	// the read stops one byte past the cap.
	if _, err := os.Stat("/dev/zero"); err == nil {
		done := make(chan error, 1)
		go func() { _, err := LoadConfig("/dev/zero", nil); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrConfig) || err.Error() != "/dev/zero: larger than 4MiB, the most a config may be; name the right file" {
				t.Errorf("/dev/zero: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("LoadConfig(/dev/zero) did not return: the read is not bounded")
		}
	}

	// A file that is not there: ErrConfig and the file system's error.
	_, err = LoadConfig(filepath.Join(dir, "missing.json"), nil)
	if !errors.Is(err, ErrConfig) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if want := filepath.Join(dir, "missing.json") + ": cannot read it: no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("missing file: got %v, want %s", err, want)
	}
	// A directory.
	if _, err := LoadConfig(dir, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("directory: %v", err)
	}
}

// TestConfigDepth: nesting is refused before parsing, wherever it is, and
// brackets inside strings do not count.
func TestConfigDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	// The top-level object is one level.
	ok := `{"mcpServers": {}, "x": ` + nest(MaxConfigDepth-1) + `}`
	if _, err := ParseConfig("deep.json", []byte(ok), nil); err != nil {
		t.Errorf("depth %d: %v", MaxConfigDepth, err)
	}
	tooDeep := `{"mcpServers": {}, "x": ` + nest(MaxConfigDepth) + `}`
	_, err := ParseConfig("deep.json", []byte(tooDeep), nil)
	want := fmt.Sprintf("deep.json: line 1, column %d: nested deeper than 64 arrays and objects; a config needs a handful of levels", len(`{"mcpServers": {}, "x": `)+MaxConfigDepth)
	if !errors.Is(err, ErrConfig) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	// A bomb of a million brackets, not even closed: refused at the cap, not
	// by the decoder.
	bomb := `{"mcpServers": {"a": {"args": ` + strings.Repeat("[", 1_000_000)
	if _, err := ParseConfig("bomb.json", []byte(bomb), nil); err == nil || !strings.Contains(err.Error(), "nested deeper than 64") {
		t.Errorf("bomb: %v", err)
	}
	// Brackets in strings, including after an escaped quote.
	inStr := `{"mcpServers": {"a": {"command": "x", "args": ["` + strings.Repeat("[{", 100) + `\"` + strings.Repeat("[", 100) + `"]}}}`
	if _, err := ParseConfig("str.json", []byte(inStr), nil); err != nil {
		t.Errorf("brackets in strings: %v", err)
	}
}

// configFuzzLookup sets every variable whose name starts with S to a marker
// that must never leave the Config, E to empty, and no other.
func configFuzzLookup(name string) (string, bool) {
	switch {
	case strings.HasPrefix(name, "S"):
		return "FUZZSECRETVALUE", true
	case strings.HasPrefix(name, "E"):
		return "", true
	}
	return "", false
}

// configCheckParse is the property FuzzParseConfig checks: no panic; an error
// wraps ErrConfig and lists its problems one per line; a Config has servers
// that each have a valid transport and fields consistent with it; a looked-up
// value never shows in the error, the warnings or the view.
func configCheckParse(t *testing.T, data []byte) {
	cfg, err := ParseConfig("fuzz.json", data, configFuzzLookup)
	// The marker can come from the file itself only if the file holds it, or
	// spells it with escapes.
	checkSecret := !bytes.Contains(data, []byte("FUZZSECRETVALUE")) && !bytes.Contains(data, []byte(`\`))
	if err != nil {
		if !errors.Is(err, ErrConfig) {
			t.Fatalf("error does not wrap ErrConfig: %v", err)
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || len(ce.Problems) == 0 || len(ce.Problems) > MaxConfigProblems {
			t.Fatalf("not a *ConfigError with 1 to %d problems: %#v", MaxConfigProblems, err)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, "fuzz.json: ") {
				t.Fatalf("line without the file name: %q", line)
			}
		}
		if checkSecret && strings.Contains(err.Error(), "FUZZSECRETVALUE") {
			t.Fatalf("a looked-up value shows in the error: %v", err)
		}
		return
	}
	for i, s := range cfg.Servers {
		if i > 0 && cfg.Servers[i-1].Name >= s.Name {
			t.Fatalf("servers not sorted, or a name twice: %q then %q", cfg.Servers[i-1].Name, s.Name)
		}
		if s.Name == "" || len(s.Name) > MaxServerNameBytes || strings.ContainsFunc(s.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("bad name %q", s.Name)
		}
		switch s.Transport {
		case TransportStdio:
			if s.URL != "" || s.Headers != nil {
				t.Fatalf("stdio server %q with remote fields: %#v", s.Name, s)
			}
			if !s.Disabled && (strings.TrimSpace(s.Command) == "" || strings.IndexByte(s.Command, 0) >= 0) {
				t.Fatalf("stdio server %q with command %q", s.Name, s.Command)
			}
		case TransportHTTP, TransportSSE, TransportAuto:
			if s.Command != "" || s.Args != nil || s.Env != nil || s.Cwd != "" {
				t.Fatalf("remote server %q with stdio fields: %#v", s.Name, s)
			}
			if !s.Disabled {
				u, err := url.Parse(s.URL)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					t.Fatalf("remote server %q with url %q", s.Name, s.URL)
				}
				for k, v := range s.Headers {
					if !isHeaderName(k) || strings.ContainsAny(v, "\r\n\x00") {
						t.Fatalf("remote server %q with header %q", s.Name, k)
					}
				}
			}
		default:
			t.Fatalf("server %q with transport %q", s.Name, s.Transport)
		}
		if l := s.Lane; l.MaxActive < 1 || l.MaxActive > l.MaxOutstanding || l.MaxOutstanding > lanes.MaxOutstandingLimit {
			t.Fatalf("server %q with lane %+v", s.Name, l)
		}
		if s.CallTimeout < 0 || s.CallTimeout > wire.MaxTimeout {
			t.Fatalf("server %q with callTimeout %s", s.Name, s.CallTimeout)
		}
		for _, tool := range s.AllowTools {
			if strings.TrimSpace(tool) == "" {
				t.Fatalf("server %q allows an empty tool name", s.Name)
			}
		}
	}
	if _, err := cfg.Limits.Normalize(); err != nil {
		t.Fatalf("limits refused by wire: %v", err)
	}
	if cfg.MaxTimeout < cfg.Limits.Timeout() || cfg.MaxTimeout > wire.MaxTimeout || cfg.MaxMemory < cfg.Limits.MemoryBytes || cfg.MaxMemory > wire.MaxMemory {
		t.Fatalf("maxima %s %d around limits %+v", cfg.MaxTimeout, cfg.MaxMemory, cfg.Limits)
	}
	b, err := json.Marshal(cfg.Redacted())
	if err != nil {
		t.Fatalf("Redacted does not encode: %v", err)
	}
	for _, w := range cfg.Warnings {
		if !strings.HasPrefix(w, "fuzz.json: ") {
			t.Fatalf("warning without the file name: %q", w)
		}
		if checkSecret && strings.Contains(w, "FUZZSECRETVALUE") {
			t.Fatalf("a looked-up value shows in a warning: %q", w)
		}
	}
	if checkSecret && bytes.Contains(b, []byte("FUZZSECRETVALUE")) {
		t.Fatalf("a looked-up value shows in the view: %s", b)
	}
}

// FuzzParseConfig runs over its seeds in every plain `go test`.
func FuzzParseConfig(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "config", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", " ", "{", "}", "[]", "null", "0", `"x"`, "{}", "\uFEFF{}", "\xff\xfe{}",
		`{"mcpServers": null}`, `{"mcpServers": []}`, `{"mcpServers": {}}`, `{"mcpServers": {}, "mcpServers": {}}`,
		`{"mcpServers": {"": {}}}`, `{"mcpServers": {"a\u0000": {"command": "x"}}}`, `{"mcpServers": {"\xff": {"command": "x"}}}`,
		`{"mcpServers": {"a": {"command": "${"}}}`, `{"mcpServers": {"a": {"command": "${S}", "args": ["${E:-d}", "$", "${env:S}"]}}}`,
		`{"mcpServers": {"a": {"url": "http://u:${S}@h/?q=${S}", "headers": {"a\u0000": "\n", "A": "${S}"}}}}`,
		`{"mcpServers": {"a": {"url": "https://h", "type": "streamableHttp", "headers": {"X": "${S}"}}}}`,
		`{"mcpServers": {"a": {"command": "x", "url": "y", "type": "sse", "args": 1, "env": [], "lane": {"maxActive": 1e400}}}}`,
		`{"mcpServers": {"a": {"command": "x", "lane": {"maxActive": -0, "maxOutstanding": 100000}, "callTimeout": "10m"}}}`,
		`{"mcpServers": {"a": {"serverUrl": "https://h", "url": "https://h"}}}`,
		`{"mcpServers": {"a": {"command": "x", "disabled": true, "cwd": "${UNSET}"}}}`,
		`{"mcpServers": {"a": {"command": "x", "envFile": "a", "autoApprove": [], "comand": 1}}}`,
		`{"mcpServers": {}, "limits": {"timeout": "100ms", "memory": "4MiB", "maxTimeout": "100ms", "maxMemory": 4194304}}`,
		`{"mcpServers": {}, "limits": {"memory": "9223372036854775807GiB", "timeout": "-1ns"}}`,
		`{"mcpServers": {}, "x": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
		strings.Repeat("[", 10_000),
		`{"mcpServers": {"a": {"command": "x"}}} trailing`,
		"{\"mcpServers\": {\"a\": {\"command\": \"x\",}}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		configCheckParse(t, data)
	})
}

// TestConfigVSCode: VS Code's .vscode/mcp.json loads as it is: "servers",
// "type", ${workspaceFolder} (the folder holding .vscode), ${userHome},
// envFile (loaded, its values secrets), and "inputs" ignored with a warning.
func TestConfigVSCode(t *testing.T) {
	path := filepath.Join("testdata", "config", "vscode", ".vscode", "mcp.json")
	cfg, err := LoadConfig(path, configEnv(map[string]string{"HOME": "/home/alice"}))
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := filepath.Abs(filepath.Join("testdata", "config", "vscode"))
	byName := map[string]ServerConfig{}
	for _, s := range cfg.Servers {
		byName[s.Name] = s
	}
	if m := byName["memory"]; m.Env["MEMORY_FILE_PATH"] != ws+"/memory.jsonl" || m.Command != "npx" {
		t.Errorf("memory: %+v", m)
	}
	if g := byName["github"]; g.Transport != TransportHTTP {
		t.Errorf("github: %+v", g)
	}
	l := byName["local"]
	wantVars := map[string]string{"API_TOKEN": "vsc-fixture-token-0123456789", "QUOTED": "two words # not a comment",
		"SINGLE": "$literal ${NOT_EXPANDED}", "PLAIN": "value"}
	if l.Command != ws+"/tools/server" || l.Cwd != ws || l.EnvFile != ws+"/.env" || !reflect.DeepEqual(l.envFileVars, wantVars) ||
		!reflect.DeepEqual(l.Args, []string{"--home", "/home/alice/.local"}) {
		t.Errorf("local: %+v (envFile vars %q)", l, l.envFileVars)
	}
	if !reflect.DeepEqual(cfg.Warnings, []string{path + ": inputs: ignored; these are VS Code's prompts, and the gateway cannot prompt: a ${input:...} variable is an error"}) {
		t.Errorf("warnings %q", cfg.Warnings)
	}
	if view := configRedactedJSON(t, cfg); strings.Contains(view, "vsc-fixture-token") || !strings.Contains(view, `"envFile": "${workspaceFolder}/.env"`) {
		t.Errorf("view:\n%s", view)
	}
	if sc := newScrubber(l); sc.scrub("token vsc-fixture-token-0123456789 leaked") != "token "+redactedText+" leaked" {
		t.Errorf("an envFile value is not a secret to the scrubber")
	}
}

// TestEnvFileParse: the dotenv rules, and every bad line named by its
// number without its value.
func TestEnvFileParse(t *testing.T) {
	vars, problems := parseEnvFile([]byte("\uFEFFA=1\n\n  # c\nexport B = two \nC=\"x\\ny\\\"z\" # c\nD='a b'\nE=\nA=last\nno equals\n=v\nF=\"open secret-value-1\nG='x' y\nH=\"a\" secret-value-2\n"))
	want := map[string]string{"A": "last", "B": "two", "C": "x\ny\"z", "D": "a b", "E": ""}
	if !reflect.DeepEqual(vars, want) {
		t.Errorf("vars %q, want %q", vars, want)
	}
	var lines []int
	for _, p := range problems {
		lines = append(lines, p.line)
		if strings.Contains(p.what, "secret-value") {
			t.Errorf("line %d: the problem quotes the value: %s", p.line, p.what)
		}
	}
	if !reflect.DeepEqual(lines, []int{9, 10, 11, 12, 13}) {
		t.Errorf("problems on lines %v, want 9 to 13: %+v", lines, problems)
	}
}
