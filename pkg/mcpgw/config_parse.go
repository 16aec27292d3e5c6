package mcpgw

// This file walks a config file's JSON and checks each server entry,
// gathering every problem (and warning) with the path of the field.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/run-js-server/run-js-server/pkg/lanes"
	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// configParser gathers the problems and warnings of one file.
type configParser struct {
	err         *ConfigError
	warnings    []string
	lookup      func(string) (string, bool)
	dir         string             // the config file's directory, absolute
	serversKey  string             // "mcpServers", or VS Code's "servers": what paths in messages start with
	confinement worker.Confinement // limits.confinement
}

// serverPath is the path of a server's entry in messages.
func (p *configParser) serverPath(name string) string { return keyPath(p.serversKey, name) }

func (p *configParser) problem(where, what string) {
	if len(p.err.Problems) >= MaxConfigProblems {
		p.err.Omitted++
		return
	}
	p.err.Problems = append(p.err.Problems, ConfigProblem{Where: where, What: what})
}

func (p *configParser) warn(where, what string) {
	line := p.err.Path + ": "
	if where != "" {
		line += where + ": "
	}
	p.warnings = append(p.warnings, line+what)
}

// syntax reports invalid JSON with its line and column (in bytes, from 1).
func (p *configParser) syntax(data []byte, err error) {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		p.problem("", "invalid JSON: "+err.Error())
		return
	}
	off := int(se.Offset)
	if off > 0 && off <= len(data) && se.Error() != "unexpected end of JSON input" {
		off-- // Offset is just past the byte that broke it
	}
	line, col := lineCol(data, off)
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
	keyServers       = "mcpServers"
	keyVSCodeServers = "servers" // VS Code's .vscode/mcp.json
	keyVSCodeInputs  = "inputs"  // VS Code's prompts for ${input:...}
	keyLimits        = "limits"
)

func (p *configParser) parse(path string, data []byte) *Config {
	cfg := &Config{Path: path, tmpl: map[string]serverTemplate{}}
	if kind := jsonKind(data); kind != "an object" {
		p.problem("", fmt.Sprintf(`the top level is %s; it must be an object like {"mcpServers": {...}}`, kind))
		return nil
	}
	top := jsonMembers(data)
	seen := map[string]bool{}
	var servers json.RawMessage
	limitsDone := false
	for _, m := range top {
		where := keyPath("", m.key)
		if seen[m.key] {
			p.problem(where, "appears twice; JSON keeps only the last, so the first would be lost silently; merge them")
			continue
		}
		seen[m.key] = true
		switch m.key {
		case keyServers, keyVSCodeServers:
			if servers != nil {
				p.problem(where, fmt.Sprintf("the file has both %q and %q; keep one (VS Code reads %q, the other clients %q)", keyServers, keyVSCodeServers, keyVSCodeServers, keyServers))
				continue
			}
			servers, p.serversKey = m.val, m.key
			p.servers(cfg, servers)
		case keyVSCodeInputs:
			p.warn(where, "ignored; these are VS Code's prompts, and the gateway cannot prompt: a ${input:...} variable is an error")
		case keyLimits:
			cfg.Limits, cfg.MaxTimeout, cfg.MaxMemory, cfg.StartTimeout = p.limits(m.val)
			cfg.Confinement = p.confinement
			limitsDone = true
		default:
			what := "ignored; not a gateway setting"
			if s := suggest(m.key, []string{keyServers, keyLimits}); s != "" {
				what = fmt.Sprintf("ignored; did you mean %q?", s)
			}
			p.warn(where, what)
		}
	}
	if !limitsDone {
		cfg.Limits, cfg.MaxTimeout, cfg.MaxMemory, cfg.StartTimeout = p.limits(nil)
	}
	if servers == nil {
		what := `missing; add "mcpServers": {"name": {"command": ...}}`
		for _, m := range top {
			if s := suggest(m.key, []string{keyServers}); s != "" {
				what = fmt.Sprintf("missing; the file has %s: rename it to %q", quoteValue(m.key), keyServers)
				break
			}
		}
		p.problem(keyServers, what)
		return nil
	}
	sort.Slice(cfg.Servers, func(i, j int) bool { return cfg.Servers[i].Name < cfg.Servers[j].Name })
	for i := range cfg.Servers {
		if cfg.Servers[i].StartTimeout == 0 {
			cfg.Servers[i].StartTimeout = cfg.StartTimeout
		}
	}
	cfg.Warnings = p.warnings
	return cfg
}

// servers checks "mcpServers" and adds the good servers to cfg.
func (p *configParser) servers(cfg *Config, servers json.RawMessage) {
	if kind := jsonKind(servers); kind != "an object" {
		p.problem(p.serversKey, fmt.Sprintf(`expected an object of servers by name, got %s; write {"name": {"command": ...}}`, kind))
		return
	}
	members := jsonMembers(servers)
	if len(members) > MaxConfigServers {
		p.problem(p.serversKey, fmt.Sprintf("has %d servers; at most %d", len(members), MaxConfigServers))
		return
	}
	seen := map[string]bool{}
	enabled := 0
	for _, m := range members {
		if seen[m.key] {
			p.problem(p.serverPath(m.key), "server name appears twice; JSON keeps only the last, so the first would be lost silently; rename one")
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
		p.warn(p.serversKey, "no servers; programs will have no tools to call")
	} else if enabled == 0 && len(cfg.Servers) == len(members) {
		p.warn(p.serversKey, "every server is disabled; programs will have no tools to call")
	}
}

// serverEntry is a server's fields as decoded, before expansion.
type serverEntry struct {
	has                             map[string]bool
	typ, command, cwd, url, timeout string
	envFile, startTimeout           string
	args, allowTools, inheritEnv    []string
	env, headers                    map[string]string
	envKeys, headerKeys             []string // in file order
	active, outstanding             int
	disabled                        bool
}

// serverTemplate is what Redacted shows of a server: its text as written.
type serverTemplate struct {
	command, cwd, url, envFile string
	args                       []string
}

// server checks one server entry. ok is false if it had any problem.
func (p *configParser) server(name string, raw json.RawMessage) (sc ServerConfig, tmpl serverTemplate, ok bool) {
	before := len(p.err.Problems) + p.err.Omitted
	where := p.serverPath(name)
	p.serverName(where, name)
	if kind := jsonKind(raw); kind != "an object" {
		p.problem(where, fmt.Sprintf(`expected an object with "command" or "url", got %s`, kind))
		return sc, tmpl, false
	}
	e := p.entry(where, raw)
	tr, why := p.transport(where, e)
	if tr != "" {
		p.otherTransportFields(where, e, tr, why)
	}

	sc = ServerConfig{Name: name, Transport: tr, Disabled: e.disabled, Command: e.command, Args: e.args,
		Env: e.env, Cwd: e.cwd, URL: e.url, Headers: e.headers, EnvFile: e.envFile, InheritEnv: e.inheritEnv}
	tmpl = serverTemplate{command: e.command, cwd: e.cwd, url: e.url, args: e.args, envFile: e.envFile}
	if e.disabled {
		p.warn(where, `disabled ("disabled": true); skipped`)
	} else {
		p.expandServer(where, &sc, e)
	}

	// Our fields.
	sc.AllowTools = p.allowTools(where+".allowTools", e.allowTools)
	sc.Lane.MaxActive, sc.Lane.MaxOutstanding = p.lane(where+".lane", e)
	if e.has["callTimeout"] {
		sc.CallTimeout = p.callTimeout(where+".callTimeout", e.timeout)
	}
	if e.has["startTimeout"] {
		sc.StartTimeout = p.startTimeout(where+".startTimeout", e.startTimeout)
	}
	return sc, tmpl, len(p.err.Problems)+p.err.Omitted == before
}

// transport decides a server's transport from its "type", or without one
// from "command" (stdio) or "url" (auto), and says why, for messages. It is
// "" when it cannot be decided (a problem says why).
func (p *configParser) transport(where string, e *serverEntry) (tr Transport, why string) {
	if !e.has["type"] {
		switch {
		case e.has["command"] && e.has["url"]:
			p.problem(where, `has both "command" (a stdio server) and "url" (a remote server); keep the one you mean`)
		case e.has["command"]:
			return TransportStdio, `it has "command"`
		case e.has["url"]:
			return TransportAuto, `it has "url"`
		default:
			p.problem(where, `has neither "command" nor "url"; add "command" for a local (stdio) server or "url" for a remote one`)
		}
		return "", ""
	}
	for _, t := range transportTypes {
		if t.value == e.typ {
			tr = t.transport
		}
	}
	why = fmt.Sprintf("its type is %q", e.typ)
	switch {
	case tr == "":
		what := fmt.Sprintf("unknown type %s; accepted: %s, or leave it out", quoteValue(e.typ), transportValues())
		values := make([]string, len(transportTypes))
		for i, t := range transportTypes {
			values[i] = t.value
		}
		if s := suggest(e.typ, values); s != "" {
			what = fmt.Sprintf("unknown type %s; did you mean %q? accepted: %s, or leave it out", quoteValue(e.typ), s, transportValues())
		}
		p.problem(where+".type", what)
	case tr == TransportStdio && !e.has["command"]:
		p.problem(where+".command", fmt.Sprintf(`missing; a stdio server (%s) needs "command"`, why))
	case tr.remote() && !e.has["url"]:
		p.problem(where+".url", fmt.Sprintf(`missing; a remote server (%s) needs "url"`, why))
	}
	return tr, why
}

// otherTransportFields reports the fields a server has that belong to the
// other transport.
func (p *configParser) otherTransportFields(where string, e *serverEntry, tr Transport, why string) {
	for _, f := range serverFields {
		if !e.has[f.name] {
			continue
		}
		if f.side == sideStdio && tr.remote() {
			p.problem(where+"."+f.name, fmt.Sprintf(`%q does not belong on a remote server (%s); remove it: a remote server takes "url" and "headers"`, f.name, why))
		}
		if f.side == sideRemote && tr == TransportStdio {
			p.problem(where+"."+f.name, fmt.Sprintf(`%q does not belong on a stdio server (%s); remove it: a stdio server takes "command", "args", "env" and "cwd"`, f.name, why))
		}
	}
}

// callTimeout checks a server's callTimeout; 0 on a problem.
func (p *configParser) callTimeout(where, s string) time.Duration {
	d, bad := parseDuration(s)
	switch {
	case bad != "":
		p.problem(where, bad)
	case d < 0:
		p.problem(where, `is negative; write a positive duration like "30s", or "0s" for none`)
	case d > wire.MaxTimeout:
		p.problem(where, fmt.Sprintf("%s is longer than the longest run (%s), so it could never fire; lower it", d, wire.MaxTimeout))
	default:
		return d
	}
	return 0
}

// serverName checks a server's name.
func (p *configParser) serverName(where, name string) {
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
func (p *configParser) entry(where string, raw json.RawMessage) *serverEntry {
	e := &serverEntry{has: map[string]bool{}}
	seen := map[string]bool{}
	for _, m := range jsonMembers(raw) {
		fw := keyPath(where, m.key)
		if seen[m.key] {
			p.problem(fw, "appears twice; JSON keeps only the last, so the first would be lost silently; keep one")
			continue
		}
		seen[m.key] = true
		key := m.key
		if a, ok := fieldAliases[key]; ok {
			if seen[a.to] || jsonHasKey(raw, a.to) {
				p.problem(fw, fmt.Sprintf("%q is %s's name for %q, and both are given; keep one", key, a.from, a.to))
				continue
			}
			key = a.to
		}
		if f, ok := foreignFields[key]; ok {
			if f.reject {
				p.problem(fw, f.what)
			} else {
				p.warn(fw, f.what)
			}
			continue
		}
		kind, known := serverFieldKind(key)
		if !known {
			p.problem(fw, unknownField(key, serverFieldNames()))
			continue
		}
		if jsonKind(m.val) == "null" { // null is as if absent
			continue
		}
		if p.field(e, fw, key, kind, m.val) {
			e.has[key] = true
		}
	}
	return e
}

// field decodes one field of a server entry into e, by its kind, and
// reports whether it was good.
func (p *configParser) field(e *serverEntry, where, key string, kind fieldKind, val json.RawMessage) bool {
	switch kind {
	case kindString:
		s, ok := p.str(where, val)
		if !ok {
			return false
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
		case "startTimeout":
			e.startTimeout = s
		case "envFile":
			e.envFile = s
		}
	case kindStringList:
		list, ok := p.strList(where, val)
		if !ok {
			return false
		}
		if len(list) == 0 {
			list = nil
		}
		switch key {
		case "args":
			e.args = list
		case "inheritEnv":
			e.inheritEnv = list
		default:
			e.allowTools = list
		}
	case kindStringMap:
		mp, keys, ok := p.strMap(where, val)
		if !ok {
			return false
		}
		if key == "env" {
			e.env, e.envKeys = mp, keys
		} else {
			e.headers, e.headerKeys = mp, keys
		}
	case kindBool:
		var b bool
		if err := json.Unmarshal(val, &b); err != nil {
			p.problem(where, fmt.Sprintf("expected true or false, got %s; write true or false, without quotes", jsonKind(val)))
			return false
		}
		e.disabled = b
	case kindLaneObject:
		return p.laneObject(where, val, e)
	}
	return true
}

func (p *configParser) str(where string, raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.problem(where, fmt.Sprintf("expected a string, got %s; write it in double quotes", jsonKind(raw)))
		return "", false
	}
	return s, true
}

func (p *configParser) strList(where string, raw json.RawMessage) ([]string, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		p.problem(where, fmt.Sprintf(`expected an array of strings, got %s; write it like ["a", "b"]`, jsonKind(raw)))
		return nil, false
	}
	list, ok := make([]string, 0, len(items)), true
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			p.problem(fmt.Sprintf("%s[%d]", where, i), fmt.Sprintf("expected a string, got %s; write it in double quotes", jsonKind(it)))
			ok = false
			continue
		}
		list = append(list, s)
	}
	return list, ok
}

func (p *configParser) strMap(where string, raw json.RawMessage) (map[string]string, []string, bool) {
	if kind := jsonKind(raw); kind != "an object" {
		p.problem(where, fmt.Sprintf(`expected an object of strings, got %s; write it like {"NAME": "value"}`, kind))
		return nil, nil, false
	}
	members := jsonMembers(raw)
	if len(members) == 0 {
		return nil, nil, true
	}
	mp, keys, ok := make(map[string]string, len(members)), make([]string, 0, len(members)), true
	for _, m := range members {
		kw := keyPath(where, m.key)
		if _, dup := mp[m.key]; dup {
			p.problem(kw, "appears twice; JSON keeps only the last, so the first would be lost silently; keep one")
			ok = false
			continue
		}
		var s string
		if err := json.Unmarshal(m.val, &s); err != nil {
			// The value is a secret: say its type, never its text.
			p.problem(kw, fmt.Sprintf("expected a string, got %s; write the value in double quotes", jsonKind(m.val)))
			ok = false
			continue
		}
		mp[m.key] = s
		keys = append(keys, m.key)
	}
	return mp, keys, ok
}

func (p *configParser) laneObject(where string, raw json.RawMessage, e *serverEntry) bool {
	if kind := jsonKind(raw); kind != "an object" {
		p.problem(where, fmt.Sprintf(`expected an object, got %s; write it like {"maxActive": %d, "maxOutstanding": %d}`, kind, lanes.DefaultMaxActive, lanes.DefaultMaxOutstanding))
		return false
	}
	ok := true
	seen := map[string]bool{}
	for _, m := range jsonMembers(raw) {
		fw := keyPath(where, m.key)
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
			p.problem(fw, unknownField(m.key, laneFields))
			ok = false
			continue
		}
		n, isInt := jsonInt(m.val)
		if !isInt || n > 1<<30 || n < -1<<30 { // lane() says what the bounds are
			p.problem(fw, fmt.Sprintf("expected a whole number up to %d, got %s; write it like 4, without quotes", lanes.MaxOutstandingLimit, jsonKindOrNumber(m.val)))
			ok = false
			continue
		}
		*dst = int(n)
	}
	return ok
}

// lane checks a server's lane and fills in the defaults, with the rule of
// package lanes: 1 <= maxActive <= maxOutstanding <= lanes.MaxOutstandingLimit.
func (p *configParser) lane(where string, e *serverEntry) (active, outstanding int) {
	active, outstanding = e.active, e.outstanding
	aNote, oNote := "", ""
	if active == 0 {
		active, aNote = lanes.DefaultMaxActive, " (the default)"
	}
	if outstanding == 0 {
		outstanding, oNote = lanes.DefaultMaxOutstanding, " (the default)"
	}
	switch {
	case active < 0:
		p.problem(where+".maxActive", "is negative; write a number from 1, or 0 for the default")
	case outstanding < 0:
		p.problem(where+".maxOutstanding", "is negative; write a number from 1, or 0 for the default")
	case outstanding > lanes.MaxOutstandingLimit:
		p.problem(where+".maxOutstanding", fmt.Sprintf("is %d; at most %d", outstanding, lanes.MaxOutstandingLimit))
	case active > outstanding:
		p.problem(where, fmt.Sprintf("maxActive %d%s is above maxOutstanding %d%s; raise maxOutstanding or lower maxActive", active, aNote, outstanding, oNote))
	}
	return active, outstanding
}

func (p *configParser) allowTools(where string, list []string) []string {
	seen := map[string]bool{}
	for i, t := range list {
		iw := fmt.Sprintf("%s[%d]", where, i)
		switch {
		case strings.TrimSpace(t) == "":
			p.problem(iw, "is empty; write a tool's name, or leave allowTools out to allow every tool")
		case strings.IndexFunc(t, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
			p.problem(iw, "holds a control character; write the tool's name as the server lists it")
		case seen[t]:
			p.warn(iw, fmt.Sprintf("%s is listed twice", quoteValue(t)))
		}
		seen[t] = true
	}
	return list
}
