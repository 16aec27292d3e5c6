//go:build !linux

package worker

// This file is confinement on systems other than Linux: there is none. The
// worker reports every layer not enforced, strict confinement refuses to run
// programs, and README says so.

import (
	"os"
	"syscall"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// confine applies nothing and says so. With ConfineStrict the worker stops
// before reading a program.
func confine(setting Confinement) (*wire.Confinement, bool) {
	c := &wire.Confinement{Setting: setting.String()}
	for _, name := range wire.Layers {
		c.Layers = append(c.Layers, wire.Layer{Name: name, How: "not applied: " + notConfined,
			Missing: "confinement is implemented on Linux only"})
	}
	return c, setting != ConfineStrict
}

// limitRun sets nothing: rlimits are part of the confinement this system
// does not get.
func limitRun(pid int, l wire.Limits, grace time.Duration) (string, error) {
	return "", nil
}

// forbiddenCall: no seccomp here, so no death by it.
func forbiddenCall(ps *os.ProcessState, stderr string) (string, bool) { return "", false }

// withNamespaces: no namespaces here.
func withNamespaces(attr *syscall.SysProcAttr) {}

// prepareConfinement: nothing to compute ahead where nothing is applied.
func prepareConfinement() {}
