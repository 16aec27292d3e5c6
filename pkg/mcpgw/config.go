package mcpgw

// This file holds the gateway's config as loaded (Config, ServerConfig), its
// errors, and LoadConfig and ParseConfig. The rest of the config lives in
// the config_*.go files beside it: the walk of the file (config_parse.go),
// the fields as data (config_fields.go), ${VAR} expansion
// (config_expand.go), limits (config_limits.go), the redacted view
// (config_redact.go) and raw JSON helpers (config_json.go).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
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
)

// Transport is how the gateway reaches a downstream server.
type Transport string

// The transports. The "type" values a file may use for them, with their
// aliases, are in transportTypes.
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
	Command string // a relative path with a slash is resolved against the config's folder (workspaceFolder)
	Args    []string
	// Env is the server's own environment, on top of the few variables every
	// server gets (envpolicy.go); values are secrets.
	Env map[string]string
	// Cwd is the server's working directory, relative to the config's
	// folder (workspaceFolder); "" is the gateway's working directory.
	Cwd string
	// EnvFile is the dotenv file whose variables the server gets (under
	// Env's), resolved against the config's folder; loaded with the config.
	EnvFile string
	// InheritEnv names variables of the gateway's own environment that the
	// server gets too; by default it gets none but envpolicy.go's.
	InheritEnv []string

	// remote
	URL     string            // may carry secrets in its userinfo or query
	Headers map[string]string // values are secrets

	// AllowTools names the tools a program may call; empty means every tool
	// the server lists.
	AllowTools []string
	// Lane bounds the calls to this server. LoadConfig fills zero fields with
	// package lanes' defaults (lanes.DefaultMaxActive and
	// lanes.DefaultMaxOutstanding), so the loaded config shows the values in
	// force.
	Lane struct{ MaxActive, MaxOutstanding int }
	// CallTimeout bounds one call; 0 means only the run's deadline does.
	CallTimeout time.Duration
	// StartTimeout bounds one attempt to start the server (spawn,
	// initialize, tools/list); LoadConfig fills 0 with the config's
	// limits.startTimeout.
	StartTimeout time.Duration
	// Disabled servers are listed but never started. Their command, args,
	// env, cwd, url and headers are kept as written: ${VAR} is not expanded
	// in them, and they are checked only for their JSON types.
	Disabled bool

	// envFileVars are EnvFile's variables; inherited are InheritEnv's values,
	// read from the gateway's environment at load.
	envFileVars map[string]string
	inherited   map[string]string
	// secrets are the values that must never be shown: every ${VAR} the
	// config expanded for this server, and inherited values (env, envFile
	// and header values are secrets by their place).
	secrets []string
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
	// Confinement is how far each worker must confine itself (limits.
	// confinement; the zero value is best-effort). A command-line flag may
	// override it.
	Confinement worker.Confinement
	// StartTimeout is limits.startTimeout: the default bound of one attempt
	// to start a server (DefaultStartTimeout when not set).
	StartTimeout time.Duration

	// Warnings are things ignored or skipped, one line each, in the form
	// "FILE: WHERE: what". They never hold a secret.
	Warnings []string

	// tmpl is each server's command, args, cwd and url as written (before
	// ${VAR} expansion), for Redacted.
	tmpl map[string]serverTemplate
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
		return nil, configReadError(path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxConfigBytes {
		return nil, configTooLarge(path, fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, configReadError(path, err)
	}
	if len(data) > MaxConfigBytes {
		return nil, configTooLarge(path, -1)
	}
	return ParseConfig(path, data, lookupEnv)
}

// ParseConfig parses a config file's bytes; path names the file in messages,
// and gives the folder relative paths in it (command with a slash, cwd,
// envFile) are resolved against: the file's directory, or the project
// folder above it when it sits in .vscode or .cursor (workspaceFolder).
//
// The file is a JSON object. Its "mcpServers" is in the format of Claude
// Desktop's claude_desktop_config.json, Claude Code's .mcp.json and Cursor's
// mcp.json, or its "servers" in that of VS Code's .vscode/mcp.json, plus our
// fields (allowTools, lane, callTimeout, startTimeout, inheritEnv); its
// "limits" sets the run limits and the default startTimeout. Other top-level
// keys belong to the clients and are ignored with a warning. Within a server,
// fields are checked strictly (see serverFields and foreignFields).
//
// ${NAME}, ${NAME:-default} (default used when NAME is unset or empty) and
// Cursor's ${env:NAME} are replaced in command, args, cwd, envFile, url and
// the values of env and headers, looking names up with lookupEnv (nil:
// os.LookupEnv), and so are the editors' ${userHome}, ${workspaceFolder}
// (see workspaceFolder), ${workspaceFolderBasename} and ${pathSeparator}. A
// VS Code ${input:NAME} is an error naming it: nothing here can prompt. A
// "$" not followed by "{" is kept as it is.
//
// The error, if any, is a *ConfigError listing every problem found.
func ParseConfig(path string, data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if len(data) > MaxConfigBytes {
		return nil, configTooLarge(path, int64(len(data)))
	}
	p := &configParser{err: &ConfigError{Path: configName(path)}, lookup: lookupEnv, dir: configDir(path), serversKey: keyServers}
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // Windows editors' byte order mark
	if len(bytes.TrimSpace(data)) == 0 {
		p.problem("", `the file is empty; write {"mcpServers": {}} at least`)
		return nil, p.err
	}
	// One pass without recursion checks the nesting and the syntax before
	// anything is decoded.
	if _, err := wire.ScanJSON(data, 0, MaxConfigDepth); err != nil {
		var je *wire.JSONError
		if errors.Is(err, wire.ErrTooDeep) && errors.As(err, &je) {
			line, col := lineCol(data, je.Offset)
			p.problem(fmt.Sprintf("line %d, column %d", line, col),
				fmt.Sprintf("nested deeper than %d arrays and objects; a config needs a handful of levels", MaxConfigDepth))
			return nil, p.err
		}
		// encoding/json rejects what ScanJSON rejects, and its error says
		// more (p.syntax adds a hint).
		if jerr := json.Unmarshal(data, new(json.RawMessage)); jerr != nil {
			err = jerr
		}
		p.syntax(data, err)
		return nil, p.err
	}
	cfg := p.parse(path, data)
	if len(p.err.Problems) > 0 {
		return nil, p.err
	}
	return cfg, nil
}

// configReadError and configTooLarge are the errors of a file that could
// not be read or is too large: no parsing was tried.
func configReadError(path string, err error) error {
	what := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		what = pe.Err.Error()
	}
	return &ConfigError{Path: configName(path), Problems: []ConfigProblem{{What: "cannot read it: " + what}}, cause: err}
}

func configTooLarge(path string, size int64) error {
	what := fmt.Sprintf("larger than %s, the most a config may be; name the right file", FormatSize(MaxConfigBytes))
	if size >= 0 {
		what = fmt.Sprintf("is %d bytes; a config may be at most %s; name the right file", size, FormatSize(MaxConfigBytes))
	}
	return &ConfigError{Path: configName(path), Problems: []ConfigProblem{{What: what}}}
}
