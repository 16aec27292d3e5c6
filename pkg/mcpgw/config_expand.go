package mcpgw

// This file holds ${VAR} expansion in a server's command, args, cwd,
// envFile, url, env and headers, the checks of the expanded values, the
// resolution of relative paths against the config's folder (the file's
// directory, or the project above .vscode or .cursor: workspaceFolder), and
// inheritEnv.

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// expandServer expands ${VAR} in the fields that take it and checks the
// results. The values it reports on are never quoted: any may be a secret.
// Every environment variable's value it puts in the server's config is
// kept in sc.secrets, to be redacted from whatever is shown.
func (p *configParser) expandServer(where string, sc *ServerConfig, e *serverEntry) {
	vars := varSource{lookup: p.lookup, workspace: workspaceFolder(p.dir), secrets: &sc.secrets}
	exp := func(fw, s string) (string, bool) {
		out, bad := expandVars(s, vars)
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
		} else if strings.Contains(sc.Command, "/") && !filepath.IsAbs(sc.Command) {
			// "bin/server" means the one beside the config, wherever the
			// gateway was started from; "npx" is looked up in PATH.
			sc.Command = filepath.Join(vars.workspace, sc.Command)
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
		} else if sc.Cwd != "" && !filepath.IsAbs(sc.Cwd) {
			sc.Cwd = filepath.Join(vars.workspace, sc.Cwd)
		}
	}
	if e.has["envFile"] && sc.Transport == TransportStdio {
		if f, ok := exp(where+".envFile", e.envFile); ok {
			if strings.TrimSpace(f) == "" || strings.IndexByte(f, 0) >= 0 {
				p.problem(where+".envFile", "is empty or holds a NUL byte; name a dotenv file, like \".env\"")
			} else {
				if !filepath.IsAbs(f) {
					f = filepath.Join(vars.workspace, f)
				}
				sc.EnvFile = f
				sc.envFileVars = p.loadEnvFile(where+".envFile", f, e.envFile)
			}
		}
	}
	if len(e.inheritEnv) > 0 {
		sc.inherited = map[string]string{}
		for i, name := range e.inheritEnv {
			iw := fmt.Sprintf("%s.inheritEnv[%d]", where, i)
			if name == "" || strings.ContainsAny(name, "=\x00") {
				p.problem(iw, "is not a variable's name; write a name like \"AWS_PROFILE\"")
				continue
			}
			v, ok := p.lookup(name)
			if !ok {
				p.warn(iw, fmt.Sprintf("%s is not set in the gateway's environment; the server starts without it", name))
				continue
			}
			sc.inherited[name] = v
			sc.secrets = append(sc.secrets, v)
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

// varSource is what ${...} is expanded from: the gateway's environment, and
// the editors' variables.
type varSource struct {
	lookup    func(string) (string, bool)
	workspace string    // ${workspaceFolder}; see workspaceFolder
	secrets   *[]string // nil, or where the environment's values used are added
}

// editorVar gives the value of one of Cursor's and VS Code's own variables
// (never a secret), ok false if name is not one. ${userHome} is HOME.
func (v varSource) editorVar(name string) (val string, ok bool, bad string) {
	switch name {
	case "userHome":
		if h, set := v.lookup("HOME"); set && h != "" {
			return h, true, ""
		}
		return "", true, "${userHome} is the home directory, and HOME is not set in the gateway's environment; set HOME or write the path"
	case "workspaceFolder":
		return v.workspace, true, ""
	case "workspaceFolderBasename":
		return filepath.Base(v.workspace), true, ""
	case "pathSeparator", "/":
		return string(filepath.Separator), true, ""
	}
	return "", false, ""
}

// workspaceFolder is what ${workspaceFolder} means to the gateway, which has
// no editor: the folder of the config file, or its parent when the file sits
// in .vscode or .cursor (where editors keep a workspace's mcp.json), so a
// project's own config finds the project's files.
func workspaceFolder(configDir string) string {
	if b := filepath.Base(configDir); b == ".vscode" || b == ".cursor" {
		return filepath.Dir(configDir)
	}
	return configDir
}

// configDir is the absolute directory of a config file's path.
func configDir(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return filepath.Dir(abs)
	}
	return filepath.Dir(path)
}

// expandVars replaces ${NAME}, ${NAME:-default}, ${env:NAME} and the editors'
// variables in s. ":-" gives the default when NAME is unset or empty, as in
// the shell. A "$" not followed by "{" stays as it is; there is no escape
// and no nesting. On failure it says why (naming the variable, never a
// value) and returns s unchanged.
func expandVars(s string, vars varSource) (string, string) {
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
		if strings.Contains(body, "${") {
			return s, fmt.Sprintf(`"${" inside "${...}" at byte %d; a default is plain text, with no variables in it`, start)
		}
		if in, ok := strings.CutPrefix(name, "input:"); ok {
			return s, fmt.Sprintf("${input:%s} is a VS Code input, which the editor prompts for; the gateway cannot prompt: write ${%s} and set %s in the gateway's environment, or put it in an envFile",
				shortValue(in), envName(in), envName(in))
		}
		if v, ok, bad := vars.editorVar(name); ok {
			if bad != "" {
				return s, bad
			}
			b.WriteString(v)
			continue
		}
		name = strings.TrimPrefix(name, "env:") // Cursor's spelling
		if !isVarName(name) {
			return s, fmt.Sprintf(`bad variable name in "${...}" at byte %d; write ${NAME} or ${NAME:-default}, NAME being letters, digits and _, not starting with a digit`, start)
		}
		v, ok := vars.lookup(name)
		switch {
		case ok && (v != "" || !hasDef):
			b.WriteString(v)
			if vars.secrets != nil && v != "" {
				*vars.secrets = append(*vars.secrets, v)
			}
		case hasDef:
			b.WriteString(def)
		default:
			return s, fmt.Sprintf("${%s} is not set; set %s in the gateway's environment, or give a default: ${%s:-value}", name, name, name)
		}
	}
	return b.String(), ""
}

// envName suggests an environment variable's name for an input's id:
// "github-token" becomes GITHUB_TOKEN.
func envName(id string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(id) {
		if r == '_' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= maxQuoted {
			break
		}
	}
	if b.Len() == 0 || !isVarName(b.String()) {
		return "VALUE"
	}
	return b.String()
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
