package mcpgw

// This file holds ${VAR} expansion in a server's command, args, cwd, url,
// env and headers, and the checks of the expanded values.

import (
	"fmt"
	"net/url"
	"strings"
)

// expandServer expands ${VAR} in the fields that take it and checks the
// results. The values it reports on are never quoted: any may be a secret.
func (p *configParser) expandServer(where string, sc *ServerConfig, e *serverEntry) {
	exp := func(fw, s string) (string, bool) {
		out, bad := expandVars(s, p.lookup)
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
			kw := keyPath(where+".env", k)
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
			if bad := checkURL(sc.URL); bad != "" {
				p.problem(where+".url", bad)
			}
		}
	}
	if e.headers != nil {
		sc.Headers = make(map[string]string, len(e.headers))
		for _, k := range e.headerKeys {
			kw := keyPath(where+".headers", k)
			if !isHeaderName(k) {
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

// checkURL says what is wrong with a remote server's url, without quoting
// it: a URL may carry a secret.
func checkURL(s string) string {
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

// isHeaderName reports whether s is an HTTP header name (an RFC 9110 token).
func isHeaderName(s string) bool {
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

// editorVars are Cursor's and VS Code's variables, which name things the
// gateway does not have.
var editorVars = map[string]bool{"workspaceFolder": true, "workspaceFolderBasename": true, "userHome": true, "pathSeparator": true}

// expandVars replaces ${NAME}, ${NAME:-default} and ${env:NAME} in s, looking
// names up with lookup. ":-" gives the default when NAME is unset or empty, as
// in the shell. A "$" not followed by "{" stays as it is; there is no escape
// and no nesting. On failure it says why (naming the variable, never a
// value) and returns s unchanged.
func expandVars(s string, lookup func(string) (string, bool)) (string, string) {
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
		if !isVarName(name) {
			return s, fmt.Sprintf(`bad variable name in "${...}" at byte %d; write ${NAME} or ${NAME:-default}, NAME being letters, digits and _, not starting with a digit`, start)
		}
		v, ok := lookup(name)
		switch {
		case ok && (v != "" || !hasDef):
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		case editorVars[name]:
			return s, fmt.Sprintf("${%s} is an editor's variable the gateway does not have; write the path itself, or set %s in the gateway's environment", name, name)
		default:
			return s, fmt.Sprintf("${%s} is not set; set %s in the gateway's environment, or give a default: ${%s:-value}", name, name, name)
		}
	}
	return b.String(), ""
}

func isVarName(s string) bool {
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
