package mcpgw

// This file holds the gateway's config: the file format, every check on it,
// ${VAR} expansion, and the redacted view that server_info and check-config
// show. Package-level names that are not exported start with cfg, so they
// cannot clash with the rest of the package.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// The bounds of a config file and of what it may ask for. Each has its reason.
const (
	// MaxConfigBytes caps a config file, checked before anything is parsed.
	// Real client configs are a few KiB; a thousand times that still reads
	// and parses in milliseconds, and a stray log or binary is refused
	// without being read to its end.
	MaxConfigBytes = 4 << 20
	// MaxConfigDepth caps the nesting of arrays and objects anywhere in the
	// file, checked before anything is parsed. Our fields nest four deep
	// and the client settings beside them (Claude Desktop's preferences) a
	// few more; 64 is far past any real file and keeps nesting bombs out of
	// the decoder.
	MaxConfigDepth = 64
	// MaxConfigServers bounds the servers of one file: each is a process or
	// connection the gateway keeps open, and desktop configs hold dozens.
	MaxConfigServers = 1000
	// MaxServerNameBytes bounds a server's name, which programs write as
	// tools["name"] and which prefixes log lines and tool listings.
	MaxServerNameBytes = 64
	// MaxConfigProblems is how many problems one error lists: more than any
	// hand-written file has, while a generated file with thousands of errors
	// still gives a message a person can read. The rest are counted.
	MaxConfigProblems = 50

	// DefaultLaneMaxActive and DefaultLaneMaxOutstanding are a server's lane
	// when its config leaves them out (or writes 0): the same as package
	// lanes' defaults, repeated here so the loaded config shows the values
	// in force. Most stdio servers answer one request or a few at a time.
	DefaultLaneMaxActive      = 4
	DefaultLaneMaxOutstanding = 64
	// MaxLaneOutstanding is the most calls a lane may hold running or
	// queued, as package lanes bounds it: every queued call holds a
	// goroutine and its arguments.
	MaxLaneOutstanding = 100_000
)

// Transport is how the gateway reaches a downstream server.
type Transport string

// The transports. The "type" values a file may use for them, with their
// aliases, are in cfgTransportTypes.
const (
	// TransportStdio: a child process speaking MCP on its stdin and stdout.
	TransportStdio Transport = "stdio"
	// TransportHTTP: Streamable HTTP.
	TransportHTTP Transport = "http"
	// TransportSSE: the legacy HTTP+SSE transport.
	TransportSSE Transport = "sse"
	// TransportAuto: a url with no type. Try Streamable HTTP, and fall back
	// to legacy SSE if the server does not take it.
	TransportAuto Transport = "auto"
)

// remote reports whether t is reached by URL.
func (t Transport) remote() bool {
	return t == TransportHTTP || t == TransportSSE || t == TransportAuto
}

// ServerConfig is one downstream server as loaded. A stdio server has Command
// (and maybe Args, Env, Cwd) and no URL or Headers; a remote one has URL (and
// maybe Headers) and none of the stdio fields. Empty lists and maps are nil.
type ServerConfig struct {
	Name      string
	Transport Transport

	// stdio
	Command string
	Args    []string
	Env     map[string]string // added to the gateway's environment; values are secrets
	Cwd     string            // as written; "" is the gateway's working directory

	// remote
	URL     string            // may carry secrets in its userinfo or query
	Headers map[string]string // values are secrets

	// AllowTools names the tools a program may call; empty means every tool
	// the server lists.
	AllowTools []string
	// Lane bounds the calls to this server. LoadConfig fills zero fields with
	// DefaultLaneMaxActive and DefaultLaneMaxOutstanding.
	Lane struct{ MaxActive, MaxOutstanding int }
	// CallTimeout bounds one call; 0 means only the run's deadline does.
	CallTimeout time.Duration
	// Disabled servers are listed but never started. Their command, args,
	// env, cwd, url and headers are kept as written: ${VAR} is not expanded
	// in them, and they are checked only for their JSON types.
	Disabled bool
}

// Config is a loaded config file.
type Config struct {
	Path    string
	Servers []ServerConfig // sorted by name (byte order), disabled ones too

	// Limits holds the run defaults in force: TimeoutMs and MemoryBytes are
	// always set; the other fields are zero, meaning wire's defaults (which
	// depend on the memory a run ends up with, so they are not fixed here).
	Limits wire.Limits
	// MaxTimeout and MaxMemory are the most a run_js call may ask for.
	MaxTimeout time.Duration
	MaxMemory  int64

	// Warnings are things ignored or skipped, one line each, in the form
	// "FILE: WHERE: what". They never hold a secret.
	Warnings []string

	// tmpl is each server's command, args, cwd and url as written (before
	// ${VAR} expansion), for Redacted.
	tmpl map[string]cfgTemplate
}

// ErrConfig: the config file could not be read, is too large, is not JSON, or
// breaks one of the rules in this file. Every error from LoadConfig and
// ParseConfig wraps it; for a file that was read it is a *ConfigError, which
// lists every problem found.
var ErrConfig = errors.New("bad config")

// ConfigProblem is one thing wrong with a config file.
type ConfigProblem struct {
	// Where is the JSON path of the field ("mcpServers.github.command",
	// "limits.memory", `mcpServers["my server"].env.TOKEN`), a position
	// ("line 3, column 14") for invalid JSON, or "" for the whole file.
	Where string
	// What says what is wrong and what to do. It never holds a secret.
	What string
}

// ConfigError is the error for a config file that could not be used: every
// problem found, not only the first. It wraps ErrConfig, and for a file that
// could not be read, the error from the file system too.
type ConfigError struct {
	Path     string
	Problems []ConfigProblem // in file order, at most MaxConfigProblems
	Omitted  int             // further problems, counted but not listed
	cause    error
}

// Error is one line per problem: "FILE: WHERE: what is wrong; what to do".
func (e *ConfigError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Path)
		if p.Where != "" {
			b.WriteString(": ")
			b.WriteString(p.Where)
		}
		b.WriteString(": ")
		b.WriteString(p.What)
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "\n%s: and %d more problems", e.Path, e.Omitted)
	}
	return b.String()
}

// Unwrap gives ErrConfig, and the file system's error when there is one.
func (e *ConfigError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrConfig, e.cause}
	}
	return []error{ErrConfig}
}

// LoadConfig reads and parses the config file at path; see ParseConfig. A file
// larger than MaxConfigBytes is refused without being read to its end. (A
// FIFO with no writer blocks the read: only name a file.)
func LoadConfig(path string, lookupEnv func(string) (string, bool)) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, cfgReadError(path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxConfigBytes {
		return nil, cfgTooLarge(path, fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, cfgReadError(path, err)
	}
	if len(data) > MaxConfigBytes {
		return nil, cfgTooLarge(path, -1)
	}
	return ParseConfig(path, data, lookupEnv)
}

// ParseConfig parses a config file's bytes; path names the file in messages.
//
// The file is a JSON object. Its "mcpServers" is in the format of Claude
// Desktop's claude_desktop_config.json, Claude Code's .mcp.json and Cursor's
// mcp.json, plus our fields (allowTools, lane, callTimeout); its "limits" sets
// the run limits. Other top-level keys belong to the clients and are ignored
// with a warning. Within a server, fields are checked strictly (see
// cfgServerFields and cfgForeignFields).
//
// ${NAME}, ${NAME:-default} (default used when NAME is unset or empty) and
// Cursor's ${env:NAME} are replaced in command, args, cwd, url and the values of
// env and headers, looking names up with lookupEnv (nil: os.LookupEnv). A "$"
// not followed by "{" is kept as it is.
//
// The error, if any, is a *ConfigError listing every problem found.
func ParseConfig(path string, data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if len(data) > MaxConfigBytes {
		return nil, cfgTooLarge(path, int64(len(data)))
	}
	p := &cfgParser{err: &ConfigError{Path: cfgDisplayPath(path)}, lookup: lookupEnv}
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // Windows editors' byte order mark
	if len(bytes.TrimSpace(data)) == 0 {
		p.problem("", `the file is empty; write {"mcpServers": {}} at least`)
		return nil, p.err
	}
	if off, ok := cfgCheckDepth(data, MaxConfigDepth); !ok {
		line, col := cfgLineCol(data, off)
		p.problem(fmt.Sprintf("line %d, column %d", line, col),
			fmt.Sprintf("nested deeper than %d arrays and objects; a config needs a handful of levels", MaxConfigDepth))
		return nil, p.err
	}
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		p.syntax(data, err)
		return nil, p.err
	}
	cfg := p.parse(path, data)
	if len(p.err.Problems) > 0 {
		return nil, p.err
	}
	return cfg, nil
}

// cfgParser gathers the problems and warnings of one file.
type cfgParser struct {
	err      *ConfigError
	warnings []string
	lookup   func(string) (string, bool)
}

func (p *cfgParser) problem(where, what string) {
	if len(p.err.Problems) >= MaxConfigProblems {
		p.err.Omitted++
		return
	}
	p.err.Problems = append(p.err.Problems, ConfigProblem{Where: where, What: what})
}

func (p *cfgParser) warn(where, what string) {
	line := p.err.Path + ": "
	if where != "" {
		line += where + ": "
	}
	p.warnings = append(p.warnings, line+what)
}

// syntax reports invalid JSON with its line and column (in bytes, from 1).
func (p *cfgParser) syntax(data []byte, err error) {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		p.problem("", "invalid JSON: "+err.Error())
		return
	}
	off := int(se.Offset)
	if off > 0 && off <= len(data) && se.Error() != "unexpected end of JSON input" {
		off-- // Offset is just past the byte that broke it
	}
	line, col := cfgLineCol(data, off)
	hint := "fix the JSON there"
	if off < len(data) {
		prev := bytes.TrimRight(data[:off], " \t\r\n")
		switch c := data[off]; {
		case c == '/' || c == '#':
			hint = "JSON has no comments; remove them"
		case (c == '}' || c == ']') && len(prev) > 0 && prev[len(prev)-1] == ',':
			hint = "remove the trailing comma before it"
		case c == '\'':
			hint = `JSON strings take double quotes`
		case c < 0x20: // whitespace outside strings is fine, so this is inside one
			hint = `a string cannot hold a raw tab or line break; write \t or \n`
		}
	} else {
		hint = "the file ends too early; close every { and ["
	}
	p.problem(fmt.Sprintf("line %d, column %d", line, col), "invalid JSON: "+se.Error()+"; "+hint)
}

// The top-level keys we read; any other is the clients' and ignored.
const (
	cfgKeyServers = "mcpServers"
	cfgKeyLimits  = "limits"
)

func (p *cfgParser) parse(path string, data []byte) *Config {
	cfg := &Config{Path: path, tmpl: map[string]cfgTemplate{}}
	if kind := cfgKind(data); kind != "an object" {
		p.problem("", fmt.Sprintf(`the top level is %s; it must be an object like {"mcpServers": {...}}`, kind))
		return nil
	}
	top := cfgMembers(data)
	seen := map[string]bool{}
	var servers json.RawMessage
	limitsDone := false
	for _, m := range top {
		where := cfgKeyPath("", m.key)
		if seen[m.key] {
			p.problem(where, "appears twice; JSON keeps only the last, so the first would be lost silently; merge them")
			continue
		}
		seen[m.key] = true
		switch m.key {
		case cfgKeyServers:
			servers = m.val
			p.servers(cfg, servers)
		case cfgKeyLimits:
			cfg.Limits, cfg.MaxTimeout, cfg.MaxMemory = p.limits(m.val)
			limitsDone = true
		default:
			what := "ignored; not a gateway setting"
			if s := cfgSuggest(m.key, []string{cfgKeyServers, cfgKeyLimits}); s != "" {
				what = fmt.Sprintf("ignored; did you mean %q?", s)
			}
			p.warn(where, what)
		}
	}
	if !limitsDone {
		cfg.Limits, cfg.MaxTimeout, cfg.MaxMemory = p.limits(nil)
	}
	if servers == nil {
		what := `missing; add "mcpServers": {"name": {"command": ...}}`
		for _, m := range top {
			if s := cfgSuggest(m.key, []string{cfgKeyServers}); s != "" || m.key == "servers" {
				what = fmt.Sprintf("missing; the file has %s: rename it to %q", cfgQuote(m.key), cfgKeyServers)
				break
			}
		}
		p.problem(cfgKeyServers, what)
		return nil
	}
	sort.Slice(cfg.Servers, func(i, j int) bool { return cfg.Servers[i].Name < cfg.Servers[j].Name })
	cfg.Warnings = p.warnings
	return cfg
}

// servers checks "mcpServers" and adds the good servers to cfg.
func (p *cfgParser) servers(cfg *Config, servers json.RawMessage) {
	if kind := cfgKind(servers); kind != "an object" {
		p.problem(cfgKeyServers, fmt.Sprintf(`expected an object of servers by name, got %s; write {"name": {"command": ...}}`, kind))
		return
	}
	members := cfgMembers(servers)
	if len(members) > MaxConfigServers {
		p.problem(cfgKeyServers, fmt.Sprintf("has %d servers; at most %d", len(members), MaxConfigServers))
		return
	}
	seen := map[string]bool{}
	enabled := 0
	for _, m := range members {
		if seen[m.key] {
			p.problem(cfgServerPath(m.key), "server name appears twice; JSON keeps only the last, so the first would be lost silently; rename one")
			continue
		}
		seen[m.key] = true
		sc, tmpl, ok := p.server(m.key, m.val)
		if !ok {
			continue
		}
		if !sc.Disabled {
			enabled++
		}
		cfg.Servers = append(cfg.Servers, sc)
		cfg.tmpl[sc.Name] = tmpl
	}
	if len(members) == 0 {
		p.warn(cfgKeyServers, "no servers; programs will have no tools to call")
	} else if enabled == 0 && len(cfg.Servers) == len(members) {
		p.warn(cfgKeyServers, "every server is disabled; programs will have no tools to call")
	}
}

// --- The fields of a server: policy as data. ---

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

// cfgEntry is a server's fields as decoded, before expansion.
type cfgEntry struct {
	has                             map[string]bool
	typ, command, cwd, url, timeout string
	args, allowTools                []string
	env, headers                    map[string]string
	envKeys, headerKeys             []string // in file order
	active, outstanding             int
	disabled                        bool
}

// cfgTemplate is what Redacted shows of a server: its text as written.
type cfgTemplate struct {
	command, cwd, url string
	args              []string
}

// server checks one server entry. ok is false if it had any problem.
func (p *cfgParser) server(name string, raw json.RawMessage) (sc ServerConfig, tmpl cfgTemplate, ok bool) {
	before := len(p.err.Problems) + p.err.Omitted
	where := cfgServerPath(name)
	p.serverName(where, name)
	if kind := cfgKind(raw); kind != "an object" {
		p.problem(where, fmt.Sprintf(`expected an object with "command" or "url", got %s`, kind))
		return sc, tmpl, false
	}
	e := p.entry(where, raw)

	// The transport.
	var tr Transport
	why := ""
	if e.has["type"] {
		for _, t := range cfgTransportTypes {
			if t.value == e.typ {
				tr = t.transport
			}
		}
		why = fmt.Sprintf("its type is %q", e.typ)
		if tr == "" {
			what := fmt.Sprintf("unknown type %s; accepted: %s, or leave it out", cfgQuote(e.typ), cfgTransportValues())
			values := make([]string, len(cfgTransportTypes))
			for i, t := range cfgTransportTypes {
				values[i] = t.value
			}
			if s := cfgSuggest(e.typ, values); s != "" {
				what = fmt.Sprintf("unknown type %s; did you mean %q? accepted: %s, or leave it out", cfgQuote(e.typ), s, cfgTransportValues())
			}
			p.problem(where+".type", what)
		} else if tr == TransportStdio && !e.has["command"] {
			p.problem(where+".command", fmt.Sprintf(`missing; a stdio server (%s) needs "command"`, why))
		} else if tr.remote() && !e.has["url"] {
			p.problem(where+".url", fmt.Sprintf(`missing; a remote server (%s) needs "url"`, why))
		}
	} else {
		switch {
		case e.has["command"] && e.has["url"]:
			p.problem(where, `has both "command" (a stdio server) and "url" (a remote server); keep the one you mean`)
		case e.has["command"]:
			tr, why = TransportStdio, `it has "command"`
		case e.has["url"]:
			tr, why = TransportAuto, `it has "url"`
		default:
			p.problem(where, `has neither "command" nor "url"; add "command" for a local (stdio) server or "url" for a remote one`)
		}
	}
	// Fields of the other transport.
	if tr != "" {
		for _, f := range cfgServerFields {
			if !e.has[f.name] {
				continue
			}
			if f.side == cfgStdioSide && tr.remote() {
				p.problem(where+"."+f.name, fmt.Sprintf(`%q does not belong on a remote server (%s); remove it: a remote server takes "url" and "headers"`, f.name, why))
			}
			if f.side == cfgRemoteSide && tr == TransportStdio {
				p.problem(where+"."+f.name, fmt.Sprintf(`%q does not belong on a stdio server (%s); remove it: a stdio server takes "command", "args", "env" and "cwd"`, f.name, why))
			}
		}
	}

	sc = ServerConfig{Name: name, Transport: tr, Disabled: e.disabled, Command: e.command, Args: e.args,
		Env: e.env, Cwd: e.cwd, URL: e.url, Headers: e.headers}
	tmpl = cfgTemplate{command: e.command, cwd: e.cwd, url: e.url, args: e.args}
	if e.disabled {
		p.warn(where, `disabled ("disabled": true); skipped`)
	} else {
		p.expandServer(where, &sc, e)
	}

	// Our fields.
	sc.AllowTools = p.allowTools(where+".allowTools", e.allowTools)
	sc.Lane.MaxActive, sc.Lane.MaxOutstanding = p.lane(where+".lane", e)
	if e.has["callTimeout"] {
		d, bad := cfgParseDuration(e.timeout)
		switch {
		case bad != "":
			p.problem(where+".callTimeout", bad)
		case d < 0:
			p.problem(where+".callTimeout", `is negative; write a positive duration like "30s", or "0s" for none`)
		case d > wire.MaxTimeout:
			p.problem(where+".callTimeout", fmt.Sprintf("%s is longer than the longest run (%s), so it could never fire; lower it", d, wire.MaxTimeout))
		default:
			sc.CallTimeout = d
		}
	}
	return sc, tmpl, len(p.err.Problems)+p.err.Omitted == before
}

// serverName checks a server's name.
func (p *cfgParser) serverName(where, name string) {
	switch {
	case name == "":
		p.problem(where, "server name is empty; give the server a name")
	case len(name) > MaxServerNameBytes:
		p.problem(where, fmt.Sprintf("server name is %d bytes; at most %d", len(name), MaxServerNameBytes))
	case strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		p.problem(where, "server name holds a control character (NUL, newline, ...); use letters, digits, '-' and '_'")
	}
}

// entry decodes a server's fields by their JSON types, reporting unknown and
// misspelt fields and wrong types.
func (p *cfgParser) entry(where string, raw json.RawMessage) *cfgEntry {
	e := &cfgEntry{has: map[string]bool{}}
	seen := map[string]bool{}
	for _, m := range cfgMembers(raw) {
		fw := cfgKeyPath(where, m.key)
		if seen[m.key] {
			p.problem(fw, "appears twice; JSON keeps only the last, so the first would be lost silently; keep one")
			continue
		}
		seen[m.key] = true
		key := m.key
		if a, ok := cfgFieldAliases[key]; ok {
			if seen[a.to] || cfgHasKey(raw, a.to) {
				p.problem(fw, fmt.Sprintf("%q is %s's name for %q, and both are given; keep one", key, a.from, a.to))
				continue
			}
			key = a.to
		}
		if f, ok := cfgForeignFields[key]; ok {
			if f.reject {
				p.problem(fw, f.what)
			} else {
				p.warn(fw, f.what)
			}
			continue
		}
		kind, known := cfgFieldKind(0), false
		for _, f := range cfgServerFields {
			if f.name == key {
				kind, known = f.kind, true
			}
		}
		if !known {
			p.problem(fw, cfgUnknownField(key, cfgServerFieldNames()))
			continue
		}
		if cfgKind(m.val) == "null" { // null is as if absent
			continue
		}
		switch kind {
		case cfgString:
			s, ok := p.str(fw, m.val)
			if !ok {
				continue
			}
			switch key {
			case "type":
				e.typ = s
			case "command":
				e.command = s
			case "cwd":
				e.cwd = s
			case "url":
				e.url = s
			case "callTimeout":
				e.timeout = s
			}
		case cfgStringList:
			list, ok := p.strList(fw, m.val)
			if !ok {
				continue
			}
			if len(list) == 0 {
				list = nil
			}
			if key == "args" {
				e.args = list
			} else {
				e.allowTools = list
			}
		case cfgStringMap:
			mp, keys, ok := p.strMap(fw, m.val)
			if !ok {
				continue
			}
			if key == "env" {
				e.env, e.envKeys = mp, keys
			} else {
				e.headers, e.headerKeys = mp, keys
			}
		case cfgBool:
			var b bool
			if err := json.Unmarshal(m.val, &b); err != nil {
				p.problem(fw, fmt.Sprintf("expected true or false, got %s; write true or false, without quotes", cfgKind(m.val)))
				continue
			}
			e.disabled = b
		case cfgLaneObject:
			if !p.laneObject(fw, m.val, e) {
				continue
			}
		}
		e.has[key] = true
	}
	return e
}

func (p *cfgParser) str(where string, raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.problem(where, fmt.Sprintf("expected a string, got %s; write it in double quotes", cfgKind(raw)))
		return "", false
	}
	return s, true
}

func (p *cfgParser) strList(where string, raw json.RawMessage) ([]string, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		p.problem(where, fmt.Sprintf(`expected an array of strings, got %s; write it like ["a", "b"]`, cfgKind(raw)))
		return nil, false
	}
	list, ok := make([]string, 0, len(items)), true
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			p.problem(fmt.Sprintf("%s[%d]", where, i), fmt.Sprintf("expected a string, got %s; write it in double quotes", cfgKind(it)))
			ok = false
			continue
		}
		list = append(list, s)
	}
	return list, ok
}

func (p *cfgParser) strMap(where string, raw json.RawMessage) (map[string]string, []string, bool) {
	if kind := cfgKind(raw); kind != "an object" {
		p.problem(where, fmt.Sprintf(`expected an object of strings, got %s; write it like {"NAME": "value"}`, kind))
		return nil, nil, false
	}
	members := cfgMembers(raw)
	if len(members) == 0 {
		return nil, nil, true
	}
	mp, keys, ok := make(map[string]string, len(members)), make([]string, 0, len(members)), true
	for _, m := range members {
		kw := cfgKeyPath(where, m.key)
		if _, dup := mp[m.key]; dup {
			p.problem(kw, "appears twice; JSON keeps only the last, so the first would be lost silently; keep one")
			ok = false
			continue
		}
		var s string
		if err := json.Unmarshal(m.val, &s); err != nil {
			// The value is a secret: say its type, never its text.
			p.problem(kw, fmt.Sprintf("expected a string, got %s; write the value in double quotes", cfgKind(m.val)))
			ok = false
			continue
		}
		mp[m.key] = s
		keys = append(keys, m.key)
	}
	return mp, keys, ok
}

func (p *cfgParser) laneObject(where string, raw json.RawMessage, e *cfgEntry) bool {
	if kind := cfgKind(raw); kind != "an object" {
		p.problem(where, fmt.Sprintf(`expected an object, got %s; write it like {"maxActive": 4, "maxOutstanding": 64}`, kind))
		return false
	}
	ok := true
	seen := map[string]bool{}
	for _, m := range cfgMembers(raw) {
		fw := cfgKeyPath(where, m.key)
		if seen[m.key] {
			p.problem(fw, "appears twice; JSON keeps only the last, so the first would be lost silently; keep one")
			ok = false
			continue
		}
		seen[m.key] = true
		var dst *int
		switch m.key {
		case "maxActive":
			dst = &e.active
		case "maxOutstanding":
			dst = &e.outstanding
		default:
			p.problem(fw, cfgUnknownField(m.key, cfgLaneFields))
			ok = false
			continue
		}
		n, isInt := cfgInt(m.val)
		if !isInt || n > 1<<30 || n < -1<<30 { // lane() says what the bounds are
			p.problem(fw, fmt.Sprintf("expected a whole number up to %d, got %s; write it like 4, without quotes", MaxLaneOutstanding, cfgKindOrNumber(m.val)))
			ok = false
			continue
		}
		*dst = int(n)
	}
	return ok
}

// lane checks a server's lane and fills in the defaults, with the rule of
// package lanes: 1 <= maxActive <= maxOutstanding <= MaxLaneOutstanding.
func (p *cfgParser) lane(where string, e *cfgEntry) (active, outstanding int) {
	active, outstanding = e.active, e.outstanding
	aNote, oNote := "", ""
	if active == 0 {
		active, aNote = DefaultLaneMaxActive, " (the default)"
	}
	if outstanding == 0 {
		outstanding, oNote = DefaultLaneMaxOutstanding, " (the default)"
	}
	switch {
	case active < 0:
		p.problem(where+".maxActive", "is negative; write a number from 1, or 0 for the default")
	case outstanding < 0:
		p.problem(where+".maxOutstanding", "is negative; write a number from 1, or 0 for the default")
	case outstanding > MaxLaneOutstanding:
		p.problem(where+".maxOutstanding", fmt.Sprintf("is %d; at most %d", outstanding, MaxLaneOutstanding))
	case active > outstanding:
		p.problem(where, fmt.Sprintf("maxActive %d%s is above maxOutstanding %d%s; raise maxOutstanding or lower maxActive", active, aNote, outstanding, oNote))
	}
	return active, outstanding
}

func (p *cfgParser) allowTools(where string, list []string) []string {
	seen := map[string]bool{}
	for i, t := range list {
		iw := fmt.Sprintf("%s[%d]", where, i)
		switch {
		case strings.TrimSpace(t) == "":
			p.problem(iw, "is empty; write a tool's name, or leave allowTools out to allow every tool")
		case strings.IndexFunc(t, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
			p.problem(iw, "holds a control character; write the tool's name as the server lists it")
		case seen[t]:
			p.warn(iw, fmt.Sprintf("%s is listed twice", cfgQuote(t)))
		}
		seen[t] = true
	}
	return list
}

// expandServer expands ${VAR} in the fields that take it and checks the
// results. The values it reports on are never quoted: any may be a secret.
func (p *cfgParser) expandServer(where string, sc *ServerConfig, e *cfgEntry) {
	exp := func(fw, s string) (string, bool) {
		out, bad := cfgExpand(s, p.lookup)
		if bad != "" {
			p.problem(fw, bad)
			return out, false
		}
		return out, true
	}
	if e.has["command"] {
		sc.Command, _ = exp(where+".command", e.command)
		if strings.TrimSpace(sc.Command) == "" {
			p.problem(where+".command", "is empty; write the program to run, like \"npx\"")
		} else if strings.IndexByte(sc.Command, 0) >= 0 {
			p.problem(where+".command", "holds a NUL byte; no program can be named so")
		}
	}
	if e.args != nil {
		sc.Args = make([]string, len(e.args))
		for i, a := range e.args {
			aw := fmt.Sprintf("%s.args[%d]", where, i)
			sc.Args[i], _ = exp(aw, a)
			if strings.IndexByte(sc.Args[i], 0) >= 0 {
				p.problem(aw, "holds a NUL byte; a program's argument cannot")
			}
		}
	}
	if e.has["cwd"] {
		sc.Cwd, _ = exp(where+".cwd", e.cwd)
		if strings.IndexByte(sc.Cwd, 0) >= 0 {
			p.problem(where+".cwd", "holds a NUL byte; no directory can be named so")
		}
	}
	if e.env != nil {
		sc.Env = make(map[string]string, len(e.env))
		for _, k := range e.envKeys {
			kw := cfgKeyPath(where+".env", k)
			switch {
			case k == "":
				p.problem(kw, "a variable needs a name")
			case strings.ContainsAny(k, "=\x00"):
				p.problem(kw, "a variable's name cannot hold '=' or NUL")
			}
			v, _ := exp(kw, e.env[k])
			if strings.IndexByte(v, 0) >= 0 {
				p.problem(kw, "the value holds a NUL byte; an environment variable cannot")
			}
			sc.Env[k] = v
		}
	}
	if e.has["url"] {
		var ok bool
		if sc.URL, ok = exp(where+".url", e.url); ok {
			if bad := cfgCheckURL(sc.URL); bad != "" {
				p.problem(where+".url", bad)
			}
		}
	}
	if e.headers != nil {
		sc.Headers = make(map[string]string, len(e.headers))
		for _, k := range e.headerKeys {
			kw := cfgKeyPath(where+".headers", k)
			if !cfgHeaderName(k) {
				p.problem(kw, "is not a valid header name; use letters, digits and '-', like \"Authorization\"")
			}
			v, _ := exp(kw, e.headers[k])
			if strings.ContainsAny(v, "\r\n\x00") {
				p.problem(kw, "the value holds a line break or NUL, which would split the request; remove it")
			}
			sc.Headers[k] = v
		}
	}
}

// cfgCheckURL says what is wrong with a remote server's url, without quoting
// it: a URL may carry a secret.
func cfgCheckURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "is not a valid URL; write an absolute http:// or https:// URL"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		scheme := u.Scheme
		if scheme == "" || len(scheme) > 16 {
			return "has no http:// or https:// scheme; write an absolute http:// or https:// URL"
		}
		return fmt.Sprintf("has scheme %q; the gateway speaks http:// and https:// only", scheme)
	}
	if u.Host == "" {
		return "has no host; write an absolute http:// or https:// URL"
	}
	return ""
}

// cfgHeaderName reports whether s is an HTTP header name (an RFC 9110 token).
func cfgHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// --- Limits ---

// limits reads "limits" and returns the run defaults and maxima in force.
func (p *cfgParser) limits(raw json.RawMessage) (wire.Limits, time.Duration, int64) {
	timeout, memory := wire.DefaultTimeout, int64(wire.DefaultMemory)
	maxTimeout, maxMemory := time.Duration(wire.MaxTimeout), int64(wire.MaxMemory)
	out := func() (wire.Limits, time.Duration, int64) {
		return wire.Limits{TimeoutMs: timeout.Milliseconds(), MemoryBytes: memory}, maxTimeout, maxMemory
	}
	if raw == nil || cfgKind(raw) == "null" {
		return out()
	}
	if kind := cfgKind(raw); kind != "an object" {
		p.problem(cfgKeyLimits, fmt.Sprintf(`expected an object, got %s; write it like {"timeout": "30s", "memory": "64MiB"}`, kind))
		return out()
	}
	has, seen := map[string]bool{}, map[string]bool{}
	for _, m := range cfgMembers(raw) {
		fw := cfgKeyPath(cfgKeyLimits, m.key)
		if seen[m.key] {
			p.problem(fw, "appears twice; JSON keeps only the last, so the first would be lost silently; keep one")
			continue
		}
		seen[m.key] = true
		switch m.key {
		case "timeout", "maxTimeout":
			d, ok := p.limitDuration(fw, m.val)
			if !ok {
				continue
			}
			if m.key == "timeout" {
				timeout = d
			} else {
				maxTimeout = d
			}
		case "memory", "maxMemory":
			n, ok := p.limitMemory(fw, m.val)
			if !ok {
				continue
			}
			if m.key == "memory" {
				memory = n
			} else {
				maxMemory = n
			}
		default:
			p.problem(fw, cfgUnknownField(m.key, cfgLimitFields))
			continue
		}
		has[m.key] = true
	}
	// The defaults must fit under the maxima, or a run that asks for nothing
	// would be refused.
	if (has["timeout"] || has["maxTimeout"]) && timeout > maxTimeout {
		p.problem(cfgKeyLimits+".maxTimeout", fmt.Sprintf("%s is below limits.timeout %s; raise maxTimeout or lower timeout", maxTimeout, timeout))
	}
	if (has["memory"] || has["maxMemory"]) && memory > maxMemory {
		p.problem(cfgKeyLimits+".maxMemory", fmt.Sprintf("%s is below limits.memory %s; raise maxMemory or lower memory", cfgSize(maxMemory), cfgSize(memory)))
	}
	if _, err := (wire.Limits{TimeoutMs: timeout.Milliseconds(), MemoryBytes: memory}).Normalize(); err != nil {
		p.problem(cfgKeyLimits, err.Error()) // not reached while the checks above are wire's
	}
	return out()
}

func (p *cfgParser) limitDuration(where string, raw json.RawMessage) (time.Duration, bool) {
	s, ok := p.str(where, raw)
	if !ok {
		return 0, false
	}
	d, bad := cfgParseDuration(s)
	if bad != "" {
		p.problem(where, bad)
		return 0, false
	}
	if d <= 0 {
		p.problem(where, fmt.Sprintf("must be more than 0; leave it out for the default %s", wire.DefaultTimeout))
		return 0, false
	}
	ms := max(d.Milliseconds(), 1)
	if _, err := (wire.Limits{TimeoutMs: ms}).Normalize(); err != nil {
		p.problem(where, fmt.Sprintf("%s is out of range; allowed %s to %s", d, time.Duration(wire.MinTimeout), time.Duration(wire.MaxTimeout)))
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

func (p *cfgParser) limitMemory(where string, raw json.RawMessage) (int64, bool) {
	var n int64
	switch cfgKind(raw) {
	case "a number":
		v, ok := cfgInt(raw)
		if !ok {
			p.problem(where, fmt.Sprintf(`%s is not a whole number of bytes; write bytes as a whole number, or a size like "64MiB"`, cfgShort(string(raw))))
			return 0, false
		}
		n = v
	case "a string":
		var s string
		_ = json.Unmarshal(raw, &s)
		v, bad := cfgParseSize(s)
		if bad != "" {
			p.problem(where, bad)
			return 0, false
		}
		n = v
	default:
		p.problem(where, fmt.Sprintf(`expected a size like "64MiB" or a number of bytes, got %s`, cfgKind(raw)))
		return 0, false
	}
	if n <= 0 {
		p.problem(where, fmt.Sprintf("must be more than 0; leave it out for the default %s", cfgSize(wire.DefaultMemory)))
		return 0, false
	}
	if _, err := (wire.Limits{MemoryBytes: n}).Normalize(); err != nil {
		p.problem(where, fmt.Sprintf("%s is out of range; allowed %s to %s", cfgSize(n), cfgSize(wire.MinMemory), cfgSize(wire.MaxMemory)))
		return 0, false
	}
	return n, true
}

// cfgParseDuration parses a Go duration, or says what is wrong with it.
func cfgParseDuration(s string) (time.Duration, string) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, ""
	}
	if s != "" && strings.Trim(s, "0123456789") == "" {
		return 0, fmt.Sprintf(`%s has no unit; write it like "%ss"`, cfgQuote(s), cfgShort(s))
	}
	return 0, fmt.Sprintf(`%s is not a duration; write it like "30s", "1m30s" or "500ms"`, cfgQuote(s))
}

// cfgSizeUnits are the units a size string may use: binary only, since
// "64MB" is read as 64 MiB as often as 64,000,000 bytes.
var cfgSizeUnits = []struct {
	unit  string
	bytes int64
}{
	{"", 1}, {"B", 1}, {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
}

// cfgParseSize parses "64MiB", "64 MiB", "512KiB" or "1048576", or says what is
// wrong with it.
func cfgParseSize(s string) (int64, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	num, unit := s[:i], strings.TrimPrefix(s[i:], " ")
	bad := fmt.Sprintf(`%s is not a size; write a whole number with one of B, KiB, MiB, GiB, like "64MiB"`, cfgQuote(s))
	if num == "" {
		return 0, bad
	}
	for _, u := range cfgSizeUnits {
		if u.unit != unit {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > (1<<62)/u.bytes {
			return 0, fmt.Sprintf("%s is too large; at most %s", cfgQuote(s), cfgSize(wire.MaxMemory))
		}
		return n * u.bytes, ""
	}
	for _, u := range cfgSizeUnits[2:] {
		l, lu := strings.ToLower(unit), strings.ToLower(u.unit)
		if l == lu || l == lu[:1] || l == lu[:1]+"b" {
			return 0, fmt.Sprintf(`%s is ambiguous; did you mean "%s%s"? sizes use binary units B, KiB, MiB, GiB`, cfgQuote(s), num, u.unit)
		}
	}
	return 0, bad
}

// cfgSize writes a byte count in the largest binary unit that divides it.
func cfgSize(n int64) string {
	for i := len(cfgSizeUnits) - 1; i >= 2; i-- {
		if u := cfgSizeUnits[i]; n != 0 && n%u.bytes == 0 {
			return fmt.Sprintf("%d%s", n/u.bytes, u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// --- ${VAR} expansion ---

// cfgEditorVars are Cursor's and VS Code's variables, which name things the
// gateway does not have.
var cfgEditorVars = map[string]bool{"workspaceFolder": true, "workspaceFolderBasename": true, "userHome": true, "pathSeparator": true}

// cfgExpand replaces ${NAME}, ${NAME:-default} and ${env:NAME} in s, looking
// names up with lookup. ":-" gives the default when NAME is unset or empty, as
// in the shell. A "$" not followed by "{" stays as it is; there is no escape
// and no nesting. On failure it says why (naming the variable, never a
// value) and returns s unchanged.
func cfgExpand(s string, lookup func(string) (string, bool)) (string, string) {
	if !strings.Contains(s, "${") {
		return s, ""
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "${")
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		b.WriteString(s[i : i+j])
		start := i + j
		end := strings.IndexByte(s[start+2:], '}')
		if end < 0 {
			return s, fmt.Sprintf(`unterminated "${" at byte %d; close it with "}"`, start)
		}
		body := s[start+2 : start+2+end]
		i = start + 2 + end + 1
		name, def, hasDef := body, "", false
		if k := strings.Index(body, ":-"); k >= 0 {
			name, def, hasDef = body[:k], body[k+2:], true
		}
		name = strings.TrimPrefix(name, "env:") // Cursor's spelling
		if strings.Contains(body, "${") {
			return s, fmt.Sprintf(`"${" inside "${...}" at byte %d; a default is plain text, with no variables in it`, start)
		}
		if !cfgVarName(name) {
			return s, fmt.Sprintf(`bad variable name in "${...}" at byte %d; write ${NAME} or ${NAME:-default}, NAME being letters, digits and _, not starting with a digit`, start)
		}
		v, ok := lookup(name)
		switch {
		case ok && (v != "" || !hasDef):
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		case cfgEditorVars[name]:
			return s, fmt.Sprintf("${%s} is an editor's variable the gateway does not have; write the path itself, or set %s in the gateway's environment", name, name)
		default:
			return s, fmt.Sprintf("${%s} is not set; set %s in the gateway's environment, or give a default: ${%s:-value}", name, name, name)
		}
	}
	return b.String(), ""
}

func cfgVarName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// --- The redacted view ---

// cfgRedacted is the text that stands for a secret.
const cfgRedacted = "<redacted>"

type cfgRedactedConfig struct {
	Path     string              `json:"path"`
	Limits   cfgRedactedLimits   `json:"limits"`
	Servers  []cfgRedactedServer `json:"servers"`
	Warnings []string            `json:"warnings,omitempty"`
}

type cfgRedactedLimits struct {
	Timeout    string `json:"timeout"`
	Memory     int64  `json:"memory"`
	MaxTimeout string `json:"maxTimeout"`
	MaxMemory  int64  `json:"maxMemory"`
}

type cfgRedactedServer struct {
	Name        string            `json:"name"`
	Transport   Transport         `json:"transport"`
	Command     string            `json:"command,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
	URL         string            `json:"url,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	AllowTools  []string          `json:"allowTools,omitempty"` // absent: every tool
	Lane        cfgRedactedLane   `json:"lane"`
	CallTimeout string            `json:"callTimeout,omitempty"`
	Disabled    bool              `json:"disabled,omitempty"`
}

type cfgRedactedLane struct {
	MaxActive      int `json:"maxActive"`
	MaxOutstanding int `json:"maxOutstanding"`
}

// Redacted is a view of c to show (server_info, check-config), as a value that
// encodes to JSON. Env and header values are "<redacted>" (their names are
// kept); URLs keep scheme, host and path, with userinfo, query and fragment
// "<redacted>". For a loaded config, command, args, cwd and url are shown as
// written, so ${VAR} shows as ${VAR}, never as its value. In args, URLs are
// redacted as above, and so are the values of flags that name a secret
// (--token=..., --api-key ..., --header "Name: value" keeps the name); a
// secret written into args in some other shape is shown, so keep secrets in
// env, headers or ${VAR}. It does not change c; a nil c gives nil.
func (c *Config) Redacted() any {
	if c == nil {
		return nil
	}
	out := cfgRedactedConfig{
		Path: c.Path,
		Limits: cfgRedactedLimits{
			Timeout: c.Limits.Timeout().String(), Memory: c.Limits.MemoryBytes,
			MaxTimeout: c.MaxTimeout.String(), MaxMemory: c.MaxMemory,
		},
		Servers:  make([]cfgRedactedServer, 0, len(c.Servers)),
		Warnings: c.Warnings,
	}
	for _, s := range c.Servers {
		t, ok := c.tmpl[s.Name]
		if !ok {
			t = cfgTemplate{command: s.Command, cwd: s.Cwd, url: s.URL, args: s.Args}
		}
		r := cfgRedactedServer{
			Name: s.Name, Transport: s.Transport, Command: t.command, Cwd: t.cwd,
			Args: cfgRedactArgs(t.args), Env: cfgRedactMap(s.Env), Headers: cfgRedactMap(s.Headers),
			AllowTools: s.AllowTools, Lane: cfgRedactedLane{s.Lane.MaxActive, s.Lane.MaxOutstanding},
			Disabled: s.Disabled,
		}
		if t.url != "" {
			r.URL = cfgRedactURL(t.url)
		}
		if s.CallTimeout > 0 {
			r.CallTimeout = s.CallTimeout.String()
		}
		out.Servers = append(out.Servers, r)
	}
	return out
}

func cfgRedactMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = cfgRedacted
	}
	return out
}

// cfgRedactURL keeps a URL's scheme, host and path, and replaces its userinfo,
// query and fragment. It works on text, so a URL with ${VAR} in it, or one
// that does not parse, is redacted the same way.
func cfgRedactURL(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		if strings.ContainsAny(s, "@?#") {
			return cfgRedacted
		}
		return s
	}
	rest := s[i+3:]
	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	auth, tail := rest[:authEnd], rest[authEnd:]
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		auth = cfgRedacted + "@" + auth[at+1:]
	}
	path, cut := tail, ""
	if q := strings.IndexAny(tail, "?#"); q >= 0 {
		path, cut = tail[:q], tail[q:q+1]+cfgRedacted
	}
	return s[:i+3] + auth + path + cut
}

// cfgSecretFlagWords: a flag whose name holds one of these takes a secret.
var cfgSecretFlagWords = []string{"token", "key", "secret", "password", "passwd", "auth", "credential", "cookie", "header"}

func cfgSecretFlag(flag string) bool {
	if !strings.HasPrefix(flag, "-") {
		return false
	}
	f := strings.ToLower(flag)
	if f == "-h" {
		return true // curl's and mcp-remote's short --header
	}
	for _, w := range cfgSecretFlagWords {
		if strings.Contains(f, w) {
			return true
		}
	}
	return false
}

// cfgRedactHeaderArg keeps the name of "Name: value" and redacts the value.
func cfgRedactHeaderArg(s string) string {
	if k := strings.IndexByte(s, ':'); k > 0 && !strings.Contains(s[:k], "/") {
		return s[:k+1] + cfgRedacted
	}
	return cfgRedacted
}

func cfgRedactArgs(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case i > 0 && cfgSecretFlag(args[i-1]) && !strings.HasPrefix(a, "-"):
			out[i] = cfgRedactHeaderArg(a)
		case strings.HasPrefix(a, "-") && strings.Contains(a, "=") && cfgSecretFlag(a[:strings.IndexByte(a, '=')]):
			k := strings.IndexByte(a, '=')
			out[i] = a[:k+1] + cfgRedactHeaderArg(a[k+1:])
		case strings.Contains(a, "://"):
			out[i] = cfgRedactURL(a)
		default:
			out[i] = a
		}
	}
	return out
}

// --- JSON helpers ---

type cfgMember struct {
	key string
	val json.RawMessage
}

// cfgMembers lists an object's members in file order, duplicates included.
// raw must be valid JSON (ParseConfig checks the whole file first).
func cfgMembers(raw json.RawMessage) []cfgMember {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []cfgMember
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
		out = append(out, cfgMember{k, v})
	}
	return out
}

func cfgHasKey(raw json.RawMessage, key string) bool {
	for _, m := range cfgMembers(raw) {
		if m.key == key {
			return true
		}
	}
	return false
}

// cfgKind names the JSON type of raw, for messages.
func cfgKind(raw []byte) string {
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

// cfgKindOrNumber names raw's type, or quotes it if it is a number.
func cfgKindOrNumber(raw []byte) string {
	if k := cfgKind(raw); k != "a number" {
		return k
	}
	return cfgShort(string(bytes.TrimSpace(raw)))
}

// cfgInt reads a JSON number that is a whole number.
func cfgInt(raw []byte) (int64, bool) {
	if cfgKind(raw) != "a number" {
		return 0, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return n, err == nil
}

// cfgCheckDepth finds where nesting first goes past max, counting brackets
// outside strings. It runs before parsing, on any bytes.
func cfgCheckDepth(data []byte, max int) (int, bool) {
	depth, inStr, esc := 0, false, false
	for i, c := range data {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return i, false
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return 0, true
}

// cfgLineCol turns a byte offset into a line and a column, both from 1.
func cfgLineCol(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	return line, off - bytes.LastIndexByte(data[:off], '\n')
}

// --- Names in messages ---

func cfgDisplayPath(path string) string {
	if path == "" {
		return "config"
	}
	return path
}

// cfgPlain reports whether a key can stand unquoted in a path.
func cfgPlain(s string) bool {
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

// cfgQuote quotes a name or value from the file for a message, cut to 64 bytes.
func cfgQuote(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// cfgShort cuts a value for a message, without quotes.
func cfgShort(s string) string {
	q := cfgQuote(s)
	if strings.HasSuffix(q, "...") {
		return q[1:len(q)-4] + "..."
	}
	return q[1 : len(q)-1]
}

// cfgKeyPath appends a key to a JSON path: a.key, or a["odd key"].
func cfgKeyPath(base, key string) string {
	if cfgPlain(key) {
		if base == "" {
			return key
		}
		return base + "." + key
	}
	return base + "[" + cfgQuote(key) + "]"
}

func cfgServerPath(name string) string { return cfgKeyPath(cfgKeyServers, name) }

// cfgUnknownField says an unknown field is wrong, with the likely fix.
func cfgUnknownField(key string, known []string) string {
	if s := cfgSuggest(key, known); s != "" {
		return fmt.Sprintf("unknown field; did you mean %q?", s)
	}
	return fmt.Sprintf("unknown field; remove it (the fields are %s)", strings.Join(known, ", "))
}

// cfgSuggest gives the known name s was most likely meant to be, or "". It
// compares without case, by edit distance (a swap of neighbours counts one),
// allowing one edit in short names and two in longer ones.
func cfgSuggest(s string, known []string) string {
	if h, ok := cfgFieldHints[s]; ok {
		for _, k := range known {
			if k == h {
				return h
			}
		}
	}
	if s == "" || len(s) > 64 {
		return ""
	}
	limit := 1
	if len(s) >= 6 {
		limit = 2
	}
	best, bestD := "", limit+1
	ls := strings.ToLower(s)
	for _, k := range known {
		if k == s {
			continue
		}
		if d := cfgDistance(ls, strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// cfgDistance is the optimal string alignment distance between a and b.
func cfgDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// --- Errors before parsing ---

func cfgReadError(path string, err error) error {
	what := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		what = pe.Err.Error()
	}
	return &ConfigError{Path: cfgDisplayPath(path), Problems: []ConfigProblem{{What: "cannot read it: " + what}}, cause: err}
}

func cfgTooLarge(path string, size int64) error {
	what := fmt.Sprintf("larger than %s, the most a config may be; name the right file", cfgSize(MaxConfigBytes))
	if size >= 0 {
		what = fmt.Sprintf("is %d bytes; a config may be at most %s; name the right file", size, cfgSize(MaxConfigBytes))
	}
	return &ConfigError{Path: cfgDisplayPath(path), Problems: []ConfigProblem{{What: what}}}
}
