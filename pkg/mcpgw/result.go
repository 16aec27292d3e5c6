package mcpgw

// This file holds the normalization of a tool's result to the shape every
// program sees, written so that a large result is copied once: from the
// go-sdk's decoding, its text is encoded straight into a buffer sized for it
// (encoding/json would copy it four times through TextContent's
// MarshalJSON); a large result from a stdio server is not decoded at all
// but spliced from the line as read (normalizeRaw).

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// normalizeResult gives a result the shape every program sees:
// {content, structuredContent, isError}, with content blocks as the SDK
// decoded them (text, image, audio, resource links and embedded resources,
// with their annotations and _meta). Text blocks are written here, the
// others by encoding/json; the JSON is the same either way.
func normalizeResult(res *mcp.CallToolResult) ([]byte, error) {
	size := 64
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			size += len(t.Text) + len(t.Text)/16 + 64 // escapes are rare; append grows if not
		} else {
			size += 256
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			b = append(b, ',')
		}
		t, ok := c.(*mcp.TextContent)
		if !ok || t == nil {
			raw, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			b = append(b, raw...)
			continue
		}
		b = append(b, `{"type":"text","text":`...)
		b = wire.AppendJSONString(b, t.Text, true)
		if len(t.Meta) > 0 {
			raw, err := json.Marshal(t.Meta)
			if err != nil {
				return nil, err
			}
			b = append(append(b, `,"_meta":`...), raw...)
		}
		if t.Annotations != nil {
			raw, err := json.Marshal(t.Annotations)
			if err != nil {
				return nil, err
			}
			b = append(append(b, `,"annotations":`...), raw...)
		}
		b = append(b, '}')
	}
	b = append(b, `],"structuredContent":`...)
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	b = append(b, sc...)
	b = append(b, `,"isError":`...)
	b = strconv.AppendBool(b, res.IsError)
	return append(b, '}'), nil
}

// rawMembers takes a result's JSON as the server wrote it (valid JSON: the
// connection checked the line) apart into the members of the shape every
// program sees, as slices of it: its content blocks as written, each
// checked to be an object with a string "type"; structuredContent as
// written (null when absent); isError true or false.
func rawMembers(raw []byte) (content, sc []byte, isError bool, err error) {
	members, ok := jsonObjectMembers(raw)
	if !ok {
		return nil, nil, false, errors.New("the result is not a JSON object")
	}
	content = members["content"]
	if len(content) == 0 || content[0] != '[' {
		return nil, nil, false, errors.New(`the result has no "content" array`)
	}
	for i, block := range jsonElements(content) {
		m, ok := jsonObjectMembers(block)
		if !ok || len(m["type"]) < 2 || m["type"][0] != '"' {
			return nil, nil, false, fmt.Errorf(`content[%d] is not an object with a "type"`, i)
		}
	}
	sc = members["structuredContent"]
	if len(sc) == 0 {
		sc = []byte("null")
	}
	switch string(members["isError"]) {
	case "", "null", "false":
	case "true":
		isError = true
	default:
		return nil, nil, false, errors.New(`"isError" is not true or false`)
	}
	return content, sc, isError, nil
}

// normalizeRaw is normalizeResult for a result's JSON as the server wrote
// it, in one copy (rawMembers, joined).
func normalizeRaw(raw []byte) ([]byte, error) {
	content, sc, isError, err := rawMembers(raw)
	if err != nil {
		return nil, err
	}
	isErr := []byte("false")
	if isError {
		isErr = []byte("true")
	}
	b := make([]byte, 0, len(content)+len(sc)+len(isErr)+48)
	b = append(b, `{"content":`...)
	b = append(b, content...)
	b = append(b, `,"structuredContent":`...)
	b = append(b, sc...)
	b = append(b, `,"isError":`...)
	b = append(b, isErr...)
	return append(b, '}'), nil
}
