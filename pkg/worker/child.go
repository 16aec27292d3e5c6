package worker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/run-js-server/run-js-server/pkg/jsrt"
	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Exit codes of a worker process. The parent reads an ending from the end
// frame, never from these; they tell a person reading a crash report why.
const (
	exitOK          = 0
	exitNotStarted  = 2 // not started by run-js-server (fd is not our socket)
	exitParentGone  = 3 // the socket reached EOF or broke: nobody to report to
	exitBadStart    = 4 // the start frame did not decode or did not match our protocol
	exitConfinement = 5 // strict confinement, and a layer could not be applied
	exitBadFrame    = 6 // a later frame from the parent did not decode or was not expected: the two sides are of different builds
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
	// careless parent may have leaked (fds_linux.go's constructor did,
	// before the Go runtime started, where close_range exists).
	if !closedEarly(fd) {
		closeInherited(fd)
	}

	h := &childHost{fd: fd, max: wire.MaxStartFrame}

	// Everything that does not depend on the run happens before its start
	// frame is read: for a spare worker, while nobody is waiting.
	warmed := make(chan struct{})
	go func() { // beside the engine's setup, on the other core
		warmJSON()
		prepareConfinement()
		close(warmed)
	}()
	prep := jsrt.Prepare()
	<-warmed

	// Confine before anything from the parent is read, and say in hello
	// what was applied (confine_linux.go).
	setting, err := confinementFromArgs(os.Args)
	if err != nil {
		die(exitBadStart, "%v", err)
	}
	report, ok := confine(setting)
	h.queueFrame(wire.TypeHello, wire.Hello{Protocol: wire.ProtocolVersion, PID: os.Getpid(), Confinement: report}, nil)
	h.flush()
	if !ok {
		exit(exitConfinement) // strict, and a layer is missing: hello says which
	}

	// A spare may be sent the catalog to hold before its start: it is kept
	// as received (the frame's bytes are never written over: see below).
	var frame wire.Frame
	var held *wire.Catalog
	var heldVersion uint64
	for {
		f, ok := h.next()
		if !ok {
			h.recv(true)
			continue
		}
		if f.Type != wire.TypeCatalog {
			frame = f
			break
		}
		var hc wire.StartCatalog
		if err := f.Decode(&hc); err != nil {
			die(exitBadStart, "catalog frame: %v", err)
		}
		if hc.Held || hc.Names < 0 || hc.All < 0 || hc.Names+hc.All != len(f.Payload) {
			die(exitBadStart, "catalog frame: sections of %d and %d bytes in a payload of %d", hc.Names, hc.All, len(f.Payload))
		}
		p := f.Payload
		held = wire.ReceivedCatalog(p[:hc.Names:hc.Names], p[hc.Names:], hc.Servers)
		heldVersion = hc.Version
	}
	// The start frame's buffer now belongs to the run (the catalog stays
	// in it); what came after it moves to a buffer of its own, so that
	// compacting h.in never writes over the catalog.
	h.in, h.off = append([]byte(nil), h.in[h.off:]...), 0
	received := time.Now()
	tv := unix.NsecToTimeval(waitTick.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		die(exitNotStarted, "set receive timeout: %v", err)
	}
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
	h.max = limits.ResultFrameCap()
	sc := start.Catalog
	if sc.Names < 0 || sc.All < 0 || sc.Names+sc.All > len(frame.Payload) {
		die(exitBadStart, "start frame: catalog sections of %d and %d bytes in a payload of %d", sc.Names, sc.All, len(frame.Payload))
	}
	p := frame.Payload
	// The catalog stays in the frame's buffer, as received: the program
	// reads of it only what it uses.
	catalog := wire.ReceivedCatalog(p[:sc.Names:sc.Names], p[sc.Names:sc.Names+sc.All:sc.Names+sc.All], sc.Servers)
	if sc.Held {
		if held == nil || heldVersion != sc.Version {
			die(exitBadStart, "start frame: the parent says this worker holds catalog %d; it holds %d", sc.Version, heldVersion)
		}
		catalog = held
	}

	spec := jsrt.Spec{
		RunID:    start.RunID,
		Code:     string(p[sc.Names+sc.All:]),
		Input:    start.Input,
		Catalog:  catalog,
		Limits:   limits,
		Deadline: received.Add(limits.Timeout()),
	}
	e := prep.Run(spec, h)
	h.mu.Lock()
	h.end(e)
}

// end writes the ending and exits; h.mu is held.
func (h *childHost) end(e jsrt.Report) {
	h.flushOutput()
	end := wire.End{
		RunID:      h.runID,
		Status:     e.Status,
		Error:      e.Error,
		Unsettled:  e.Unsettled,
		NeverSent:  e.NeverSent,
		PeakRSSKiB: jsrt.PeakRSSKiB(),
	}
	h.queueFrameRef(wire.TypeEnd, end, e.Value)
	h.flush()
	exit(exitOK)
}

// closeInherited closes every descriptor above the socket except the Go
// runtime's own poller (an epoll instance and its wake-up eventfd), which
// the runtime may have opened before main (a race-enabled build does): a
// blanket close_range would pull it from under the runtime, which then
// dies at its next poll.
func closeInherited(socket int) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n <= socket {
			continue
		}
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || strings.HasPrefix(target, "anon_inode:[eventpoll]") || strings.HasPrefix(target, "anon_inode:[eventfd]") {
			continue // gone (it was ReadDir's own), or the runtime's poller
		}
		_ = unix.Close(n)
	}
}

// warmJSON has encoding/json build its per-type caches for the frames of a
// run now, before the start frame, instead of on the run's first frames.
func warmJSON() {
	var start wire.Start
	_ = wire.Frame{Header: []byte(`{"protocol":1,"limits":{},"catalog":{"names":0,"all":0,"servers":[{"name":"s","state":"x","reason":"y"}]}}`)}.Decode(&start)
	_, _ = wire.AppendFrame(nil, wire.TypeEnd, wire.End{Error: &wire.ErrorInfo{}}, nil)
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

// waitTick is the socket's receive timeout: a worker blocked waiting for a
// result wakes this often to check the run's deadline. Set once, it saves a
// system call per call; the deadline is kept to within a tick.
const waitTick = 10 * time.Millisecond

// pollInterval: while the program computes, the interrupt handler looks at
// the socket this often for a stop (and for results, which it queues), so a
// stop lands within about this long without a second thread.
const pollInterval = time.Millisecond

// childHost is the jsrt.Host of a worker process. The runtime's goroutine
// does all reading on the socket. While the program waits, it blocks in
// read(2) with SO_RCVTIMEO set to the time left; while the program computes,
// Stopped polls the socket without blocking. Writing is under mu, which the
// runtime's goroutine holds only while it queues or writes frames (never
// while it reads), and which Abandon takes from the watchdog's goroutine to
// write the ending when the engine does not give the runtime's back.
type childHost struct {
	fd    int
	runID string
	max   int // cap of a frame from the parent

	mu       sync.Mutex
	out      []byte // frames not yet written
	text     []byte // output text not yet framed
	textSkip int64  // skip of the output frame being built

	in       []byte // bytes read; in[off:] not yet framed
	off      int
	events   []jsrt.Event
	tools    toolsState // the tools request (at most one a run)
	allTools []byte     // ALL_TOOLS's JSON, once the parent answered it
	stopped  bool
	lastPoll time.Time
}

var _ jsrt.Host = (*childHost)(nil)

func (h *childHost) queueFrame(t wire.Type, hdr any, payload []byte) {
	var err error
	if h.out, err = wire.AppendFrame(h.out, t, hdr, payload); err != nil {
		die(exitBadStart, "encode %s: %v", t, err) // our own headers always encode
	}
}

// directPayload: a payload at least this large is written from where it lies
// (it may be the engine's memory) instead of being copied behind its header.
const directPayload = 64 << 10

// queueFrameRef is queueFrame without copying a large payload: the frames
// queued so far and the new header are written, then the payload itself.
func (h *childHost) queueFrameRef(t wire.Type, hdr any, payload []byte) {
	if len(payload) < directPayload {
		h.queueFrame(t, hdr, payload)
		return
	}
	at := len(h.out)
	h.queueFrame(t, hdr, nil)
	// The length field counts the payload that follows the header.
	n := binary.BigEndian.Uint32(h.out[at:])
	binary.BigEndian.PutUint32(h.out[at:], n+uint32(len(payload)))
	h.flush()
	h.writeAll(payload)
}

// flush writes the queued frames, blocking until they are written. A parent
// that is gone ends the process: there is nobody left to report to.
func (h *childHost) flush() {
	h.writeAll(h.out)
	h.out = h.out[:0]
}

func (h *childHost) writeAll(b []byte) {
	for len(b) > 0 {
		n, err := unix.Write(h.fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			exit(exitParentGone)
		}
		b = b[n:]
	}
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
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushOutput() // output written before a call is read before it
	h.queueFrameRef(wire.TypeCall, call, args)
	if len(h.out) >= writeFlushBytes {
		h.flush()
	}
	return nil
}

func (h *childHost) Output(text string, skip int64) {
	if h.stopped {
		return // after a stop, nothing the program does reaches the parent
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if skip > 0 {
		h.flushOutput()
		h.textSkip = skip
	}
	h.text = append(h.text, text...)
	if len(h.text) >= outputFlushBytes {
		h.flushOutput()
	}
}

// Stopped is called by the interrupt handler every few thousand
// instructions: at most every pollInterval it reads what the parent sent
// without blocking.
func (h *childHost) Stopped() bool {
	if !h.stopped {
		if now := time.Now(); now.Sub(h.lastPoll) >= pollInterval {
			h.lastPoll = now
			h.read(false)
		}
	}
	return h.stopped
}

// Abandon writes e as the ending and exits: the watchdog's way out when the
// engine holds the runtime's goroutine past the deadline.
func (h *childHost) Abandon(e jsrt.Report) {
	h.mu.Lock()
	h.end(e)
}

func (h *childHost) Wait(deadline time.Time) []jsrt.Event {
	h.mu.Lock()
	h.flushOutput()
	h.flush()
	h.mu.Unlock()
	if len(h.events) == 0 {
		h.compact()
	}
	for len(h.events) == 0 {
		if !time.Now().Before(deadline) {
			return nil
		}
		h.read(true) // returns at least every waitTick
	}
	evs := h.events
	h.events = nil
	return evs
}

// compact moves what is not yet framed to the front of h.in, so that its
// room is used again. Only Wait calls it, and only with no event pending:
// then every earlier event's payload has been settled (the runtime asks for
// more only after settling what it was given) and nothing points into h.in.
func (h *childHost) compact() {
	if h.off > 0 {
		n := copy(h.in, h.in[h.off:])
		h.in = h.in[:n]
		h.off = 0
	}
}

// AllTools asks the parent for ALL_TOOLS's JSON (the program read it) and
// waits for it, until the deadline or a stop; what else arrives meanwhile
// waits as events. A catalog may be larger than a result: the frame cap is
// the start frame's while it is awaited.
func (h *childHost) AllTools(deadline time.Time) ([]byte, error) {
	switch h.tools {
	case toolsGot:
		// Handed over once already; the prelude asks again only if it
		// could not hold it (out of memory).
		return nil, errors.New("it was read once and could not be kept (out of memory?)")
	case toolsGaveUp:
		return nil, errors.New("the run is ending")
	}
	h.tools = toolsAwaited
	h.mu.Lock()
	h.flushOutput()
	h.queueFrame(wire.TypeToolsRequest, nil, nil)
	h.flush()
	h.mu.Unlock()
	capped := h.max
	h.max = max(h.max, wire.MaxStartFrame)
	defer func() { h.max = capped }()
	for h.tools != toolsGot {
		if h.stopped {
			h.tools = toolsGaveUp
			return nil, errors.New("the run is stopping")
		}
		if !time.Now().Before(deadline) {
			h.tools = toolsGaveUp
			return nil, errors.New("the run's deadline passed")
		}
		h.read(true) // returns at least every waitTick
	}
	all := h.allTools
	h.allTools = nil // the engine has it now; h.in may be compacted later
	return all, nil
}

// toolsState is where a worker's tools request stands.
type toolsState uint8

const (
	toolsNone    toolsState = iota // not asked
	toolsAwaited                   // asked; AllTools waits for the answer
	toolsGot                       // answered
	toolsGaveUp                    // asked, and the run ended first
)

// read reads what the parent sent (blocking until something arrives or the
// receive timeout passes, or not at all) and turns whole frames into events.
func (h *childHost) read(block bool) {
	h.recv(block)
	for {
		f, ok := h.next()
		if !ok {
			return
		}
		var ev jsrt.Event
		switch f.Type {
		case wire.TypeResult:
			if err := f.Decode(&ev.Result); err != nil {
				die(exitBadFrame, "%v", err)
			}
			ev.Payload = f.Payload
		case wire.TypeStop:
			h.stopped = true
			ev.Stop = true
		case wire.TypeCatalog:
			var hc wire.StartCatalog
			if err := f.Decode(&hc); err != nil || hc.Names != 0 || hc.All != len(f.Payload) || h.tools == toolsNone || h.tools == toolsGot {
				die(exitBadFrame, "unexpected catalog frame from the parent")
			}
			if h.tools == toolsAwaited {
				// It aliases h.in, which only Wait compacts: AllTools hands
				// it to the engine (a copy) before the runtime waits again.
				h.allTools, h.tools = f.Payload, toolsGot
			}
			continue // toolsGaveUp: the run is ending; dropped
		default:
			die(exitBadFrame, "unexpected %s frame from the parent", f.Type)
		}
		h.events = append(h.events, ev)
	}
}

// recvRoom: recv reads into h.in's spare room, made at least this large.
const recvRoom = 64 << 10

// recv reads once from the socket into h.in, blocking or not. A parent that
// closed the socket ends the process: there is nobody left to report to.
// When h.in lacks room it moves to a new buffer (never in place: events
// may still point into the old one).
func (h *childHost) recv(block bool) {
	flags := unix.MSG_DONTWAIT
	if block {
		flags = 0
	}
	if cap(h.in)-len(h.in) < recvRoom/4 {
		rest := h.in[h.off:]
		b := make([]byte, len(rest), len(rest)+recvRoom)
		copy(b, rest)
		h.in, h.off = b, 0
	}
	n, _, err := unix.Recvfrom(h.fd, h.in[len(h.in):cap(h.in)], flags)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return
	case err != nil:
		die(exitParentGone, "read from parent: %v", err)
	case n == 0:
		exit(exitParentGone)
	}
	h.in = h.in[:len(h.in)+n]
}

// next takes the next whole frame off h.in; when a frame has begun, it reads
// the rest of it at once. The frame aliases h.in, which is appended to but
// never written over until Wait compacts it.
func (h *childHost) next() (wire.Frame, bool) {
	f, used, need, err := wire.Split(h.in[h.off:], h.max)
	if err != nil {
		die(exitBadFrame, "frame from parent: %v", err)
	}
	if used == 0 && need > len(h.in)-h.off {
		h.fill(need) // the parent is sending it: a large result or start
		f, used, _, err = wire.Split(h.in[h.off:], h.max)
		if err != nil {
			die(exitBadFrame, "frame from parent: %v", err)
		}
	}
	if used == 0 {
		return wire.Frame{}, false
	}
	h.off += used
	return f, true
}

// fill reads, blocking, until h.in[h.off:] holds need bytes: the rest of a
// frame the parent has begun to send. The frame gets a buffer of its own
// with one byte more, a NUL, so that a result's JSON at the end of the
// frame is parsed where it lies (see jsrt.Event.Payload).
func (h *childHost) fill(need int) {
	rest := h.in[h.off:]
	b := make([]byte, len(rest), need+1)
	copy(b, rest)
	for len(b) < need {
		n, err := unix.Read(h.fd, b[len(b):need])
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil || n == 0 {
			exit(exitParentGone)
		}
		b = b[:len(b)+n]
	}
	h.in, h.off = b, 0
}
