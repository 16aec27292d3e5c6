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
	"syscall"
	"time"

	"github.com/run-js-server/run-js-server/pkg/mcpgw"
	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// runFlags are the flags of `run-js-server run`.
type runFlags struct {
	fs                            *flag.FlagSet
	timeout                       *time.Duration
	memory, input, format, config *string
	confinement                   *string
	language                      *string
	logLevel                      *string
	demo                          *bool
}

func newRunFlags(stderr io.Writer) *runFlags {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &runFlags{fs: fs}
	f.timeout = fs.Duration("timeout", wire.DefaultTimeout, fmt.Sprintf("the run's deadline (%s to %s)", wire.MinTimeout, wire.MaxTimeout))
	f.memory = fs.String("memory", mcpgw.FormatSize(wire.DefaultMemory), fmt.Sprintf("the program's memory limit (%s to %s; a whole number with B, KiB, MiB or GiB, binary units written exactly so)",
		mcpgw.FormatSize(wire.MinMemory), mcpgw.FormatSize(wire.MaxMemory)))
	f.input = fs.String("input", "", "JSON given to the program as its global input")
	f.language = fs.String("language", "", "javascript or typescript (default: typescript for a .ts, .mts or .cts file, else javascript); TypeScript's types are stripped, not checked")
	f.format = fs.String("format", "json", "json: the ending as one JSON object; text: what an agent would read")
	f.config = fs.String("config", "", "a gateway config naming downstream MCP servers (default: $"+configEnv+"; none: no tools)")
	f.demo = fs.Bool("demo", false, "add the built-in demo issue tracker as server demo")
	f.confinement = fs.String("confinement", "", confinementUsage)
	f.logLevel = logLevelFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: run-js-server run [flags] FILE|-\n\nRuns one JavaScript or TypeScript program (the body of an async function) in a\nfresh worker and prints how it ended. Exit status: 0 returned, 1 any other\nending, 2 usage error.\n\nFlags:")
		fs.PrintDefaults()
	}
	return f
}

// runCmd is `run-js-server run`: one program in one worker, its ending on
// stdout.
func runCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newRunFlags(stderr)
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitReturned
		}
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "run-js-server run: "+format+"\n", a...)
		return exitUsage
	}
	req, bad := f.request(stdin)
	if bad != "" {
		return fail("%s", bad)
	}
	lang, ts, syntax, bad := f.program(&req)
	if bad != "" {
		return fail("%s", bad)
	}
	if syntax != nil { // nothing to run: the ending says where it does not parse
		if err := printEnding(stdout, syntax, *f.format); err != nil {
			fmt.Fprintf(stderr, "run-js-server run: write the ending: %v\n", err)
		}
		return exitEnded
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	g, err := newGateway(ctx, *f.config, *f.demo, *f.confinement, worker.Config{}, stderr, *f.logLevel)
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
	if ts != nil {
		ending = ts.MapEnding(ending)
	} else if lang == mcpgw.JavaScript && mcpgw.ParsesAsTypeScript(req.Code, ending) {
		fmt.Fprintf(stderr, "run-js-server run: hint: this program is not JavaScript but parses as TypeScript: name it .ts or pass --language typescript\n")
	}
	if err := printEnding(stdout, ending, *f.format); err != nil {
		fmt.Fprintf(stderr, "run-js-server run: write the ending: %v\n", err)
		return exitEnded
	}
	if ending.OK() {
		return exitReturned
	}
	return exitEnded
}

// request checks the flags and reads the program. bad says what is wrong
// with them, for a usage error.
func (f *runFlags) request(stdin io.Reader) (req mcpgw.RunRequest, bad string) {
	if f.fs.NArg() != 1 {
		return req, fmt.Sprintf("give exactly one program: a file, or - for standard input (got %d arguments)", f.fs.NArg())
	}
	if *f.format != "json" && *f.format != "text" {
		return req, fmt.Sprintf("--format %q: use json or text", *f.format)
	}
	mem, err := mcpgw.ParseSize(*f.memory)
	if err != nil {
		return req, fmt.Sprintf("--memory %q: %v", *f.memory, err)
	}
	if mem <= 0 {
		return req, fmt.Sprintf("--memory %q: must be more than 0 (at least %s)", *f.memory, mcpgw.FormatSize(wire.MinMemory))
	}
	if mem < wire.MinMemory || mem > wire.MaxMemory {
		return req, fmt.Sprintf("--memory %s is out of range: allowed %s to %s", mcpgw.FormatSize(mem), mcpgw.FormatSize(wire.MinMemory), mcpgw.FormatSize(wire.MaxMemory))
	}
	if *f.timeout < wire.MinTimeout || *f.timeout > wire.MaxTimeout {
		return req, fmt.Sprintf("--timeout %s is out of range: allowed %s to %s", *f.timeout, time.Duration(wire.MinTimeout), time.Duration(wire.MaxTimeout))
	}
	var code []byte
	if name := f.fs.Arg(0); name == "-" {
		code, err = io.ReadAll(io.LimitReader(stdin, wire.MaxCodeBytes+1))
	} else {
		code, err = readFileCapped(name, wire.MaxCodeBytes+1)
	}
	if err != nil {
		return req, fmt.Sprintf("read the program: %v", err)
	}
	req = mcpgw.RunRequest{Code: string(code), Timeout: *f.timeout, Memory: mem}
	if *f.input != "" {
		if !json.Valid([]byte(*f.input)) {
			return req, "--input is not valid JSON; quote it for the shell, e.g. --input '{\"n\": 3}'"
		}
		req.Input = json.RawMessage(*f.input)
	}
	return req, ""
}

// program decides the program's language (--language, else the file's
// name) and strips a TypeScript program's types into req.Code. A program
// that does not parse as TypeScript gives its ending, as a run would; bad
// says what is wrong with the flags.
func (f *runFlags) program(req *mcpgw.RunRequest) (lang mcpgw.Language, ts *mcpgw.TSProgram, syntax *worker.Ending, bad string) {
	lang = mcpgw.LanguageOfFile(f.fs.Arg(0))
	if *f.language != "" {
		var err error
		if lang, err = mcpgw.ParseLanguage(*f.language); err != nil {
			return "", nil, nil, "--language: " + err.Error()
		}
	}
	if lang != mcpgw.TypeScript {
		return lang, nil, nil, ""
	}
	ts, err := mcpgw.CompileTS(req.Code)
	var se *mcpgw.TSSyntaxError
	switch {
	case errors.As(err, &se):
		return lang, nil, se.Ending("run-ts"), ""
	case err != nil:
		return lang, nil, nil, err.Error()
	}
	req.Code = ts.JS
	return lang, ts, nil, ""
}

// printEnding writes the ending as one JSON object, or as the text an agent
// would read.
func printEnding(w io.Writer, e *worker.Ending, format string) error {
	if format == "text" {
		_, err := fmt.Fprint(w, e.Text())
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(e)
}

func readFileCapped(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}
