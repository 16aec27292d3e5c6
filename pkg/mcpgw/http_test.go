package mcpgw

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// TestRemoteTransports runs the demo tracker behind Streamable HTTP and
// legacy SSE (httptest servers on loopback) and calls it through each
// transport setting, including auto, which must fall back to SSE for an old
// server. Configured headers reach the server.
func TestRemoteTransports(t *testing.T) {
	demo := NewDemoServer("test")
	var sawToken atomic.Int32
	withToken := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "Bearer s3cret" {
				sawToken.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}
	// Cleanups run last-first: the gateway (registered later) disconnects
	// before the servers close.
	streamable := httptest.NewServer(withToken(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo }, nil)))
	t.Cleanup(streamable.Close)
	sse := httptest.NewServer(withToken(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return demo }, nil)))
	t.Cleanup(sse.Close)

	headers := map[string]string{"Authorization": "Bearer s3cret"}
	g := newTestGateway(t,
		ServerConfig{Name: "http", Transport: TransportHTTP, URL: streamable.URL, Headers: headers},
		ServerConfig{Name: "sse", Transport: TransportSSE, URL: sse.URL, Headers: headers},
		ServerConfig{Name: "auto_http", Transport: TransportAuto, URL: streamable.URL, Headers: headers},
		ServerConfig{Name: "auto_sse", Transport: TransportAuto, URL: sse.URL, Headers: headers},
	)
	for _, s := range g.Servers() {
		if s.State != StateReady {
			t.Fatalf("server %s is %s: %s", s.Name, s.State, s.Reason)
		}
	}
	e := run(t, g, `
		const r = await Promise.all([tools.http, tools.sse, tools.auto_http, tools.auto_sse].map(s => s.get_issue({id: 104})))
		return r.map(x => x.structuredContent.issue.state)`, 20*time.Second)
	wantStatus(t, e, wire.StatusReturned)
	if string(e.Value) != `["closed","closed","closed","closed"]` {
		t.Fatalf("value %s", e.Value)
	}
	if sawToken.Load() == 0 {
		t.Fatal("the configured Authorization header never reached the servers")
	}
}

// TestSecretsStayOut: an unreachable server's URL token and header value
// appear neither in its reason (server_info) nor in a refusal's message.
func TestSecretsStayOut(t *testing.T) {
	g := newTestGateway(t, ServerConfig{Name: "remote", Transport: TransportHTTP,
		URL: "http://127.0.0.1:1/mcp?token=tok-s3cret-1", Headers: map[string]string{"Authorization": "Bearer hdr-s3cret-2"}})
	e := run(t, g, `try { await tools.remote.x({}) } catch (e) { return e.message }`, 0)
	wantStatus(t, e, wire.StatusReturned) // ToolRefused: the tool is not in the catalog
	info, _ := json.Marshal(g.info())
	for _, secret := range []string{"tok-s3cret-1", "hdr-s3cret-2"} {
		if strings.Contains(string(info), secret) || strings.Contains(string(e.Value), secret) {
			t.Fatalf("secret %q leaked:\nserver_info %s\nvalue %s", secret, info, e.Value)
		}
	}
	if !strings.Contains(string(info), `"state":"unavailable"`) {
		t.Fatalf("server_info %s", info)
	}
}
