package mcpgw

// This file holds the rate limit of what a downstream server can make the
// gateway log (its stderr lines, its stray stdout lines): a flood costs a
// count, never the gateway's log.

import (
	"sync"
	"time"
)

// logLimiter is a token bucket for log lines: burst lines at once, then
// perSecond. Safe for concurrent use.
type logLimiter struct {
	perSecond float64
	burst     float64

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int // lines refused since the last one allowed
}

func newLogLimiter(perSecond, burst int) *logLimiter {
	return &logLimiter{perSecond: float64(perSecond), burst: float64(burst), tokens: float64(burst)}
}

// allow reports whether one more line may be logged now, and how many lines
// were refused since the last one allowed (to be said with it).
func (l *logLimiter) allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.perSecond)
	}
	l.last = now
	if l.tokens < 1 {
		l.dropped++
		return false, 0
	}
	l.tokens--
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}
