package mcpgw

// This file tells the agents when the tools change after start (a server
// that came up late, restarted, or sent notifications/tools/list_changed):
// each MCP server NewServer made gets run_js again with its description
// rebuilt, which the go-sdk announces to its sessions as
// notifications/tools/list_changed.

import (
	"sync"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogWatch is the set of MCP servers to tell. It holds them weakly: a
// server dropped by its owner (one per HTTP session, say) is not kept alive
// by the gateway. The zero value is ready to use.
type catalogWatch struct {
	mu      sync.Mutex // held while telling, so tellings do not cross
	servers []weak.Pointer[mcp.Server]
	last    string // run_js's description as the servers have it
}

// add registers s, whose run_js has the description desc.
func (w *catalogWatch) add(s *mcp.Server, desc string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.servers = append(w.servers, weak.Make(s))
	w.last = desc
}

// changed rebuilds run_js's description and, if it differs from what the
// servers have, gives each live server run_js anew (the go-sdk then sends
// notifications/tools/list_changed to its sessions, debounced).
func (w *catalogWatch) changed(g *Gateway) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.servers) == 0 {
		return
	}
	desc := g.runJSDescription()
	if desc == w.last {
		return
	}
	w.last = desc
	live := w.servers[:0]
	for _, p := range w.servers {
		if s := p.Value(); s != nil {
			s.AddTool(g.runJSTool(desc), g.handleRunJS)
			live = append(live, p)
		}
	}
	w.servers = live
}
