package worker

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/run-js-server/run-js-server/pkg/jsrt"
	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Exit codes of a worker process. The parent reads an ending from the end
// frame, never from these; they tell a person reading a crash report why.
const (
	exitOK         = 0
	exitNotStarted = 2 // not started by run-js-server (fd is not our socket)
	exitParentGone = 3 // the socket reached EOF or broke: nobody to report to
	exitBadStart   = 4 // the start frame did not decode or did not match our protocol
)

// outputFlushBytes: console output is coalesced into one frame up to this
// size, so a flood of small lines costs few frames and syscalls.
const outputFlushBytes = 32 << 10

// writeFlushBytes: queued frames are written once they reach this size even
// if the program has not yet blocked.
const writeFlushBytes = 64 << 10

// ChildMain is the whole life of a worker process: fd is its socket to the
// parent. It sends hello, reads start, runs the program, sends end and exits.
// It never returns. It must run before anything else in the process starts
// (the parent dispatches --worker-fd first in main).
func ChildMain(fd int) {
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
		fmt.Fprintln(os.Stderr, "run-js-server: --worker-fd is for run-js-server's own use (it starts its workers itself); run `run-js-server run FILE` to run a program")
		exit(exitNotStarted)
	}
	// Nothing but stdin, stdout, stderr and the socket: close whatever a
	// careless parent may have leaked.
	_ = unix.CloseRange(uint(fd)+1, ^uint(0), 0)

	f := os.NewFile(uintptr(fd), "parent")
	h := &childHost{f: f, wake: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
	h.timer.Stop()
	h.queueFrame(wire.TypeHello, wire.Hello{Protocol: wire.ProtocolVersion, PID: os.Getpid()}, nil)
	h.flush()

	r := wire.NewReader(f, wire.MaxStartFrame)
	frame, err := r.Next()
	if err != nil {
		if err == io.EOF {
			exit(exitParentGone)
		}
		die(exitBadStart, "read start: %v", err)
	}
	received := time.Now()
	var start wire.Start
	if frame.Type != wire.TypeStart {
		die(exitBadStart, "first frame is %s, want start", frame.Type)
	}
	if err := frame.Decode(&start); err != nil {
		die(exitBadStart, "%v", err)
	}
	if start.Protocol != wire.ProtocolVersion {
		die(exitBadStart, "parent speaks protocol %d, this worker %d: rebuild both from one tree", start.Protocol, wire.ProtocolVersion)
	}
	limits, err := start.Limits.Normalize()
	if err != nil {
		die(exitBadStart, "%v", err)
	}
	h.runID = start.RunID
	r.SetMax(limits.ResultFrameCap())
	go h.read(r)

	spec := jsrt.Spec{
		RunID:    start.RunID,
		Code:     string(frame.Payload),
		Input:    start.Input,
		Catalog:  start.Catalog,
		Limits:   limits,
		Deadline: received.Add(limits.Timeout()),
	}
	e := jsrt.Run(spec, h)

	h.flushOutput()
	end := wire.End{
		RunID:      start.RunID,
		Status:     e.Status,
		Error:      e.Error,
		Unsettled:  e.Unsettled,
		NeverSent:  e.NeverSent,
		PeakRSSKiB: jsrt.PeakRSSKiB(),
	}
	h.queueFrame(wire.TypeEnd, end, e.Value)
	h.flush()
	exit(exitOK)
}

// exit ends the worker process at once with exit_group(2): nothing is
// buffered (frames are written before, stderr is unbuffered), and os.Exit's
// hooks would only delay it (a race-enabled build sleeps a second there).
func exit(code int) {
	unix.Exit(code)
}

func die(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "run-js-server worker: "+format+"\n", args...)
	exit(code)
}

// childHost is the jsrt.Host of a worker process. The runtime's goroutine
// calls everything but read (its own goroutine) and Stopped (any goroutine).
type childHost struct {
	f     *os.File
	runID string

	// Owned by the runtime's goroutine.
	out      []byte // frames not yet written
	text     []byte // output text not yet framed
	textSkip int64  // skip of the output frame being built
	timer    *time.Timer

	// Shared with the reader goroutine.
	mu      sync.Mutex
	events  []jsrt.Event
	wake    chan struct{} // one slot; a send never blocks
	stopped atomic.Bool
}

var _ jsrt.Host = (*childHost)(nil)

func (h *childHost) queueFrame(t wire.Type, hdr any, payload []byte) {
	var err error
	if h.out, err = wire.AppendFrame(h.out, t, hdr, payload); err != nil {
		die(exitBadStart, "encode %s: %v", t, err) // our own headers always encode
	}
}

// flush writes the queued frames. A parent that is gone ends the process:
// there is nobody left to report to.
func (h *childHost) flush() {
	if len(h.out) == 0 {
		return
	}
	if _, err := h.f.Write(h.out); err != nil {
		exit(exitParentGone)
	}
	h.out = h.out[:0]
}

func (h *childHost) flushOutput() {
	if len(h.text) == 0 && h.textSkip == 0 {
		return
	}
	h.queueFrame(wire.TypeOutput, wire.Output{Skip: h.textSkip}, h.text)
	h.text, h.textSkip = h.text[:0], 0
	if len(h.out) >= writeFlushBytes {
		h.flush()
	}
}

func (h *childHost) Send(call wire.Call, args []byte) error {
	h.flushOutput() // output written before a call is read before it
	h.queueFrame(wire.TypeCall, call, args)
	if len(h.out) >= writeFlushBytes {
		h.flush()
	}
	return nil
}

func (h *childHost) Output(text string, skip int64) {
	if h.stopped.Load() {
		return // after a stop, nothing the program does reaches the parent
	}
	if skip > 0 {
		h.flushOutput()
		h.textSkip = skip
	}
	h.text = append(h.text, text...)
	if len(h.text) >= outputFlushBytes {
		h.flushOutput()
	}
}

func (h *childHost) Stopped() bool { return h.stopped.Load() }

func (h *childHost) Wait(deadline time.Time) []jsrt.Event {
	h.flushOutput()
	h.flush()
	for {
		h.mu.Lock()
		if len(h.events) > 0 {
			evs := h.events
			h.events = nil
			h.mu.Unlock()
			return evs
		}
		h.mu.Unlock()
		d := time.Until(deadline)
		if d <= 0 {
			return nil
		}
		h.timer.Reset(d)
		select {
		case <-h.wake:
			h.timer.Stop()
		case <-h.timer.C:
			return nil
		}
	}
}

// read is the reader goroutine: it decodes the parent's frames and hands them
// to the runtime's goroutine through the event queue. Any read error means the
// parent is gone or broken; the worker exits at once.
func (h *childHost) read(r *wire.Reader) {
	for {
		f, err := r.Next()
		if err != nil {
			if err != io.EOF {
				fmt.Fprintf(os.Stderr, "run-js-server worker: read from parent: %v\n", err)
			}
			exit(exitParentGone)
		}
		var ev jsrt.Event
		switch f.Type {
		case wire.TypeResult:
			if err := f.Decode(&ev.Result); err != nil {
				die(exitParentGone, "%v", err)
			}
			ev.Payload = f.Payload
		case wire.TypeStop:
			h.stopped.Store(true)
			ev.Stop = true
		default:
			die(exitParentGone, "unexpected %s frame from the parent", f.Type)
		}
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}
