package mcpgw

// This file is the policy of a server entry as data: the fields it may
// have, their JSON types and transports, the "type" values accepted, and
// what other clients' fields mean to the gateway.

import (
	"strconv"
	"strings"
)

type fieldKind uint8

const (
	kindString     fieldKind = iota // a JSON string
	kindStringList                  // an array of strings
	kindStringMap                   // an object of strings
	kindBool                        // true or false
	kindLaneObject                  // {"maxActive": n, "maxOutstanding": n}
)

// Which transport a field belongs to.
type fieldSide uint8

const (
	sideEither fieldSide = iota
	sideStdio
	sideRemote
)

// serverFields is every field a server entry may have. Anything else is an
// error, unless foreignFields or fieldAliases names it.
var serverFields = []struct {
	name string
	kind fieldKind
	side fieldSide
}{
	{"type", kindString, sideEither}, // see transportTypes
	{"command", kindString, sideStdio},
	{"args", kindStringList, sideStdio},
	{"env", kindStringMap, sideStdio},
	{"cwd", kindString, sideStdio},
	{"envFile", kindString, sideStdio},        // VS Code's; loaded (config_envfile.go)
	{"inheritEnv", kindStringList, sideStdio}, // ours: variables of the gateway's environment the server gets
	{"startTimeout", kindString, sideEither},  // ours: bounds one start attempt
	{"url", kindString, sideRemote},
	{"headers", kindStringMap, sideRemote},
	{"allowTools", kindStringList, sideEither},
	{"lane", kindLaneObject, sideEither},
	{"callTimeout", kindString, sideEither},
	{"disabled", kindBool, sideEither}, // Cline, Roo Code and Windsurf write it; a disabled server is skipped
}

// transportTypes is every "type" value accepted, with the clients that
// document it. A server with no type is stdio if it has "command", and
// TransportAuto if it has "url".
var transportTypes = []struct {
	value     string
	transport Transport
	from      string
}{
	{"stdio", TransportStdio, "Claude Code, Cursor"},
	{"http", TransportHTTP, "Claude Code"},
	{"streamable-http", TransportHTTP, "the MCP spec's name for the transport"},
	{"streamableHttp", TransportHTTP, "Cline"},
	{"sse", TransportSSE, "Claude Code, Cursor, Cline"},
}

// fieldAliases maps a field name some client documents to ours.
var fieldAliases = map[string]struct{ to, from string }{
	"serverUrl": {"url", "Windsurf"},
}

// foreignFields are per-server fields that other clients write and that
// mean nothing to the gateway. Ignoring one must be harmless; where it is not
// (the server would run without its variables, or expose tools its owner
// hid), the field is an error that says what to write instead.
var foreignFields = map[string]struct {
	reject bool
	what   string
}{
	"autoApprove":   {false, "ignored; it is a client's approval list (allowTools limits what programs may call)"},
	"alwaysAllow":   {false, "ignored; it is a client's approval list (allowTools limits what programs may call)"},
	"timeout":       {false, `ignored; clients differ on its unit; set "callTimeout" to a duration like "60s"`},
	"auth":          {false, "ignored; the gateway does no OAuth, so the server is called without it"},
	"headersHelper": {false, `ignored; the gateway runs no helper for headers; set "headers", using ${VAR} for secrets`},
	"disabledTools": {true, `not supported: ignoring it would expose the tools it hides; list the tools to expose in "allowTools"`},
}

// fieldHints are names people write for our fields that edit distance
// does not catch.
var fieldHints = map[string]string{
	"cmd":          "command",
	"arguments":    "args",
	"environment":  "env",
	"transport":    "type",
	"endpoint":     "url",
	"allowedTools": "allowTools",
}

var laneFields = []string{"maxActive", "maxOutstanding"}
var limitFields = []string{"timeout", "memory", "maxTimeout", "maxMemory", "startTimeout", "confinement"}

// serverFieldKind is the kind of the server field named key, if it is one.
func serverFieldKind(key string) (fieldKind, bool) {
	for _, f := range serverFields {
		if f.name == key {
			return f.kind, true
		}
	}
	return 0, false
}

func serverFieldNames() []string {
	names := make([]string, len(serverFields))
	for i, f := range serverFields {
		names[i] = f.name
	}
	return names
}

func transportValues() string {
	var b strings.Builder
	for i, t := range transportTypes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(t.value))
	}
	return b.String()
}
