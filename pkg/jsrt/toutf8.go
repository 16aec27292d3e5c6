package jsrt

import "github.com/buke/quickjs-go"

// toUTF8 is a stand-in until the patched binding lands: NUL-truncating.
// TODO(hostile): replace with the binding's exact conversion.
func toUTF8(ctx *quickjs.Context, v *quickjs.Value) ([]byte, func()) {
	return []byte(v.ToString()), func() {}
}
