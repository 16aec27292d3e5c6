package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// MaxSpares bounds Config.Spares: each spare is an idle process of a few MiB.
const MaxSpares = 8

// Launcher starts runs. With Config.Spares > 0 it keeps that many fresh
// worker processes already spawned and initialised, blocked on reading their
// start frame, so that a run does not wait for exec and the Go runtime's
// start. A spare is never reused: each run takes one process that nothing
// ran in before, and a replacement is spawned behind it.
//
// A Launcher is safe for concurrent use. Close kills the spares.
type Launcher struct {
	cfg Config

	mu      sync.Mutex
	spares  []*proc
	filling int // replacements being spawned
	closed  bool

	catalog *wire.Catalog // what new spares are sent to hold (SetCatalog)

	report       *wire.Confinement // the latest worker's, from its hello
	parentLimits string            // the rlimits set on that worker at start

	breaches atomic.Int64 // rules broken after an ending was given
}

// BreachesAfterEnding counts the rules workers of this Launcher broke after
// their run's ending had been given (a frame after the end frame, a
// forbidden system call on the way out): the ending is given at the end
// frame, so these can no longer change it, and are logged and counted
// instead (Config.OnBreach).
func (l *Launcher) BreachesAfterEnding() int64 { return l.breaches.Load() }

func (l *Launcher) breach(runID string, v *violation) {
	l.breaches.Add(1)
	if l.cfg.OnBreach != nil {
		l.cfg.OnBreach(runID, string(v.Rule), v.Error())
	}
}

// ErrClosed: the Launcher was closed.
var ErrClosed = errors.New("launcher closed")

// NewLauncher returns a Launcher for cfg and starts filling its spares.
func NewLauncher(cfg Config) (*Launcher, error) {
	if len(cfg.Command) == 0 {
		cmd, err := defaultCommand()
		if err != nil {
			return nil, err
		}
		cfg.Command = cmd
	}
	if strings.ContainsRune(cfg.Command[0], filepath.Separator) && !filepath.IsAbs(cfg.Command[0]) {
		// The worker starts in its private directory: a relative path
		// would be resolved from there.
		abs, err := filepath.Abs(cfg.Command[0])
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSpawn, err)
		}
		cfg.Command = append([]string{abs}, cfg.Command[1:]...)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Spares < 0 || cfg.Spares > MaxSpares {
		return nil, fmt.Errorf("%w: spares %d; allowed 0 to %d", ErrBadRequest, cfg.Spares, MaxSpares)
	}
	l := &Launcher{cfg: cfg}
	l.refill()
	return l, nil
}

// Grace is how long its runs' workers have to end after a stop or their
// end before their process groups are killed: Config.Grace, or DefaultGrace.
func (l *Launcher) Grace() time.Duration { return l.cfg.Grace }

// WorkerBinary is the name of the worker-only binary that scripts/build.sh
// builds beside run-js-server.
const WorkerBinary = "run-js-worker"

// defaultCommand is how workers start when Config.Command is empty: the
// worker-only binary when it sits beside this executable (it starts faster
// and smaller: it links only the isolate), else this executable itself in
// --worker-fd mode.
func defaultCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: find own executable: %v", ErrSpawn, err)
	}
	return commandBeside(exe), nil
}

func commandBeside(exe string) []string {
	w := filepath.Join(filepath.Dir(exe), WorkerBinary)
	if fi, err := os.Stat(w); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return []string{w, "--worker-fd", "3"}
	}
	return []string{exe, "--worker-fd", "3"}
}

// Start validates req, takes a spare worker (or spawns one) and starts
// supervising it. The run ends by itself (with its ending), on Stop, or when
// ctx is cancelled (as a stop). Errors wrap ErrBadRequest (nothing was
// spawned), ErrSpawn or ErrClosed.
func (l *Launcher) Start(ctx context.Context, req Request) (*Run, error) {
	limits, err := req.Limits.Normalize()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	req.Limits = limits
	if err := checkRequest(&req); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if req.RunID == "" {
		req.RunID = newRunID()
	}
	p, err := l.take()
	if err != nil {
		return nil, err
	}
	r := &Run{id: req.RunID, pid: p.cmd.Process.Pid, stopc: make(chan string, 1), done: make(chan struct{}), reaped: make(chan struct{})}
	s := newSupervisor(ctx, l.cfg, req, p, r.stopc)
	s.onHello = l.record
	s.onEnding = func(e *Ending) { r.ending = e; close(r.done) }
	s.onBreach = l.breach
	r.s = s
	go func() {
		e := s.run()
		if !s.published {
			r.ending = e
			close(r.done)
		}
		close(r.reaped)
		l.refill()
	}()
	return r, nil
}

// take returns a live spare, or a freshly spawned worker when none is ready,
// and starts a replacement.
func (l *Launcher) take() (*proc, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	var p *proc
	for len(l.spares) > 0 && p == nil {
		p = l.spares[0]
		l.spares = l.spares[1:]
		if exited(p.cmd.Process.Pid) {
			go p.discard() // died while waiting (killed from outside): reap it elsewhere
			p = nil
		}
	}
	l.mu.Unlock()
	if p != nil {
		return p, nil
	}
	return spawn(l.cfg)
}

// refill spawns replacements, in the background, until spares and spawns in
// progress reach cfg.Spares. Each is sent the current catalog to hold
// (SetCatalog) before it becomes a spare.
func (l *Launcher) refill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.closed && len(l.spares)+l.filling < l.cfg.Spares {
		l.filling++
		go func() {
			p, err := spawn(l.cfg)
			for err == nil {
				// Until it holds the catalog current when it is added (one
				// set meanwhile is sent too: the worker keeps the last).
				l.mu.Lock()
				want := l.catalog
				if want == p.catalog || l.closed || l.cfg.Confinement == ConfineStrict {
					if !l.closed {
						l.spares = append(l.spares, p)
						p = nil
					}
					break // still locked
				}
				l.mu.Unlock()
				if err = sendCatalog(p, want); err == nil {
					p.catalog = want
				}
			}
			if err != nil {
				l.mu.Lock()
			}
			l.filling--
			l.mu.Unlock()
			if p != nil {
				p.discard()
			}
			// A failed spawn is not retried here: the next Start spawns
			// directly and reports the error to its caller.
		}()
	}
}

// catalogSendWait bounds writing a catalog to a spare that is starting
// (it reads it once it has confined itself: milliseconds).
const catalogSendWait = 10 * time.Second

// sendCatalog writes cat to a fresh worker, to hold for its run. Under
// strict confinement nothing is sent before the worker's hello has passed
// its check, so spares are not sent catalogs then (their start carries it).
func sendCatalog(p *proc, cat *wire.Catalog) error {
	names := cat.Names() // ALL_TOOLS only if a program reads it
	head, err := wire.AppendFrameHead(nil, wire.TypeCatalog, wire.StartCatalog{Version: cat.Version(), Names: len(names), Servers: cat.Servers()}, len(names))
	if err != nil {
		return err
	}
	_ = p.conn.SetWriteDeadline(time.Now().Add(catalogSendWait))
	bufs := net.Buffers{head, names}
	_, err = bufs.WriteTo(p.conn)
	return err
}

// SetCatalog makes cat the catalog new spares are sent to hold, so that a
// run with it starts without sending it (its cost is paid while the spare
// waits, not by the run). Spares that hold another are replaced. Runs with
// another catalog still work: their start frame carries it.
func (l *Launcher) SetCatalog(cat *wire.Catalog) {
	l.mu.Lock()
	if l.catalog == cat || l.closed {
		l.mu.Unlock()
		return
	}
	l.catalog = cat
	var stale []*proc
	keep := l.spares[:0]
	for _, p := range l.spares {
		if p.catalog != cat {
			stale = append(stale, p)
		} else {
			keep = append(keep, p)
		}
	}
	l.spares = keep
	l.mu.Unlock()
	for _, p := range stale {
		go p.discard()
	}
	l.refill()
}

// Close kills and reaps the spares. Runs already started go on. Later Starts
// fail with ErrClosed. Close may be called more than once.
func (l *Launcher) Close() {
	l.mu.Lock()
	l.closed = true
	spares := l.spares
	l.spares = nil
	l.mu.Unlock()
	for _, p := range spares {
		p.discard()
	}
}

// discard kills an unused worker's group, reaps it and removes its directory.
func (p *proc) discard() {
	killGroup(p.cmd.Process.Pid)
	_ = p.cmd.Wait()
	p.conn.Close()
	p.stderr.Close()
	_ = removeAll(p.dir)
}
