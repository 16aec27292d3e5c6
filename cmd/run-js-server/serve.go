package main

// This file is the serving command: its flags, the token, and the ladder
// from a signal to exit.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/run-js-server/run-js-server/pkg/mcpgw"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// tokenEnv names the environment variable that gives the bearer token when
// --token-file is not given. It is removed from the environment once read,
// so that no downstream server inherits it.
const tokenEnv = "RUN_JS_SERVER_TOKEN"

// maxTokenFile bounds what is read of a token file: a token is a line, so a
// larger file is the wrong file.
const maxTokenFile = 4 << 10

// serveFlags are the serving command's flags.
type serveFlags struct {
	config      string
	demo        bool
	confinement string
	logLevel    *string
	http        string
	tokenFile   string
	origins     []string
	idleTimeout time.Duration
	maxSessions int
}

// serveCmd is the default: an MCP server on stdio, or with --http on
// Streamable HTTP. On SIGTERM or SIGINT it stops accepting, stops every
// running program with the grace and reaps its worker, stops the spare
// workers and the downstream servers, then returns; a second signal ends
// the process at once (workers die with it: they have a parent-death
// signal).
func serveCmd(args []string, stdin io.ReadCloser, stdout, stderr io.Writer) int {
	// Read once, then removed, whatever the flags: no downstream server
	// inherits the token.
	envToken := os.Getenv(tokenEnv)
	_ = os.Unsetenv(tokenEnv)
	fs := flag.NewFlagSet("run-js-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serveFlags
	fs.StringVar(&f.config, "config", "", "the gateway config (default: $"+configEnv+"; none: no downstream servers)")
	fs.BoolVar(&f.demo, "demo", false, "add the built-in demo issue tracker as server demo")
	fs.StringVar(&f.confinement, "confinement", "", confinementUsage)
	f.logLevel = logLevelFlag(fs)
	fs.StringVar(&f.http, "http", "", "serve MCP Streamable HTTP at http://ADDR"+mcpgw.MCPPath+" instead of stdio (e.g. 127.0.0.1:8080)")
	fs.StringVar(&f.tokenFile, "token-file", "", "with --http: require the bearer token in FILE (default: $"+tokenEnv+"); required on an address that is not loopback")
	fs.Func("allow-origin", "with --http: also serve browser pages of this origin, scheme://host[:port] (repeatable)", func(s string) error {
		if _, err := mcpgw.ParseOrigin(s); err != nil {
			return err
		}
		f.origins = append(f.origins, s)
		return nil
	})
	fs.DurationVar(&f.idleTimeout, "idle-timeout", mcpgw.DefaultSessionIdle, "with --http: close a session idle this long, stopping its programs")
	fs.IntVar(&f.maxSessions, "max-sessions", mcpgw.DefaultMaxSessions, "with --http: MCP sessions open at once")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitReturned
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "run-js-server: unexpected argument %q\n\n%s", fs.Arg(0), usage)
		return exitUsage
	}
	if f.http == "" {
		var httpOnly []string
		fs.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "token-file", "allow-origin", "idle-timeout", "max-sessions":
				httpOnly = append(httpOnly, "--"+fl.Name)
			}
		})
		if len(httpOnly) > 0 {
			fmt.Fprintf(stderr, "run-js-server: %s: only with --http ADDR (on stdio the agent is the process that started the gateway)\n", strings.Join(httpOnly, ", "))
			return exitUsage
		}
	}
	if f.idleTimeout <= 0 {
		fmt.Fprintf(stderr, "run-js-server: --idle-timeout %s: must be more than 0 (an idle session must end, or its programs run unwatched)\n", f.idleTimeout)
		return exitUsage
	}
	if f.maxSessions < 1 {
		fmt.Fprintf(stderr, "run-js-server: --max-sessions %d: must be at least 1\n", f.maxSessions)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.http != "" {
		return serveHTTP(ctx, stop, f, envToken, stderr)
	}
	g, code := startGateway(ctx, f, stderr)
	if g == nil {
		return code
	}
	err := mcpgw.ServeStdio(ctx, g, stdin, stdout)
	stop() // from here a second signal ends the process at once
	g.Close()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "run-js-server: %v\n", err)
		return exitEnded
	}
	return exitReturned
}

// serveHTTP serves on f.http until ctx is done, then climbs down the
// ladder: stop accepting, stop the programs (grace, reap), close the
// sessions, close the gateway.
func serveHTTP(ctx context.Context, stop context.CancelFunc, f serveFlags, envToken string, stderr io.Writer) int {
	token, err := loadToken(f.tokenFile, envToken, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "run-js-server: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", f.http)
	if err != nil {
		fmt.Fprintf(stderr, "run-js-server: --http %s: %v\n", f.http, err)
		return exitUsage
	}
	defer ln.Close()
	if token == "" && !mcpgw.IsLoopbackListener(ln) {
		fmt.Fprintf(stderr, "run-js-server: --http %s listens on %s, which is reachable from other machines, and no token is set: "+
			"give --token-file FILE (a file holding a secret of at least %d characters, mode 600) or set %s, "+
			"so that only holders of the token can run programs; or listen on 127.0.0.1\n", f.http, ln.Addr(), mcpgw.MinTokenBytes, tokenEnv)
		return exitUsage
	}
	g, code := startGateway(ctx, f, stderr)
	if g == nil {
		return code
	}
	hs, err := mcpgw.NewHTTPServer(g, mcpgw.HTTPOptions{Token: token, AllowOrigins: f.origins, SessionIdle: f.idleTimeout, MaxSessions: f.maxSessions})
	if err != nil {
		g.Close()
		fmt.Fprintf(stderr, "run-js-server: %v\n", err)
		return exitUsage
	}
	how := "bearer token required"
	if token == "" {
		how = "no token: any local process can use it"
	}
	// Tests and scripts read the address from this line (with --http :0 the
	// port is the kernel's choice).
	fmt.Fprintf(stderr, "run-js-server: serving MCP over Streamable HTTP at http://%s%s (%s)\n", ln.Addr(), mcpgw.MCPPath, how)

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	code = exitReturned
	select {
	case <-ctx.Done():
	case err := <-served:
		fmt.Fprintf(stderr, "run-js-server: serving on %s failed: %v\n", ln.Addr(), err)
		code = exitEnded
	}
	stop() // from here a second signal ends the process at once
	hs.Shutdown()
	g.Close()
	return code
}

// startGateway loads the config, connects to its servers and has one
// worker report its confinement, so that server_info is true from the
// start; with strict confinement a host that lacks a layer is refused here
// rather than at every run. On failure it returns nil and the exit code.
func startGateway(ctx context.Context, f serveFlags, stderr io.Writer) (*mcpgw.Gateway, int) {
	g, err := newGateway(ctx, f.config, f.demo, f.confinement, worker.Config{Spares: mcpgw.DefaultSpares}, stderr, *f.logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "run-js-server: %v\n", err)
		return nil, exitUsage
	}
	if err := g.ProbeConfinement(ctx); err != nil {
		g.Close()
		fmt.Fprintf(stderr, "run-js-server: %v\n", err)
		if errors.Is(err, worker.ErrConfinement) {
			return nil, exitUsage
		}
		return nil, exitEnded
	}
	return g, exitReturned
}

// loadToken reads the bearer token from path, or else takes envToken (the
// value of $RUN_JS_SERVER_TOKEN), and checks it; "" when neither is given.
// A file that group or others may read gets a warning on stderr.
func loadToken(path, envToken string, stderr io.Writer) (string, error) {
	var token, from string
	if path != "" {
		fh, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		defer fh.Close()
		fi, err := fh.Stat()
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return "", fmt.Errorf("--token-file %s: not a regular file", path)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			fmt.Fprintf(stderr, "run-js-server: warning: token file %s can be read by group or others (mode %04o); anyone who reads it can run programs: chmod 600 %s\n", path, perm, path)
		}
		b, err := io.ReadAll(io.LimitReader(fh, maxTokenFile+1))
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		if len(b) > maxTokenFile {
			return "", fmt.Errorf("--token-file %s: more than %d bytes; a token file holds one token on one line", path, maxTokenFile)
		}
		token, from = strings.TrimSpace(string(b)), "--token-file "+path
	} else {
		if strings.TrimSpace(envToken) == "" {
			return "", nil
		}
		token, from = strings.TrimSpace(envToken), "$"+tokenEnv
	}
	switch {
	case token == "":
		return "", fmt.Errorf("%s: empty; put a random secret of at least %d characters in it (e.g. openssl rand -hex 32)", from, mcpgw.MinTokenBytes)
	case len(token) < mcpgw.MinTokenBytes:
		return "", fmt.Errorf("%s: the token has %d characters, fewer than %d: it could be guessed; use a random secret (e.g. openssl rand -hex 32)", from, len(token), mcpgw.MinTokenBytes)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c < 0x21 || c > 0x7e {
			return "", fmt.Errorf("%s: the token has a space, control or non-ASCII byte at %d; it goes in an HTTP header: use printable ASCII (e.g. openssl rand -hex 32)", from, i)
		}
	}
	return token, nil
}
