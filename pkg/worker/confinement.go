package worker

import (
	"fmt"
	"strings"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// This file holds what both sides agree on about confinement: the setting,
// how the parent checks a worker's report against it, and the protections it
// reports. The layers themselves are applied by the worker (confine_linux.go).

// Confinement says how far a worker must confine itself before it reads a
// program. The zero value is ConfineBestEffort.
type Confinement int

const (
	// ConfineBestEffort applies every layer the kernel supports and reports
	// the ones it could not.
	ConfineBestEffort Confinement = iota
	// ConfineStrict refuses to run a program in a worker that lacks any
	// layer (namespaces excepted: they are optional), with an error naming
	// the layer and the kernel feature.
	ConfineStrict
	// ConfineOff applies nothing: the worker is a process of the host's
	// user. For debugging only; keep it on for untrusted programs.
	ConfineOff
)

// String is the setting's name, as the flag and config spell it.
func (c Confinement) String() string {
	switch c {
	case ConfineBestEffort:
		return "best-effort"
	case ConfineStrict:
		return "strict"
	case ConfineOff:
		return "off"
	}
	return fmt.Sprintf("Confinement(%d)", int(c))
}

// ParseConfinement reads a setting: strict, best-effort or off ("" is
// best-effort).
func ParseConfinement(s string) (Confinement, error) {
	switch strings.TrimSpace(s) {
	case "", "best-effort":
		return ConfineBestEffort, nil
	case "strict":
		return ConfineStrict, nil
	case "off":
		return ConfineOff, nil
	}
	return 0, fmt.Errorf("confinement %q: use strict, best-effort or off", s)
}

// confinementFlag is the worker's command-line flag that carries the
// setting. The parent appends it to the worker's command.
const confinementFlag = "--confinement"

// confinementFromArgs finds the setting in a worker's arguments (after
// --worker-fd N): absent means best-effort.
func confinementFromArgs(args []string) (Confinement, error) {
	for i := 0; i < len(args); i++ {
		if args[i] == confinementFlag {
			if i+1 == len(args) {
				return 0, fmt.Errorf("%s needs a value", confinementFlag)
			}
			return ParseConfinement(args[i+1])
		}
	}
	return ConfineBestEffort, nil
}

// Protection is one layer of confinement as server_info shows it. Enforced is
// true only when a worker reported applying the layer; How says what it did
// (or why not).
type Protection struct {
	Name     string `json:"name"`
	Enforced bool   `json:"enforced"`
	How      string `json:"how"`
}

// notConfined is what every layer says on a system where the worker cannot
// confine itself.
const notConfined = "the worker is a process of the host's user and is not confined"

// optionalLayers are not required by ConfineStrict.
var optionalLayers = map[string]bool{wire.LayerNamespaces: true}

// checkConfinement checks a worker's report (from its hello) against the
// setting. A report must name each layer once, with texts within
// wire.MaxLayerText; with ConfineStrict every layer but the optional ones must
// be enforced with nothing missing. The Violation names the layer and what
// the kernel lacked.
func checkConfinement(setting Confinement, c *wire.Confinement) *violation {
	if c == nil {
		if setting == ConfineStrict {
			return broke(ruleConfinement, "strict confinement: the worker's hello reports no confinement at all; rebuild run-js-server and its worker from one tree")
		}
		return nil
	}
	if len(c.Layers) > len(wire.Layers) {
		return broke(ruleHandshake, "hello reports %d confinement layers; there are %d", len(c.Layers), len(wire.Layers))
	}
	seen := make(map[string]wire.Layer, len(c.Layers))
	for _, l := range c.Layers {
		if !knownLayer(l.Name) {
			return broke(ruleHandshake, "hello reports an unknown confinement layer %s", quote(l.Name))
		}
		if _, dup := seen[l.Name]; dup {
			return broke(ruleHandshake, "hello reports the confinement layer %s twice", l.Name)
		}
		if len(l.How) > wire.MaxLayerText || len(l.Missing) > wire.MaxLayerText {
			return broke(ruleHandshake, "hello's %s layer has a text over %d bytes", l.Name, wire.MaxLayerText)
		}
		seen[l.Name] = l
	}
	if setting != ConfineStrict {
		return nil
	}
	if c.Setting != ConfineStrict.String() {
		return broke(ruleConfinement, "strict confinement: the worker was started with %s", quote(c.Setting))
	}
	for _, name := range wire.Layers {
		if optionalLayers[name] {
			continue
		}
		l, ok := seen[name]
		switch {
		case !ok:
			return broke(ruleConfinement, "strict confinement: the worker does not report the %s layer", name)
		case !l.Enforced:
			return broke(ruleConfinement, "strict confinement: the worker could not apply %s: %s", name, cutPeer(orText(l.Missing, l.How)))
		case l.Missing != "":
			return broke(ruleConfinement, "strict confinement: the worker applied only part of %s: %s", name, cutPeer(l.Missing))
		}
	}
	return nil
}

func knownLayer(name string) bool {
	for _, n := range wire.Layers {
		if n == name {
			return true
		}
	}
	return false
}

func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// protections turns a worker's report and what the parent applied itself
// (parentLimits: the rlimits it set with prlimit) into one Protection per
// layer, in wire.Layers order. A layer the report lacks is not enforced.
func protections(c *wire.Confinement, parentLimits string) []Protection {
	out := make([]Protection, 0, len(wire.Layers))
	for _, name := range wire.Layers {
		p := Protection{Name: name, How: "no worker has reported yet"}
		if c != nil {
			p.How = "the worker did not report this layer"
			for _, l := range c.Layers {
				if l.Name != name {
					continue
				}
				p.Enforced = l.Enforced
				p.How = l.How
				if l.Missing != "" {
					p.How += "; missing: " + l.Missing
				}
			}
		}
		if name == wire.LayerRlimits && parentLimits != "" && c != nil {
			p.How += "; " + parentLimits
		}
		out = append(out, p)
	}
	return out
}
