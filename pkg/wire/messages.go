package wire

import "encoding/json"

// ProtocolVersion is sent in hello and start. A worker built from another
// version of this package is refused with a message saying to rebuild.
// Version 2: hello comes after the worker has confined itself and says what
// it applied. Version 3: the start frame carries the catalog as sections of
// its payload (StartCatalog), not as JSON in its header.
const ProtocolVersion = 3

// Hello is the worker's first frame: it proves the process is a worker of
// this protocol before any run is trusted to it. A worker sends it once it
// has prepared its runtime and confined itself, and before it reads its start
// frame, so Confinement describes the process any program will run in.
type Hello struct {
	Protocol    int          `json:"protocol"`
	PID         int          `json:"pid"`
	Confinement *Confinement `json:"confinement,omitempty"`
}

// Confinement is what a worker applied to itself before reading its start
// frame, one Layer per name below, made before anything from the parent was
// read (so no program could have shaped it).
type Confinement struct {
	// Setting is the setting the worker was started with: strict,
	// best-effort or off.
	Setting string `json:"setting"`
	// LandlockABI is the Landlock ABI version the ruleset was built for
	// (0: no Landlock).
	LandlockABI int     `json:"landlockABI"`
	Layers      []Layer `json:"layers"`
}

// The names of the layers of confinement, in the order a report lists them.
const (
	LayerSeccomp      = "seccomp"
	LayerLandlock     = "landlock"
	LayerNoNewPrivs   = "no_new_privs"
	LayerRlimits      = "rlimits"
	LayerCapabilities = "capabilities"
	LayerNamespaces   = "namespaces"
)

// Layers lists the layer names in report order.
var Layers = []string{LayerSeccomp, LayerLandlock, LayerNoNewPrivs, LayerRlimits, LayerCapabilities, LayerNamespaces}

// MaxLayerText bounds each text of a Layer from a worker: a sentence or two.
const MaxLayerText = 600

// Layer is one layer of confinement as a worker applied it.
type Layer struct {
	Name     string `json:"name"`
	Enforced bool   `json:"enforced"`
	// How says what was applied, in words a person reads in server_info.
	How string `json:"how"`
	// Missing says what of the layer could not be applied, naming the
	// kernel feature that was lacking; "" when nothing is missing.
	Missing string `json:"missing,omitempty"`
}

// Tool is one entry of a run's catalog: the tools the program may call. The
// schemas and annotations are passed through as the server gave them.
type Tool struct {
	Server       string          `json:"server"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Start begins the run. Its payload is the catalog's names section
// (Catalog.Names bytes), then its ALL_TOOLS section (Catalog.All bytes,
// JSON; the parent sends none: a worker asks for ALL_TOOLS with a tools
// request if its program reads it), then the program's source, UTF-8: the
// worker keeps the catalog as bytes and reads of it only what the program
// asks for.
type Start struct {
	Protocol int             `json:"protocol"`
	RunID    string          `json:"runId"`
	Limits   Limits          `json:"limits"`
	Catalog  StartCatalog    `json:"catalog"`
	Input    json.RawMessage `json:"input,omitempty"`
}

// StartCatalog says how the start frame's payload holds the catalog, or
// (Held) that the worker holds it from a catalog frame. A catalog frame's
// header is a StartCatalog too, its payload the two sections.
type StartCatalog struct {
	// Version names the catalog (Catalog.Version): a start that says Held
	// names the version the worker must hold.
	Version uint64 `json:"version,omitempty"`
	// Held: the sections are not in this start frame; the worker runs with
	// the catalog of the last catalog frame it was sent, which must be
	// Version.
	Held  bool `json:"held,omitempty"`
	Names int  `json:"names"` // bytes of the names section (see Catalog.Names)
	All   int  `json:"all"`   // bytes of the ALL_TOOLS section after it
	// Servers are the configured servers without tools in the catalog, not
	// ready, with their state and reason.
	Servers []ServerState `json:"servers,omitempty"`
}

// Call is a tool call the program made. Its payload is the arguments' JSON.
// IDs start at 1 and increase by one per call sent.
type Call struct {
	RunID  string `json:"runId"`
	ID     uint64 `json:"id"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

// Outcome kinds of a call, as the program sees them.
const (
	// OutcomeOK: the tool answered; the payload is {content, structuredContent, isError}.
	OutcomeOK = "ok"
	// OutcomeRefused: refused before anything was sent; safe to retry. The
	// program gets a ToolRefused.
	OutcomeRefused = "refused"
	// OutcomeFailed: sent, but no usable answer; the call may have taken
	// effect. The program gets a ToolFailed with mayHaveRun: true.
	OutcomeFailed = "failed"
)

// Codes of refusals and failures. A gateway may add its own; these are the
// ones the isolate itself produces.
const (
	CodeUnknownServer    = "unknown_server"
	CodeUnknownTool      = "unknown_tool"
	CodeInvalidArguments = "invalid_arguments"
	CodeArgsTooLarge     = "arguments_too_large"
	CodeRunStopping      = "run_stopping"
	CodeTimeout          = "timeout"
	CodeResultTooLarge   = "result_too_large"
	CodeCallFailed       = "call_failed"
)

// Result answers a call. For OutcomeOK the payload is the result's JSON;
// otherwise Code and Message say why, and Matches lists close names for a
// misspelt tool.
type Result struct {
	ID      uint64   `json:"id"`
	Outcome string   `json:"outcome"`
	Code    string   `json:"code,omitempty"`
	Message string   `json:"message,omitempty"`
	Matches []string `json:"matches,omitempty"`
}

// Output carries console output. Its payload is UTF-8 text. Skip > 0 says the
// worker cut that many characters (UTF-16 code units) just before this text.
type Output struct {
	Skip int64 `json:"skip,omitempty"`
}

// Stop asks the worker to end the run now.
type Stop struct {
	Reason string `json:"reason,omitempty"`
}

// Status is how a run ended.
type Status string

// Endings. All but StatusCrashed can be reported by a worker; crashed is the
// parent's verdict on a worker that died or broke the protocol.
const (
	StatusReturned    Status = "returned"
	StatusThrew       Status = "threw"
	StatusStalled     Status = "stalled"
	StatusTimedOut    Status = "timed_out"
	StatusOutOfMemory Status = "out_of_memory"
	StatusStopped     Status = "stopped"
	StatusCrashed     Status = "crashed"
)

// ErrorInfo describes a thrown value or the reason of an ending.
type ErrorInfo struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
}

// End is the worker's last frame. For StatusReturned the payload is the
// value's JSON. Unsettled lists the calls sent whose answers the program never
// took; NeverSent counts the calls still waiting inside the program.
type End struct {
	RunID      string     `json:"runId"`
	Status     Status     `json:"status"`
	Error      *ErrorInfo `json:"error,omitempty"`
	Unsettled  []uint64   `json:"unsettled,omitempty"`
	NeverSent  int        `json:"neverSent,omitempty"`
	PeakRSSKiB int64      `json:"peakRssKiB,omitempty"`
}
