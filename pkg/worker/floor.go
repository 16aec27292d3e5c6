package worker

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// The floors: what the platform itself costs, measured with a process
// started exactly as a worker is (spawn: a socketpair as fd 3, an empty
// environment, a private directory, its own process group, the parent-death
// signal, a stderr pipe), so that `run-js-server bench` can print each
// figure beside the floor it stands on, from the same run on the same
// machine. The process is a caller's minimal program (cfg.Command) that
// writes one byte on fd 3 as soon as it starts, then echoes what it reads.

// ErrFloor: the floor program did not behave as one.
var ErrFloor = errors.New("floor program")

// floorWait bounds each wait on the floor program.
const floorWait = 10 * time.Second

// SpawnFloor starts cfg.Command as a worker is started and returns the time
// from the start of the spawn to the first byte it writes on its socket,
// then kills and reaps it.
func SpawnFloor(cfg Config) (time.Duration, error) {
	t0 := time.Now()
	p, err := spawn(cfg)
	if err != nil {
		return 0, err
	}
	defer p.discard()
	_ = p.conn.SetDeadline(time.Now().Add(floorWait))
	var b [1]byte
	if _, err := io.ReadFull(p.conn, b[:]); err != nil {
		return 0, fmt.Errorf("%w: its first byte: %v", ErrFloor, err)
	}
	return time.Since(t0), nil
}

// PingPongFloor starts cfg.Command as a worker is started and makes n
// round trips of 4 bytes with it on the parent's netpoll socket (no frames,
// no goroutines, no checks): the time per round trip.
func PingPongFloor(cfg Config, n int) (time.Duration, error) {
	p, err := spawn(cfg)
	if err != nil {
		return 0, err
	}
	defer p.discard()
	_ = p.conn.SetDeadline(time.Now().Add(floorWait))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(p.conn, buf[:1]); err != nil {
		return 0, fmt.Errorf("%w: its first byte: %v", ErrFloor, err)
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if _, err := p.conn.Write([]byte("ping")); err != nil {
			return 0, fmt.Errorf("%w: write: %v", ErrFloor, err)
		}
		if _, err := io.ReadFull(p.conn, buf); err != nil {
			return 0, fmt.Errorf("%w: read: %v", ErrFloor, err)
		}
	}
	return time.Since(t0) / time.Duration(n), nil
}
