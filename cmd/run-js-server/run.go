package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/run-js-server/run-js-server/pkg/mcpgw"
	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// runCmd is `run-js-server run`: one program in one worker, its ending on
// stdout.
func runCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", wire.DefaultTimeout, fmt.Sprintf("the run's deadline (%s to %s)", wire.MinTimeout, wire.MaxTimeout))
	memory := fs.String("memory", "64MiB", "the program's memory limit (4MiB to 2GiB; suffixes KiB, MiB, GiB)")
	input := fs.String("input", "", "JSON given to the program as the global `input`")
	format := fs.String("format", "json", "json: the ending as one JSON object; text: what an agent would read")
	config := fs.String("config", "", "a gateway config naming downstream MCP servers (default: $"+configEnv+"; none: no tools)")
	demo := fs.Bool("demo", false, "add the built-in demo issue tracker as server demo")
	confinement := fs.String("confinement", "best-effort", "how the worker confines itself before it reads the program (Linux): strict (refuse if a layer is missing), best-effort, or off (debugging only)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: run-js-server run [flags] FILE|-\n\nRuns one JavaScript program (the body of an async function) in a fresh worker\nand prints how it ended. Exit status: 0 returned, 1 any other ending, 2 usage error.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitReturned
		}
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "run-js-server run: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() != 1 {
		return fail("give exactly one program: a file, or - for standard input (got %d arguments)", fs.NArg())
	}
	if *format != "json" && *format != "text" {
		return fail("--format %q: use json or text", *format)
	}
	conf, err := worker.ParseConfinement(*confinement)
	if err != nil {
		return fail("--%v", err)
	}
	if conf == worker.ConfineOff {
		fmt.Fprintln(stderr, "run-js-server run: warning: --confinement off: the worker runs unconfined, as a process of your user with your access (for debugging only)")
	}
	mem, err := parseSize(*memory)
	if err != nil {
		return fail("--memory %q: %v", *memory, err)
	}
	var code []byte
	if name := fs.Arg(0); name == "-" {
		code, err = io.ReadAll(io.LimitReader(stdin, wire.MaxCodeBytes+1))
	} else {
		code, err = readFileCapped(name, wire.MaxCodeBytes+1)
	}
	if err != nil {
		return fail("read the program: %v", err)
	}
	req := mcpgw.RunRequest{Code: string(code), Timeout: *timeout, Memory: mem}
	if *input != "" {
		if !json.Valid([]byte(*input)) {
			return fail("--input is not valid JSON; quote it for the shell, e.g. --input '{\"n\": 3}'")
		}
		req.Input = json.RawMessage(*input)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	g, err := newGateway(ctx, *config, *demo, worker.Config{Confinement: conf}, stderr)
	if err != nil {
		return fail("%v", err)
	}
	defer g.Close()
	ending, err := g.Run(ctx, req)
	if err != nil {
		if errors.Is(err, worker.ErrBadRequest) {
			return fail("%v", err)
		}
		fmt.Fprintf(stderr, "run-js-server run: %v\n", err)
		return exitEnded
	}
	if *format == "text" {
		fmt.Fprint(stdout, ending.Text())
	} else {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ending); err != nil {
			fmt.Fprintf(stderr, "run-js-server run: write the ending: %v\n", err)
			return exitEnded
		}
	}
	if ending.OK() {
		return exitReturned
	}
	return exitEnded
}

func readFileCapped(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

// parseSize reads a byte count: a plain number of bytes, or a number with
// KiB, MiB or GiB (also K, M, G, KB, MB, GB, all binary, any case).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("want a positive size such as 64MiB, 512MiB or 1GiB")
	}
	if n > (1<<62)/mult {
		return 0, errors.New("too large")
	}
	return n * mult, nil
}
