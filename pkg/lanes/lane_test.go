package lanes_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/run-js-server/run-js-server/pkg/lanes"
)

// watchdog is how long any blocking wait outside synctest may take before the
// test fails naming the guard that did not hold.
const watchdog = 5 * time.Second

func newLane(t *testing.T, active, outstanding int) *lanes.Lane {
	t.Helper()
	l, err := lanes.New("srv", lanes.Config{MaxActive: active, MaxOutstanding: outstanding})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

// call is one Do running in its own goroutine. Its fn records that it ran
// and blocks until release is called, then returns fnErr.
type call struct {
	name  string
	ran   atomic.Bool
	gate  chan struct{}
	done  chan struct{}
	fnErr error
	st    lanes.Stats // valid once done is closed
	err   error       // valid once done is closed
}

// start begins a Do on l in a new goroutine. In a synctest bubble, follow it
// with synctest.Wait so the call has reached its slot or its place in line.
func start(l *lanes.Lane, ctx context.Context, name string) *call {
	c := &call{name: name, gate: make(chan struct{}), done: make(chan struct{}), fnErr: fmt.Errorf("fn %s", name)}
	go func() {
		defer close(c.done)
		c.st, c.err = l.Do(ctx, func(context.Context) error {
			c.ran.Store(true)
			<-c.gate
			return c.fnErr
		})
	}()
	return c
}

func (c *call) release() { close(c.gate) }

func (c *call) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// mustRun checks, after synctest.Wait, that c holds a slot and is inside fn.
func (c *call) mustRun(t *testing.T) {
	t.Helper()
	if !c.ran.Load() || c.finished() {
		t.Fatalf("call %s: ran=%v finished=%v, want it running fn", c.name, c.ran.Load(), c.finished())
	}
}

// mustWait checks, after synctest.Wait, that c is queued: not run, not returned.
func (c *call) mustWait(t *testing.T) {
	t.Helper()
	if c.ran.Load() || c.finished() {
		t.Fatalf("call %s: ran=%v finished=%v, want it queued", c.name, c.ran.Load(), c.finished())
	}
}

// mustRefuse checks, after synctest.Wait, that c returned target without
// running fn.
func (c *call) mustRefuse(t *testing.T, target error) {
	t.Helper()
	if !c.finished() {
		t.Fatalf("call %s still blocked, want it to have returned %v", c.name, target)
	}
	if c.ran.Load() || c.st.Started {
		t.Fatalf("call %s: fn ran=%v Started=%v, want neither", c.name, c.ran.Load(), c.st.Started)
	}
	if !errors.Is(c.err, target) {
		t.Fatalf("call %s: err = %v, want errors.Is %v", c.name, c.err, target)
	}
}

// mustSucceed checks, after synctest.Wait, that c ran fn and returned fn's error.
func (c *call) mustSucceed(t *testing.T) {
	t.Helper()
	if !c.finished() {
		t.Fatalf("call %s still blocked, want it finished", c.name)
	}
	if !c.ran.Load() || !c.st.Started || c.err != c.fnErr {
		t.Fatalf("call %s: ran=%v Started=%v err=%v, want fn's own error %v", c.name, c.ran.Load(), c.st.Started, c.err, c.fnErr)
	}
}

func wantSnapshot(t *testing.T, l *lanes.Lane, active, queued int, started, refused, expired uint64) {
	t.Helper()
	s := l.Snapshot()
	if s.Active != active || s.Queued != queued || s.Started != started || s.Refused != refused || s.Expired != expired {
		t.Fatalf("Snapshot = active %d queued %d started %d refused %d expired %d, want %d %d %d %d %d",
			s.Active, s.Queued, s.Started, s.Refused, s.Expired, active, queued, started, refused, expired)
	}
}

// A fan-out of 200 calls never has more than MaxActive inside fn at once, and
// does reach MaxActive. A fast path that skips the count, or a release that
// grants two slots for one, shows up as a peak above MaxActive.
func TestMaxActiveUnderFanOut(t *testing.T) {
	t.Parallel()
	for _, maxActive := range []int{1, 4, 7} {
		t.Run(fmt.Sprintf("MaxActive=%d", maxActive), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 200
				l := newLane(t, maxActive, n)
				var cur, peak atomic.Int64
				var wg sync.WaitGroup
				errs := make([]error, n)
				stats := make([]lanes.Stats, n)
				for i := range n {
					wg.Go(func() {
						stats[i], errs[i] = l.Do(context.Background(), func(context.Context) error {
							c := cur.Add(1)
							for {
								p := peak.Load()
								if c <= p || peak.CompareAndSwap(p, c) {
									break
								}
							}
							if a := l.Snapshot().Active; a > maxActive {
								t.Errorf("Snapshot().Active = %d inside fn, above MaxActive %d", a, maxActive)
							}
							time.Sleep(time.Duration(1+i%5) * time.Millisecond)
							cur.Add(-1)
							return nil
						})
					})
				}
				wg.Wait()
				for i := range n {
					if errs[i] != nil || !stats[i].Started {
						t.Fatalf("call %d: Started=%v err=%v, want started and nil", i, stats[i].Started, errs[i])
					}
				}
				if p := peak.Load(); p != int64(maxActive) {
					t.Fatalf("peak concurrent fn = %d, want exactly MaxActive %d", p, maxActive)
				}
				wantSnapshot(t, l, 0, 0, n, 0, 0)
			})
		})
	}
}

// The (MaxOutstanding+1)th call is refused at once without running fn; once
// calls finish the lane takes new ones again. An off-by-one in the cap queues
// the extra call; a slot not freed on return keeps refusing.
func TestLaneFullRefusesAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLane(t, 2, 5)
		ctx := context.Background()
		var calls []*call
		for i := range 5 {
			calls = append(calls, start(l, ctx, fmt.Sprint(i)))
			synctest.Wait()
		}
		calls[0].mustRun(t)
		calls[1].mustRun(t)
		for _, c := range calls[2:] {
			c.mustWait(t)
		}
		wantSnapshot(t, l, 2, 3, 2, 0, 0)

		t0 := time.Now()
		extra := start(l, ctx, "extra")
		synctest.Wait()
		extra.mustRefuse(t, lanes.ErrLaneFull)
		if extra.st.Queued != 0 || time.Since(t0) != 0 {
			t.Fatalf("refused call: Queued %v after %v, want 0 and at once", extra.st.Queued, time.Since(t0))
		}
		if !strings.Contains(extra.err.Error(), `"srv"`) {
			t.Fatalf("ErrLaneFull text %q does not name the lane", extra.err)
		}
		wantSnapshot(t, l, 2, 3, 2, 1, 0)

		// One finishes: the head waiter starts and one place opens.
		calls[0].release()
		synctest.Wait()
		calls[0].mustSucceed(t)
		calls[2].mustRun(t)
		again := start(l, ctx, "again")
		synctest.Wait()
		again.mustWait(t)
		wantSnapshot(t, l, 2, 3, 3, 1, 0)
		full := start(l, ctx, "full-again")
		synctest.Wait()
		full.mustRefuse(t, lanes.ErrLaneFull)

		for _, c := range append(calls[1:], again) {
			c.release()
			synctest.Wait()
			c.mustSucceed(t)
		}
		wantSnapshot(t, l, 0, 0, 6, 2, 0)
	})
}

// Queued calls start in the order they entered, one per freed slot. A LIFO
// queue, a grant to the back, or waking all waiters to race for the slot
// (sync.Cond broadcast) all break the recorded order.
func TestFIFOOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 12
		l := newLane(t, 2, n+2)
		ctx := context.Background()
		hold := []*call{start(l, ctx, "hold0"), start(l, ctx, "hold1")}
		synctest.Wait()
		var queued []*call
		for i := range n {
			queued = append(queued, start(l, ctx, fmt.Sprint(i)))
			synctest.Wait() // i is in line before i+1 enters Do
		}
		running := hold
		for i := range n {
			running[0].release()
			running = running[1:]
			synctest.Wait()
			for j, c := range queued {
				switch {
				case j <= i:
					if !c.ran.Load() {
						t.Fatalf("after %d releases, call %d has not started, want calls 0..%d started", i+1, j, i)
					}
				default:
					if c.ran.Load() {
						t.Fatalf("after %d releases, call %d started before call %d: not FIFO", i+1, j, i+1)
					}
				}
			}
			running = append(running, queued[i])
		}
		for _, c := range running {
			c.release()
		}
		synctest.Wait()
		for _, c := range append(hold, queued...) {
			c.mustSucceed(t)
		}
		for i, c := range queued {
			if want := time.Duration(0); c.st.Queued != want {
				t.Fatalf("call %d: Queued %v, want %v (no fake time passed)", i, c.st.Queued, want)
			}
		}
	})
}

// A queued call whose deadline passes returns at the deadline with a wrapped
// DeadlineExceeded, never runs, and frees its place; the call behind it is
// next. A waiter left in the queue after giving up would take the next slot
// and hold it forever (the call behind never starts) and keep its place
// (the late call would be refused).
func TestDeadlineWhileQueued(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLane(t, 1, 3)
		bg := context.Background()
		hold := start(l, bg, "hold")
		synctest.Wait()
		ctx, cancel := context.WithTimeout(bg, 2*time.Second)
		defer cancel()
		expiring := start(l, ctx, "expiring")
		synctest.Wait()
		behind := start(l, bg, "behind")
		synctest.Wait()
		expiring.mustWait(t)
		behind.mustWait(t)
		wantSnapshot(t, l, 1, 2, 1, 0, 0)

		t0 := time.Now()
		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		expiring.mustWait(t) // not a moment early
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		expiring.mustRefuse(t, context.DeadlineExceeded)
		if expiring.st.Queued != 2*time.Second || time.Since(t0) != 2*time.Second {
			t.Fatalf("expired call: Queued %v, returned after %v; want 2s and 2s", expiring.st.Queued, time.Since(t0))
		}
		wantSnapshot(t, l, 1, 1, 1, 0, 1)

		// Its place is free: a new call queues (hold + behind + late = 3).
		late := start(l, bg, "late")
		synctest.Wait()
		late.mustWait(t)
		hold.release()
		synctest.Wait()
		hold.mustSucceed(t)
		behind.mustRun(t)
		late.mustWait(t)
		behind.release()
		synctest.Wait()
		late.mustRun(t)
		late.release()
		synctest.Wait()
		late.mustSucceed(t)
		behind.mustSucceed(t)
		if expiring.ran.Load() {
			t.Fatal("the expired call's fn ran later")
		}
		wantSnapshot(t, l, 0, 0, 3, 0, 1)
	})
}

// Cancelling a queued call, or calling with a context that has already ended,
// returns context.Canceled without running fn, even when a slot is free.
func TestCancelled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLane(t, 1, 4)
		bg := context.Background()

		done, cancelNow := context.WithCancel(bg)
		cancelNow()
		pre := start(l, done, "pre-cancelled")
		synctest.Wait()
		pre.mustRefuse(t, context.Canceled)
		wantSnapshot(t, l, 0, 0, 0, 0, 1)

		hold := start(l, bg, "hold")
		synctest.Wait()
		ctx, cancel := context.WithCancel(bg)
		victim := start(l, ctx, "victim")
		synctest.Wait()
		behind := start(l, bg, "behind")
		synctest.Wait()
		cancel()
		synctest.Wait()
		victim.mustRefuse(t, context.Canceled)
		behind.mustWait(t)
		hold.release()
		synctest.Wait()
		behind.mustRun(t)
		behind.release()
		synctest.Wait()
		behind.mustSucceed(t)
		wantSnapshot(t, l, 0, 0, 2, 0, 2)
	})
}

// A slot granted in the same instant the waiter's deadline passes is passed
// on, not lost: every run ends with an empty lane and the call behind runs.
// Dropping the grant in that case leaks the slot and the lane deadlocks.
func TestGrantAndDeadlineSameInstant(t *testing.T) {
	t.Parallel()
	var ranCount, expiredCount int
	for i := range 200 {
		synctest.Test(t, func(t *testing.T) {
			l := newLane(t, 1, 3)
			bg := context.Background()
			holdDone := make(chan struct{})
			go func() {
				defer close(holdDone)
				l.Do(bg, func(context.Context) error { time.Sleep(time.Second); return nil })
			}()
			synctest.Wait()
			ctx, cancel := context.WithTimeout(bg, time.Second)
			defer cancel()
			racer := start(l, ctx, "racer")
			synctest.Wait()
			behind := start(l, bg, "behind")
			synctest.Wait()
			racer.release()
			behind.release()
			time.Sleep(time.Second)
			synctest.Wait()
			<-holdDone
			if !racer.finished() || !behind.finished() {
				t.Fatalf("iteration %d: racer finished=%v behind finished=%v, want both (a slot was lost)", i, racer.finished(), behind.finished())
			}
			if racer.st.Started != racer.ran.Load() {
				t.Fatalf("iteration %d: racer Started=%v but fn ran=%v", i, racer.st.Started, racer.ran.Load())
			}
			if !racer.st.Started && !errors.Is(racer.err, context.DeadlineExceeded) {
				t.Fatalf("iteration %d: racer not started with err %v, want DeadlineExceeded", i, racer.err)
			}
			behind.mustSucceed(t)
			s := l.Snapshot()
			if s.Active != 0 || s.Queued != 0 || s.Started+s.Expired != 3 {
				t.Fatalf("iteration %d: Snapshot %+v, want empty lane and 3 calls accounted for", i, s)
			}
			if racer.st.Started {
				ranCount++
			} else {
				expiredCount++
			}
		})
	}
	// Both orders must occur, or this test is not testing the race.
	if ranCount == 0 || expiredCount == 0 {
		t.Fatalf("racer ran %d times and expired %d times in 200 tries, want both outcomes", ranCount, expiredCount)
	}
	t.Logf("racer ran %d, expired %d", ranCount, expiredCount)
}

// A call whose context ended before its slot was granted never runs, even
// when the grant reaches it before it notices the cancellation: the slot goes
// to the call behind. Starting fn on any grant would send a call for a caller
// that has already gone (in about half of these tries).
func TestCancelledBeforeGrantNeverRuns(t *testing.T) {
	t.Parallel()
	for i := range 200 {
		synctest.Test(t, func(t *testing.T) {
			l := newLane(t, 1, 3)
			bg := context.Background()
			hold := start(l, bg, "hold")
			synctest.Wait()
			ctx, cancel := context.WithCancel(bg)
			racer := start(l, ctx, "racer")
			synctest.Wait()
			behind := start(l, bg, "behind")
			synctest.Wait()
			cancel()       // the racer's context ends first,
			hold.release() // then its slot frees; both wake at once
			synctest.Wait()
			racer.mustRefuse(t, context.Canceled)
			behind.mustRun(t)
			behind.release()
			synctest.Wait()
			hold.mustSucceed(t)
			behind.mustSucceed(t)
			if s := l.Snapshot(); s.Active != 0 || s.Queued != 0 || s.Started != 2 || s.Expired != 1 {
				t.Fatalf("iteration %d: Snapshot %+v, want empty, 2 started, 1 expired", i, s)
			}
		})
	}
}

// Stats.Queued is the time from entering the queue to fn starting, to the
// nanosecond of the fake clock: not counting fn's own run, and 0 for a call
// that started at once.
func TestQueuedDuration(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLane(t, 1, 4)
		bg := context.Background()
		hold := start(l, bg, "hold")
		synctest.Wait()
		a := start(l, bg, "a")
		synctest.Wait()
		time.Sleep(2 * time.Second)
		b := start(l, bg, "b")
		synctest.Wait()
		time.Sleep(3 * time.Second)
		hold.release() // t=5s: a starts
		synctest.Wait()
		a.mustRun(t)
		time.Sleep(time.Second)
		a.release() // t=6s: b starts, 4s after it queued
		synctest.Wait()
		b.mustRun(t)
		time.Sleep(time.Second)
		b.release()
		synctest.Wait()
		for _, tc := range []struct {
			c    *call
			want time.Duration
		}{{hold, 0}, {a, 5 * time.Second}, {b, 4 * time.Second}} {
			tc.c.mustSucceed(t)
			if tc.c.st.Queued != tc.want {
				t.Errorf("call %s: Queued %v, want %v", tc.c.name, tc.c.st.Queued, tc.want)
			}
		}
	})
}

// Close wakes queued calls with ErrClosed, refuses new ones, and lets the
// running call finish with its own result. A Close that forgot the queue
// leaves the waiters blocked; one that cancelled running calls would change
// their result; a second Close must not panic or count again.
func TestClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLane(t, 1, 8)
		bg := context.Background()
		var runCtxErr error
		running := &call{name: "running", gate: make(chan struct{}), done: make(chan struct{}), fnErr: errors.New("fn running")}
		go func() {
			defer close(running.done)
			running.st, running.err = l.Do(bg, func(ctx context.Context) error {
				running.ran.Store(true)
				<-running.gate
				runCtxErr = ctx.Err()
				return running.fnErr
			})
		}()
		synctest.Wait()
		var queued []*call
		for i := range 3 {
			queued = append(queued, start(l, bg, fmt.Sprint(i)))
			synctest.Wait()
		}
		time.Sleep(time.Second)
		l.Close()
		synctest.Wait()
		for _, c := range queued {
			c.mustRefuse(t, lanes.ErrClosed)
			if c.st.Queued != time.Second {
				t.Errorf("call %s: Queued %v, want 1s", c.name, c.st.Queued)
			}
		}
		running.mustRun(t)
		late := start(l, bg, "late")
		synctest.Wait()
		late.mustRefuse(t, lanes.ErrClosed)
		l.Close()
		s := l.Snapshot()
		if !s.Closed || s.Active != 1 || s.Queued != 0 || s.Refused != 4 {
			t.Fatalf("after Close: Snapshot %+v, want closed, 1 active, 0 queued, 4 refused", s)
		}

		running.release()
		synctest.Wait()
		running.mustSucceed(t)
		if runCtxErr != nil {
			t.Fatalf("the running call's ctx ended (%v) on Close", runCtxErr)
		}
		l.Close()
		wantSnapshot(t, l, 0, 0, 1, 4, 0)
	})
}

// Snapshot counts each outcome once, in its own field.
func TestSnapshotCounts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l, err := lanes.New("github", lanes.Config{MaxActive: 2, MaxOutstanding: 4})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		s := l.Snapshot()
		if s.Name != "github" || s.MaxActive != 2 || s.MaxOutstanding != 4 || s.Closed {
			t.Fatalf("fresh Snapshot %+v, want name github, 2/4, open", s)
		}
		wantSnapshot(t, l, 0, 0, 0, 0, 0)
		bg := context.Background()
		r1, r2 := start(l, bg, "r1"), start(l, bg, "r2")
		synctest.Wait()
		wantSnapshot(t, l, 2, 0, 2, 0, 0)
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		q1, q2 := start(l, ctx, "q1"), start(l, bg, "q2")
		synctest.Wait()
		wantSnapshot(t, l, 2, 2, 2, 0, 0)
		full := start(l, bg, "full")
		synctest.Wait()
		full.mustRefuse(t, lanes.ErrLaneFull)
		wantSnapshot(t, l, 2, 2, 2, 1, 0)
		time.Sleep(time.Second)
		synctest.Wait()
		q1.mustRefuse(t, context.DeadlineExceeded)
		wantSnapshot(t, l, 2, 1, 2, 1, 1)
		r1.release()
		synctest.Wait()
		wantSnapshot(t, l, 2, 0, 3, 1, 1)
		r2.release()
		q2.release()
		synctest.Wait()
		wantSnapshot(t, l, 0, 0, 3, 1, 1)
	})
}

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		in      lanes.Config
		want    lanes.Config
		errWord string // "": valid; else the field the error must name
	}{
		{name: "zero is defaults", in: lanes.Config{}, want: lanes.Config{MaxActive: lanes.DefaultMaxActive, MaxOutstanding: lanes.DefaultMaxOutstanding}},
		{name: "smallest", in: lanes.Config{MaxActive: 1, MaxOutstanding: 1}, want: lanes.Config{MaxActive: 1, MaxOutstanding: 1}},
		{name: "largest", in: lanes.Config{MaxActive: 100_000, MaxOutstanding: 100_000}, want: lanes.Config{MaxActive: 100_000, MaxOutstanding: 100_000}},
		{name: "default active, set outstanding", in: lanes.Config{MaxOutstanding: 10}, want: lanes.Config{MaxActive: 4, MaxOutstanding: 10}},
		{name: "set active, default outstanding", in: lanes.Config{MaxActive: 64}, want: lanes.Config{MaxActive: 64, MaxOutstanding: 64}},
		{name: "negative active", in: lanes.Config{MaxActive: -1}, errWord: "MaxActive"},
		{name: "negative outstanding", in: lanes.Config{MaxOutstanding: -1}, errWord: "MaxOutstanding"},
		{name: "outstanding past limit", in: lanes.Config{MaxActive: 1, MaxOutstanding: 100_001}, errWord: "MaxOutstanding"},
		{name: "huge outstanding", in: lanes.Config{MaxOutstanding: 1 << 62}, errWord: "MaxOutstanding"},
		{name: "active above outstanding", in: lanes.Config{MaxActive: 5, MaxOutstanding: 4}, errWord: "MaxActive"},
		{name: "default active above set outstanding", in: lanes.Config{MaxOutstanding: 2}, errWord: "MaxActive"},
		{name: "set active above default outstanding", in: lanes.Config{MaxActive: 65}, errWord: "MaxActive"},
		{name: "min int", in: lanes.Config{MaxActive: -1 << 63, MaxOutstanding: -1 << 63}, errWord: "MaxOutstanding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.Normalize()
			l, newErr := lanes.New("srv", tc.in)
			if tc.errWord == "" {
				if err != nil || newErr != nil {
					t.Fatalf("Normalize err %v, New err %v; want valid", err, newErr)
				}
				if got != tc.want {
					t.Fatalf("Normalize = %+v, want %+v", got, tc.want)
				}
				if s := l.Snapshot(); s.MaxActive != tc.want.MaxActive || s.MaxOutstanding != tc.want.MaxOutstanding {
					t.Fatalf("lane Snapshot bounds %d/%d, want %+v", s.MaxActive, s.MaxOutstanding, tc.want)
				}
				return
			}
			for _, e := range []error{err, newErr} {
				if !errors.Is(e, lanes.ErrBadConfig) {
					t.Fatalf("err %v, want ErrBadConfig", e)
				}
				if !strings.Contains(e.Error(), tc.errWord+" is") || !strings.Contains(e.Error(), "≤") {
					t.Fatalf("err %q does not name %s and its range", e, tc.errWord)
				}
			}
			if l != nil {
				t.Fatal("New returned a lane with its error")
			}
		})
	}
}

func TestDoNilFnPanics(t *testing.T) {
	t.Parallel()
	l := newLane(t, 1, 1)
	defer func() {
		if recover() == nil {
			t.Fatal("Do(nil fn) did not panic")
		}
	}()
	l.Do(context.Background(), nil)
}

// A panic in fn frees its slot and reaches the caller.
func TestFnPanicFreesSlot(t *testing.T) {
	t.Parallel()
	l := newLane(t, 1, 1)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want boom", r)
			}
		}()
		l.Do(context.Background(), func(context.Context) error { panic("boom") })
	}()
	st, err := l.Do(context.Background(), func(context.Context) error { return nil })
	if err != nil || !st.Started {
		t.Fatalf("after a panic: Started=%v err=%v, want the slot free", st.Started, err)
	}
}

// waitFor fails the test, naming guard, unless done closes within watchdog.
func waitFor(t *testing.T, done <-chan struct{}, guard string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(watchdog):
		t.Fatalf("watchdog: %s did not happen within %v", guard, watchdog)
	}
}

// settleGoroutines waits for the goroutine count to fall back to before, or
// fails with the stacks of what is left.
func settleGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(watchdog)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("watchdog: goroutines did not settle: %d now, %d before\n%s", runtime.NumGoroutine(), before, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Real scheduling under -race: 50 goroutines call Do with random deadlines
// and cancellations. fn never sees more than MaxActive running, every call
// returns one of the documented outcomes, Started matches fn having run, the
// totals add up, and no goroutine is left behind.
func TestHammer(t *testing.T) {
	// Not parallel: it compares runtime.NumGoroutine before and after.
	const (
		workers   = 50
		perWorker = 200
		maxActive = 3
	)
	before := runtime.NumGoroutine()
	l := newLane(t, maxActive, 40)
	var cur, ran, startedTrue, full, expired atomic.Int64
	var violation atomic.Value
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range perWorker {
				var ctx context.Context
				var cancel context.CancelFunc
				stopTimer := func() bool { return false }
				switch r.IntN(4) {
				case 0: // a short deadline
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(r.IntN(200))*time.Microsecond)
				case 1: // cancelled from another goroutine, soon
					ctx, cancel = context.WithCancel(context.Background())
					stopTimer = time.AfterFunc(time.Duration(r.IntN(200))*time.Microsecond, cancel).Stop
				default: // never ends
					ctx, cancel = context.WithCancel(context.Background())
				}
				work := r.IntN(3)
				st, err := l.Do(ctx, func(context.Context) error {
					ran.Add(1)
					if c := cur.Add(1); c > maxActive {
						violation.Store(fmt.Sprintf("%d calls in fn at once, MaxActive %d", c, maxActive))
					}
					if a := l.Snapshot().Active; a > maxActive {
						violation.Store(fmt.Sprintf("Snapshot().Active %d, MaxActive %d", a, maxActive))
					}
					for range work {
						runtime.Gosched()
					}
					cur.Add(-1)
					return nil
				})
				stopTimer()
				cancel()
				switch {
				case st.Started && err == nil:
					startedTrue.Add(1)
				case st.Started:
					violation.Store(fmt.Sprintf("Started with error %v", err))
				case errors.Is(err, lanes.ErrLaneFull):
					full.Add(1)
				case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
					expired.Add(1)
				default:
					violation.Store(fmt.Sprintf("not started, unexpected error %v", err))
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitFor(t, done, "every Do call returning")
	if v := violation.Load(); v != nil {
		t.Fatalf("invariant broken: %v", v)
	}
	s := l.Snapshot()
	total := int64(workers * perWorker)
	if ran.Load() != startedTrue.Load() || uint64(ran.Load()) != s.Started {
		t.Fatalf("fn ran %d times, Started true %d, Snapshot.Started %d: want equal", ran.Load(), startedTrue.Load(), s.Started)
	}
	if startedTrue.Load()+full.Load()+expired.Load() != total ||
		uint64(full.Load()) != s.Refused || uint64(expired.Load()) != s.Expired {
		t.Fatalf("outcomes started %d full %d expired %d (Snapshot %+v), want them to add to %d and match", startedTrue.Load(), full.Load(), expired.Load(), s, total)
	}
	if s.Active != 0 || s.Queued != 0 {
		t.Fatalf("after all calls returned: Snapshot %+v, want nothing active or queued", s)
	}
	t.Logf("started %d, lane full %d, expired %d", startedTrue.Load(), full.Load(), expired.Load())
	settleGoroutines(t, before)
}

// Close in the middle of a storm: every caller returns, calls after Close are
// refused, and nothing is left running or queued.
func TestHammerClose(t *testing.T) {
	const workers = 50
	before := runtime.NumGoroutine()
	l := newLane(t, 2, 20)
	var cur atomic.Int64
	var violation atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				_, err := l.Do(context.Background(), func(context.Context) error {
					if c := cur.Add(1); c > 2 {
						violation.Store(fmt.Sprintf("%d in fn at once", c))
					}
					runtime.Gosched()
					cur.Add(-1)
					return nil
				})
				if errors.Is(err, lanes.ErrClosed) {
					return
				}
				if err != nil && !errors.Is(err, lanes.ErrLaneFull) {
					violation.Store(fmt.Sprintf("unexpected error %v", err))
					return
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	l.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitFor(t, done, "every caller returning after Close")
	if v := violation.Load(); v != nil {
		t.Fatalf("invariant broken: %v", v)
	}
	if s := l.Snapshot(); s.Active != 0 || s.Queued != 0 || !s.Closed {
		t.Fatalf("after Close and drain: Snapshot %+v, want closed and empty", s)
	}
	if _, err := l.Do(context.Background(), func(context.Context) error { return nil }); !errors.Is(err, lanes.ErrClosed) {
		t.Fatalf("Do after Close: %v, want ErrClosed", err)
	}
	settleGoroutines(t, before)
}

// Tickets taken with Enter in one order start in that order, whatever order
// their goroutines reach Ticket.Do in: the gateway's admission of a
// program's calls relies on it. Here the goroutines start in reverse.
func TestEnterKeepsOrderAcrossGoroutines(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 8
		l := newLane(t, 1, n)
		ctx := context.Background()
		tickets := make([]*lanes.Ticket, n)
		for i := range n {
			tk, err := l.Enter(ctx)
			if err != nil {
				t.Fatalf("Enter %d: %v", i, err)
			}
			tickets[i] = tk
		}
		wantSnapshot(t, l, 1, n-1, 0, 0, 0) // the first holds the slot, granted at Enter
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := n - 1; i >= 0; i-- {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := tickets[i].Do(ctx, func(context.Context) error {
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					return nil
				})
				if err != nil || !st.Started {
					t.Errorf("ticket %d: Started %v, err %v", i, st.Started, err)
				}
			}()
			synctest.Wait() // goroutine i is parked before i-1 starts
		}
		wg.Wait()
		if fmt.Sprint(order) != fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 6, 7}) {
			t.Fatalf("fn ran in order %v, want the order of Enter", order)
		}
		wantSnapshot(t, l, 0, 0, n, 0, 0)
	})
}

// Enter refuses as Do does, at once; Leave gives a granted slot to the next
// in line and takes a queued place out; a ticket used twice panics; a
// granted ticket does not start on a closed lane.
func TestTicketLeaveAndRefusals(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLane(t, 1, 3)
		ctx := context.Background()
		first, _ := l.Enter(ctx)
		second, _ := l.Enter(ctx)
		third, _ := l.Enter(ctx)
		if _, err := l.Enter(ctx); !errors.Is(err, lanes.ErrLaneFull) {
			t.Fatalf("Enter past MaxOutstanding: %v, want ErrLaneFull", err)
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := l.Enter(done); !errors.Is(err, context.Canceled) {
			t.Fatalf("Enter with an ended context: %v, want context.Canceled", err)
		}
		second.Leave() // queued: its place goes
		wantSnapshot(t, l, 1, 1, 0, 1, 2)
		first.Leave() // granted: the slot goes to third
		wantSnapshot(t, l, 1, 0, 0, 1, 3)
		ran := false
		if st, err := third.Do(ctx, func(context.Context) error { ran = true; return nil }); err != nil || !st.Started || !ran {
			t.Fatalf("third after two left: Started %v, err %v, ran %v", st.Started, err, ran)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("a ticket used twice did not panic")
				}
			}()
			third.Leave()
		}()
		granted, _ := l.Enter(ctx)
		l.Close()
		if st, err := granted.Do(ctx, func(context.Context) error { t.Fatal("fn ran on a closed lane"); return nil }); !errors.Is(err, lanes.ErrClosed) || st.Started {
			t.Fatalf("granted ticket after Close: Started %v, err %v, want ErrClosed", st.Started, err)
		}
		wantSnapshot(t, l, 0, 0, 1, 2, 3)
	})
}
