package worker

import (
	"strings"
	"testing"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// fullReport is what a fully confined worker reports.
func fullReport(setting string) *wire.Confinement {
	c := &wire.Confinement{Setting: setting, LandlockABI: 7}
	for _, name := range wire.Layers {
		c.Layers = append(c.Layers, wire.Layer{Name: name, Enforced: name != wire.LayerNamespaces, How: "applied"})
	}
	return c
}

// TestCheckConfinement: the parent's check of a worker's hello report,
// with hostile reports beside normal ones.
func TestCheckConfinement(t *testing.T) {
	edit := func(setting string, f func(c *wire.Confinement)) *wire.Confinement {
		c := fullReport(setting)
		f(c)
		return c
	}
	tests := []struct {
		name    string
		setting Confinement
		report  *wire.Confinement
		rule    Rule // "" accepted
		want    string
	}{
		{name: "best effort, full", setting: ConfineBestEffort, report: fullReport("best-effort")},
		{name: "strict, full", setting: ConfineStrict, report: fullReport("strict")},
		{name: "best effort, nothing applied", setting: ConfineBestEffort, report: edit("best-effort", func(c *wire.Confinement) {
			for i := range c.Layers {
				c.Layers[i].Enforced = false
			}
		})},
		{name: "best effort, no report (an older worker)", setting: ConfineBestEffort},
		{name: "strict, no report", setting: ConfineStrict, rule: ruleConfinement, want: "reports no confinement"},
		{name: "strict, worker started best-effort", setting: ConfineStrict, report: fullReport("best-effort"), rule: ruleConfinement, want: `"best-effort"`},
		{name: "strict, seccomp missing", setting: ConfineStrict, report: edit("strict", func(c *wire.Confinement) {
			c.Layers[0].Enforced, c.Layers[0].Missing = false, "the kernel has no seccomp (CONFIG_SECCOMP_FILTER)"
		}), rule: ruleConfinement, want: "could not apply seccomp: the kernel has no seccomp"},
		{name: "strict, landlock partial", setting: ConfineStrict, report: edit("strict", func(c *wire.Confinement) {
			c.Layers[1].Missing = "abstract unix sockets and signals are not scoped (needs Landlock ABI 6, Linux 6.12)"
		}), rule: ruleConfinement, want: "only part of landlock: abstract unix"},
		{name: "strict, a layer left out", setting: ConfineStrict, report: edit("strict", func(c *wire.Confinement) {
			c.Layers = c.Layers[1:]
		}), rule: ruleConfinement, want: "does not report the seccomp layer"},
		{name: "strict, namespaces are optional", setting: ConfineStrict, report: edit("strict", func(c *wire.Confinement) {
			c.Layers[5].Missing = "no user namespaces"
		})},
		{name: "an unknown layer", setting: ConfineBestEffort, report: edit("best-effort", func(c *wire.Confinement) {
			c.Layers[0].Name = "magic"
		}), rule: ruleHandshake, want: `unknown confinement layer "magic"`},
		{name: "a layer twice", setting: ConfineBestEffort, report: edit("best-effort", func(c *wire.Confinement) {
			c.Layers[1].Name = wire.LayerSeccomp
		}), rule: ruleHandshake, want: "twice"},
		{name: "too many layers", setting: ConfineBestEffort, report: edit("best-effort", func(c *wire.Confinement) {
			c.Layers = append(c.Layers, c.Layers...)
		}), rule: ruleHandshake, want: "12 confinement layers"},
		{name: "a huge text", setting: ConfineBestEffort, report: edit("best-effort", func(c *wire.Confinement) {
			c.Layers[2].How = strings.Repeat("x", 1<<20)
		}), rule: ruleHandshake, want: "over 600 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := checkConfinement(tc.setting, tc.report)
			if tc.rule == "" {
				if v != nil {
					t.Fatalf("refused: %v", v)
				}
				return
			}
			if v == nil {
				t.Fatalf("accepted; want %s", tc.rule)
			}
			if v.Rule != tc.rule || !strings.Contains(v.Detail, tc.want) || len(v.Detail) > 1000 {
				t.Fatalf("got %s %q; want %s containing %q", v.Rule, v.Detail, tc.rule, tc.want)
			}
		})
	}
}

// TestProtectionsFromReports: protections come from the report alone, one
// per layer in order, and a layer a report lacks is not enforced.
func TestProtectionsFromReports(t *testing.T) {
	ps := protections(nil, "")
	if len(ps) != len(wire.Layers) {
		t.Fatalf("%d protections, want %d", len(ps), len(wire.Layers))
	}
	for _, p := range ps {
		if p.Enforced || !strings.Contains(p.How, "no worker has reported") {
			t.Fatalf("before any report: %+v", p)
		}
	}
	c := fullReport("best-effort")
	c.Layers = c.Layers[:2]
	ps = protections(c, "set by the parent at start: cpu 33 s")
	for i, p := range ps {
		if p.Name != wire.Layers[i] {
			t.Fatalf("protection %d is %s, want %s", i, p.Name, wire.Layers[i])
		}
		if want := i < 2; p.Enforced != want {
			t.Fatalf("%s enforced %v, want %v", p.Name, p.Enforced, want)
		}
	}
	if !strings.Contains(ps[3].How, "did not report") || !strings.Contains(ps[3].How, "cpu 33 s") {
		t.Fatalf("rlimits: %q", ps[3].How)
	}
}

func TestParseConfinement(t *testing.T) {
	for in, want := range map[string]Confinement{"": ConfineBestEffort, "best-effort": ConfineBestEffort, "strict": ConfineStrict, "off": ConfineOff} {
		got, err := ParseConfinement(in)
		if err != nil || got != want || (in != "" && got.String() != in) {
			t.Fatalf("ParseConfinement(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"on", "Strict", "none"} {
		if _, err := ParseConfinement(bad); err == nil || !strings.Contains(err.Error(), "use strict, best-effort or off") {
			t.Fatalf("ParseConfinement(%q): %v", bad, err)
		}
	}
	if c, err := confinementFromArgs([]string{"x", "--worker-fd", "3", "--confinement", "off"}); err != nil || c != ConfineOff {
		t.Fatalf("from args: %v %v", c, err)
	}
	if _, err := confinementFromArgs([]string{"x", "--confinement"}); err == nil {
		t.Fatal("a flag without a value was accepted")
	}
}
