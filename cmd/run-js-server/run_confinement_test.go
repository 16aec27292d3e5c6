package main

import (
	"io"
	"strings"
	"testing"
)

// TestRunConfinementFlag: the run command takes --confinement, warns when it
// is off, refuses a value it does not know, and runs the program
// otherwise.
func TestRunConfinementFlag(t *testing.T) {
	for _, tc := range []struct {
		name, setting string
		exit          int
		stdout        string
		stderr        string
	}{
		{name: "strict", setting: "strict", exit: exitReturned, stdout: `"value": 3`},
		{name: "best effort", setting: "best-effort", exit: exitReturned, stdout: `"value": 3`},
		{name: "off warns", setting: "off", exit: exitReturned, stdout: `"value": 3`, stderr: "warning: --confinement off"},
		{name: "unknown", setting: "loose", exit: exitUsage, stderr: "use strict, best-effort or off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "", "--confinement", tc.setting, writeProgram(t, "return 1 + 2"))
			if code != tc.exit || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
			if tc.setting != "off" && strings.Contains(errs, "warning") {
				t.Fatalf("a warning without --confinement off: %q", errs)
			}
		})
	}
}

// TestServeConfinementFlag: serving refuses a confinement setting it does not
// know, before it serves anything, and says what to write.
func TestServeConfinementFlag(t *testing.T) {
	var stderr strings.Builder
	if code := serveCmd([]string{"--confinement", "loose"}, io.NopCloser(strings.NewReader("")), io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), `confinement "loose": use strict, best-effort or off`) {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
