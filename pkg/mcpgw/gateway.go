package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/lanes"
	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// DefaultSpares is how many warm workers a serving gateway keeps: enough
// that a burst of runs from one agent does not wait for exec.
const DefaultSpares = 2

// MaxRunningPrograms is how many programs one gateway runs at once, each in
// its own worker process (up to its memory limit plus about 7 MiB): 16 runs
// at the default memory fit a small host. A program past it is refused at
// once with ErrBusy, and nothing is started.
const MaxRunningPrograms = 16

// Options configure a Gateway beyond its Config.
type Options struct {
	Version string
	Log     *slog.Logger  // nil: discard
	Worker  worker.Config // how workers start, and how many spares to keep (0: none)
	// LookupEnv reads the gateway's environment for what stdio servers
	// inherit (envpolicy.go); nil: os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// OnEnding, if set, is told of each ending run_js or wait_js is about
	// to answer with, before the answer is built (for `run-js-server bench`,
	// which times end frame → response). It must not block.
	OnEnding func(*worker.Ending)
}

// Gateway connects to the downstream servers of a Config, keeps their
// catalog, and runs programs against them. Safe for concurrent use.
type Gateway struct {
	cfg      *Config
	opts     Options
	log      *slog.Logger
	launcher *worker.Launcher
	servers  map[string]*downstream
	order    []string

	slots   runSlots    // programs running now, against MaxRunningPrograms
	scripts scriptTable // run_js programs by MCP session

	mu        sync.Mutex
	catalog   []wire.Tool
	validator *argsValidator
	problems  []schemaProblem
	stale     bool
	gens      []uint64 // each server's toolsGen when the catalog was built

	watch catalogWatch // the MCP servers told when the catalog changes (catalogwatch.go)

	// The catalog as runs get it, prepared once (wire.NewCatalog) for the
	// catalog and the servers' states it was made from: a run's cost does
	// not grow with the catalog. Under mu.
	prepared       *wire.Catalog
	preparedStates []wire.ServerState

	// httpLimits is set when the gateway is served over HTTP (NewHTTPServer), for server_info.
	httpLimits atomic.Pointer[httpLimitsReport]
}

// New builds a Gateway and starts its spare workers. It does not connect:
// call Connect.
func New(cfg *Config, opts Options) (*Gateway, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	log := opts.Log
	wcfg := opts.Worker
	if wcfg.OnBreach == nil {
		// The ending went at the end frame; what a worker does after it
		// cannot change it, so it is logged here and counted (server_info).
		wcfg.OnBreach = func(runID, rule, detail string) {
			log.Warn("worker broke the protocol after its run's ending was given; the ending stands, the worker was killed", "run", runID, "rule", rule, "detail", detail)
		}
	}
	l, err := worker.NewLauncher(wcfg)
	if err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, opts: opts, log: opts.Log, launcher: l, servers: map[string]*downstream{}, stale: true, slots: runSlots{max: MaxRunningPrograms}}
	// HTTP transports read whole events before the gateway sees whose they
	// are: their cap is the largest result any run may receive. (A stdio
	// server's answers are bounded per call: stdioconn.go.)
	httpCap := int(max(cfg.MaxMemory, cfg.Limits.MemoryBytes)/wire.ResultMemoryShare) + resultLineSlack
	for _, sc := range cfg.Servers {
		lane, err := lanes.New(sc.Name, lanes.Config{MaxActive: sc.Lane.MaxActive, MaxOutstanding: sc.Lane.MaxOutstanding})
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("%w: server %s: %v", ErrConfig, sc.Name, err)
		}
		if sc.StartTimeout <= 0 {
			sc.StartTimeout = cfg.StartTimeout
		}
		d := newDownstream(sc, lane, g.log, opts.Version, opts.LookupEnv, httpCap)
		d.onChange = g.serverChanged
		g.servers[sc.Name] = d
		g.order = append(g.order, sc.Name)
	}
	sort.Strings(g.order)
	return g, nil
}

// Connect starts every enabled server in the background, each within its
// own startTimeout, and returns at once: the agent is never kept waiting on a
// downstream. A server that fails is unavailable with its reason and is
// tried again with backoff (downstream.go). Runs wait for servers still in
// their first attempt (Start); Settle waits for all of them.
func (g *Gateway) Connect(context.Context) {
	for _, name := range g.order {
		g.servers[name].start()
	}
}

// Settle waits until no server is in its first attempt (each is ready or
// has failed once), or ctx ends. For commands that print what the servers
// have, like tools.
func (g *Gateway) Settle(ctx context.Context) {
	for _, name := range g.order {
		if ch := g.servers[name].firstAttempt(); ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}
}

// awaitFirstStarts waits, at most limit, for the servers still in their
// first attempt (their tools are not in the catalog yet), and says how long
// it waited. Each attempt is bounded by its server's startTimeout.
func (g *Gateway) awaitFirstStarts(ctx context.Context, limit time.Duration) time.Duration {
	start := time.Now()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for _, name := range g.order {
		ch := g.servers[name].firstAttempt()
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-timer.C:
			return time.Since(start)
		case <-ctx.Done():
			return time.Since(start)
		}
	}
	return time.Since(start)
}

// ProbeConfinement has one worker report how it confined itself (a run of
// `return 1`; see worker.Launcher.Probe), so that server_info shows which
// layers are enforced before the first program runs, and says what is
// missing. With strict confinement a worker that lacks a layer makes it fail
// with an error wrapping worker.ErrConfinement that names the layer and the
// kernel feature: a gateway should then refuse to serve. It blocks until the
// probe run has ended (bounded by its deadline and the grace).
func (g *Gateway) ProbeConfinement(ctx context.Context) error {
	ps, err := g.launcher.Probe(ctx)
	if err != nil {
		return err
	}
	if g.opts.Worker.Confinement != worker.ConfineOff {
		for _, p := range ps {
			if !p.Enforced {
				g.log.Warn("worker confinement layer not enforced", "layer", p.Name, "how", p.How)
			}
		}
	}
	return nil
}

// Close stops every running program (with the grace, then SIGKILL, and
// reaps it), stops the spare workers and disconnects every server.
func (g *Gateway) Close() {
	g.scripts.stopAll("the gateway is shutting down")
	g.slots.awaitReaped() // runs answered at their end frame may still be exiting
	g.launcher.Close()
	var wg sync.WaitGroup
	for _, d := range g.servers {
		wg.Add(1)
		go func() { defer wg.Done(); d.close() }()
	}
	wg.Wait()
}

func (g *Gateway) invalidate() {
	g.mu.Lock()
	g.stale = true
	g.mu.Unlock()
}

// serverChanged is told by a server that its tools (tools true) or its
// state changed: the catalog is rebuilt when next read, and the agents'
// MCP servers are told if run_js's description changed.
func (g *Gateway) serverChanged(tools bool) {
	if tools {
		g.invalidate()
	}
	g.watch.changed(g)
	// The spares are sent the catalog as it now is, ahead of the next run.
	go func() { _, _ = g.runCatalog() }()
}

// Catalog returns the authorized tools of every ready server, in the order
// of their servers' names.
func (g *Gateway) Catalog() []wire.Tool {
	catalog, _, _ := g.catalogState()
	return catalog
}

// catalogState returns the catalog, its compiled argument validator and the
// tools whose schema did not compile, rebuilt when a server's tools changed.
func (g *Gateway) catalogState() ([]wire.Tool, *argsValidator, []schemaProblem) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// A server's tools count as changed from the moment it has them (its
	// generation), not from when it tells us: a run that waited for a
	// server must see its tools.
	gens := make([]uint64, len(g.order))
	for i, name := range g.order {
		d := g.servers[name]
		d.mu.Lock()
		gens[i] = d.toolsGen
		d.mu.Unlock()
	}
	if g.stale || !slices.Equal(gens, g.gens) {
		var all []wire.Tool
		for i, name := range g.order {
			d := g.servers[name]
			d.mu.Lock()
			all = append(all, d.tools...)
			gens[i] = d.toolsGen
			d.mu.Unlock()
		}
		g.catalog, g.gens = all, gens
		g.validator, g.problems = newArgsValidator(all)
		for _, p := range g.problems {
			g.log.Warn("tool callable without argument validation", "server", p.Server, "tool", p.Tool, "reason", p.Reason)
		}
		g.stale = false
	}
	return g.catalog, g.validator, g.problems
}

// runCatalog is the catalog a run gets: the tools, and the configured
// servers that have none and are not ready (a call to one is refused
// server_unavailable with its reason, not unknown_server). It is prepared
// again only when the tools or those servers' states changed.
func (g *Gateway) runCatalog() (*wire.Catalog, error) {
	catalog, _, _ := g.catalogState()
	states := make([]wire.ServerState, 0, len(g.order))
	for _, name := range g.order {
		d := g.servers[name]
		d.mu.Lock()
		st := wire.ServerState{Name: name, State: string(d.state), Reason: d.reason}
		if d.state == StateStarting {
			st.Reason = fmt.Sprintf("still starting (its start may take up to %s)", d.cfg.StartTimeout)
			if d.reason != "" {
				st.Reason += "; its last attempt: " + d.reason
			}
		}
		d.mu.Unlock()
		st.Reason = d.scrub(st.Reason)
		states = append(states, st)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.prepared != nil && slices.Equal(g.preparedStates, states) && sameTools(g.prepared.Tools(), catalog) {
		return g.prepared, nil
	}
	cat, err := wire.NewCatalog(catalog, states)
	if err != nil {
		return nil, err
	}
	g.prepared, g.preparedStates = cat, states
	// New spares hold it; spares holding an older one are replaced.
	g.launcher.SetCatalog(cat)
	return cat, nil
}

// pokeNeverListed asks each server that has never listed its tools and is
// unavailable for another attempt (after its backoff). A program's call to
// one is refused in its worker, which cannot ask as a call that reached the
// parent did; a run's start asks instead.
func (g *Gateway) pokeNeverListed() {
	for _, name := range g.order {
		d := g.servers[name]
		d.mu.Lock()
		neverListed := len(d.tools) == 0 && d.state == StateUnavailable
		d.mu.Unlock()
		if neverListed {
			d.poke()
		}
	}
}

// sameTools reports whether a and b are the same catalog (the one slice
// catalogState keeps until it rebuilds it).
func sameTools(a, b []wire.Tool) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Call performs one call of a program in one step: Admit, then its
// Perform. A run's calls go through Admit (Start sets it), which keeps
// their order; Call is for callers with one call at a time.
func (g *Gateway) Call(ctx context.Context, c worker.Call) worker.Outcome {
	a := g.admitter(0)(ctx, c)
	if a.Perform == nil {
		return a.Outcome
	}
	return a.Perform(ctx)
}

// admitter is the worker.AdmitFunc of a run whose program may receive at
// most resultCap bytes of a result (0: no cap of its own). Admission never
// blocks and runs in the order the worker sent the calls: the server must be
// configured, enabled and ready or starting (an unavailable one is refused
// with its reason, and asked to start again), the arguments valid against
// the tool's schema, and the server's lane not full; then the call has its
// place in the lane, and Perform waits for its turn (and for a server still
// starting) and sends it with the time left. Refusals are safe to retry;
// failures may have taken effect.
func (g *Gateway) admitter(resultCap int64) worker.AdmitFunc {
	return func(ctx context.Context, c worker.Call) worker.Admission {
		refuse := func(code, msg string) worker.Admission {
			return worker.Admission{Outcome: worker.Refuse(code, msg)}
		}
		name := fmt.Sprintf("tools.%s.%s", c.Server, c.Tool)
		d := g.servers[c.Server]
		if d == nil {
			return refuse(wire.CodeUnknownServer, fmt.Sprintf("tools.%s: no such server", c.Server))
		}
		if err := d.admit(); err != nil {
			return refuse(CodeServerUnavailable, fmt.Sprintf("%s: server %s is unavailable: %v; nothing was sent", name, c.Server, err))
		}
		_, validator, _ := g.catalogState()
		if err := validator.Validate(c.Server, c.Tool, c.Args); err != nil {
			return refuse(wire.CodeInvalidArguments, fmt.Sprintf("%s: invalid arguments; nothing was sent:\n%v", name, err))
		}
		ticket, err := d.lane.Enter(ctx)
		if err != nil {
			return worker.Admission{Outcome: g.laneRefusal(d, c, err, 0)}
		}
		return worker.Admission{Perform: func(ctx context.Context) worker.Outcome {
			return g.perform(ctx, d, ticket, c, resultCap)
		}}
	}
}

// perform waits for the call's turn in its lane, for its server to be ready
// (a start under way is waited for, within ctx), and sends it.
func (g *Gateway) perform(ctx context.Context, d *downstream, ticket *lanes.Ticket, c worker.Call, resultCap int64) worker.Outcome {
	var out worker.Outcome
	stats, err := ticket.Do(ctx, func(ctx context.Context) error {
		session, err := d.ready(ctx)
		if err != nil {
			out = worker.Refuse(CodeServerUnavailable, fmt.Sprintf("tools.%s.%s: server %s is unavailable: %v; nothing was sent", c.Server, c.Tool, c.Server, err))
			return nil
		}
		if d.cfg.CallTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d.cfg.CallTimeout)
			defer cancel()
		}
		if resultCap > 0 {
			ctx = withResultCap(ctx, resultCap)
		}
		out = g.send(ctx, d, session, c)
		return nil
	})
	if !stats.Started {
		return g.laneRefusal(d, c, err, stats.Queued)
	}
	out.Queued = stats.Queued
	return out
}

// laneRefusal is the refusal of a call that did not start in its lane.
func (g *Gateway) laneRefusal(d *downstream, c worker.Call, err error, queued time.Duration) worker.Outcome {
	var out worker.Outcome
	if errors.Is(err, lanes.ErrLaneFull) {
		out = worker.Refuse(CodeLaneFull, fmt.Sprintf("tools.%s.%s: server %s has %d calls outstanding, its cap; nothing was sent: retry after some finish", c.Server, c.Tool, c.Server, d.lane.Snapshot().MaxOutstanding))
	} else {
		out = worker.Refuse(wire.CodeRunStopping, fmt.Sprintf("tools.%s.%s: not sent: %v (queued %s)", c.Server, c.Tool, err, queued.Round(time.Millisecond)))
	}
	out.Queued = queued
	return out
}

// send makes the call and normalizes its answer.
func (g *Gateway) send(ctx context.Context, d *downstream, session *mcp.ClientSession, c worker.Call) worker.Outcome {
	sink := new(rawResult)
	res, err := session.CallTool(withRawSink(ctx, sink), &mcp.CallToolParams{Name: c.Tool, Arguments: c.Args})
	if err != nil {
		name := fmt.Sprintf("tools.%s.%s", c.Server, c.Tool)
		var tooLarge *answerTooLargeError
		switch {
		case errors.As(err, &tooLarge):
			return worker.Fail(wire.CodeResultTooLarge, fmt.Sprintf("%s: the call took effect, but %s", name, tooLarge))
		case ctx.Err() != nil:
			return worker.Fail(wire.CodeTimeout, fmt.Sprintf("%s: no answer before the deadline; the call may have taken effect", name))
		case errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			d.broken(session, err)
			return worker.Fail(wire.CodeCallFailed, fmt.Sprintf("%s: the connection to server %s broke; the call may have taken effect: %s", name, c.Server, d.scrub(err.Error())))
		}
		return worker.Fail(wire.CodeCallFailed, fmt.Sprintf("%s: the server answered with an error; the call may have taken effect: %s", name, d.scrub(err.Error())))
	}
	if sink.raw != nil {
		// A large answer from a stdio server: its members go to the worker
		// from the line as read, never copied again.
		content, sc, isError, err := rawMembers(sink.raw)
		sink.raw = nil
		if err != nil {
			return worker.Fail(wire.CodeCallFailed, fmt.Sprintf("tools.%s.%s: the call took effect, but its answer is not a tool's result: %v", c.Server, c.Tool, err))
		}
		return worker.AnswerSpliced(content, sc, isError)
	}
	b, err := normalizeResult(res)
	if err != nil {
		return worker.Fail(wire.CodeCallFailed, fmt.Sprintf("tools.%s.%s: the call took effect, but its answer is not a tool's result: %v", c.Server, c.Tool, err))
	}
	return worker.Answer(b)
}

// Refusal codes the gateway adds to the isolate's own.
const (
	CodeServerUnavailable = "server_unavailable"
	CodeLaneFull          = "lane_full"
)

// ErrBusy: as many programs as the host allows are running; nothing was
// started.
var ErrBusy = errors.New("too many programs running")

// RunRequest is one program for Run.
type RunRequest struct {
	// ID is the program's run id, and for run_js its script id; "" picks a
	// random run id.
	ID      string
	Code    string
	Input   json.RawMessage
	Timeout time.Duration // 0: the config's default
	Memory  int64         // 0: the config's default
}

// Run runs one program against the current catalog and waits for its
// ending: Start, then Wait.
func (g *Gateway) Run(ctx context.Context, req RunRequest) (*worker.Ending, error) {
	r, err := g.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	return r.Wait(), nil
}

// Start starts one program against the current catalog. It ends by itself,
// on its Stop, or when ctx is cancelled (as a stop). Errors wrap
// worker.ErrBadRequest (a bad program or limit; nothing ran), ErrBusy or
// worker.ErrSpawn.
func (g *Gateway) Start(ctx context.Context, req RunRequest) (r *worker.Run, err error) {
	if !g.slots.take(ctx) {
		return nil, fmt.Errorf("%w: %d programs are running on this server, its cap; nothing was started: wait for one to end", ErrBusy, g.slots.max)
	}
	defer func() { g.slots.started(r) }()
	limits := g.cfg.Limits
	if req.Timeout > 0 {
		if req.Timeout > g.cfg.MaxTimeout {
			return nil, fmt.Errorf("%w: timeout %s is above this server's maximum %s", worker.ErrBadRequest, req.Timeout, g.cfg.MaxTimeout)
		}
		limits.TimeoutMs = req.Timeout.Milliseconds()
	}
	if req.Memory > 0 {
		if req.Memory > g.cfg.MaxMemory {
			return nil, fmt.Errorf("%w: memory %d MiB is above this server's maximum %d MiB", worker.ErrBadRequest, req.Memory>>20, g.cfg.MaxMemory>>20)
		}
		limits.MemoryBytes = req.Memory
		limits.MaxResultBytes = 0 // follows the memory
	}
	norm, err := limits.Normalize()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", worker.ErrBadRequest, err)
	}
	// Servers still in their first attempt have no tools in the catalog
	// yet: wait for them (each within its startTimeout), at most the run's
	// own timeout; the run then has its whole timeout, from its start.
	g.awaitFirstStarts(ctx, norm.Timeout())
	g.pokeNeverListed()
	catalog, err := g.runCatalog()
	if err != nil {
		return nil, fmt.Errorf("%w: the catalog: %v", worker.ErrBadRequest, err)
	}
	return g.launcher.Start(ctx, worker.Request{RunID: req.ID, Code: req.Code, Input: req.Input, Tools: catalog, Limits: limits, Admit: g.admitter(norm.MaxResultBytes)})
}

// runSlots counts the programs a gateway runs at once, against max. A
// program holds its slot until its ending can be seen (Run.Ending is not
// nil), so a caller holding one ending may start another program. Its
// worker may still be exiting then (the ending is given at the end frame,
// before the reaping): so that no more than max worker processes of runs
// exist at once, a take that finds the cap reached only by such workers
// waits for one to be reaped (about a millisecond; at most the grace, then
// the kill) instead of refusing. Safe for concurrent use.
type runSlots struct {
	max int // MaxRunningPrograms; tests lower it

	mu       sync.Mutex
	runs     []*worker.Run // started and not yet reaped; at most max
	starting int           // slots taken by Starts not yet started
}

func reaped(r *worker.Run) bool {
	select {
	case <-r.Reaped():
		return true
	default:
		return false
	}
}

// take takes a slot for a Start, or reports false at the cap (or when ctx
// ends while it waits for a worker to be reaped). Every take that reports
// true is followed by one started.
func (s *runSlots) take(ctx context.Context) bool {
	for {
		s.mu.Lock()
		s.runs = slices.DeleteFunc(s.runs, reaped)
		running := s.starting
		var exiting <-chan struct{}
		for _, r := range s.runs {
			if r.Ending() == nil {
				running++
			} else if exiting == nil {
				exiting = r.Reaped()
			}
		}
		if running >= s.max {
			s.mu.Unlock()
			return false
		}
		if len(s.runs)+s.starting < s.max {
			s.starting++
			s.mu.Unlock()
			return true
		}
		s.mu.Unlock()
		select {
		case <-exiting:
		case <-ctx.Done():
			return false
		}
	}
}

// awaitReaped waits until every started run's worker has been reaped
// (each wait bounded by the run's deadline, the grace and the kill).
func (s *runSlots) awaitReaped() {
	s.mu.Lock()
	runs := slices.Clone(s.runs)
	s.mu.Unlock()
	for _, r := range runs {
		<-r.Reaped()
	}
}

// started hands the slot of a take to r, or frees it when r is nil (nothing
// was started).
func (s *runSlots) started(r *worker.Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starting--
	if r != nil {
		s.runs = append(s.runs, r)
	}
}

// count is how many programs hold a slot: starting, or not seen ended.
func (s *runSlots) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.starting
	for _, r := range s.runs {
		if r.Ending() == nil {
			n++
		}
	}
	return n
}

// Servers reports every configured server, sorted by name.
func (g *Gateway) Servers() []ServerInfo {
	out := make([]ServerInfo, 0, len(g.order))
	for _, name := range g.order {
		out = append(out, g.servers[name].snapshot())
	}
	return out
}

// toolKey names a tool as programs write it.
func toolKey(t wire.Tool) string {
	return "tools" + tsAccess(t.Server) + tsAccess(t.Name)
}
