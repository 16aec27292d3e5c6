package mcpgw

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/lanes"
)

// testDownstream is one server's client, not started.
func testDownstream(t *testing.T, sc ServerConfig) *downstream {
	t.Helper()
	lane, err := lanes.New(sc.Name, lanes.Config{})
	if err != nil {
		t.Fatal(err)
	}
	d := newDownstream(sc, lane, slog.New(slog.DiscardHandler), "test", os.LookupEnv, 1<<20)
	t.Cleanup(d.close)
	return d
}

// startAndWait starts a server's attempt and waits for it to end.
func startAndWait(t *testing.T, d *downstream) {
	t.Helper()
	d.start()
	d.mu.Lock()
	ch := d.attempt
	d.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(d.cfg.StartTimeout + 30*time.Second):
		t.Fatalf("server %s: the attempt did not end within its start bound %s", d.cfg.Name, d.cfg.StartTimeout)
	}
}

// TestDownstreamErrors: each way a server cannot be used is an error callers
// branch on with errors.Is, and the text still says why, without secrets.
func TestDownstreamErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	missing := filepath.Join(t.TempDir(), "no-such-server")

	t.Run("cannot start", func(t *testing.T) {
		d := testDownstream(t, ServerConfig{Name: "gone", Transport: TransportStdio, Command: missing,
			Env: map[string]string{"TOKEN": "s3cret-token"}, Args: []string{"s3cret-token"}})
		startAndWait(t, d)
		_, err := d.ready(ctx)
		if !errors.Is(err, ErrServerUnavailable) || errors.Is(err, ErrGatewayClosed) {
			t.Fatalf("ready: %v, want ErrServerUnavailable", err)
		}
		if !strings.Contains(err.Error(), "cannot start "+missing) || !strings.Contains(err.Error(), "next attempt in") {
			t.Fatalf("ready: %q does not say what failed and when it is tried next", err)
		}
		if s := d.snapshot(); s.State != StateUnavailable || s.Attempts != 1 || s.NextTryInMs == nil {
			t.Fatalf("snapshot %+v: want unavailable, 1 attempt, the next try", s)
		}
		// Its retries are not what runs wait for: only a first attempt is.
		d.mu.Lock()
		d.attempts, d.attempt = 2, make(chan struct{})
		d.mu.Unlock()
		if d.firstAttempt() != nil {
			t.Error("a run would wait for the retry of a server that failed")
		}
		d.mu.Lock()
		d.attempts, d.attempt = 1, nil
		d.mu.Unlock()
	})

	t.Run("secrets scrubbed", func(t *testing.T) {
		d := testDownstream(t, ServerConfig{Name: "gone", Transport: TransportStdio, Command: missing + "-s3cret-token",
			Env: map[string]string{"TOKEN": "s3cret-token"}})
		startAndWait(t, d)
		_, err := d.ready(ctx)
		if !errors.Is(err, ErrServerUnavailable) || strings.Contains(err.Error(), "s3cret-token") || !strings.Contains(err.Error(), redactedText) {
			t.Fatalf("ready: %q, want ErrServerUnavailable with the env value redacted", err)
		}
	})

	t.Run("disabled", func(t *testing.T) {
		d := testDownstream(t, ServerConfig{Name: "off", Transport: TransportStdio, Command: missing, Disabled: true})
		d.start()
		if _, err := d.ready(ctx); !errors.Is(err, ErrServerDisabled) || err.Error() != "the server is disabled in the config" {
			t.Fatalf("ready: %v, want ErrServerDisabled", err)
		}
	})

	t.Run("closed", func(t *testing.T) {
		d := testDownstream(t, testServer("demo", "demo"))
		d.close()
		if _, err := d.ready(ctx); !errors.Is(err, ErrGatewayClosed) {
			t.Fatalf("ready after close: %v, want ErrGatewayClosed", err)
		}
	})

	t.Run("session broke", func(t *testing.T) {
		d := testDownstream(t, testServer("demo", "demo"))
		startAndWait(t, d)
		d.mu.Lock()
		session := d.session
		d.mu.Unlock()
		if session == nil {
			t.Fatalf("demo did not start: %+v", d.snapshot())
		}
		d.broken(session, errors.New("EOF"))
		// The broken session is never handed out again: ready waits for the
		// restart its end starts, and gets a new session.
		s2, err := d.ready(ctx)
		if err != nil || s2 == session {
			t.Fatalf("ready after the session broke: %v (same session: %v)", err, s2 == session)
		}
		if d.snapshot().Sessions != 2 {
			t.Fatalf("sessions %d, want 2 (restarted)", d.snapshot().Sessions)
		}
	})
}
