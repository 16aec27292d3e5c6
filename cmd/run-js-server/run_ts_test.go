package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunTypeScript: `run` takes TypeScript from a .ts file or with
// --language, strips its types, and points its errors at its own lines.
func TestRunTypeScript(t *testing.T) {
	const program = "interface P { n: number }\nconst p: P = { n: input.n } as P;\nreturn p.n * 2;"
	const failing = "type N = number;\nfunction f(n: N): N {\n  throw new RangeError(\"no\");\n}\nreturn f(1);"
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string
		stderr string
	}{
		{"a .ts file", []string{"--input", `{"n": 21}`, writeProgramAs(t, "p.ts", program)}, "", exitReturned, `"value": 42`, ""},
		{"--language from stdin", []string{"--language", "typescript", "--input", `{"n": 2}`, "-"}, program, exitReturned, `"value": 4`, ""},
		{"--language ts over the name", []string{"--language", "ts", "--input", `{"n": 1}`, writeProgramAs(t, "p.js", program)}, "", exitReturned, `"value": 2`, ""},
		{"a syntax error names its line and column", []string{"--format", "text", writeProgramAs(t, "bad.ts", "const a = 1;\nconst b: = 2;")}, "", exitEnded,
			"| SyntaxError: Unexpected \"=\"\n|     at program.ts:2:10\n", ""},
		{"a runtime error points into the TypeScript", []string{"--format", "text", writeProgramAs(t, "f.ts", failing)}, "", exitEnded,
			"|     at f (program.ts:3:", ""},
		{"TypeScript as JavaScript gets a hint", []string{writeProgramAs(t, "p.js", program)}, "", exitEnded, `"SyntaxError"`,
			"hint: this program is not JavaScript but parses as TypeScript: name it .ts or pass --language typescript"},
		{"an unknown language", []string{"--language", "python", writeProgramAs(t, "p.js", "1")}, "", exitUsage, "", `--language: unknown language "python"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s\nwant stdout ⊇ %q, stderr ⊇ %q", code, tc.code, out, errs, tc.stdout, tc.stderr)
			}
			if strings.Contains(out, "program.js") && tc.code != exitUsage && !strings.Contains(tc.name, "hint") {
				t.Fatalf("a TypeScript position left in JavaScript's coordinates:\n%s", out)
			}
		})
	}
}

// TestRunRefusesZeroLimits: a zero or out-of-range limit is refused in the
// flag's own units, never taken for the default.
func TestRunRefusesZeroLimits(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "0s"}, "--timeout 0s is out of range: allowed 100ms to 10m0s"},
		{[]string{"--timeout", "-1s"}, "--timeout -1s is out of range"},
		{[]string{"--memory", "3MiB"}, "--memory 3MiB is out of range: allowed 4MiB to 2GiB"},
		{[]string{"--memory", "4GiB"}, "--memory 4GiB is out of range"},
	} {
		code, _, errs := runCLI(t, "", append(tc.args, writeProgram(t, "return 1"))...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestHelpTexts: the CLI's help names all six tools, and bench -h reads as
// usage, not as a flag whose value is a command line.
func TestHelpTexts(t *testing.T) {
	for _, tool := range []string{"run_js", "wait_js", "stop_js", "list_js", "search_tools", "server_info"} {
		if !strings.Contains(usage, tool) {
			t.Errorf("the CLI's help does not name %s:\n%s", tool, usage)
		}
	}
	var out, errb bytes.Buffer
	if code := benchCmd([]string{"-h"}, &out, &errb); code != exitReturned {
		t.Fatalf("bench -h: exit %d", code)
	}
	help := errb.String()
	if !strings.HasPrefix(help, "Usage: run-js-server bench [flags]\n") || !strings.Contains(help, "  -mcp int\n") || strings.Contains(help, "-mcp run-js-server") {
		t.Fatalf("bench -h:\n%s", help)
	}
	errb.Reset()
	if code := runCmd([]string{"-h"}, strings.NewReader(""), &out, &errb); code != exitReturned || !strings.Contains(errb.String(), "  -input string\n") || !strings.Contains(errb.String(), "  -language string\n") {
		t.Fatalf("run -h (exit %d):\n%s", code, errb.String())
	}
}
