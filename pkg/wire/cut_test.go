package wire_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"fits", "abc", 3, "abc"},
		{"empty", "", 0, ""},
		{"cut", "abcdef", 5, "ab…"},
		{"mark alone", "abcdef", 3, "…"},
		{"too small for the mark", "abcdef", 2, ""},
		{"negative", "abcdef", -1, ""},
		{"never inside a rune", "aé€𝄞", 7, "aé…"},
		{"rune kept whole", "aé€𝄞", 9, "aé€…"},
		{"invalid UTF-8 passes through", "\xff\xfe\xfd\xfc\xfb", 4, "\xff…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := wire.Cut(tc.in, tc.max)
			if got != tc.want {
				t.Fatalf("Cut(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if len(got) > max(tc.max, 0) {
				t.Fatalf("Cut(%q, %d) = %q: %d bytes, above the max", tc.in, tc.max, got, len(got))
			}
		})
	}
}

func TestCutChars(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"fits", "héllo", 5, "héllo"},
		{"cut", "héllo", 4, "hél…"},
		{"one", "héllo", 1, "…"},
		{"zero", "héllo", 0, ""},
		{"empty at zero", "", 0, ""},
		{"astral counts one", "𝄞𝄞𝄞", 3, "𝄞𝄞𝄞"},
		{"astral cut", "𝄞𝄞𝄞𝄞", 3, "𝄞𝄞…"},
		{"exactly one over", "abcd", 3, "ab…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := wire.CutChars(tc.in, tc.max)
			if got != tc.want {
				t.Fatalf("CutChars(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n > max(tc.max, 0) {
				t.Fatalf("CutChars(%q, %d) = %q: %d characters, above the max", tc.in, tc.max, got, n)
			}
		})
	}
	// A long text costs what is kept: a 64 MiB string cut to 10 is quick and
	// right (no timing asserted; the result is).
	long := strings.Repeat("x", 64<<20)
	if got := wire.CutChars(long, 10); got != strings.Repeat("x", 9)+wire.CutMark {
		t.Fatalf("CutChars(64 MiB, 10) = %q", got)
	}
}
