package worker

// This file is the parent's side of confinement: the rlimits it sets on a
// worker when its run starts, and the protections it reports from what the
// workers said.

import (
	"context"
	"errors"
	"fmt"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// limitRun sets the run's rlimits on the worker before its start frame is
// sent. A failure is an error only with ConfineStrict; otherwise the note
// says what is missing.
func (s *supervisor) limitRun() {
	if s.cfg.Confinement == ConfineOff {
		return
	}
	how, err := limitRun(s.p.cmd.Process.Pid, s.req.Limits, s.cfg.Grace)
	if err != nil {
		if s.cfg.Confinement == ConfineStrict {
			s.limitsError = fmt.Errorf("strict confinement: the parent could not set the run's rlimits: %w", err)
		}
		s.limitsNote = "the parent could not set as and cpu: " + err.Error()
		return
	}
	s.limitsNote = how
}

// record keeps the latest report a worker of this Launcher gave in its
// hello. Called by the reader goroutine of each run.
func (l *Launcher) record(h *wire.Hello, parentLimits string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.report = h.Confinement
	l.parentLimits = parentLimits
}

// Protections says, layer by layer, how the latest worker of this Launcher
// was confined, as that worker reported it in its hello (and, for rlimits,
// what the parent set when its run started); never from the config alone.
// Before any run has started every layer says no worker has reported yet
// (Probe starts one). Safe for concurrent use.
func (l *Launcher) Protections() []Protection {
	l.mu.Lock()
	defer l.mu.Unlock()
	return protections(l.report, l.parentLimits)
}

// probeProgram is the run Probe makes: nothing but a return.
const probeProgram = "return 1"

// Probe runs a trivial program in a fresh worker so that a worker reports
// its confinement, and returns the protections. With ConfineStrict, a worker
// that lacks a layer makes Probe fail with an error naming the layer and the
// kernel feature; a gateway calls it at start to refuse to serve on such a
// host, and to fill server_info. It blocks until the run has ended.
func (l *Launcher) Probe(ctx context.Context) ([]Protection, error) {
	r, err := l.Start(ctx, Request{Code: probeProgram})
	if err != nil {
		return nil, err
	}
	e := r.Wait()
	if e.Status != wire.StatusReturned {
		msg := string(e.Status)
		if e.Error != nil {
			msg = e.Error.Message
		}
		return l.Protections(), fmt.Errorf("%w: the probe run ended %s: %s", ErrConfinement, e.Status, msg)
	}
	return l.Protections(), nil
}

// ErrConfinement: a worker could not be confined as the setting requires.
var ErrConfinement = errors.New("worker confinement")
