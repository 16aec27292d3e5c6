package mcpgw

// This file reads a config's "limits": the run defaults and the most a
// run_js call may ask for.

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
	"github.com/run-js-server/run-js-server/pkg/worker"
)

// limits reads "limits" and returns the run defaults and maxima in force,
// and the default bound of a server's start.
func (p *configParser) limits(raw json.RawMessage) (wire.Limits, time.Duration, int64, time.Duration) {
	timeout, memory := wire.DefaultTimeout, int64(wire.DefaultMemory)
	maxTimeout, maxMemory := time.Duration(wire.MaxTimeout), int64(wire.MaxMemory)
	start := DefaultStartTimeout
	out := func() (wire.Limits, time.Duration, int64, time.Duration) {
		return wire.Limits{TimeoutMs: timeout.Milliseconds(), MemoryBytes: memory}, maxTimeout, maxMemory, start
	}
	if raw == nil || jsonKind(raw) == "null" {
		return out()
	}
	if kind := jsonKind(raw); kind != "an object" {
		p.problem(keyLimits, fmt.Sprintf(`expected an object, got %s; write it like {"timeout": "%s", "memory": "%s"}`, kind, wire.DefaultTimeout, FormatSize(wire.DefaultMemory)))
		return out()
	}
	has, seen := map[string]bool{}, map[string]bool{}
	for _, m := range jsonMembers(raw) {
		fw := keyPath(keyLimits, m.key)
		if seen[m.key] {
			p.problem(fw, "appears twice; JSON keeps only the last, so the first would be lost silently; keep one")
			continue
		}
		seen[m.key] = true
		switch m.key {
		case "timeout", "maxTimeout":
			d, ok := p.limitDuration(fw, m.val)
			if !ok {
				continue
			}
			if m.key == "timeout" {
				timeout = d
			} else {
				maxTimeout = d
			}
		case "confinement":
			p.limitConfinement(fw, m.val)
		case "startTimeout":
			s, ok := p.str(fw, m.val)
			if !ok {
				continue
			}
			if d := p.startTimeout(fw, s); d > 0 {
				start = d
			}
		case "memory", "maxMemory":
			n, ok := p.limitMemory(fw, m.val)
			if !ok {
				continue
			}
			if m.key == "memory" {
				memory = n
			} else {
				maxMemory = n
			}
		default:
			p.problem(fw, unknownField(m.key, limitFields))
			continue
		}
		has[m.key] = true
	}
	// The defaults must fit under the maxima, or a run that asks for nothing
	// would be refused.
	if (has["timeout"] || has["maxTimeout"]) && timeout > maxTimeout {
		p.problem(keyLimits+".maxTimeout", fmt.Sprintf("%s is below limits.timeout %s; raise maxTimeout or lower timeout", maxTimeout, timeout))
	}
	if (has["memory"] || has["maxMemory"]) && memory > maxMemory {
		p.problem(keyLimits+".maxMemory", fmt.Sprintf("%s is below limits.memory %s; raise maxMemory or lower memory", FormatSize(maxMemory), FormatSize(memory)))
	}
	if _, err := (wire.Limits{TimeoutMs: timeout.Milliseconds(), MemoryBytes: memory}).Normalize(); err != nil {
		p.problem(keyLimits, err.Error()) // not reached while the checks above are wire's
	}
	return out()
}

func (p *configParser) limitDuration(where string, raw json.RawMessage) (time.Duration, bool) {
	s, ok := p.str(where, raw)
	if !ok {
		return 0, false
	}
	d, bad := parseDuration(s)
	if bad != "" {
		p.problem(where, bad)
		return 0, false
	}
	if d <= 0 {
		p.problem(where, fmt.Sprintf("must be more than 0; leave it out for the default %s", wire.DefaultTimeout))
		return 0, false
	}
	ms := max(d.Milliseconds(), 1)
	if _, err := (wire.Limits{TimeoutMs: ms}).Normalize(); err != nil {
		p.problem(where, fmt.Sprintf("%s is out of range; allowed %s to %s", d, time.Duration(wire.MinTimeout), time.Duration(wire.MaxTimeout)))
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

func (p *configParser) limitMemory(where string, raw json.RawMessage) (int64, bool) {
	var n int64
	switch jsonKind(raw) {
	case "a number":
		v, ok := jsonInt(raw)
		if !ok {
			p.problem(where, fmt.Sprintf(`%s is not a whole number of bytes; write bytes as a whole number, or a size like "64MiB"`, shortValue(string(raw))))
			return 0, false
		}
		n = v
	case "a string":
		var s string
		_ = json.Unmarshal(raw, &s)
		v, err := ParseSize(s)
		if err != nil {
			p.problem(where, err.Error())
			return 0, false
		}
		n = v
	default:
		p.problem(where, fmt.Sprintf(`expected a size like "64MiB" or a number of bytes, got %s`, jsonKind(raw)))
		return 0, false
	}
	if n <= 0 {
		p.problem(where, fmt.Sprintf("must be more than 0; leave it out for the default %s", FormatSize(wire.DefaultMemory)))
		return 0, false
	}
	if _, err := (wire.Limits{MemoryBytes: n}).Normalize(); err != nil {
		p.problem(where, fmt.Sprintf("%s is out of range; allowed %s to %s", FormatSize(n), FormatSize(wire.MinMemory), FormatSize(wire.MaxMemory)))
		return 0, false
	}
	return n, true
}

// limitConfinement reads limits.confinement: "strict", "best-effort" or "off".
func (p *configParser) limitConfinement(where string, raw json.RawMessage) {
	s, ok := p.str(where, raw)
	if !ok {
		return
	}
	c, err := worker.ParseConfinement(s)
	if err != nil || strings.TrimSpace(s) == "" {
		p.problem(where, fmt.Sprintf(`%s is not a confinement setting; use "strict" (refuse runs in a worker that lacks a layer), "best-effort" (the default: every layer the kernel has) or "off" (debugging only)`, quoteValue(s)))
		return
	}
	if c == worker.ConfineOff {
		p.warn(where, `"off": workers run unconfined, as processes of the gateway's user; for debugging only`)
	}
	p.confinement = c
}

// startTimeout checks a start bound (limits.startTimeout or a server's
// startTimeout); 0 on a problem.
func (p *configParser) startTimeout(where, s string) time.Duration {
	d, bad := parseDuration(s)
	switch {
	case bad != "":
		p.problem(where, bad)
	case d < MinStartTimeout || d > MaxStartTimeout:
		p.problem(where, fmt.Sprintf("%s is out of range; allowed %s to %s (the default is %s)", d, MinStartTimeout, MaxStartTimeout, DefaultStartTimeout))
	default:
		return d
	}
	return 0
}

// parseDuration parses a Go duration, or says what is wrong with it.
func parseDuration(s string) (time.Duration, string) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, ""
	}
	if s != "" && strings.Trim(s, "0123456789") == "" {
		return 0, fmt.Sprintf(`%s has no unit; write it like "%ss"`, quoteValue(s), shortValue(s))
	}
	return 0, fmt.Sprintf(`%s is not a duration; write it like "30s", "1m30s" or "500ms"`, quoteValue(s))
}
