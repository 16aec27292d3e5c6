package worker

// Attacks on the engine from plain JavaScript, run in real workers: each row
// reaches a defect of quickjs-ng 0.15.1 that a patch under
// third_party/quickjs-ng/patches fixes. Without its patch a row ends
// crashed (the worker died) or returns the wrong value.

import (
	"encoding/json"
	"testing"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// wideJS builds a flat wide string of n distinct characters, U+4E00 up.
const wideJS = `const wide = n => Array.from({length: n}, (_, i) => String.fromCharCode(0x4e00 + i)).join('');`

func TestEngineAttacks(t *testing.T) {
	tests := []struct {
		name   string
		patch  string // the patch under third_party/quickjs-ng/patches that fixes it
		code   string
		limits wire.Limits
		status wire.Status
		value  string   // exact JSON, when status is returned
		errHas []string // parts of "name: message\nstack", when it threw
	}{
		{name: "console.log of a wide slice (issue 11, item 1)", patch: "0001",
			code:   `console.log("\ud83d".repeat(16001)); return "ok"`,
			status: wire.StatusReturned, value: `"ok"`},
		{name: "an error whose message and stack are wide slices", patch: "0001",
			code: wideJS + `const P = wide(6000);
				for (let i = 0; i < 50; i++) { const e = new Error(P.slice(100, 1000)); e.stack = P.slice(i, 2000); console.log(e) }
				const e = new TypeError(P.slice(2000, 2600)); e.stack = P.slice(0, 3000); throw e`,
			status: wire.StatusThrew, errHas: []string{"TypeError: " + string([]rune{0x4e00 + 2000, 0x4e00 + 2001, 0x4e00 + 2002})}},
		{name: "arrays grown through .length then pushed, then collected (issue 13)", patch: "0002",
			code: `const keep = [];
				for (let i = 0; i < 40; i++) { const a = [0]; a.length = 245; a.push({i}); keep.push(a) }
				let junk = []; for (let i = 0; i < 300000; i++) junk.push({i}); junk = null;
				return keep.every((a, i) => a.length === 246 && a[0] === 0 && a[245].i === i && !(1 in a) && !(244 in a))`,
			status: wire.StatusReturned, value: `true`},
		{name: "arrays shrunk, regrown through .length, then pushed", patch: "0002",
			code: `const keep = [];
				for (let i = 0; i < 40; i++) { const a = [{a: 1}, {b: 2}, {c: 3}, {d: 4}, {e: 5}]; a.length = 2; a.length = 5; a.push({f: i}); keep.push(a) }
				let junk = []; for (let i = 0; i < 300000; i++) junk.push({i}); junk = null;
				return keep.every((a, i) => a.length === 6 && a[1].b === 2 && a[5].f === i && !(2 in a) && a[3] === undefined)`,
			status: wire.StatusReturned, value: `true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := runProgram(t, Request{Code: tt.code, Limits: tt.limits, Call: echoCall})
			if e.Status != tt.status {
				b, _ := json.MarshalIndent(e, "", "  ")
				t.Fatalf("status %s, want %s (fixed by patch %s); ending:\n%s", e.Status, tt.status, tt.patch, b)
			}
			if tt.value != "" && string(e.Value) != tt.value {
				t.Errorf("value %s, want %s (fixed by patch %s)", e.Value, tt.value, tt.patch)
			}
			if len(tt.errHas) > 0 {
				wantErrorContains(t, e, tt.errHas...)
			}
		})
	}
}
