package mcpgw

import "testing"

// skipStringSlow is skipString as it was: one byte at a time.
func skipStringSlow(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// FuzzSkipString: skipString (IndexByte, many bytes at a time) ends a
// string where the byte-at-a-time loop does, for any bytes.
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`"a"`, `"a\"b"`, `"\\"`, `"\\\""x`, `"abc`, `"a\`, `"\n\n"`, `""`, `"\\\\\"\\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		if got, want := skipString(b, 0), skipStringSlow(b, 0); got != want {
			t.Fatalf("%q: %d, want %d", b, got, want)
		}
	})
}
