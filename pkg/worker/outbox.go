package worker

import (
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// keepSpare: a written buffer up to this size is kept for the next batch;
// a larger one (a large result) is let go.
const keepSpare = 256 << 10

// outbox holds the frames for one worker and writes them in order, whole,
// one writer at a time, in batches: whoever finds the outbox idle writes
// everything queued, and whatever is queued while it writes goes out with
// its next write. So results that are ready together (a Promise.all) cost
// one write, not one each.
//
// Two ways to write: drain blocks (a call's own goroutine, the lifecycle's
// helpers), and tryDrain never blocks (the reader goroutine, which must go on
// reading the worker while the worker writes to it): what the socket does
// not take at once is handed to a goroutine that blocks for it.
type outbox struct {
	conn net.Conn
	raw  syscall.RawConn // nil: no non-blocking writes, tryDrain hands off

	mu    sync.Mutex
	buf   []byte // frames queued, not yet being written
	spare []byte // a written buffer, for the next batch
	busy  bool   // a writer owns the socket
}

func newOutbox(conn net.Conn) *outbox {
	o := &outbox{conn: conn}
	if sc, ok := conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			o.raw = raw
		}
	}
	return o
}

// put queues a whole frame. A frame put into an empty outbox is taken as
// it is, not copied (a large result is written from where it was built).
func (o *outbox) put(frame []byte) {
	o.mu.Lock()
	if len(o.buf) == 0 && len(frame) > keepSpare {
		o.buf = frame
	} else {
		o.buf = append(o.buf, frame...)
	}
	o.mu.Unlock()
}

// appendLocked gives the queue to fn to append frames to in place (no
// copy); fn must only append.
func (o *outbox) append(fn func([]byte) []byte) {
	o.mu.Lock()
	o.buf = fn(o.buf)
	o.mu.Unlock()
}

// take makes the caller the writer of what is queued, or reports false
// when there is nothing to write or a writer is already at it (it will
// write what is queued). Under mu.
func (o *outbox) takeLocked() ([]byte, bool) {
	if o.busy || len(o.buf) == 0 {
		return nil, false
	}
	o.busy = true
	b := o.buf
	o.buf = o.spare[:0]
	o.spare = nil
	return b, true
}

// done returns a written buffer and reports the next batch to write, if
// any; with none the caller is no longer the writer. Under mu.
func (o *outbox) doneLocked(written []byte) ([]byte, bool) {
	if cap(written) <= keepSpare && o.spare == nil {
		o.spare = written[:0]
	}
	if len(o.buf) == 0 {
		o.busy = false
		return nil, false
	}
	b := o.buf
	o.buf = o.spare[:0]
	o.spare = nil
	return b, true
}

// drain writes what is queued, blocking, and keeps writing what is queued
// meanwhile, unless another writer is at it. Write errors drop the frames:
// the worker is gone or not reading, and its exit or the deadline (the
// socket's write deadline) ends the run.
func (o *outbox) drain() {
	o.mu.Lock()
	b, ok := o.takeLocked()
	o.mu.Unlock()
	if ok {
		o.writeFrom(b, 0)
	}
}

// writeFrom is the writer's loop: b[off:] first, then each next batch.
func (o *outbox) writeFrom(b []byte, off int) {
	for {
		if off < len(b) {
			_, _ = o.conn.Write(b[off:])
		}
		o.mu.Lock()
		next, ok := o.doneLocked(b)
		o.mu.Unlock()
		if !ok {
			return
		}
		b, off = next, 0
	}
}

// tryDrain writes what is queued without blocking; the rest, if the socket
// is full, is left to a goroutine of its own.
func (o *outbox) tryDrain() {
	o.mu.Lock()
	b, ok := o.takeLocked()
	o.mu.Unlock()
	if !ok {
		return
	}
	for {
		n := o.writeNow(b)
		if n < len(b) {
			go o.writeFrom(b, n)
			return
		}
		o.mu.Lock()
		next, more := o.doneLocked(b)
		o.mu.Unlock()
		if !more {
			return
		}
		b = next
	}
}

// writeNow writes as much of b as the socket takes at once.
func (o *outbox) writeNow(b []byte) int {
	if o.raw == nil {
		return 0
	}
	written := 0
	_ = o.raw.Write(func(fd uintptr) bool {
		for written < len(b) {
			n, err := unix.Write(int(fd), b[written:])
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				break
			}
			written += n
		}
		return true // never wait here: the rest goes to a goroutine
	})
	return written
}
