package mcpgw

// This file holds the HTTP side of a remote server: the Streamable HTTP and
// legacy SSE transports, the round tripper that adds its headers, and the
// HTTP status an attempt got, for its reason.

import (
	"net/http"
	"net/url"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (d *downstream) httpClient(status *httpStatus) *http.Client {
	return &http.Client{Transport: headerTransport{headers: d.cfg.Headers, base: http.DefaultTransport, status: status}}
}

// streamable and sse are the transports of one attempt; status records the
// HTTP errors the attempt meets.
func (d *downstream) streamable(status *httpStatus) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: d.cfg.URL, HTTPClient: d.httpClient(status), MaxEventSize: d.httpCap, MaxRetries: 2}
}

func (d *downstream) sse(status *httpStatus) mcp.Transport {
	return &mcp.SSEClientTransport{Endpoint: d.cfg.URL, HTTPClient: d.httpClient(status), MaxEventSize: d.httpCap}
}

// headerTransport adds a server's configured headers to every request, and
// notes the first HTTP error status.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
	status  *httpStatus
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := h.base.RoundTrip(r)
	if err == nil && resp.StatusCode >= 400 && h.status != nil {
		h.status.set(resp.StatusCode)
	}
	return resp, err
}

// httpStatus is the first HTTP error status an attempt got. Safe for
// concurrent use; the zero value is empty.
type httpStatus struct {
	mu   sync.Mutex
	code int
}

func (s *httpStatus) set(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code == 0 {
		s.code = code
	}
}

func (s *httpStatus) get() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code, http.StatusText(s.code)
}

// hostOf is a URL's host and port, for a message (never its path or
// userinfo, which may hold secrets).
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "the server's address"
	}
	return u.Host
}
