// Command run-js-server is a code-mode MCP gateway: it runs an agent's
// JavaScript program in a fresh, bounded QuickJS-ng worker process per run.
//
// Subcommands:
//
//	run-js-server [--config FILE] [--demo]   serve MCP on stdio (the default): run_js, wait_js,
//	                                         stop_js, list_js, search_tools, server_info
//	run-js-server --http ADDR [--token-file FILE] [--allow-origin ORIGIN]... [--config FILE] [--demo]
//	                                         serve MCP Streamable HTTP at http://ADDR/mcp
//	run-js-server run [flags] FILE|-         run one JavaScript or TypeScript program and print its ending
//	run-js-server tools [--config FILE] [--ts]  print the tool catalog
//	run-js-server check-config FILE          validate a config and print what would start
//	run-js-server demo-server                serve the demo issue tracker on stdio
//	run-js-server bench [flags]              measure workers on this host
//	run-js-server version                    print the version
//
// `run-js-server --worker-fd N` is the worker mode the parent starts; it is
// dispatched before anything else and is not for people.
//
// The go:debug lines keep the Go runtime from holding cgroup files open: a
// worker closes every descriptor above its socket at start, and the runtime
// must not have any of its own there.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/run-js-server/run-js-server/pkg/mcpgw"
	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// version is stamped by scripts/build.sh (-X main.version=...).
var version = "dev"

// Exit statuses of the CLI.
const (
	exitReturned = 0 // the program returned
	exitEnded    = 1 // the program ended any other way, or a command failed
	exitUsage    = 2 // bad flags, arguments or config
)

func main() {
	// Worker mode first: before flags, config or anything else runs.
	if len(os.Args) >= 3 && os.Args[1] == "--worker-fd" {
		fd, err := strconv.Atoi(os.Args[2])
		if err != nil || fd < 3 {
			fmt.Fprintln(os.Stderr, "run-js-server: --worker-fd needs a descriptor number ≥ 3; it is for run-js-server's own use")
			os.Exit(exitUsage)
		}
		worker.ChildMain(fd)
	}
	os.Exit(dispatch(os.Args[1:]))
}

// usage is the CLI's help. Its defaults are the limits' own.
var usage = `run-js-server: a code-mode MCP gateway

Usage:
  run-js-server [--config FILE] [--demo] [--confinement strict|best-effort|off] [--log-level LEVEL]
                                             serve MCP on stdio (tools run_js, wait_js, stop_js, list_js, search_tools, server_info)
  run-js-server --http ADDR [--token-file FILE] [--allow-origin ORIGIN]... [--idle-timeout ` + mcpgw.DefaultSessionIdle.String() + `] [--max-sessions ` + strconv.Itoa(mcpgw.DefaultMaxSessions) + `] [same flags]
                                             serve the same over MCP Streamable HTTP at http://ADDR` + mcpgw.MCPPath + `; the token
                                             (or $RUN_JS_SERVER_TOKEN) is required unless ADDR is loopback
  run-js-server run [--config FILE] [--demo] [--timeout ` + wire.DefaultTimeout.String() + `] [--memory ` + mcpgw.FormatSize(wire.DefaultMemory) + `] [--input JSON] [--format json|text] [--language javascript|typescript] [--confinement strict|best-effort|off] FILE|-
  run-js-server tools [--config FILE] [--demo] [--ts]     (exit 1 when no server could be used)

--log-level is debug, info (the default: with each downstream server's stderr), warn or error; $` + logLevelEnv + ` sets the default.
  run-js-server check-config FILE
  run-js-server demo-server
  run-js-server bench [--runs N] [--calls N] [--mcp N] [--mcp-only] [--catalog N] [--big-mib N]
  run-js-server version

Run 'run-js-server COMMAND -h' for a command's flags.
`

func dispatch(args []string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" && args[0] != "--version" {
		return serveCmd(args, os.Stdin, os.Stdout, os.Stderr)
	}
	switch args[0] {
	case "tools":
		return toolsCmd(args[1:], os.Stdout, os.Stderr)
	case "check-config":
		return checkConfigCmd(args[1:], os.Stdout, os.Stderr)
	case "demo-server":
		return demoServerCmd(args[1:], os.Stderr)
	case "run":
		return runCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "bench":
		return benchCmd(args[1:], os.Stdout, os.Stderr)
	case "bench-server":
		return benchServerCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "version", "--version":
		fmt.Println("run-js-server", version)
		return exitReturned
	case "help", "-h", "--help":
		fmt.Print(usage)
		return exitReturned
	}
	fmt.Fprintf(os.Stderr, "run-js-server: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}
