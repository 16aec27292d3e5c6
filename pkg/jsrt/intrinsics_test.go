package jsrt

import (
	"testing"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// TestIntrinsicsPolicy checks each entry of the intrinsics table from inside
// a program: what is on is there, what is off is not.
func TestIntrinsicsPolicy(t *testing.T) {
	globals := map[string]string{
		"Eval": "eval", "Promise": "Promise", "JSON": "JSON", "RegExp": "RegExp", "Date": "Date",
		"Proxy": "Proxy", "MapSet": "Map", "TypedArrays": "Uint8Array", "AToB": "atob",
		"BigInt": "BigInt", "WeakRef": "WeakRef", "Performance": "performance", "DOMException": "DOMException",
	}
	for _, in := range intrinsics {
		t.Run(in.name, func(t *testing.T) {
			g, ok := globals[in.name]
			if !ok {
				t.Fatalf("no probe for intrinsic %s: add one to this test", in.name)
			}
			if in.why == "" {
				t.Errorf("intrinsic %s has no reason", in.name)
			}
			// BigInt is part of BaseObjects: "off" means "not added twice".
			want := in.on || in.name == "BigInt"
			e := runInProcess(t, `return typeof globalThis.`+g+` !== 'undefined'`, &fakeHost{})
			if e.Status != wire.StatusReturned {
				t.Fatalf("probe ended %s: %+v", e.Status, e.Error)
			}
			if got := string(e.Value) == "true"; got != want {
				t.Fatalf("%s present = %v, want %v (%s)", g, got, want, in.why)
			}
		})
	}
}
