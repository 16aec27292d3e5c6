package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/mcpgw"
	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// configEnv names the environment variable that gives the config file when
// --config is not given.
const configEnv = "RUN_JS_SERVER_CONFIG"

// loadConfig loads the config named by flag (or RUN_JS_SERVER_CONFIG), or,
// with neither, a config without downstream servers. With demo, it adds the
// built-in demo server as "demo".
func loadConfig(path string, demo bool) (*mcpgw.Config, error) {
	if path == "" {
		path = os.Getenv(configEnv)
	}
	var cfg *mcpgw.Config
	var err error
	if path == "" {
		cfg, err = mcpgw.ParseConfig("(no config)", []byte(`{"mcpServers": {}}`), os.LookupEnv)
		if err == nil {
			cfg.Warnings = nil // having no servers is what was asked for
		}
	} else {
		cfg, err = mcpgw.LoadConfig(path, os.LookupEnv)
	}
	if err != nil {
		return nil, err
	}
	if demo {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		for _, s := range cfg.Servers {
			if s.Name == "demo" {
				return nil, fmt.Errorf("%w: --demo adds a server named demo, and %s already has one", mcpgw.ErrConfig, cfg.Path)
			}
		}
		cfg.Servers = append(cfg.Servers, mcpgw.ServerConfig{Name: "demo", Transport: mcpgw.TransportStdio, Command: exe, Args: []string{"demo-server"}})
	}
	return cfg, nil
}

// confinementUsage is the --confinement flag's help, for run and serve.
const confinementUsage = "how each worker confines itself before it reads a program (Linux): strict (refuse runs in a worker that lacks a layer), best-effort (every layer the kernel has), or off (debugging only); default: the config's limits.confinement, else best-effort"

// logLevelEnv names the environment variable that gives the log level when
// --log-level is not given.
const logLevelEnv = "RUN_JS_SERVER_LOG_LEVEL"

// logLevels are the values of --log-level. At the default, info, the log
// has each downstream server's stderr (prefixed with its name), when a
// server becomes ready, and every warning; warn keeps only the problems.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// logLevelFlag adds --log-level to fs, defaulting to $RUN_JS_SERVER_LOG_LEVEL
// or info.
func logLevelFlag(fs *flag.FlagSet) *string {
	def := os.Getenv(logLevelEnv)
	if def == "" {
		def = "info"
	}
	return fs.String("log-level", def, "what the log on stderr holds: debug, info (with downstream servers' stderr), warn or error (default: $"+logLevelEnv+", else info)")
}

// parseLogLevel checks a --log-level value.
func parseLogLevel(s string) (slog.Level, error) {
	if l, ok := logLevels[strings.ToLower(s)]; ok {
		return l, nil
	}
	return 0, fmt.Errorf("log level %q is not one of debug, info, warn, error (from --log-level or $%s)", s, logLevelEnv)
}

// newGateway loads the config and starts its servers in the background,
// logging to stderr at level. A serving gateway keeps spare workers
// (wc.Spares); one that runs a single program does not. confinement is the
// --confinement flag: "" takes the config's setting (best-effort when it has
// none).
func newGateway(ctx context.Context, configPath string, demo bool, confinement string, wc worker.Config, stderr io.Writer, level string) (*mcpgw.Gateway, error) {
	lvl, err := parseLogLevel(level)
	if err != nil {
		return nil, err
	}
	cfg, err := loadConfig(configPath, demo)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	wc.Confinement = cfg.Confinement
	if confinement != "" {
		if wc.Confinement, err = worker.ParseConfinement(confinement); err != nil {
			return nil, fmt.Errorf("--%v", err)
		}
		if wc.Confinement == worker.ConfineOff {
			fmt.Fprintln(stderr, "run-js-server: warning: --confinement off: workers run unconfined, as processes of your user with your access (for debugging only)")
		}
	}
	g, err := mcpgw.New(cfg, mcpgw.Options{Version: version, Log: log, Worker: wc})
	if err != nil {
		return nil, err
	}
	g.Connect(ctx)
	return g, nil
}

// demoServerCmd serves the demo issue tracker on stdio.
func demoServerCmd(args []string, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "run-js-server demo-server: takes no arguments; it serves a demo issue tracker over MCP on stdio")
		return exitUsage
	}
	if err := mcpgw.NewDemoServer(version).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintf(stderr, "run-js-server demo-server: %v\n", err)
		return exitEnded
	}
	return exitReturned
}

// toolsCmd prints the catalog, or its TypeScript declarations.
func toolsCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "the gateway config (default: $"+configEnv+")")
	demo := fs.Bool("demo", false, "add the built-in demo issue tracker as server demo")
	ts := fs.Bool("ts", false, "print TypeScript declarations instead of JSON")
	logLevel := logLevelFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitReturned
		}
		return exitUsage
	}
	g, err := newGateway(context.Background(), *config, *demo, "", worker.Config{}, stderr, *logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "run-js-server tools: %v\n", err)
		return exitUsage
	}
	defer g.Close()
	g.Settle(context.Background()) // each server's first attempt, within its startTimeout
	catalog := g.Catalog()
	if catalog == nil {
		catalog = []wire.Tool{}
	}
	if *ts {
		fmt.Fprint(stdout, mcpgw.TSDeclarations(catalog))
	} else {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(catalog)
	}
	enabled, ready := 0, 0
	for _, s := range g.Servers() {
		if s.State != mcpgw.StateDisabled {
			enabled++
		}
		if s.State == mcpgw.StateReady {
			ready++
		} else {
			fmt.Fprintf(stderr, "server %s is %s: %s\n", s.Name, s.State, s.Reason)
		}
	}
	if enabled > 0 && ready == 0 {
		fmt.Fprintf(stderr, "run-js-server tools: none of the %d servers could be used (see above), so there are no tools\n", enabled)
		return exitEnded
	}
	return exitReturned
}

// checkConfigCmd validates a config file and prints what would start.
func checkConfigCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "Usage: run-js-server check-config FILE")
		return exitUsage
	}
	cfg, err := mcpgw.LoadConfig(args[0], os.LookupEnv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(cfg.Redacted())
	for _, w := range cfg.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	return exitReturned
}
