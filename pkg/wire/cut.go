package wire

// This file holds the one rule for cutting text short (a peer's bytes in a
// message, a description, a call's arguments in the ledger): at most max,
// the mark included, never inside a rune.

import "unicode/utf8"

// CutMark ends a text that Cut or CutChars shortened.
const CutMark = "…"

// Cut shortens s to at most max bytes, on a rune boundary, ending with
// CutMark when it cut. A max too small for the mark gives "" for a text
// that does not fit.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(CutMark)
	if n < 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + CutMark
}

// CutChars shortens s to at most max characters (runes), the last being
// CutMark when it cut. It reads only as much of s as it keeps, so a long s
// costs no more than a short one. A max below 1 gives "" for a text that
// does not fit.
func CutChars(s string, max int) string {
	if max < 1 {
		if s == "" {
			return s
		}
		return ""
	}
	i := 0
	for n := 0; n < max-1; n++ {
		if i >= len(s) {
			return s
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	// i is past max-1 runes: s fits if at most one rune is left.
	if i == len(s) {
		return s
	}
	if _, size := utf8.DecodeRuneInString(s[i:]); i+size == len(s) {
		return s
	}
	return s[:i] + CutMark
}
