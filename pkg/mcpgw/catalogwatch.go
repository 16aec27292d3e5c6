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
	servers []watched
}

// watched is one MCP server and the run_js description it has.
type watched struct {
	s    weak.Pointer[mcp.Server]
	desc string
}

// add registers s, whose run_js has the description desc.
func (w *catalogWatch) add(s *mcp.Server, desc string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.servers = append(w.servers, watched{weak.Make(s), desc})
}

// changed rebuilds run_js's description and gives run_js anew to each live
// server whose description differs (the go-sdk then sends
// notifications/tools/list_changed to its sessions, debounced).
func (w *catalogWatch) changed(g *Gateway) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.servers) == 0 {
		return
	}
	desc := g.runJSDescription()
	live := w.servers[:0]
	for _, x := range w.servers {
		s := x.s.Value()
		if s == nil {
			continue
		}
		if x.desc != desc {
			addOwnTool(s, g.runJSTool(desc))
			x.desc = desc
		}
		live = append(live, x)
	}
	clear(w.servers[len(live):])
	w.servers = live
}
