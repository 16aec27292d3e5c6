package mcpgw

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/run-js-server/run-js-server/pkg/lanes"
)

// newDownstream is one server's client, not connected.
func newDownstream(t *testing.T, sc ServerConfig) *downstream {
	t.Helper()
	lane, err := lanes.New(sc.Name, lanes.Config{})
	if err != nil {
		t.Fatal(err)
	}
	d := &downstream{cfg: sc, lane: lane, log: slog.New(slog.DiscardHandler), version: "test", maxResult: 1 << 20, state: StateConnecting}
	t.Cleanup(d.close)
	return d
}

// TestDownstreamErrors: each way a server cannot be used is an error callers
// branch on with errors.Is, and the text still says why, without secrets.
func TestDownstreamErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	missing := filepath.Join(t.TempDir(), "no-such-server")

	t.Run("cannot start", func(t *testing.T) {
		d := newDownstream(t, ServerConfig{Name: "gone", Transport: TransportStdio, Command: missing,
			Env: map[string]string{"TOKEN": "s3cret-token"}, Args: []string{"s3cret-token"}})
		err := d.connect(ctx)
		if !errors.Is(err, ErrServerUnavailable) || errors.Is(err, ErrGatewayClosed) {
			t.Fatalf("connect: %v, want ErrServerUnavailable", err)
		}
		if !strings.Contains(err.Error(), "start "+missing) {
			t.Fatalf("connect: %q does not say what failed", err)
		}
		// Within the backoff, a call is refused without another attempt.
		_, err = d.ready(ctx)
		if !errors.Is(err, ErrServerUnavailable) || !strings.Contains(err.Error(), "next reconnect attempt in") {
			t.Fatalf("ready within the backoff: %v", err)
		}
	})

	t.Run("secrets scrubbed", func(t *testing.T) {
		d := newDownstream(t, ServerConfig{Name: "gone", Transport: TransportStdio, Command: missing + "-s3cret-token",
			Env: map[string]string{"TOKEN": "s3cret-token"}})
		err := d.connect(ctx)
		if !errors.Is(err, ErrServerUnavailable) || strings.Contains(err.Error(), "s3cret-token") || !strings.Contains(err.Error(), redactedText) {
			t.Fatalf("connect: %q, want ErrServerUnavailable with the env value redacted", err)
		}
	})

	t.Run("disabled", func(t *testing.T) {
		d := newDownstream(t, ServerConfig{Name: "off", Transport: TransportStdio, Command: missing, Disabled: true})
		d.state = StateDisabled
		if _, err := d.ready(ctx); !errors.Is(err, ErrServerDisabled) || err.Error() != "the server is disabled in the config" {
			t.Fatalf("ready: %v, want ErrServerDisabled", err)
		}
	})

	t.Run("closed", func(t *testing.T) {
		d := newDownstream(t, testServer("demo", "demo"))
		d.close()
		if err := d.connect(ctx); !errors.Is(err, ErrGatewayClosed) {
			t.Fatalf("connect after close: %v, want ErrGatewayClosed", err)
		}
	})

	t.Run("session ended", func(t *testing.T) {
		d := newDownstream(t, testServer("demo", "demo"))
		if err := d.connect(ctx); err != nil {
			t.Fatalf("connect: %v", err)
		}
		d.mu.Lock()
		session := d.session
		d.mu.Unlock()
		d.broken(session, errors.New("EOF"))
		d.mu.Lock()
		d.nextTry = time.Now().Add(time.Hour) // hold off the reconnect
		d.mu.Unlock()
		_, err := d.ready(ctx)
		if !errors.Is(err, ErrServerUnavailable) || !strings.Contains(err.Error(), "the connection broke: EOF") {
			t.Fatalf("ready after the session broke: %v", err)
		}
	})
}
