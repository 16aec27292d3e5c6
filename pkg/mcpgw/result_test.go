package mcpgw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// TestAppendJSONString: the same bytes as encoding/json, for text that
// needs every kind of escape and for invalid UTF-8.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote \" back \\ slash", "\n\r\t\x00\x1f\x7f", "<a href=\"x\">&amp;</a>", "caf\u00e9 \u2028\u2029 \U0001F600",
		"bad \xff utf-8 \xc3", strings.Repeat("ab\"", 1000)} {
		want, _ := json.Marshal(s)
		if got := wire.AppendJSONString(nil, s, true); !bytes.Equal(got, want) {
			t.Errorf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestNormalize: the SDK path and the raw path give the same shape, and
// the raw path refuses what is not a tool's result.
func TestNormalize(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "line <1>\n"}, &mcp.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"}},
		StructuredContent: map[string]any{"n": 1.0}, IsError: true}
	fromSDK, err := normalizeResult(res)
	if err != nil {
		t.Fatal(err)
	}
	wire, _ := json.Marshal(res)
	fromRaw, err := normalizeRaw(wire)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal(fromSDK, &a)
	_ = json.Unmarshal(fromRaw, &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) || !json.Valid(fromSDK) {
		t.Fatalf("the paths differ:\n sdk %s\n raw %s", fromSDK, fromRaw)
	}
	if got, _ := normalizeRaw([]byte(`{"content":[]}`)); string(got) != `{"content":[],"structuredContent":null,"isError":false}` {
		t.Errorf("defaults: %s", got)
	}
	for _, bad := range []string{`[]`, `{"content":{}}`, `{"content":[1]}`, `{"content":[{"text":"no type"}]}`, `{"content":[],"isError":"yes"}`} {
		if _, err := normalizeRaw([]byte(bad)); err == nil {
			t.Errorf("normalizeRaw(%s) accepted it", bad)
		}
	}
}
