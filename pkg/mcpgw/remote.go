package mcpgw

// This file holds the HTTP side of a remote server: the Streamable HTTP and
// legacy SSE transports, and the round tripper that adds its headers.

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
