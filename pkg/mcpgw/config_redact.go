package mcpgw

// This file holds the redacted view of a config that server_info and
// check-config show, and the redaction of URLs, args and headers.

import "strings"

// redactedText is the text that stands for a secret.
const redactedText = "<redacted>"

type redactedConfig struct {
	Path     string           `json:"path"`
	Limits   redactedLimits   `json:"limits"`
	Servers  []redactedServer `json:"servers"`
	Warnings []string         `json:"warnings,omitempty"`
}

type redactedLimits struct {
	Timeout      string `json:"timeout"`
	Memory       int64  `json:"memory"`
	MaxTimeout   string `json:"maxTimeout"`
	MaxMemory    int64  `json:"maxMemory"`
	StartTimeout string `json:"startTimeout"`
	// Confinement is the config's setting; a command-line flag may override it.
	Confinement string `json:"confinement"`
}

type redactedServer struct {
	Name         string            `json:"name"`
	Transport    Transport         `json:"transport"`
	Command      string            `json:"command,omitempty"`
	Args         []string          `json:"args,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	Cwd          string            `json:"cwd,omitempty"`
	EnvFile      string            `json:"envFile,omitempty"`
	InheritEnv   []string          `json:"inheritEnv,omitempty"` // names only
	URL          string            `json:"url,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	AllowTools   []string          `json:"allowTools,omitempty"` // absent: every tool
	Lane         redactedLane      `json:"lane"`
	CallTimeout  string            `json:"callTimeout,omitempty"`
	StartTimeout string            `json:"startTimeout,omitempty"`
	Disabled     bool              `json:"disabled,omitempty"`
}

type redactedLane struct {
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
	out := redactedConfig{
		Path: c.Path,
		Limits: redactedLimits{
			Timeout: c.Limits.Timeout().String(), Memory: c.Limits.MemoryBytes,
			MaxTimeout: c.MaxTimeout.String(), MaxMemory: c.MaxMemory, StartTimeout: c.StartTimeout.String(),
			Confinement: c.Confinement.String(),
		},
		Servers:  make([]redactedServer, 0, len(c.Servers)),
		Warnings: c.Warnings,
	}
	for _, s := range c.Servers {
		t, ok := c.tmpl[s.Name]
		if !ok {
			t = serverTemplate{command: s.Command, cwd: s.Cwd, url: s.URL, args: s.Args}
		}
		r := redactedServer{
			Name: s.Name, Transport: s.Transport, Command: t.command, Cwd: t.cwd,
			Args: redactArgs(t.args), Env: redactMap(s.Env), Headers: redactMap(s.Headers), EnvFile: t.envFile, InheritEnv: s.InheritEnv,
			AllowTools: s.AllowTools, Lane: redactedLane{s.Lane.MaxActive, s.Lane.MaxOutstanding},
			Disabled: s.Disabled,
		}
		if t.url != "" {
			r.URL = redactURL(t.url)
		}
		if s.CallTimeout > 0 {
			r.CallTimeout = s.CallTimeout.String()
		}
		if s.StartTimeout > 0 && s.StartTimeout != c.StartTimeout {
			r.StartTimeout = s.StartTimeout.String()
		}
		out.Servers = append(out.Servers, r)
	}
	return out
}

func redactMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = redactedText
	}
	return out
}

// redactURL keeps a URL's scheme, host and path, and replaces its userinfo,
// query and fragment. It works on text, so a URL with ${VAR} in it, or one
// that does not parse, is redacted the same way.
func redactURL(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		if strings.ContainsAny(s, "@?#") {
			return redactedText
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
		auth = redactedText + "@" + auth[at+1:]
	}
	path, cut := tail, ""
	if q := strings.IndexAny(tail, "?#"); q >= 0 {
		path, cut = tail[:q], tail[q:q+1]+redactedText
	}
	return s[:i+3] + auth + path + cut
}

// secretFlagWords: a flag whose name holds one of these takes a secret.
var secretFlagWords = []string{"token", "key", "secret", "password", "passwd", "auth", "credential", "cookie", "header"}

func isSecretFlag(flag string) bool {
	if !strings.HasPrefix(flag, "-") {
		return false
	}
	f := strings.ToLower(flag)
	if f == "-h" {
		return true // curl's and mcp-remote's short --header
	}
	for _, w := range secretFlagWords {
		if strings.Contains(f, w) {
			return true
		}
	}
	return false
}

// redactHeaderArg keeps the name of "Name: value" and redacts the value.
func redactHeaderArg(s string) string {
	if k := strings.IndexByte(s, ':'); k > 0 && !strings.Contains(s[:k], "/") {
		return s[:k+1] + redactedText
	}
	return redactedText
}

func redactArgs(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case i > 0 && isSecretFlag(args[i-1]) && !strings.HasPrefix(a, "-"):
			out[i] = redactHeaderArg(a)
		case strings.HasPrefix(a, "-") && strings.Contains(a, "=") && isSecretFlag(a[:strings.IndexByte(a, '=')]):
			k := strings.IndexByte(a, '=')
			out[i] = a[:k+1] + redactHeaderArg(a[k+1:])
		case strings.Contains(a, "://"):
			out[i] = redactURL(a)
		default:
			out[i] = a
		}
	}
	return out
}
