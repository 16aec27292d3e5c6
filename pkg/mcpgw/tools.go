package mcpgw

// This file holds a server's tool listing: every page of tools/list, the
// allowTools filter, the conversion to the catalog's wire.Tool, and the
// re-listing after notifications/tools/list_changed.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/run-js-server/run-js-server/pkg/wire"
)

// MaxToolsPerServer bounds one server's catalog: thousands of tools are
// real (generated API wrappers); beyond this a server is lying or broken.
const MaxToolsPerServer = 10_000

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
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.StartTimeout)
	defer cancel()
	tools, missing, err := d.listTools(ctx, session)
	if err != nil {
		d.log.Warn("re-listing tools failed", "server", d.cfg.Name, "err", d.scrub(err.Error()))
		return
	}
	d.mu.Lock()
	mine := d.session == session
	if mine {
		d.tools, d.missing = tools, missing
		d.toolsGen++
	}
	d.mu.Unlock()
	if mine {
		d.changed(true)
	}
}
