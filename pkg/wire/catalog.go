package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// Catalog is a run's catalog prepared once for any number of runs, so that
// a run's cost does not grow with the catalog: it is checked once, and the
// bytes a worker receives (the names, and ALL_TOOLS's JSON) are encoded
// once. A worker holds it as received and reads no more of it than the
// program asks for (a tool's name when the program calls it, ALL_TOOLS when
// the program reads it). Immutable and safe for concurrent use.
type Catalog struct {
	version uint64 // unique in this process: which catalog a spare holds
	tools   []Tool // parent side only
	names   []byte // server NUL (tool NUL)* NUL, for each server, in order
	all     []byte // the ALL_TOOLS array as JSON
	servers []ServerState

	once  sync.Once
	index map[ToolKey]bool // built when first asked
	byS   map[string][]string
	order []string
}

// ServerState is a configured server and its state, for NewCatalog: one
// that has no tools in the catalog and is not ready (starting,
// unavailable, disabled) makes a program's call to it refused
// server_unavailable with Reason, not unknown_server; one that is ready
// with no tools is a server with no tools (unknown_tool).
type ServerState struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Reason string `json:"reason"`
}

// StateReady is the state of a server whose tools are listed.
const StateReady = "ready"

// toolView is one ALL_TOOLS entry: every field present, null when absent.
type toolView struct {
	Server       string          `json:"server"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
}

func orNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("null")
	}
	return m
}

// NewCatalog checks tools (a server and a name each, non-empty and free of
// NUL; no tool twice; schemas and annotations valid JSON) and servers (the
// configured servers that have no tools in it, with their state), and
// prepares them.
func NewCatalog(tools []Tool, servers []ServerState) (*Catalog, error) {
	seen := make(map[ToolKey]bool, len(tools))
	for _, t := range tools {
		if t.Server == "" || t.Name == "" || strings.ContainsRune(t.Server+t.Name, 0) {
			return nil, fmt.Errorf("catalog entry %q.%q: a server and a tool name must be non-empty and free of NUL", t.Server, t.Name)
		}
		k := t.Key()
		if seen[k] {
			return nil, fmt.Errorf("catalog lists %s.%s twice", t.Server, t.Name)
		}
		seen[k] = true
		for _, raw := range []json.RawMessage{t.InputSchema, t.OutputSchema, t.Annotations} {
			if len(raw) > 0 && !json.Valid(raw) {
				return nil, fmt.Errorf("catalog entry %s.%s carries invalid JSON", t.Server, t.Name)
			}
		}
	}
	for _, s := range servers {
		if s.Name == "" || strings.ContainsRune(s.Name, 0) {
			return nil, fmt.Errorf("server %q: a server's name must be non-empty and free of NUL", s.Name)
		}
	}
	c := &Catalog{tools: tools, version: catalogVersions.Add(1)}
	var order []string
	byS := map[string][]string{}
	for _, t := range tools {
		if _, ok := byS[t.Server]; !ok {
			order = append(order, t.Server)
		}
		byS[t.Server] = append(byS[t.Server], t.Name)
	}
	for _, s := range servers {
		if _, ok := byS[s.Name]; ok {
			continue // it has tools: it is in the catalog, whatever its state now
		}
		if s.State == StateReady {
			order = append(order, s.Name) // ready, with no tools
			byS[s.Name] = nil
			continue
		}
		c.servers = append(c.servers, s)
	}
	for _, s := range order {
		c.names = append(c.names, s...)
		c.names = append(c.names, 0)
		for _, t := range byS[s] {
			c.names = append(c.names, t...)
			c.names = append(c.names, 0)
		}
		c.names = append(c.names, 0)
	}
	views := make([]toolView, len(tools))
	for i, t := range tools {
		views[i] = toolView{t.Server, t.Name, t.Description, orNull(t.InputSchema), orNull(t.OutputSchema), orNull(t.Annotations)}
	}
	all, err := json.Marshal(views)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c.all = all
	return c, nil
}

// catalogVersions numbers the catalogs NewCatalog prepares.
var catalogVersions atomic.Uint64

// Version names the catalog among those this process prepared (0 for one a
// worker received).
func (c *Catalog) Version() uint64 {
	if c == nil {
		return 0
	}
	return c.version
}

// ReceivedCatalog is a catalog as a worker receives it: the names and
// ALL_TOOLS sections of its start frame, kept as they are (checked when
// first read), and the servers without tools.
func ReceivedCatalog(names, all []byte, servers []ServerState) *Catalog {
	return &Catalog{names: names, all: all, servers: servers}
}

// Tools is the catalog's tools (nil in a worker, which never decodes them).
func (c *Catalog) Tools() []Tool {
	if c == nil {
		return nil
	}
	return c.tools
}

// Names is the names section: for each server, its name, a NUL, each of its
// tools' names followed by a NUL, and a NUL.
func (c *Catalog) Names() []byte {
	if c == nil {
		return nil
	}
	return c.names
}

// AllJSON is the ALL_TOOLS array as JSON: every tool with every field
// (null when absent). A catalog a worker received has none (HasAll): its
// program's host asks the parent when the program reads ALL_TOOLS.
func (c *Catalog) AllJSON() []byte {
	if c == nil || len(c.all) == 0 {
		return []byte("[]")
	}
	return c.all
}

// HasAll reports whether the catalog holds ALL_TOOLS's JSON: a prepared one
// does, one a worker received without it does not.
func (c *Catalog) HasAll() bool { return c == nil || c.tools != nil || len(c.all) > 0 }

// Servers is the configured servers that have no tools in the catalog and
// are not ready.
func (c *Catalog) Servers() []ServerState {
	if c == nil {
		return nil
	}
	return c.servers
}

// parse builds the lookups from the names section, once. A names section
// that does not parse (only a broken parent could send one) gives an empty
// catalog.
func (c *Catalog) parse() {
	c.once.Do(func() {
		c.index = map[ToolKey]bool{}
		c.byS = map[string][]string{}
		b := c.names
		for len(b) > 0 {
			i := bytes.IndexByte(b, 0)
			if i <= 0 {
				break
			}
			server := string(b[:i])
			b = b[i+1:]
			if _, dup := c.byS[server]; !dup {
				c.order = append(c.order, server)
			}
			tools := c.byS[server]
			for len(b) > 0 && b[0] != 0 {
				j := bytes.IndexByte(b, 0)
				if j < 0 {
					b = nil
					break
				}
				t := string(b[:j])
				c.index[ToolKey{Server: server, Tool: t}] = true
				tools = append(tools, t)
				b = b[j+1:]
			}
			c.byS[server] = tools
			if len(b) > 0 {
				b = b[1:]
			}
		}
	})
}

// Has reports whether the catalog has tool of server.
func (c *Catalog) Has(server, tool string) bool {
	if c == nil {
		return false
	}
	c.parse()
	return c.index[ToolKey{Server: server, Tool: tool}]
}

// ServerNames is the catalog's servers with tools, in catalog order.
func (c *Catalog) ServerNames() []string {
	if c == nil {
		return nil
	}
	c.parse()
	return c.order
}

// ToolNames is server's tools, in catalog order, and whether the catalog
// has the server.
func (c *Catalog) ToolNames(server string) ([]string, bool) {
	if c == nil {
		return nil, false
	}
	c.parse()
	t, ok := c.byS[server]
	return t, ok
}

// Unready is the state of a configured server without tools in the catalog.
func (c *Catalog) Unready(server string) (ServerState, bool) {
	if c != nil {
		for _, s := range c.servers {
			if s.Name == server {
				return s, true
			}
		}
	}
	return ServerState{}, false
}

// Len is how many tools the catalog has.
func (c *Catalog) Len() int {
	if c == nil {
		return 0
	}
	if c.tools != nil {
		return len(c.tools)
	}
	c.parse()
	return len(c.index)
}
