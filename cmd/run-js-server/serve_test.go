package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesToStart: bad serving flags end the command with exit 2
// and a message naming the fix, before anything listens or starts.
func TestServeRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "all interfaces without a token", args: []string{"--http", "0.0.0.0:0"}, stderr: "give --token-file FILE"},
		{name: "no host without a token", args: []string{"--http", ":0"}, stderr: "reachable from other machines"},
		{name: "token file without --http", args: []string{"--token-file", short}, stderr: "--token-file: only with --http ADDR"},
		{name: "origin without --http", args: []string{"--allow-origin", "https://a.example"}, stderr: "--allow-origin: only with --http"},
		{name: "origin with a path", args: []string{"--http", "127.0.0.1:0", "--allow-origin", "https://a.example/app"}, stderr: "not scheme://host[:port]"},
		{name: "origin without a scheme", args: []string{"--http", "127.0.0.1:0", "--allow-origin", "a.example"}, stderr: "e.g. https://app.example.com"},
		{name: "short token", args: []string{"--http", "127.0.0.1:0", "--token-file", short}, stderr: "fewer than 16"},
		{name: "missing token file", args: []string{"--http", "127.0.0.1:0", "--token-file", filepath.Join(dir, "none")}, stderr: "no such file"},
		{name: "no idle bound", args: []string{"--http", "127.0.0.1:0", "--idle-timeout", "0s"}, stderr: "--idle-timeout 0s: must be more than 0"},
		{name: "no sessions", args: []string{"--http", "127.0.0.1:0", "--max-sessions", "0"}, stderr: "--max-sessions 0: must be at least 1"},
		{name: "bad address", args: []string{"--http", "127.0.0.1"}, stderr: "missing port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errb bytes.Buffer
			code := serveCmd(tt.args, io.NopCloser(strings.NewReader("")), io.Discard, &errb)
			if code != exitUsage || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errb.String(), exitUsage, tt.stderr)
			}
		})
	}
}

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // not reduced by the umask
			t.Fatal(err)
		}
		return p
	}
	good := "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name    string
		path    string
		env     string
		want    string
		err     string
		warning string // "" : none
	}{
		{name: "private file", path: file("private", good+"\n", 0o600), want: good},
		{name: "file others can read", path: file("shared", good, 0o644), want: good, warning: "can be read by group or others (mode 0644)"},
		{name: "file the group can read", path: file("group", good, 0o640), want: good, warning: "chmod 600"},
		{name: "file wins over the environment", path: file("wins", good, 0o600), env: "from-the-environment-123", want: good},
		{name: "environment", env: "  from-the-environment-123\n", want: "from-the-environment-123"},
		{name: "neither", want: ""},
		{name: "empty file", path: file("empty", "\n", 0o600), err: "empty"},
		{name: "space inside", path: file("space", "0123456789 abcdef0123", 0o600), err: "a space, control or non-ASCII byte at 10"},
		{name: "not ASCII", env: "0123456789abcdéf0123", err: "non-ASCII"},
		{name: "short in the environment", env: "abc", err: "RUN_JS_SERVER_TOKEN: the token has 3 characters, fewer than 16"},
		{name: "large file", path: file("large", strings.Repeat("a", maxTokenFile+1), 0o600), err: "more than 4096 bytes"},
		{name: "a directory", path: dir, err: "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errb bytes.Buffer
			got, err := loadToken(tt.path, tt.env, &errb)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("token %q, error %v; want %q", got, err, tt.want)
			}
			if tt.warning == "" && errb.Len() > 0 || !strings.Contains(errb.String(), tt.warning) {
				t.Fatalf("stderr %q, want warning %q", errb.String(), tt.warning)
			}
		})
	}
}

// TestTokenLeavesTheEnvironment: the serving command removes the token
// from its environment, so no downstream server inherits it.
func TestTokenLeavesTheEnvironment(t *testing.T) {
	t.Setenv(tokenEnv, "0123456789abcdef0123")
	var errb bytes.Buffer
	if code := serveCmd([]string{"--max-sessions", "0", "--http", "127.0.0.1:0"}, io.NopCloser(strings.NewReader("")), io.Discard, &errb); code != exitUsage {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if v, ok := os.LookupEnv(tokenEnv); ok {
		t.Fatalf("%s is still in the environment (%q)", tokenEnv, v)
	}
}
