package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The test binary doubles as the worker, as the real binary does.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "--worker-fd" || len(os.Args) >= 2 && os.Args[1] == "demo-server" {
		main()
	}
	os.Exit(m.Run())
}

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runCmd(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func writeProgram(t *testing.T, code string) string {
	t.Helper()
	return writeProgramAs(t, "p.js", code)
}

// writeProgramAs writes code to a file of that name in a fresh directory.
func writeProgramAs(t *testing.T, name, code string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunPrintsTheEnding(t *testing.T) {
	code, out, errs := runCLI(t, "", "--input", `{"n": 20}`, writeProgram(t, "console.log('hi'); return input.n + 1"))
	if code != exitReturned {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	var e struct {
		RunID  string          `json:"runId"`
		Status string          `json:"status"`
		Value  json.RawMessage `json:"value"`
		Output struct {
			Text     string `json:"text"`
			CutChars int64  `json:"cutChars"`
		} `json:"output"`
		Calls struct {
			Total     int            `json:"total"`
			ByTool    map[string]int `json:"byTool"`
			Unseen    []any          `json:"unseen"`
			NeverSent int            `json:"neverSent"`
		} `json:"calls"`
		DurationMs *int64 `json:"durationMs"`
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("stdout is not the ending object: %v\n%s", err, out)
	}
	if e.Status != "returned" || string(e.Value) != "21" || e.Output.Text != "hi\n" || !strings.HasPrefix(e.RunID, "run-") || e.DurationMs == nil || e.Calls.Unseen == nil || e.Calls.ByTool == nil {
		t.Fatalf("ending %s", out)
	}
}

func TestRunExitStatus(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		stdin   string
		code    int
		stdout  string // in stdout
		stderr  string // in stderr
		program string
	}{
		{name: "program from stdin", args: []string{"-"}, stdin: "return [1, 2]", code: exitReturned, stdout: `"status": "returned"`},
		{name: "threw exits 1", program: "throw new Error('boom')", code: exitEnded, stdout: `"boom"`},
		{name: "timed out exits 1", args: []string{"--timeout", "200ms"}, program: "while (true) {}", code: exitEnded, stdout: `"timed_out"`},
		{name: "memory flag", args: []string{"--memory", "4MiB"}, program: "return 'x'.repeat(8 << 20).length", code: exitEnded, stdout: `"out_of_memory"`},
		{name: "text format", args: []string{"--format", "text"}, program: "return {a: 1}", code: exitReturned, stdout: "returned: the program returned"},
		{name: "no program", code: exitUsage, stderr: "give exactly one program"},
		{name: "two programs", args: []string{"a.js", "b.js"}, code: exitUsage, stderr: "got 2 arguments"},
		{name: "missing file", args: []string{"/nonexistent/p.js"}, code: exitUsage, stderr: "no such file"},
		{name: "bad memory", args: []string{"--memory", "lots"}, program: "1", code: exitUsage, stderr: "--memory \"lots\""},
		{name: "memory in decimal units", args: []string{"--memory", "64MB"}, program: "1", code: exitUsage, stderr: `is ambiguous; did you mean "64MiB"?`},
		{name: "memory zero", args: []string{"--memory", "0"}, program: "1", code: exitUsage, stderr: "must be more than 0"},
		{name: "memory out of range", args: []string{"--memory", "1MiB"}, program: "1", code: exitUsage, stderr: "--memory 1MiB is out of range: allowed 4MiB to 2GiB"},
		{name: "timeout out of range", args: []string{"--timeout", "1h"}, program: "1", code: exitUsage, stderr: "--timeout 1h0m0s is out of range: allowed 100ms to 10m0s"},
		{name: "bad format", args: []string{"--format", "yaml"}, program: "1", code: exitUsage, stderr: "use json or text"},
		{name: "bad input", args: []string{"--input", "{n: 1}"}, program: "1", code: exitUsage, stderr: "--input is not valid JSON"},
		{name: "config file missing", args: []string{"--config", "/nonexistent/x.json"}, program: "1", code: exitUsage, stderr: "/nonexistent/x.json"},
		{name: "demo server", args: []string{"--demo"}, program: "return (await tools.demo.get_issue({id: 101})).structuredContent.issue.id", code: exitReturned, stdout: `"value": 101`},
		{name: "unknown flag", args: []string{"--nope"}, program: "1", code: exitUsage, stderr: "flag provided but not defined"},
		{name: "program not UTF-8", program: "return '\xff'", code: exitUsage, stderr: "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := tt.args
			if tt.program != "" {
				args = append(append([]string{}, args...), writeProgram(t, tt.program))
			}
			code, out, errs := runCLI(t, tt.stdin, args...)
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errs, tt.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s\nwant stdout ⊇ %q, stderr ⊇ %q", code, tt.code, out, errs, tt.stdout, tt.stderr)
			}
		})
	}
}

func TestDispatch(t *testing.T) {
	if code := dispatch([]string{"frobnicate"}); code != exitUsage {
		t.Errorf("unknown command: exit %d", code)
	}
}
