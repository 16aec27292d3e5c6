package mcpgw

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// fsCatalog is a filesystem server's tools, as the reference MCP
// filesystem server describes them, beside a memory server and a tracker.
func fsCatalog() []wire.Tool {
	tool := func(server, name, desc string, params ...string) wire.Tool {
		props := map[string]any{}
		for _, p := range params {
			props[p] = map[string]any{"type": "string"}
		}
		schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
		return wire.Tool{Server: server, Name: name, Description: desc, InputSchema: schema}
	}
	return []wire.Tool{
		tool("fs", "create_directory", "Create a new directory or ensure a directory exists. Can create multiple nested directories in one operation.", "path"),
		tool("fs", "directory_tree", "Get a recursive tree view of files and directories as a JSON structure.", "path"),
		tool("fs", "edit_file", "Make line-based edits to a text file. Each edit replaces exact line sequences with new content.", "path", "edits", "dryRun"),
		tool("fs", "get_file_info", "Retrieve detailed metadata about a file or directory.", "path"),
		tool("fs", "list_allowed_directories", "Returns the list of directories that this server is allowed to access."),
		tool("fs", "list_directory", "Get a detailed listing of all files and directories in a specified path.", "path"),
		tool("fs", "move_file", "Move or rename files and directories.", "source", "destination"),
		tool("fs", "read_media_file", "Read an image or audio file. Returns the base64 encoded data and MIME type.", "path"),
		tool("fs", "read_multiple_files", "Read the contents of multiple files simultaneously.", "paths"),
		tool("fs", "read_text_file", "Read the complete contents of a file from the file system as text.", "path", "head", "tail"),
		tool("fs", "search_files", "Recursively search for files and directories matching a pattern.", "path", "pattern", "excludePatterns"),
		tool("fs", "write_file", "Create a new file or completely overwrite an existing file with new content.", "path", "content"),
		tool("memory", "create_entities", "Create multiple new entities in the knowledge graph.", "entities"),
		tool("memory", "open_nodes", "Open specific nodes in the knowledge graph by their names.", "names"),
		tool("memory", "read_graph", "Read the entire knowledge graph."),
		tool("memory", "search_nodes", "Search for nodes in the knowledge graph based on a query.", "query"),
		tool("tracker", "list_issues", "List issues of the tracker, filtered by state and label.", "state", "label", "limit"),
		tool("tracker", "add_comment", "Add a comment to an issue.", "id", "body"),
	}
}

func hitNames(hits []searchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.tool.Server + "." + h.tool.Name
	}
	return out
}

// TestSearchRanking: relevance, not catalog order; every word counts, a
// name's words most; exact names and named servers are boosted.
func TestSearchRanking(t *testing.T) {
	ix := newSearchIndex(fsCatalog())
	for _, tc := range []struct {
		query, server string
		top           []string // the first results, in any order
		absent        []string // must not match at all
	}{
		// The case: "read file" matched any word and sorted by name,
		// so create_directory came first.
		{query: "read file", top: []string{"fs.read_text_file", "fs.read_media_file", "fs.read_multiple_files"}, absent: []string{"fs.create_directory", "fs.list_allowed_directories"}},
		{query: "readFile", top: []string{"fs.read_text_file", "fs.read_media_file", "fs.read_multiple_files"}},
		{query: "write", top: []string{"fs.write_file"}},
		{query: "list_directory", top: []string{"fs.list_directory"}}, // exact name first
		{query: "fs.move_file", top: []string{"fs.move_file"}},
		{query: "rename", top: []string{"fs.move_file"}},
		{query: "comment on an issue", top: []string{"tracker.add_comment", "tracker.list_issues"}},
		{query: "knowledge graph nodes", top: []string{"memory.open_nodes", "memory.search_nodes"}},
		{query: "memory search", top: []string{"memory.search_nodes"}}, // the server named lifts its tools
		{query: "destination", top: []string{"fs.move_file"}},          // a parameter name
		{query: "dir", top: []string{"fs.create_directory"}},           // a prefix of a word
		{query: "search", server: "fs", top: []string{"fs.search_files"}, absent: []string{"memory.search_nodes"}},
		{query: "zebra"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			got := hitNames(ix.search(tc.query, tc.server))
			first := slices.Clone(got[:min(len(got), len(tc.top))])
			slices.Sort(first)
			if want := slices.Sorted(slices.Values(tc.top)); !slices.Equal(first, want) {
				t.Fatalf("search(%q) = %v, want it to start with %v", tc.query, got, tc.top)
			}
			for _, a := range tc.absent {
				if slices.Contains(got, a) {
					t.Fatalf("search(%q) = %v holds %s", tc.query, got, a)
				}
			}
			if len(tc.top) == 0 && len(got) > 0 {
				t.Fatalf("search(%q) = %v, want nothing", tc.query, got)
			}
		})
	}
	if all := ix.search("", ""); len(all) != len(fsCatalog()) {
		t.Fatalf("an empty query lists %d tools, want all %d", len(all), len(fsCatalog()))
	}
}

func TestSearchTerms(t *testing.T) {
	for in, want := range map[string]string{
		"read_file":            "read file",
		"readMultipleFiles":    "read multiple file",
		"Get the DIRECTORIES!": "get directory",
		"list-issues, by tag":  "list issue tag",
		"status class":         "status class",
		"HTTPServer v2":        "httpserver v2",
	} {
		if got := strings.Join(searchTerms(in), " "); got != want {
			t.Errorf("searchTerms(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSearchCache: the index is rebuilt when the catalog changes, not on
// every search.
func TestSearchCache(t *testing.T) {
	var c searchCache
	cat := fsCatalog()
	a := c.index(cat)
	if c.index(cat) != a {
		t.Fatal("the same catalog was indexed again")
	}
	grown := append(slices.Clone(cat), wire.Tool{Server: "fs", Name: "zebra_tool"})
	if b := c.index(grown); b == a || len(b.search("zebra", "")) != 1 {
		t.Fatal("a new catalog was not indexed")
	}
}

// TestSearchToolsOverMCP: search_tools through a real client: ranked,
// limited, unknown names reported, and the answer is TypeScript.
func TestSearchToolsOverMCP(t *testing.T) {
	g := newTestGateway(t, testServer("demo", "demo"))
	cs := mcpClient(t, g)

	text, sc, isErr := callTool(t, cs, "search_tools", map[string]any{"query": "comment on an issue"})
	if isErr || !strings.HasPrefix(text, `// 3 of 3 tools match "comment on an issue", best first.`) {
		t.Fatalf("search_tools:\n%s", text)
	}
	if first := sc["matches"].([]any)[0].(map[string]any); first["call"] != "tools.demo.add_comment" {
		t.Fatalf("first match %v, want add_comment", first)
	}
	if _, err := CompileTS(text + "\nreturn 1;"); err != nil {
		t.Fatalf("the answer does not parse as TypeScript: %v\n%s", err, text)
	}

	text, sc, _ = callTool(t, cs, "search_tools", map[string]any{"query": "issue", "limit": 1})
	if n := len(sc["matches"].([]any)); n != 1 || sc["total"].(float64) < 2 || !strings.Contains(text, "more match: raise limit (at most 50)") {
		t.Fatalf("limit 1: %d matches of %v:\n%s", n, sc["total"], text)
	}

	text, sc, _ = callTool(t, cs, "search_tools", map[string]any{"names": []string{"demo.get_issue", "memory.nope", "demo.get_isue", "list_issues"}})
	if u := fmt.Sprint(sc["unknown"]); u != "[memory.nope demo.get_isue]" {
		t.Fatalf("unknown %s:\n%s", u, text)
	}
	for _, want := range []string{`// unknown: "memory.nope" is no tool; search_tools with a query finds tools by what they do`,
		`// unknown: "demo.get_isue" is no tool; did you mean "demo.get_issue"?`, "    get_issue(args: ", "    list_issues(args: "} {
		if !strings.Contains(text, want) {
			t.Errorf("names: the answer lacks %q:\n%s", want, text)
		}
	}

	text, _, _ = callTool(t, cs, "search_tools", map[string]any{"query": "issue", "server": "demoo"})
	if !strings.Contains(text, `// there is no server "demoo"; did you mean "demo"?`) || !strings.Contains(text, "No tool matches") {
		t.Fatalf("an unknown server:\n%s", text)
	}
	text, _, _ = callTool(t, cs, "search_tools", map[string]any{"query": "zzz"})
	if !strings.HasPrefix(text, `// No tool matches "zzz"; 3 tools exist`) {
		t.Fatalf("no match:\n%s", text)
	}
}
