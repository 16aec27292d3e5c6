package worker

import (
	"strconv"
	"unicode/utf8"
)

// outputKeeper keeps the head and tail of a stream of text and counts what it cut between them. Not safe for concurrent use.
//
// Lengths are in characters as JavaScript's `length` counts them, UTF-16 code units: a rune above U+FFFF counts 2,
// every other rune 1. Each Append's text is decoded on its own, and each byte that is not part of valid UTF-8 is
// replaced by U+FFFD (1 character); so a rune split across two Appends becomes replacement characters.
//
// The head is the longest prefix of the stream of at most headChars characters that ends neither inside a surrogate
// pair nor after a Skip; the tail is the longest suffix of at most tailChars characters that starts neither inside a
// pair nor before a Skip nor inside the head. A pair that would straddle either boundary is cut whole (2 characters).
// Memory stays O(headChars+tailChars) whatever is appended, and Append costs O(len(text)) amortized.
type outputKeeper struct {
	headMax, tailMax int

	head       []byte // valid UTF-8: the start of the stream
	headUnits  int
	headClosed bool // nothing more goes to the head (it is full, or a Skip happened)

	// rest holds valid UTF-8 that follows the head (and the last Skip) and ends the stream. Dropping runes from
	// its front never leaves fewer than tailMax+1 characters: enough for the tail, and to tell whether a stream
	// with no Skip has more than headMax+tailMax characters.
	rest      []byte
	restUnits int

	lost  int64 // characters skipped or dropped from the front of rest
	total int64
}

// outputMaxChars bounds headChars and tailChars so that sums of them cannot overflow.
const outputMaxChars = 1 << 40

// newOutputKeeper returns an empty outputKeeper that keeps at most headChars characters of head and tailChars of tail.
// Negative sizes count as 0.
func newOutputKeeper(headChars, tailChars int) *outputKeeper {
	o := &outputKeeper{
		headMax: min(max(headChars, 0), outputMaxChars),
		tailMax: min(max(tailChars, 0), outputMaxChars),
	}
	o.headClosed = o.headMax == 0
	return o
}

// Append adds text to the stream.
func (o *outputKeeper) Append(text string) {
	for i := 0; i < len(text); {
		if !o.headClosed {
			// ASCII run: as much as fits in the head at once.
			j := i
			for room := i + o.headMax - o.headUnits; j < len(text) && j < room && text[j] < utf8.RuneSelf; j++ {
			}
			if j > i {
				o.head = append(o.head, text[i:j]...)
				o.headUnits += j - i
				o.total += int64(j - i)
				i = j
			} else {
				r, size, w := outputDecode(text[i:])
				if o.headUnits+w > o.headMax {
					o.headClosed = true // a pair that would straddle the boundary goes to rest
					continue
				}
				o.head = utf8.AppendRune(o.head, r)
				o.headUnits += w
				o.total += int64(w)
				i += size
			}
			o.headClosed = o.headUnits == o.headMax
			continue
		}
		// The longest valid UTF-8 run from i goes to rest at once; an invalid byte goes as U+FFFD.
		j, units := i, 0
		for j < len(text) {
			if text[j] < utf8.RuneSelf {
				j++
				units++
				continue
			}
			r, size, w := outputDecode(text[j:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			j += size
			units += w
		}
		if j == i {
			o.appendRest("\uFFFD", 1)
			i++
			continue
		}
		o.appendRest(text[i:j], units)
		i = j
	}
}

// appendRest adds s, valid UTF-8 of the given length in characters, to rest.
func (o *outputKeeper) appendRest(s string, units int) {
	o.total += int64(units)
	if keep := o.tailMax + 1; units >= keep {
		// s alone holds the tail: keep its shortest suffix of at least keep characters.
		k, ku := len(s), 0
		for ku < keep {
			_, size := utf8.DecodeLastRuneInString(s[:k])
			k -= size
			ku += 1 + size/4
		}
		o.lost += int64(o.restUnits + units - ku)
		o.rest = append(o.rest[:0], s[k:]...)
		o.restUnits = ku
		return
	}
	o.rest = append(o.rest, s...)
	o.restUnits += units
	o.trim()
}

// trim drops runes from the front of rest, when it has grown to about twice what the tail needs, down to the
// shortest suffix of at least tailMax+1 characters. Growing by that much between trims makes the copy amortized O(1).
func (o *outputKeeper) trim() {
	keep := o.tailMax + 1
	if o.restUnits <= 2*keep+64 {
		return
	}
	j := len(o.rest) - keep // all ASCII: every other rune has more bytes than characters
	if o.restUnits != len(o.rest) {
		j = o.drop(keep)
	} else {
		o.restUnits -= j
		o.lost += int64(j)
	}
	o.rest = o.rest[:copy(o.rest, o.rest[j:])]
}

// drop removes runes from the count of rest, from its front, while at least keep characters remain, and
// returns how many bytes they take.
func (o *outputKeeper) drop(keep int) int {
	j := 0
	for {
		size, w := outputRuneLen(o.rest[j])
		if o.restUnits-w < keep {
			break
		}
		o.restUnits -= w
		o.lost += int64(w)
		j += size
	}
	return j
}

// Skip records that n characters of the stream at this point are not known (the sender cut them); they count as cut.
// If the head is not yet full, it closes: later text goes only to the tail (so what is kept stays exact: the head is a true prefix of the stream).
// Text appended before the Skip that is not in the head is cut too, since the tail must end the stream.
// Skip with n <= 0 does nothing.
func (o *outputKeeper) Skip(n int) {
	if n <= 0 {
		return
	}
	o.total += int64(n)
	o.lost += int64(n) + int64(o.restUnits)
	o.rest = o.rest[:0]
	o.restUnits = 0
	o.headClosed = true
}

// Total is the number of characters appended or skipped since the last Take.
func (o *outputKeeper) Total() int64 { return o.total }

// Take returns the kept text and the number of characters cut, and resets the outputKeeper to empty: TakeText's
// Text and CutChars.
func (o *outputKeeper) Take() (text string, cut int64) {
	t := o.TakeText()
	return t.Text, t.CutChars
}

// TakeText returns the kept text and the number of characters cut, and resets the outputKeeper to empty.
// When nothing was cut the text is the whole stream; otherwise it is head + marker + tail, where the marker is
// "\n[… N characters cut …]\n" (N in decimal, the marker itself not counted anywhere).
// Nothing is cut when there was no Skip and the stream has at most headChars+tailChars characters; then cut is 0,
// and otherwise it is at least 1. Always, head characters + tail characters + cut == Total().
// The OutputText also knows where in Text the marker stands, so that a rendering can tell the gateway's marker
// from the same characters printed by the program.
func (o *outputKeeper) TakeText() (t OutputText) {
	if o.lost == 0 && o.headUnits+o.restUnits <= o.headMax+o.tailMax {
		t.Text = string(o.head) + string(o.rest)
	} else {
		j, tailUnits := 0, o.restUnits
		for tailUnits > o.tailMax {
			size, w := outputRuneLen(o.rest[j])
			tailUnits -= w
			j += size
		}
		t.CutChars = o.total - int64(o.headUnits) - int64(tailUnits)
		t.markAt = len(o.head)
		t.Text = string(o.head) + cutMarker(t.CutChars) + string(o.rest[j:])
	}
	*o = outputKeeper{
		headMax:    o.headMax,
		tailMax:    o.tailMax,
		head:       o.head[:0],
		headClosed: o.headMax == 0,
		rest:       o.rest[:0],
	}
	return t
}

// cutMarker is what stands in a kept text where characters were cut.
func cutMarker(cut int64) string {
	return "\n[… " + strconv.FormatInt(cut, 10) + " characters cut …]\n"
}

// outputDecode decodes the first rune of s (which must not be empty), returning U+FFFD for a byte that is not part
// of valid UTF-8, with its size in bytes and its length in UTF-16 code units.
func outputDecode(s string) (r rune, size, units int) {
	if s[0] < utf8.RuneSelf {
		return rune(s[0]), 1, 1
	}
	r, size = utf8.DecodeRuneInString(s)
	if r > 0xFFFF {
		return r, size, 2
	}
	return r, size, 1
}

// outputRuneLen returns the size in bytes and the length in UTF-16 code units of the rune that starts with lead,
// in text known to be valid UTF-8.
func outputRuneLen(lead byte) (size, units int) {
	switch {
	case lead < 0xC0:
		return 1, 1
	case lead < 0xE0:
		return 2, 1
	case lead < 0xF0:
		return 3, 1
	}
	return 4, 2
}
