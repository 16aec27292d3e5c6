package mcpgw

// This file holds the search_tools tool: which tools an agent asked for (by
// query, server and exact names), how many, and the answer it reads: the
// tools' TypeScript declarations, best first, with what was not found.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// searchReport is search_tools' structured content.
type searchReport struct {
	Matches []searchMatch `json:"matches"` // best first, at most the limit
	Total   int           `json:"total"`   // tools that matched, before the limit
	Unknown []string      `json:"unknown,omitempty"`
	Notes   []string      `json:"notes,omitempty"` // what was not found, and why
}

// searchMatch is one tool found.
type searchMatch struct {
	Server string  `json:"server"`
	Name   string  `json:"name"`
	Call   string  `json:"call"` // how a program calls it: tools.server.name
	Score  float64 `json:"score,omitempty"`
}

// handleSearchTools answers search_tools with checked arguments: the tools
// named (names) or matching the query, of one server if asked, ranked by
// relevance, at most limit of them.
func (g *Gateway) handleSearchTools(cache *searchCache, args toolArgs) *mcp.CallToolResult {
	catalog := g.Catalog()
	query, server := args.str("query"), args.str("server")
	limit := int(args.integer("limit", DefaultSearchResults))
	rep := searchReport{Matches: []searchMatch{}}

	if server != "" && !catalogHasServer(catalog, server) {
		rep.Notes = append(rep.Notes, g.serverNote(server))
	}
	var hits []searchHit
	if names := args.list("names"); len(names) > 0 {
		var named []wire.Tool
		named, rep.Unknown, rep.Notes = resolveNames(catalog, names, server, rep.Notes)
		hits = rankNamed(named, query)
	} else {
		hits = cache.index(catalog).search(query, server)
	}
	rep.Total = len(hits)
	if len(hits) > limit {
		hits = hits[:limit]
	}
	found := make([]wire.Tool, len(hits))
	for i, h := range hits {
		found[i] = h.tool
		rep.Matches = append(rep.Matches, searchMatch{Server: h.tool.Server, Name: h.tool.Name, Call: toolKey(h.tool), Score: roundScore(h.score)})
	}

	var b strings.Builder
	for _, n := range rep.Notes {
		b.WriteString("// " + n + "\n")
	}
	switch {
	case len(found) == 0:
		b.WriteString("// No tool matches")
		if query != "" {
			b.WriteString(" " + quoteValue(query))
		}
		fmt.Fprintf(&b, "; %d tools exist: try other or fewer words, or leave out server.\n", len(catalog))
	default:
		fmt.Fprintf(&b, "// %s. TypeScript declarations: call a tool in run_js as written, e.g. await %s(args).\n",
			matchSummary(len(found), rep.Total, len(catalog), query), toolKey(found[0]))
		if rep.Total > len(found) {
			fmt.Fprintf(&b, "// %d more match: raise limit (at most %d) or narrow the query.\n", rep.Total-len(found), MaxSearchResults)
		}
		b.WriteString(TSDeclarations(found))
	}
	return textResult(false, strings.TrimRight(b.String(), "\n"), rep)
}

// matchSummary says what the answer holds: "3 of 14 tools match "read
// file", best first".
func matchSummary(shown, total, all int, query string) string {
	if query == "" {
		return fmt.Sprintf("%d of %d tools", shown, all)
	}
	return fmt.Sprintf("%d of %d tools match %s, best first", min(shown, total), all, quoteValue(query))
}

func roundScore(s float64) float64 { return float64(int64(s*1000+0.5)) / 1000 }

func catalogHasServer(catalog []wire.Tool, server string) bool {
	for _, t := range catalog {
		if t.Server == server {
			return true
		}
	}
	return false
}

// serverNote says why a server has no tools in the catalog: unknown (with
// the closest name), or not ready (with its state and reason).
func (g *Gateway) serverNote(server string) string {
	var names []string
	for _, s := range g.Servers() {
		if s.Name == server {
			note := fmt.Sprintf("server %s has no tools to call: it is %s", quoteValue(server), s.State)
			if s.Reason != "" {
				note += " (" + oneLine(wireCutReason(s.Reason)) + ")"
			}
			return note
		}
		names = append(names, s.Name)
	}
	note := fmt.Sprintf("there is no server %s", quoteValue(server))
	if s := suggest(server, names); s != "" {
		note += fmt.Sprintf("; did you mean %q?", s)
	} else if len(names) > 0 {
		note += "; the servers are " + strings.Join(names, ", ")
	}
	return note
}

// wireCutReason keeps a server's reason short in a note.
func wireCutReason(s string) string { return wire.CutChars(s, 200) }

// resolveNames finds each name in the catalog: as tool, server.tool or
// tools.server.tool (or as a program writes it, tools["s"]["t"]), of server
// when one is given. A bare tool name matches that tool of every server.
// The names found nowhere are returned as unknown, each with a note.
func resolveNames(catalog []wire.Tool, names []string, server string, notes []string) (found []wire.Tool, unknown, outNotes []string) {
	seen := map[int]bool{}
	var keys []string
	for _, t := range catalog {
		if server == "" || t.Server == server {
			keys = append(keys, t.Server+"."+t.Name)
		}
	}
	for _, n := range names {
		want := strings.TrimSpace(n)
		hit := false
		for i, t := range catalog {
			if server != "" && t.Server != server {
				continue
			}
			if want == t.Name || want == t.Server+"."+t.Name || want == "tools."+t.Server+"."+t.Name || want == toolKey(t) {
				hit = true
				if !seen[i] {
					seen[i] = true
					found = append(found, t)
				}
			}
		}
		if hit {
			continue
		}
		unknown = append(unknown, n)
		notes = append(notes, unknownToolNote(catalog, want, server, keys))
	}
	return found, unknown, notes
}

// unknownToolNote says that name is no tool, with the closest one, or what
// its server has.
func unknownToolNote(catalog []wire.Tool, name, server string, keys []string) string {
	note := fmt.Sprintf("unknown: %s is no tool", quoteValue(name))
	if server != "" {
		note += " of server " + quoteValue(server)
	}
	if s := suggest(name, keys); s != "" {
		return note + fmt.Sprintf("; did you mean %q?", s)
	}
	// server.tool with a known server: say what that server has.
	for i := len(name) - 1; i > 0; i-- {
		if name[i] != '.' {
			continue
		}
		srv, tool := strings.TrimPrefix(name[:i], "tools."), name[i+1:]
		var tools []string
		for _, t := range catalog {
			if t.Server == srv {
				tools = append(tools, t.Name)
			}
		}
		if len(tools) == 0 {
			continue
		}
		if s := suggest(tool, tools); s != "" {
			return note + fmt.Sprintf("; did you mean %q?", srv+"."+s)
		}
		sort.Strings(tools)
		if len(tools) > 10 {
			tools = append(tools[:10], fmt.Sprintf("… %d more", len(tools)-10))
		}
		return note + fmt.Sprintf("; server %s has %s", quoteValue(srv), strings.Join(tools, ", "))
	}
	return note + "; search_tools with a query finds tools by what they do"
}

// rankNamed orders tools asked for by name: by relevance to query when
// there is one (keeping those that do not match it, last), else as asked.
func rankNamed(tools []wire.Tool, query string) []searchHit {
	hits := make([]searchHit, len(tools))
	for i, t := range tools {
		hits[i] = searchHit{tool: t}
	}
	if strings.TrimSpace(query) == "" || len(tools) < 2 {
		return hits
	}
	scores := map[string]float64{}
	for _, h := range newSearchIndex(tools).search(query, "") {
		scores[h.tool.Server+"\x00"+h.tool.Name] = h.score
	}
	for i := range hits {
		hits[i].score = scores[hits[i].tool.Server+"\x00"+hits[i].tool.Name]
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	return hits
}
