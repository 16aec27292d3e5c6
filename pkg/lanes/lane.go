package lanes

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The bounds of a lane. Each has its reason.
const (
	// DefaultMaxActive is how many calls to one server run at once. Most MCP
	// servers over stdio answer one request at a time or a few; 4 lets a
	// program's Promise.all make progress without flooding a slow server.
	DefaultMaxActive = 4
	// DefaultMaxOutstanding is how many calls to one server may be running or
	// queued. It is four runs each with a full 16 calls in flight (the
	// worker's DefaultMaxInFlight), so ordinary fan-out queues and never sees
	// ErrLaneFull; beyond it a server is too far behind for waiting to help.
	DefaultMaxOutstanding = 64
	// MaxOutstandingLimit bounds MaxOutstanding: every queued call holds a
	// goroutine and its arguments, so a larger value is a mistake in the
	// configuration rather than a need.
	MaxOutstandingLimit = 100_000
)

// Sentinel errors. Errors returned by this package wrap one of these, with
// the lane's name and the detail in the text; callers branch with errors.Is.
var (
	// ErrLaneFull: refused at once because MaxOutstanding calls were already
	// running or queued. Nothing was started.
	ErrLaneFull = errors.New("lane full")
	// ErrClosed: the lane was closed before the call started. Nothing was
	// started.
	ErrClosed = errors.New("lane closed")
	// ErrBadConfig: a Config outside its documented range.
	ErrBadConfig = errors.New("bad lane config")
)

// Config sets a lane's bounds. A zero field selects its default.
type Config struct {
	// MaxActive is how many calls run fn at once: 1 ≤ MaxActive ≤
	// MaxOutstanding. Zero means DefaultMaxActive.
	MaxActive int
	// MaxOutstanding is how many calls may be running or queued at once:
	// MaxActive ≤ MaxOutstanding ≤ MaxOutstandingLimit. Zero means
	// DefaultMaxOutstanding. A call beyond it gets ErrLaneFull at once.
	MaxOutstanding int
}

// Normalize fills the zero fields with their defaults and checks that
// 1 ≤ MaxActive ≤ MaxOutstanding ≤ MaxOutstandingLimit. The error wraps
// ErrBadConfig and names the field and its range. A default counts as if it
// had been given, so {MaxOutstanding: 2} is an error (MaxActive is then 4).
func (c Config) Normalize() (Config, error) {
	activeNote, outNote := "", ""
	if c.MaxActive == 0 {
		c.MaxActive, activeNote = DefaultMaxActive, " (the default)"
	}
	if c.MaxOutstanding == 0 {
		c.MaxOutstanding, outNote = DefaultMaxOutstanding, " (the default)"
	}
	if c.MaxOutstanding < 1 || c.MaxOutstanding > MaxOutstandingLimit {
		return Config{}, fmt.Errorf("lanes: %w: MaxOutstanding is %d%s, want 1 ≤ MaxOutstanding ≤ %d",
			ErrBadConfig, c.MaxOutstanding, outNote, MaxOutstandingLimit)
	}
	if c.MaxActive < 1 || c.MaxActive > c.MaxOutstanding {
		return Config{}, fmt.Errorf("lanes: %w: MaxActive is %d%s, want 1 ≤ MaxActive ≤ MaxOutstanding (%d%s)",
			ErrBadConfig, c.MaxActive, activeNote, c.MaxOutstanding, outNote)
	}
	return c, nil
}

// Lane is the queue in front of one downstream server. It is safe for
// concurrent use. The zero Lane is not usable; make one with New.
type Lane struct {
	name string
	cfg  Config

	mu      sync.Mutex
	active  int        // slots held: fn running, or granted and about to run
	queue   *list.List // of *waiter, oldest at the front
	closed  bool
	started uint64
	refused uint64
	expired uint64
}

// waiter is one queued call. Whoever removes it from the queue, under mu,
// sets elem to nil and sends exactly once on ready: nil for a granted slot
// (already counted in active), ErrClosed when the lane closed. The buffer of
// one means that send never blocks, even if the waiter has stopped listening.
type waiter struct {
	elem  *list.Element // nil once removed from the queue
	ready chan error
}

// New returns an open lane for the server called name (used only in error
// text and Snapshot), with cfg normalized as by Config.Normalize.
func New(name string, cfg Config) (*Lane, error) {
	cfg, err := cfg.Normalize()
	if err != nil {
		return nil, fmt.Errorf("lane %q: %w", name, err)
	}
	return &Lane{name: name, cfg: cfg, queue: list.New()}, nil
}

// Stats describes one call to Do.
type Stats struct {
	// Queued is how long the call waited in the queue: until fn started, or
	// until the call gave up without starting. It is 0 for a call that
	// started at once or was refused at once.
	Queued time.Duration
	// Started reports whether fn ran. False means nothing was sent and the
	// error is ErrLaneFull, ErrClosed or the context's error.
	Started bool
}

// Do waits for a slot in FIFO order, then runs fn in the calling goroutine
// with ctx itself (its deadline, values and cancellation), and returns fn's
// error unchanged with Started true. The slot is freed when fn returns or
// panics; a panic propagates to Do's caller. Queued calls start strictly in
// the order they entered Do: a later call never starts while an earlier one
// is still waiting. Do is Enter followed by Ticket.Do.
//
// Without running fn, Do returns Started false and an error that wraps one
// of:
//   - ErrLaneFull, at once, when MaxOutstanding calls are already running or
//     queued;
//   - ErrClosed, at once on a closed lane, or as soon as Close is called
//     while this call is queued;
//   - ctx.Err() (so errors.Is(err, context.DeadlineExceeded) works) when ctx
//     is already done on entry or ends while the call is queued. The call
//     leaves the queue at once and frees its place; Do never blocks past the
//     end of ctx. If a slot is granted in the same moment ctx ends, the slot
//     is passed on and this call still returns the context's error.
//
// Started false means nothing was sent downstream, and the gateway reports
// ToolRefused; Started true means fn ran, and the outcome is fn's to report.
// Stats.Queued is how long the call queued before fn started (0 when it
// started at once). Do panics if fn is nil.
func (l *Lane) Do(ctx context.Context, fn func(ctx context.Context) error) (Stats, error) {
	if fn == nil {
		panic("lanes: Do called with a nil fn")
	}
	t, err := l.Enter(ctx)
	if err != nil {
		return Stats{}, err
	}
	return t.Do(ctx, fn)
}

// Ticket is a call's place in a lane, taken by Enter: either a slot already
// granted or a place in the queue. Its owner must call Do or Leave on it
// exactly once (a ticket neither used nor left holds its place, and with it
// a slot, for ever); later calls panic. A Ticket is for one goroutine at a
// time: Enter on one, then Do on another is the intended use.
type Ticket struct {
	l       *Lane
	w       *waiter // nil when the slot was granted at Enter
	entered time.Time
	used    bool
}

// Enter takes a place in the lane without blocking: a free slot when one is
// free and nobody queues, else the place at the back of the queue. Places
// are granted in the order Enter was called, so callers that must keep an
// order (the calls of one program, as its worker sent them) call Enter in
// that order, from one goroutine, and may then wait in Ticket.Do on as many
// goroutines as they like.
//
// It refuses, with Started-false errors as Do's, when the lane is closed
// (ErrClosed), full (ErrLaneFull), or ctx has already ended (ctx.Err()). The
// returned Ticket must be used with Do or given back with Leave.
func (l *Lane) Enter(ctx context.Context) (*Ticket, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.refused++
		return nil, l.closedErr()
	}
	if err := ctx.Err(); err != nil {
		l.expired++
		return nil, fmt.Errorf("lane %q: not started, the context had already ended: %w", l.name, err)
	}
	if n := l.active + l.queue.Len(); n >= l.cfg.MaxOutstanding {
		l.refused++
		return nil, fmt.Errorf("lane %q: %w: %d running and %d queued, the cap is %d",
			l.name, ErrLaneFull, l.active, l.queue.Len(), l.cfg.MaxOutstanding)
	}
	t := &Ticket{l: l, entered: time.Now()}
	if l.active < l.cfg.MaxActive && l.queue.Len() == 0 {
		l.active++ // granted now: held until Do's fn returns, or Leave
		return t, nil
	}
	t.w = &waiter{ready: make(chan error, 1)}
	t.w.elem = l.queue.PushBack(t.w)
	return t, nil
}

// Leave gives the ticket's place back without running anything (the call
// was refused after it entered the lane, so nothing was sent): a granted
// slot passes to the head of the queue, a queued place is removed. It is
// counted as expired. Leave after Do, or twice, panics.
func (t *Ticket) Leave() {
	t.use()
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expired++
	switch {
	case t.w == nil:
		l.active--
		l.grantLocked()
	case t.w.elem != nil:
		l.queue.Remove(t.w.elem)
		t.w.elem = nil
	default:
		// Removed by a grant (a slot is counted for us: pass it on) or by
		// Close (nothing to give back); the send is in the buffer.
		if <-t.w.ready == nil {
			l.active--
			l.grantLocked()
		}
	}
}

func (t *Ticket) use() {
	if t.used {
		panic("lanes: a Ticket used twice")
	}
	t.used = true
}

// Do waits for the ticket's slot (at once if it was granted at Enter), then
// runs fn in the calling goroutine with ctx, exactly as Lane.Do does, and
// with the same results; Stats.Queued counts from Enter. A second Do, or Do
// after Leave, panics, as does a nil fn.
func (t *Ticket) Do(ctx context.Context, fn func(ctx context.Context) error) (Stats, error) {
	if fn == nil {
		panic("lanes: Do called with a nil fn")
	}
	t.use()
	l := t.l
	if t.w == nil {
		l.mu.Lock()
		switch {
		case l.closed:
			// Granted at Enter, closed since: like a queued call, it does
			// not start.
			l.active--
			l.refused++
			l.mu.Unlock()
			return Stats{}, l.closedErr()
		case ctx.Err() != nil:
			// Granted at Enter, but the caller has gone since: pass the
			// slot on rather than start the call.
			l.active--
			l.grantLocked()
			l.expired++
			l.mu.Unlock()
			waited := time.Since(t.entered)
			return Stats{Queued: waited}, l.expiredErr(ctx, waited)
		}
		l.started++
		l.mu.Unlock()
		return l.run(ctx, fn, Stats{Started: true})
	}
	w := t.w
	var res error
	granted := false // res came from w.ready
	select {
	case res = <-w.ready:
		granted = true
	case <-ctx.Done():
	}

	l.mu.Lock()
	waited := time.Since(t.entered)
	if !granted {
		if w.elem != nil {
			l.queue.Remove(w.elem)
			w.elem = nil
			l.expired++
			l.mu.Unlock()
			return Stats{Queued: waited}, l.expiredErr(ctx, waited)
		}
		// Removed by a grant or by Close before we took mu: the send was
		// made under mu, so it is in the buffer now and this never blocks.
		res = <-w.ready
	}
	if res != nil {
		l.mu.Unlock() // counted in refused by Close
		return Stats{Queued: waited}, l.closedErr()
	}
	if err := ctx.Err(); err != nil {
		// Granted, but ctx ended too: pass the slot on rather than start a
		// call whose caller has gone.
		l.active--
		l.grantLocked()
		l.expired++
		l.mu.Unlock()
		return Stats{Queued: waited}, l.expiredErr(ctx, waited)
	}
	l.started++
	l.mu.Unlock()
	return l.run(ctx, fn, Stats{Queued: waited, Started: true})
}

// run calls fn holding a slot already counted in active, and frees it after.
func (l *Lane) run(ctx context.Context, fn func(context.Context) error, st Stats) (Stats, error) {
	defer l.release()
	return st, fn(ctx)
}

// release frees one slot and hands it to the head of the queue.
func (l *Lane) release() {
	l.mu.Lock()
	l.active--
	l.grantLocked()
	l.mu.Unlock()
}

// grantLocked gives free slots to waiters, oldest first. l.mu must be held.
func (l *Lane) grantLocked() {
	for l.active < l.cfg.MaxActive && l.queue.Len() > 0 {
		w := l.queue.Remove(l.queue.Front()).(*waiter)
		w.elem = nil
		l.active++
		w.ready <- nil // buffered, sent once: never blocks
	}
}

func (l *Lane) closedErr() error {
	return fmt.Errorf("lane %q: %w", l.name, ErrClosed)
}

func (l *Lane) expiredErr(ctx context.Context, waited time.Duration) error {
	return fmt.Errorf("lane %q: not started after %v queued: %w", l.name, waited, ctx.Err())
}

// Snapshot is the state of a lane at one moment, for server_info.
type Snapshot struct {
	Name           string `json:"name"`
	MaxActive      int    `json:"maxActive"`
	MaxOutstanding int    `json:"maxOutstanding"`
	Closed         bool   `json:"closed,omitempty"`

	Active int `json:"active"` // calls holding a slot (running fn, or granted and about to)
	Queued int `json:"queued"` // calls waiting for a slot

	// Totals since New.
	Started uint64 `json:"started"` // calls whose fn ran
	Refused uint64 `json:"refused"` // not started: lane full, or lane closed (including queued calls Close woke)
	Expired uint64 `json:"expired"` // not started: the caller's context ended first
}

// Snapshot returns the lane's counts now. It is safe to call at any time,
// including after Close, and never blocks on a call.
func (l *Lane) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Snapshot{
		Name:           l.name,
		MaxActive:      l.cfg.MaxActive,
		MaxOutstanding: l.cfg.MaxOutstanding,
		Closed:         l.closed,
		Active:         l.active,
		Queued:         l.queue.Len(),
		Started:        l.started,
		Refused:        l.refused,
		Expired:        l.expired,
	}
}

// Close refuses new calls with ErrClosed and wakes every queued call with
// ErrClosed; calls already running fn run on and free their slots as usual.
// It does not wait for them. Close is idempotent and safe to call
// concurrently with anything, including itself.
func (l *Lane) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for e := l.queue.Front(); e != nil; e = e.Next() {
		w := e.Value.(*waiter)
		w.elem = nil
		w.ready <- ErrClosed // buffered, sent once: never blocks
		l.refused++
	}
	l.queue.Init()
}
