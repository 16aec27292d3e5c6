package mcpgw

// This file serves the agent's MCP tools over Streamable HTTP: go-sdk's
// StreamableHTTPHandler at MCPPath behind the guards of this file (Host,
// Origin, bearer token, body size, sessions at once), and the shutdown
// ladder. Each MCP session gets its own scripts (scripts.go): a closed or
// expired session stops them.

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of serving, each with its reason.
const (
	// MaxRequestBytes bounds one request from an agent: an HTTP body, or a
	// line on stdio. A run_js request carries at most wire.MaxCodeBytes of
	// code and wire.MaxInputBytes of input; JSON escaping can grow them, and
	// 16 MiB leaves room for that (it is go-sdk's own stdio default). A larger
	// request is refused unread, with an answer naming this cap.
	MaxRequestBytes = 16 << 20
	// DefaultSessionIdle: an HTTP session that sends no request for this long
	// is closed and its scripts stopped, so an agent that went away does not
	// hold workers; long enough for the pauses of an agent at human pace.
	DefaultSessionIdle = 30 * time.Minute
	// DefaultMaxSessions: MCP sessions open at once over HTTP. Each holds a
	// little memory and up to MaxRunningPerSession programs; 64 agents is
	// more than one host's 16 programs can serve well.
	DefaultMaxSessions = 64
	// MinTokenBytes: a shorter bearer token could be guessed over the
	// network; 16 random characters cannot.
	MinTokenBytes = 16
	// HeaderTimeout bounds reading a request's headers, so that a client
	// that opens connections and sends nothing cannot hold them.
	HeaderTimeout = 10 * time.Second
	// KeepAliveTimeout: a keep-alive connection with no request in flight
	// is closed after this long, so idle clients do not hold connections
	// (a session's event stream is a request in flight, and stays).
	KeepAliveTimeout = 2 * time.Minute
	// DrainTimeout: at shutdown, after every program is stopped, answers in
	// flight (the endings of stopped programs) get this long to go out
	// before every connection is closed.
	DrainTimeout = 5 * time.Second
)

// MCPPath is where the MCP endpoint is served.
const MCPPath = "/mcp"

// Refusals over HTTP, each its own status with a text body that names the
// guard: 403 for a foreign Host or Origin, 401 (with WWW-Authenticate)
// without the token, 413 for a body over MaxRequestBytes, 503 at the
// sessions cap or while shutting down.

// HTTPOptions configure an HTTPServer. Zero values select the defaults.
type HTTPOptions struct {
	// Token, when not empty, is required of every request as
	// "Authorization: Bearer TOKEN" (compared in constant time). Empty: no
	// token is asked, which is only safe on a loopback address (the caller
	// checks; see README's "Serving over HTTP").
	Token string
	// AllowOrigins are browser origins ("scheme://host[:port]") whose
	// requests are served besides same-origin ones; those get CORS headers.
	AllowOrigins []string
	// SessionIdle closes a session that sent no request for this long, and
	// stops its scripts. 0: DefaultSessionIdle.
	SessionIdle time.Duration
	// MaxSessions bounds the MCP sessions open at once. 0: DefaultMaxSessions.
	MaxSessions int
}

// httpLimitsReport is what server_info says of serving over HTTP.
type httpLimitsReport struct {
	TokenRequired   bool  `json:"tokenRequired"`
	MaxRequestBytes int   `json:"maxRequestBytes"`
	MaxSessions     int   `json:"maxSessions"`
	SessionIdleMs   int64 `json:"sessionIdleMs"`
	AllowedOrigins  int   `json:"allowedOrigins"`
}

// HTTPServer serves a Gateway's MCP tools over Streamable HTTP. Each MCP
// session is apart: its own scripts, its own per-session cap; the
// gateway's cap holds across them. Safe for concurrent use.
//
// Ownership: an HTTPServer owns its http.Server and the MCP sessions; it
// does not own the Gateway (its caller closes it after Shutdown).
type HTTPServer struct {
	g       *Gateway
	opts    HTTPOptions
	mcp     *mcp.Server
	handler http.Handler
	srv     *http.Server
	origins *http.CrossOriginProtection
	allowed map[string]bool // AllowOrigins, as browsers send them
	tokenOK func(http.Handler) http.Handler

	mu       sync.Mutex
	closing  bool           // Shutdown began: new requests are refused
	inflight sync.WaitGroup // POST and DELETE requests being served
	opening  int            // sessions being opened whose answer has not started
	shutdown sync.Once
}

// NewHTTPServer builds the server. An origin in opts.AllowOrigins that is
// not "scheme://host[:port]", or a token shorter than MinTokenBytes, is an
// error wrapping ErrConfig.
func NewHTTPServer(g *Gateway, opts HTTPOptions) (*HTTPServer, error) {
	if opts.Token != "" && len(opts.Token) < MinTokenBytes {
		return nil, fmt.Errorf("%w: the bearer token has %d characters, fewer than %d: it could be guessed", ErrConfig, len(opts.Token), MinTokenBytes)
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	s := &HTTPServer{g: g, opts: opts, mcp: NewServer(g), origins: http.NewCrossOriginProtection(), allowed: map[string]bool{}}
	g.httpLimits.Store(&httpLimitsReport{
		TokenRequired: opts.Token != "", MaxRequestBytes: MaxRequestBytes, MaxSessions: opts.MaxSessions,
		SessionIdleMs: opts.SessionIdle.Milliseconds(), AllowedOrigins: len(opts.AllowOrigins),
	})
	for _, o := range opts.AllowOrigins {
		norm, err := ParseOrigin(o)
		if err == nil {
			err = s.origins.AddTrustedOrigin(norm)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: allowed %v", ErrConfig, err)
		}
		s.allowed[norm] = true
	}
	if opts.Token != "" {
		want := sha256.Sum256([]byte(opts.Token))
		verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			// Hashes of equal length: the comparison's time says nothing of
			// the token's length or content.
			got := sha256.Sum256([]byte(token))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				return nil, fmt.Errorf("%w: this is not the bearer token of this gateway (its --token-file or RUN_JS_SERVER_TOKEN)", auth.ErrInvalidToken)
			}
			return &auth.TokenInfo{}, nil
		}
		s.tokenOK = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	}
	mux := http.NewServeMux()
	mux.Handle(MCPPath, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      opts.SessionIdle,
		MaxRequestBodyBytes: MaxRequestBytes, // for bodies without Content-Length
		Logger:              g.log,
		// DNS-rebinding protection (DisableLocalhostProtection false) stays
		// on behind ours.
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("run-js-server serves MCP at %s, not at %s", MCPPath, r.URL.Path), http.StatusNotFound)
	})
	s.handler = s.guard(mux)
	s.srv = &http.Server{Handler: s.handler, ReadHeaderTimeout: HeaderTimeout, IdleTimeout: KeepAliveTimeout, ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)}
	return s, nil
}

// Handler is the server's whole handler, guards included.
func (s *HTTPServer) Handler() http.Handler { return s.handler }

// Serve accepts connections on ln until Shutdown; it then returns
// http.ErrServerClosed.
func (s *HTTPServer) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown is the ladder: stop accepting (listeners closed, new requests
// on open connections refused with 503); stop every running program with
// the grace and reap its worker, so that requests waiting on one get its
// ending; let requests in flight finish for up to DrainTimeout; close every
// MCP session and connection. It blocks until done; later or concurrent
// calls wait for the first. It does not close the Gateway: the caller does,
// after (its Close stops the spares and the downstream servers).
func (s *HTTPServer) Shutdown() {
	s.shutdown.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stopped := make(chan struct{})
		go func() { _ = s.srv.Shutdown(ctx); close(stopped) }() // closes the listeners at once

		s.g.scripts.stopAll("the gateway is shutting down")

		drained := make(chan struct{})
		go func() { s.inflight.Wait(); close(drained) }()
		timer := time.NewTimer(DrainTimeout)
		defer timer.Stop()
		select {
		case <-drained:
		case <-timer.C:
			s.g.log.Warn("shutdown: requests still in flight after the drain timeout; closing their connections", "timeout", DrainTimeout)
		}

		// Closing a session waits for its handlers; each is bounded (its
		// program was stopped, a wait is at most MaxYield), but not by us:
		// close them all at once and give up after DrainTimeout, leaving the
		// rest to end with the process.
		var wg sync.WaitGroup
		for ss := range s.mcp.Sessions() {
			wg.Add(1)
			go func() { defer wg.Done(); _ = ss.Close() }()
		}
		closed := make(chan struct{})
		go func() { wg.Wait(); close(closed) }()
		timer.Reset(DrainTimeout)
		select {
		case <-closed:
		case <-timer.C:
			s.g.log.Warn("shutdown: MCP sessions still closing after the drain timeout", "timeout", DrainTimeout)
		}
		_ = s.srv.Close()
		cancel()
		<-stopped
	})
}

// guard puts the checks of this file, in order, before next: shutting
// down (503), Host on a loopback listener (403), Origin (403; a preflight
// from an allowed origin is answered here), the token (401), the body's
// declared size (413), the sessions cap for a request that opens one (503).
func (s *HTTPServer) guard(next http.Handler) http.Handler {
	inner := s.limits(next)
	if s.tokenOK != nil {
		limited := inner
		authed := s.tokenOK(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Del("WWW-Authenticate") // set below for a refusal only
			limited.ServeHTTP(w, r)
		}))
		inner = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// go-sdk's middleware sets WWW-Authenticate only with OAuth
			// metadata; a static token still owes the challenge (RFC 6750).
			challenge := `Bearer realm="run-js-server"`
			if r.Header.Get("Authorization") != "" {
				challenge += `, error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
			authed.ServeHTTP(w, r)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counted := r.Method == http.MethodPost || r.Method == http.MethodDelete
		s.mu.Lock()
		closing := s.closing
		if counted && !closing {
			s.inflight.Add(1) // under mu, so never after Shutdown's Wait began
		}
		s.mu.Unlock()
		if closing {
			http.Error(w, "run-js-server is shutting down: nothing was done", http.StatusServiceUnavailable)
			return
		}
		if counted {
			defer s.inflight.Done()
		}
		if msg := checkHost(r); msg != "" {
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		origin := r.Header.Get("Origin")
		if origin != "" && s.allowed[strings.ToLower(origin)] {
			corsHeaders(w, origin)
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				w.WriteHeader(http.StatusNoContent) // a preflight carries no token
				return
			}
		}
		// CrossOriginProtection lets GET, HEAD and OPTIONS through; here
		// every method is checked, since a GET opens a session's stream.
		asPost := *r
		asPost.Method = http.MethodPost
		if err := s.origins.Check(&asPost); err != nil {
			http.Error(w, fmt.Sprintf("Origin %q is not allowed to use this gateway (%v): only requests from the gateway's own origin, from no browser, or from an origin given with --allow-origin are served", origin, err), http.StatusForbidden)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// limits checks the declared body size and, for a request that opens a
// session, the sessions cap; then serves next.
func (s *HTTPServer) limits(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxRequestBytes {
			http.Error(w, fmt.Sprintf("request body of %d bytes is over this gateway's cap of %d bytes (%s, MaxRequestBytes); it was not read: a run_js request carries a program of at most 1 MiB and input of at most 4 MiB",
				r.ContentLength, MaxRequestBytes, FormatSize(MaxRequestBytes)), http.StatusRequestEntityTooLarge)
			return
		}
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		if !s.openSession() {
			w.Header().Set("Retry-After", "60")
			http.Error(w, fmt.Sprintf("too many MCP sessions: %d are open, this gateway's cap (--max-sessions); nothing was done: close one (DELETE %s with its Mcp-Session-Id) or wait, since a session idle for %s is closed",
				s.opts.MaxSessions, MCPPath, s.opts.SessionIdle), http.StatusServiceUnavailable)
			return
		}
		// The session counts as opening until the answer starts: by then
		// go-sdk has it among the server's sessions (or the open failed).
		opened := sync.OnceFunc(s.sessionOpened)
		defer opened()
		next.ServeHTTP(&openingWriter{ResponseWriter: w, opened: opened}, r)
	})
}

// openingWriter calls opened when the answer to a request that opens a
// session starts.
type openingWriter struct {
	http.ResponseWriter
	opened func()
}

func (w *openingWriter) WriteHeader(code int) {
	w.opened()
	w.ResponseWriter.WriteHeader(code)
}

func (w *openingWriter) Write(b []byte) (int, error) {
	w.opened()
	return w.ResponseWriter.Write(b)
}

// Flush lets go-sdk stream events (through http.ResponseController).
func (w *openingWriter) Flush() {
	w.opened()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *openingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// openSession reserves room for one more session, or reports false at the
// cap. A session being opened counts from here until its answer starts
// (then it is among the server's sessions, or it failed), so concurrent
// opens cannot pass the cap.
func (s *HTTPServer) openSession() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.opening
	for ss := range s.mcp.Sessions() {
		// A session that never initialized is a request's, closed by go-sdk
		// when it ends (go-sdk's client first tries the sessionless
		// protocol of 2026-07-28, which a stateful server refuses so).
		if ss.InitializeParams() != nil {
			n++
		}
	}
	if n >= s.opts.MaxSessions {
		return false
	}
	s.opening++
	return true
}

func (s *HTTPServer) sessionOpened() {
	s.mu.Lock()
	s.opening--
	s.mu.Unlock()
}

// checkHost is the DNS-rebinding guard: a request that arrived on a
// loopback address must name a loopback host (a page of another site whose
// name was made to resolve to 127.0.0.1 names its own). It returns the
// refusal, or "".
func checkHost(r *http.Request) string {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || !isLoopbackAddr(local.String()) || isLoopbackAddr(r.Host) {
		return ""
	}
	return fmt.Sprintf("Host %q is not a loopback name: this gateway listens on loopback and serves only requests for localhost, 127.0.0.1 or [::1] (DNS-rebinding protection)", r.Host)
}

// isLoopbackAddr reports whether host (with or without a port) is
// localhost or a loopback IP address.
func isLoopbackAddr(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackListener reports whether ln accepts only connections from this
// machine.
func IsLoopbackListener(ln net.Listener) bool {
	a, ok := ln.Addr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// ParseOrigin checks a browser origin, "scheme://host[:port]", and returns
// it as browsers send it (lower case).
func ParseOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "") {
		err = errors.New("not scheme://host[:port] with scheme http or https")
	}
	if err != nil {
		return "", fmt.Errorf("origin %q: %v; give it as a browser sends it, e.g. https://app.example.com or http://localhost:3000", o, err)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// corsHeaders lets a page of an allowed origin call the endpoint and read
// the session id.
func corsHeaders(w http.ResponseWriter, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
	h.Set("Access-Control-Max-Age", "600")
}
