package mcpgw

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/lanes"
	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Limits of talking to a downstream server, each with its reason.
const (
	// DefaultConnectTimeout bounds connecting, initializing and listing the
	// tools of one server at start: a server slower than this is listed as
	// unavailable and retried on a later call.
	DefaultConnectTimeout = 15 * time.Second
	// MaxToolsPerServer bounds one server's catalog: thousands of tools are
	// real (generated API wrappers); beyond this a server is lying or broken.
	MaxToolsPerServer = 10_000
	// reconnectMin and reconnectMax bound the backoff between reconnect
	// attempts made on behalf of calls.
	reconnectMin = time.Second
	reconnectMax = time.Minute
	// stderrLineMax: a downstream's stderr is logged line by line, each cut
	// to this many bytes, so a flood costs log lines, never our memory.
	stderrLineMax = 2048
	// stopWait bounds waiting for a stdio server to exit after its stdin
	// closed, before its process group is killed.
	stopWait = 2 * time.Second
)

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
// share one attempt.
func (d *downstream) connect(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return errors.New("gateway closed")
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
		if d.state != StateReady {
			return errors.New(d.reason)
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
		err = errors.New("gateway closed")
		session.Close()
	}
	if err != nil {
		err = errors.New(d.scrub(err.Error()))
		d.state, d.reason = StateUnavailable, err.Error()
		d.backoff = min(max(2*d.backoff, reconnectMin), reconnectMax)
		d.nextTry = time.Now().Add(d.backoff)
		return err
	}
	d.state, d.reason = StateReady, ""
	d.session, d.cmd, d.tools, d.missing = session, cmd, tools, missing
	d.cancelConn = cancelConn
	d.backoff = 0
	d.sessions++
	if len(missing) > 0 {
		d.log.Warn("allowTools names tools the server does not have", "server", d.cfg.Name, "tools", missing)
	}
	go d.watch(session, cmd)
	return nil
}

// watch marks the server unavailable when its session ends.
func (d *downstream) watch(session *mcp.ClientSession, cmd *serverProc) {
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
				s = strings.ReplaceAll(s, v, "<redacted>")
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
// reconnects instead of using it (its watcher will say the same soon).
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

// startStdio starts a stdio server in its own process group, with its stderr
// logged line by line under its name (never on our stdout, which carries
// JSON-RPC).
func (d *downstream) startStdio() (mcp.Transport, *serverProc, error) {
	cmd := exec.Command(d.cfg.Command, d.cfg.Args...)
	cmd.Env = os.Environ()
	for k, v := range d.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = d.cfg.Cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", d.cfg.Command, err)
	}
	go d.logStderr(stderr)
	return &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: d.maxResult}, &serverProc{cmd: cmd}, nil
}

func (d *downstream) logStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, stderrLineMax)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 {
			d.log.Info("downstream stderr", "server", d.cfg.Name, "line", string(line))
		}
		for isPrefix && err == nil { // the rest of an over-long line: dropped
			_, isPrefix, err = br.ReadLine()
		}
		if err != nil {
			return
		}
	}
}

// serverProc is a stdio server's process.
type serverProc struct {
	cmd  *exec.Cmd
	once sync.Once
}

// stop waits up to stopWait for the server to exit (its stdin is closed with
// its session), then kills its process group, and reaps it. It is safe to
// call more than once and concurrently; every call returns after the reap.
func (p *serverProc) stop() {
	p.once.Do(func() {
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
			return
		case <-time.After(stopWait):
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
}

func (d *downstream) httpClient() *http.Client {
	return &http.Client{Transport: headerTransport{headers: d.cfg.Headers, base: http.DefaultTransport}}
}

func (d *downstream) streamable() mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: d.cfg.URL, HTTPClient: d.httpClient(), MaxEventSize: d.maxResult, MaxRetries: 2}
}

func (d *downstream) sse() mcp.Transport {
	return &mcp.SSEClientTransport{Endpoint: d.cfg.URL, HTTPClient: d.httpClient(), MaxEventSize: d.maxResult}
}

// headerTransport adds a server's configured headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// listTools lists every page of tools and keeps those allowTools lets
// through.
func (d *downstream) listTools(ctx context.Context, session *mcp.ClientSession) ([]wire.Tool, []string, error) {
	allow := map[string]bool{}
	for _, n := range d.cfg.AllowTools {
		allow[n] = false
	}
	var tools []wire.Tool
	seen := map[string]bool{}
	n := 0
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, fmt.Errorf("tools/list: %w", err)
		}
		if n++; n > MaxToolsPerServer {
			return nil, nil, fmt.Errorf("tools/list: more than %d tools", MaxToolsPerServer)
		}
		if t == nil || t.Name == "" || seen[t.Name] {
			continue // the SDK drops invalid tools; a duplicate name keeps its first entry
		}
		seen[t.Name] = true
		if len(allow) > 0 {
			if _, ok := allow[t.Name]; !ok {
				continue
			}
			allow[t.Name] = true
		}
		tools = append(tools, toWireTool(d.cfg.Name, t))
	}
	var missing []string
	for name, found := range allow {
		if !found {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, missing, nil
}

func toWireTool(server string, t *mcp.Tool) wire.Tool {
	raw := func(v any) json.RawMessage {
		if v == nil {
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil || string(b) == "null" {
			return nil
		}
		return b
	}
	w := wire.Tool{Server: server, Name: t.Name, Description: t.Description, InputSchema: raw(t.InputSchema), OutputSchema: raw(t.OutputSchema)}
	if t.Annotations != nil {
		w.Annotations = raw(t.Annotations)
	}
	return w
}

// refreshTools re-lists the tools after notifications/tools/list_changed.
func (d *downstream) refreshTools() {
	d.mu.Lock()
	session := d.session
	d.mu.Unlock()
	if session == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultConnectTimeout)
	defer cancel()
	tools, missing, err := d.listTools(ctx, session)
	if err != nil {
		d.log.Warn("re-listing tools failed", "server", d.cfg.Name, "err", d.scrubErr(err))
		return
	}
	d.mu.Lock()
	if d.session == session {
		d.tools, d.missing = tools, missing
	}
	d.mu.Unlock()
	if d.onToolsChanged != nil {
		d.onToolsChanged()
	}
}

// ready returns the session, reconnecting first when the server is
// unavailable and its backoff has passed.
func (d *downstream) ready(ctx context.Context) (*mcp.ClientSession, error) {
	d.mu.Lock()
	s, state, reason, next := d.session, d.state, d.reason, d.nextTry
	d.mu.Unlock()
	if state == StateReady && s != nil {
		return s, nil
	}
	if state == StateDisabled {
		return nil, errors.New("the server is disabled in the config")
	}
	if time.Now().Before(next) {
		return nil, fmt.Errorf("%s (next reconnect attempt in %s)", reason, time.Until(next).Round(time.Second))
	}
	if err := d.connect(ctx); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.session == nil {
		return nil, errors.New(d.reason)
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
