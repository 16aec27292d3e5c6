package mcpgw

// This file holds a downstream server's session life: connecting (concurrent
// callers share one attempt), the backoff between reconnects, marking the
// server unavailable when its session ends or breaks, scrubbing its secrets
// from what is shown, and closing. The stdio process (stdio.go), the HTTP
// transports (remote.go) and the tool listing (tools.go) sit beside it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/lanes"
	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Limits of a downstream server's session, each with its reason.
const (
	// DefaultConnectTimeout bounds connecting, initializing and listing the
	// tools of one server at start: a server slower than this is listed as
	// unavailable and retried on a later call.
	DefaultConnectTimeout = 15 * time.Second
	// reconnectMin and reconnectMax bound the backoff between reconnect
	// attempts made on behalf of calls.
	reconnectMin = time.Second
	reconnectMax = time.Minute
)

// Errors of a downstream server, for callers to branch on with errors.Is.
// Gateway.Call refuses a call (server_unavailable, nothing sent) on any of
// them.
var (
	// ErrGatewayClosed: the gateway was closed; nothing connects any more.
	ErrGatewayClosed = errors.New("gateway closed")
	// ErrServerDisabled: the config disables the server ("disabled": true).
	ErrServerDisabled = errors.New("the server is disabled in the config")
	// ErrServerUnavailable: the server could not be reached, or its
	// connection ended. The error's text is the reason, scrubbed of the
	// server's secrets.
	ErrServerUnavailable = errors.New("server unavailable")
)

// unavailableError is ErrServerUnavailable with its reason. Its text is the
// reason alone: the caller names the server and says it is unavailable.
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string { return e.reason }
func (e *unavailableError) Unwrap() error { return ErrServerUnavailable }

// ServerState is where a downstream server stands.
type ServerState string

// Server states.
const (
	StateConnecting  ServerState = "connecting"
	StateReady       ServerState = "ready"
	StateUnavailable ServerState = "unavailable"
	StateDisabled    ServerState = "disabled"
)

// downstream is the gateway's client of one downstream MCP server. It owns
// the session and, for stdio, the server's process. Safe for concurrent use.
type downstream struct {
	cfg       ServerConfig
	lane      *lanes.Lane
	log       *slog.Logger
	version   string
	maxResult int // cap on one message from the server

	onToolsChanged func()

	mu         sync.Mutex
	state      ServerState
	reason     string
	session    *mcp.ClientSession
	cmd        *serverProc
	tools      []wire.Tool
	missing    []string // allowTools names the server does not have
	backoff    time.Duration
	nextTry    time.Time
	dialing    chan struct{}      // closed when the connect in progress ends
	cancelConn context.CancelFunc // ends the current connection's context
	closed     bool
	sessions   int // connects that succeeded, for server_info
}

// connect connects (or reconnects) and lists the tools. Concurrent callers
// share one attempt. Its errors wrap ErrGatewayClosed or
// ErrServerUnavailable, or are the context's (a caller that stopped waiting
// for another's attempt).
func (d *downstream) connect(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrGatewayClosed
	}
	if d.state == StateReady {
		d.mu.Unlock()
		return nil
	}
	if ch := d.dialing; ch != nil {
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		switch {
		case d.closed:
			return ErrGatewayClosed
		case d.state != StateReady:
			return &unavailableError{d.reason}
		}
		return nil
	}
	ch := make(chan struct{})
	d.dialing = ch
	d.state = StateConnecting
	d.mu.Unlock()

	session, cmd, cancelConn, tools, missing, err := d.dial(ctx)

	d.mu.Lock()
	defer d.mu.Unlock()
	d.dialing = nil
	close(ch)
	if err == nil && d.closed {
		err = ErrGatewayClosed
		session.Close()
	}
	if err != nil {
		d.state, d.reason = StateUnavailable, d.scrub(err.Error())
		d.backoff = min(max(2*d.backoff, reconnectMin), reconnectMax)
		d.nextTry = time.Now().Add(d.backoff)
		if errors.Is(err, ErrGatewayClosed) {
			return ErrGatewayClosed
		}
		// The cause's text is scrubbed into the reason; the cause itself is
		// dropped, since it may hold the server's secrets.
		return &unavailableError{d.reason}
	}
	d.state, d.reason = StateReady, ""
	d.session, d.cmd, d.tools, d.missing = session, cmd, tools, missing
	d.cancelConn = cancelConn
	d.backoff = 0
	d.sessions++
	if len(missing) > 0 {
		d.log.Warn("allowTools names tools the server does not have", "server", d.cfg.Name, "tools", missing)
	}
	go d.awaitSessionEnd(session, cmd)
	return nil
}

// awaitSessionEnd waits for a session to end, then marks the server
// unavailable (a later call reconnects) and stops its stdio process.
func (d *downstream) awaitSessionEnd(session *mcp.ClientSession, cmd *serverProc) {
	err := session.Wait()
	d.mu.Lock()
	if d.session == session && d.cancelConn != nil {
		d.cancelConn()
	}
	closed := d.closed
	if d.session == session {
		d.session = nil
		if !d.closed {
			why := "the connection closed"
			if err != nil {
				why += ": " + d.scrub(err.Error())
			}
			d.state, d.reason = StateUnavailable, why
			d.nextTry = time.Now() // a later call reconnects at once
		}
	}
	d.mu.Unlock()
	if cmd != nil {
		cmd.stop()
	}
	if !closed {
		d.log.Warn("downstream session ended", "server", d.cfg.Name, "err", d.scrubErr(err))
	}
}

// scrub takes the server's secrets out of a text before it is logged or
// shown: header and env values, and the URL's credentials and query.
func (d *downstream) scrub(s string) string {
	if d.cfg.URL != "" {
		s = strings.ReplaceAll(s, d.cfg.URL, redactURL(d.cfg.URL))
	}
	for _, m := range []map[string]string{d.cfg.Headers, d.cfg.Env} {
		for _, v := range m {
			if len(v) >= 4 { // shorter values would blank out ordinary words
				s = strings.ReplaceAll(s, v, redactedText)
			}
		}
	}
	return s
}

func (d *downstream) scrubErr(err error) string {
	if err == nil {
		return ""
	}
	return d.scrub(err.Error())
}

// broken marks a session whose connection failed, so the next call
// reconnects instead of using it (awaitSessionEnd will say the same soon).
func (d *downstream) broken(session *mcp.ClientSession, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.session == session && !d.closed {
		d.session = nil
		d.state, d.reason = StateUnavailable, "the connection broke: "+d.scrub(err.Error())
		d.nextTry = time.Now()
	}
}

// dial makes one connection attempt. The connection lives on a context of
// its own, not the caller's: the SSE transport keeps its event stream on the
// context it connected with, so a context that ends with the attempt would
// end the session with it. DefaultConnectTimeout bounds the attempt by
// cancelling that context, and cancel ends the connection later.
func (d *downstream) dial(ctx context.Context) (session *mcp.ClientSession, cmd *serverProc, cancel context.CancelFunc, tools []wire.Tool, missing []string, err error) {
	connCtx, cancelConn := context.WithCancel(context.WithoutCancel(ctx))
	stopParent := context.AfterFunc(ctx, cancelConn)
	timer := time.AfterFunc(DefaultConnectTimeout, cancelConn)
	defer func() {
		timedOut := !timer.Stop()
		stopParent()
		if err == nil && (timedOut || connCtx.Err() != nil) {
			session.Close()
			err = fmt.Errorf("no answer within %s", DefaultConnectTimeout)
		}
		if err != nil {
			cancelConn()
			if cmd != nil {
				cmd.stop()
			}
			session, cmd, cancel = nil, nil, nil
		}
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "run-js-server", Version: d.version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { go d.refreshTools() },
	})
	switch d.cfg.Transport {
	case TransportStdio:
		var t mcp.Transport
		t, cmd, err = d.startStdio()
		if err != nil {
			return
		}
		session, err = client.Connect(connCtx, t, nil)
		if err != nil {
			err = fmt.Errorf("initialize %s: %w", d.cfg.Command, err)
		}
	case TransportHTTP:
		session, err = client.Connect(connCtx, d.streamable(), nil)
	case TransportSSE:
		session, err = client.Connect(connCtx, d.sse(), nil)
	default: // auto: Streamable HTTP first; an old server fails its POST of initialize
		session, err = client.Connect(connCtx, d.streamable(), nil)
		if err != nil {
			var err2 error
			session, err2 = client.Connect(connCtx, d.sse(), nil)
			if err2 != nil {
				err = fmt.Errorf("Streamable HTTP: %v; legacy SSE: %v", err, err2)
			} else {
				err = nil
			}
		}
	}
	if err != nil {
		return
	}
	tools, missing, err = d.listTools(connCtx, session)
	if err != nil {
		session.Close()
		return
	}
	return session, cmd, cancelConn, tools, missing, nil
}

// ready returns the session, reconnecting first when the server is
// unavailable and its backoff has passed. Its errors wrap ErrServerDisabled,
// ErrGatewayClosed or ErrServerUnavailable, or are the context's.
func (d *downstream) ready(ctx context.Context) (*mcp.ClientSession, error) {
	d.mu.Lock()
	s, state, reason, next := d.session, d.state, d.reason, d.nextTry
	d.mu.Unlock()
	if state == StateReady && s != nil {
		return s, nil
	}
	if state == StateDisabled {
		return nil, ErrServerDisabled
	}
	if time.Now().Before(next) {
		return nil, &unavailableError{fmt.Sprintf("%s (next reconnect attempt in %s)", reason, time.Until(next).Round(time.Second))}
	}
	if err := d.connect(ctx); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.session == nil {
		return nil, &unavailableError{d.reason}
	}
	return d.session, nil
}

// close ends the session and stops a stdio server.
func (d *downstream) close() {
	d.mu.Lock()
	d.closed = true
	s, cmd, cancel := d.session, d.cmd, d.cancelConn
	d.session = nil
	d.mu.Unlock()
	if s != nil {
		_ = s.Close()
	}
	if cancel != nil {
		cancel()
	}
	if cmd != nil {
		cmd.stop()
	}
	d.lane.Close()
}

// snapshot is a server's state for server_info.
func (d *downstream) snapshot() ServerInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	return ServerInfo{
		Name: d.cfg.Name, Transport: string(d.cfg.Transport), State: d.state, Reason: d.reason,
		Tools: len(d.tools), MissingAllowTools: d.missing, Lane: d.lane.Snapshot(),
	}
}

// ServerInfo is one downstream server in server_info.
type ServerInfo struct {
	Name              string         `json:"name"`
	Transport         string         `json:"transport"`
	State             ServerState    `json:"state"`
	Reason            string         `json:"reason,omitempty"`
	Tools             int            `json:"tools"`
	MissingAllowTools []string       `json:"missingAllowTools,omitempty"`
	Lane              lanes.Snapshot `json:"lane"`
}
