package worker

import (
	"encoding/json"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// Ending is how a run ended, as the parent reports it: the object the run
// command prints and the gateway returns as structured content.
type Ending struct {
	RunID      string          `json:"runId"`
	Status     wire.Status     `json:"status"`
	Value      json.RawMessage `json:"value"` // JSON null unless Status is returned
	Error      *wire.ErrorInfo `json:"error,omitempty"`
	Output     OutputText      `json:"output"`
	Calls      Calls           `json:"calls"`
	DurationMs int64           `json:"durationMs"`
	// PeakMemoryKiB is the worker's peak resident set, as it reported it.
	PeakMemoryKiB int64 `json:"peakMemoryKiB,omitempty"`
	// EndFrameAt is when the parent had checked the worker's end frame
	// (zero when the run ended without one): the ending is given from then.
	EndFrameAt time.Time `json:"-"`
	// Crash names the rule a crashed worker broke, or how it died.
	Crash *Crash `json:"crash,omitempty"`
}

// OutputText is what was kept of a run's output.
type OutputText struct {
	Text     string `json:"text"`
	CutChars int64  `json:"cutChars"`
	// markAt is the byte offset in Text of the marker that stands for what
	// was cut, when CutChars > 0 and this OutputText came from the parent's
	// output keeper (not from JSON): the rendering shows that marker as the
	// gateway's, and text the program printed as the program's.
	markAt int
}

// Crash says why the parent ended a run as crashed.
type Crash struct {
	Rule   Rule   `json:"rule"`
	Detail string `json:"detail"`
	// Stderr is the head and the tail of the worker's stderr (stderrKeep
	// bytes each; what was cut between them is counted in a line there).
	Stderr string `json:"stderr,omitempty"`
}

// OK reports whether the program returned a value.
func (e *Ending) OK() bool { return e.Status == wire.StatusReturned }
