package jsrt

import (
	"errors"

	"github.com/buke/quickjs-go"
)

// errNotString: the value to cross is not a string (or is gone). Host
// functions take only strings the prelude made; anything else is a bug of
// ours, answered with this error rather than a conversion that could run
// program code.
var errNotString = errors.New("jsrt: not a JavaScript string")

// errConversion: the engine could not convert the string, which happens only
// when its memory limit leaves no room for the UTF-8 copy.
var errConversion = errors.New("jsrt: the string could not be converted in the memory left")

// jsUTF8 is the one way a JavaScript string crosses into Go. It returns the
// string's exact UTF-8 encoding: every representation the engine has (8-bit,
// 16-bit, rope, slice of either) gives the same bytes for the same string; an
// embedded NUL is kept; each lone surrogate becomes one U+FFFD (three bytes,
// as long as the surrogate's own encoding). b may alias the engine's memory:
// it is valid until release is called, and must not be kept after. On failure
// b is nil, release does nothing, and no exception is left pending.
//
// v must be a string: jsUTF8 never calls a toString of the program's.
func jsUTF8(ctx *quickjs.Context, v *quickjs.Value) (b []byte, release func(), err error) {
	if v == nil || !v.IsString() {
		return nil, func() {}, errNotString
	}
	b, release = v.ToUTF8() // patch 0013 of third_party/quickjs-ng
	if release == nil {
		// Only memory fails a string's conversion; the engine's error is
		// dropped, the caller says what failed.
		if ex := ctx.TakeException(); ex != nil {
			ex.Free()
		}
		return nil, func() {}, errConversion
	}
	replaceLoneSurrogates(b)
	return b, release, nil
}

// jsString is jsUTF8 copied into a Go string.
func jsString(ctx *quickjs.Context, v *quickjs.Value) (string, error) {
	b, release, err := jsUTF8(ctx, v)
	if err != nil {
		return "", err
	}
	s := string(b)
	release()
	return s, nil
}

// replaceLoneSurrogates rewrites, in place, each WTF-8 encoding of a lone
// surrogate (ED A0..BF 80..BF) as U+FFFD (EF BF BD), the same length. The
// engine encodes a pair as one 4-byte rune, so what remains of ED A0..BF is
// always a lone surrogate. Such bytes occur only in a copy the engine made
// for this conversion (a string it hands over without copying is ASCII), so
// writing them is safe.
func replaceLoneSurrogates(b []byte) {
	for i := 0; i+2 < len(b); i++ {
		if b[i] == 0xED && b[i+1] >= 0xA0 && b[i+1] <= 0xBF {
			b[i], b[i+1], b[i+2] = 0xEF, 0xBF, 0xBD
			i += 2
		}
	}
}
