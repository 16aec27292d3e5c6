package mcpgw

// This file holds the config's helpers for raw JSON (members in file
// order, kinds, positions) and for naming fields and values in messages.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

type jsonMember struct {
	key string
	val json.RawMessage
}

// jsonMembers lists an object's members in file order, duplicates included.
// raw must be valid JSON (ParseConfig checks the whole file first).
func jsonMembers(raw json.RawMessage) []jsonMember {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []jsonMember
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, jsonMember{k, v})
	}
	return out
}

func jsonHasKey(raw json.RawMessage, key string) bool {
	for _, m := range jsonMembers(raw) {
		if m.key == key {
			return true
		}
	}
	return false
}

// jsonKind names the JSON type of raw, for messages.
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonKindOrNumber names raw's type, or quotes it if it is a number.
func jsonKindOrNumber(raw []byte) string {
	if k := jsonKind(raw); k != "a number" {
		return k
	}
	return shortValue(string(bytes.TrimSpace(raw)))
}

// jsonInt reads a JSON number that is a whole number.
func jsonInt(raw []byte) (int64, bool) {
	if jsonKind(raw) != "a number" {
		return 0, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return n, err == nil
}

// lineCol turns a byte offset into a line and a column, both from 1.
func lineCol(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	return line, off - bytes.LastIndexByte(data[:off], '\n')
}

func configName(path string) string {
	if path == "" {
		return "config"
	}
	return path
}

// isPlainKey reports whether a key can stand unquoted in a path.
func isPlainKey(s string) bool {
	if s == "" || len(s) > MaxServerNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// quoteValue quotes a name or value from the file for a message, cut to
// maxQuoted bytes.
func quoteValue(s string) string { return strconv.Quote(wire.Cut(s, maxQuoted)) }

// maxQuoted bounds what a message quotes of a name or value from the file:
// enough to recognise it, and a 1 MiB value does not make a 1 MiB message.
const maxQuoted = 64

// shortValue cuts a value for a message, without quotes.
func shortValue(s string) string {
	q := quoteValue(s)
	return q[1 : len(q)-1]
}

// keyPath appends a key to a JSON path: a.key, or a["odd key"].
func keyPath(base, key string) string {
	if isPlainKey(key) {
		if base == "" {
			return key
		}
		return base + "." + key
	}
	return base + "[" + quoteValue(key) + "]"
}

// unknownField says an unknown field is wrong, with the likely fix.
func unknownField(key string, known []string) string {
	if s := suggest(key, known); s != "" {
		return fmt.Sprintf("unknown field; did you mean %q?", s)
	}
	return fmt.Sprintf("unknown field; remove it (the fields are %s)", strings.Join(known, ", "))
}
