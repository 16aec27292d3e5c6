package mcpgw

// This file is the policy of a server entry as data: the fields it may
// have, their JSON types and transports, the "type" values accepted, and
// what other clients' fields mean to the gateway.

import (
	"strconv"
	"strings"
)

type cfgFieldKind uint8

const (
	cfgString     cfgFieldKind = iota // a JSON string
	cfgStringList                     // an array of strings
	cfgStringMap                      // an object of strings
	cfgBool                           // true or false
	cfgLaneObject                     // {"maxActive": n, "maxOutstanding": n}
)

// Which transport a field belongs to.
type cfgSide uint8

const (
	cfgEither cfgSide = iota
	cfgStdioSide
	cfgRemoteSide
)

// cfgServerFields is every field a server entry may have. Anything else is an
// error, unless cfgForeignFields or cfgFieldAliases names it.
var cfgServerFields = []struct {
	name string
	kind cfgFieldKind
	side cfgSide
}{
	{"type", cfgString, cfgEither}, // see cfgTransportTypes
	{"command", cfgString, cfgStdioSide},
	{"args", cfgStringList, cfgStdioSide},
	{"env", cfgStringMap, cfgStdioSide},
	{"cwd", cfgString, cfgStdioSide},
	{"url", cfgString, cfgRemoteSide},
	{"headers", cfgStringMap, cfgRemoteSide},
	{"allowTools", cfgStringList, cfgEither},
	{"lane", cfgLaneObject, cfgEither},
	{"callTimeout", cfgString, cfgEither},
	{"disabled", cfgBool, cfgEither}, // Cline, Roo Code and Windsurf write it; a disabled server is skipped
}

// cfgTransportTypes is every "type" value accepted, with the clients that
// document it. A server with no type is stdio if it has "command", and
// TransportAuto if it has "url".
var cfgTransportTypes = []struct {
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

// cfgFieldAliases maps a field name some client documents to ours.
var cfgFieldAliases = map[string]struct{ to, from string }{
	"serverUrl": {"url", "Windsurf"},
}

// cfgForeignFields are per-server fields that other clients write and that
// mean nothing to the gateway. Ignoring one must be harmless; where it is not
// (the server would run without its variables, or expose tools its owner
// hid), the field is an error that says what to write instead.
var cfgForeignFields = map[string]struct {
	reject bool
	what   string
}{
	"autoApprove":   {false, "ignored; it is a client's approval list (allowTools limits what programs may call)"},
	"alwaysAllow":   {false, "ignored; it is a client's approval list (allowTools limits what programs may call)"},
	"timeout":       {false, `ignored; clients differ on its unit; set "callTimeout" to a duration like "60s"`},
	"auth":          {false, "ignored; the gateway does no OAuth, so the server is called without it"},
	"headersHelper": {false, `ignored; the gateway runs no helper for headers; set "headers", using ${VAR} for secrets`},
	"envFile":       {true, `not supported: the server would start without those variables; put them in "env", as ${VAR} to take them from the gateway's environment`},
	"disabledTools": {true, `not supported: ignoring it would expose the tools it hides; list the tools to expose in "allowTools"`},
}

// cfgFieldHints are names people write for our fields that edit distance
// does not catch.
var cfgFieldHints = map[string]string{
	"cmd":          "command",
	"arguments":    "args",
	"environment":  "env",
	"transport":    "type",
	"endpoint":     "url",
	"allowedTools": "allowTools",
}

var cfgLaneFields = []string{"maxActive", "maxOutstanding"}
var cfgLimitFields = []string{"timeout", "memory", "maxTimeout", "maxMemory"}

func cfgServerFieldNames() []string {
	names := make([]string, len(cfgServerFields))
	for i, f := range cfgServerFields {
		names[i] = f.name
	}
	return names
}

func cfgTransportValues() string {
	var b strings.Builder
	for i, t := range cfgTransportTypes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(t.value))
	}
	return b.String()
}
