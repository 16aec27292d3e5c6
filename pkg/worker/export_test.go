package worker

import "time"

// This file exports timing knobs to the tests. Each setter returns a func
// that restores the old value.

func setHandshakeTimeout(d time.Duration) (reset func()) {
	old := handshakeTimeout
	handshakeTimeout = d
	return func() { handshakeTimeout = old }
}
