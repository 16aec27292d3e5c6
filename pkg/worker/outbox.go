package worker

import (
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// smallPiece: frames and heads up to this size are copied together into one
// buffer (a batch of results is one piece); a larger payload is a piece of
// its own, written from where it lies (a large result is not copied to be
// framed).
const smallPiece = 16 << 10

// maxIOV is how many pieces one writev takes (the kernel's IOV_MAX).
const maxIOV = 1024

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
	q     [][]byte // pieces queued, in order, not yet being written
	small bool     // q's last piece is ours, for small frames to be added to
	busy  bool     // a writer owns the socket
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

// put queues a whole frame (the outbox may keep it: the caller must not
// change it).
func (o *outbox) put(frame []byte) {
	o.mu.Lock()
	o.addLocked(frame)
	o.mu.Unlock()
}

// putRef queues a frame made of head (its length fields and header, as
// wire.AppendFrameHead makes them) and payload.
func (o *outbox) putRef(head, payload []byte) {
	o.mu.Lock()
	o.addLocked(head)
	o.addLocked(payload)
	o.mu.Unlock()
}

// putPieces queues a frame made of pieces (its head first).
func (o *outbox) putPieces(pieces [][]byte) {
	o.mu.Lock()
	for _, p := range pieces {
		o.addLocked(p)
	}
	o.mu.Unlock()
}

func (o *outbox) addLocked(b []byte) {
	switch {
	case len(b) == 0:
	case len(b) > smallPiece:
		o.q = append(o.q, b)
		o.small = false
	case o.small && len(o.q[len(o.q)-1])+len(b) <= cap(o.q[len(o.q)-1]):
		o.q[len(o.q)-1] = append(o.q[len(o.q)-1], b...)
	default:
		piece := make([]byte, 0, max(4<<10, 2*len(b)))
		o.q = append(o.q, append(piece, b...))
		o.small = true
	}
}

// takeLocked makes the caller the writer of what is queued, or reports
// false when there is nothing to write or a writer is already at it (it will
// write what is queued).
func (o *outbox) takeLocked() ([][]byte, bool) {
	if o.busy || len(o.q) == 0 {
		return nil, false
	}
	o.busy = true
	q := o.q
	o.q, o.small = nil, false
	return q, true
}

// nextLocked is the writer's next batch, if any; with none the caller is no
// longer the writer.
func (o *outbox) nextLocked() ([][]byte, bool) {
	if len(o.q) == 0 {
		o.busy = false
		return nil, false
	}
	q := o.q
	o.q, o.small = nil, false
	return q, true
}

// drain writes what is queued, blocking, and keeps writing what is queued
// meanwhile, unless another writer is at it. Write errors drop the frames:
// the worker is gone or not reading, and its exit or the deadline (the
// socket's write deadline) ends the run.
func (o *outbox) drain() {
	o.mu.Lock()
	q, ok := o.takeLocked()
	o.mu.Unlock()
	if ok {
		o.writeFrom(q)
	}
}

// writeFrom is the writer's loop: q first, then each next batch.
func (o *outbox) writeFrom(q [][]byte) {
	for {
		bufs := net.Buffers(q)
		_, _ = bufs.WriteTo(o.conn) // writev, as many times as it takes
		o.mu.Lock()
		next, ok := o.nextLocked()
		o.mu.Unlock()
		if !ok {
			return
		}
		q = next
	}
}

// tryDrain writes what is queued without blocking; the rest, if the socket
// is full, is left to a goroutine of its own.
func (o *outbox) tryDrain() {
	o.mu.Lock()
	q, ok := o.takeLocked()
	o.mu.Unlock()
	if !ok {
		return
	}
	for {
		q = o.writeNow(q)
		if len(q) > 0 {
			go o.writeFrom(q)
			return
		}
		o.mu.Lock()
		next, more := o.nextLocked()
		o.mu.Unlock()
		if !more {
			return
		}
		q = next
	}
}

// writeNow writes as much of q as the socket takes at once and returns
// what is left.
func (o *outbox) writeNow(q [][]byte) [][]byte {
	if o.raw == nil {
		return q
	}
	_ = o.raw.Write(func(fd uintptr) bool {
		for len(q) > 0 {
			n, err := unix.Writev(int(fd), q[:min(len(q), maxIOV)])
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				break
			}
			q = consume(q, n)
		}
		return true // never wait here: the rest goes to a goroutine
	})
	return q
}

// consume drops the first n bytes of q.
func consume(q [][]byte, n int) [][]byte {
	for n > 0 && len(q) > 0 {
		if n < len(q[0]) {
			q[0] = q[0][n:]
			return q
		}
		n -= len(q[0])
		q = q[1:]
	}
	return q
}
