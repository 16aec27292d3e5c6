package worker

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// outputOp is one step on an Output: Append(text), or Skip(skip) when skip != 0.
type outputOp struct {
	text string
	skip int
}

func outAppend(text string) outputOp { return outputOp{text: text} }
func outSkip(n int) outputOp         { return outputOp{skip: n} }

// outputModel is a reference Output that keeps the whole stream: runes (with their UTF-16 length) and gaps.
type outputModel struct {
	head, tail int
	items      []outputItem
}

type outputItem struct {
	r     rune
	units int
	gap   bool // a Skip of units characters
}

func (m *outputModel) apply(op outputOp) {
	if op.skip > 0 {
		m.items = append(m.items, outputItem{gap: true, units: op.skip})
		return
	}
	if op.skip < 0 {
		return
	}
	for _, r := range op.text { // yields U+FFFD for every byte that is not valid UTF-8
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		m.items = append(m.items, outputItem{r: r, units: w})
	}
}

func (m *outputModel) total() int64 {
	var n int64
	for _, it := range m.items {
		n += int64(it.units)
	}
	return n
}

// take computes what Output.Take must return, straight from the contract, and resets the model.
func (m *outputModel) take() (text, head, tail string, cut int64) {
	defer func() { m.items = nil }()
	total := m.total()
	var hb strings.Builder
	h, hu, hasGap := 0, 0, false
	for ; h < len(m.items) && !m.items[h].gap && hu+m.items[h].units <= m.head; h++ {
		hu += m.items[h].units
		hb.WriteRune(m.items[h].r)
	}
	for _, it := range m.items {
		hasGap = hasGap || it.gap
	}
	if !hasGap && total <= int64(m.head+m.tail) {
		var b strings.Builder
		for _, it := range m.items {
			b.WriteRune(it.r)
		}
		return b.String(), "", "", 0
	}
	t, tu := len(m.items), 0
	for t > h && !m.items[t-1].gap && tu+m.items[t-1].units <= m.tail {
		t--
		tu += m.items[t].units
	}
	var tb strings.Builder
	for _, it := range m.items[t:] {
		tb.WriteRune(it.r)
	}
	cut = total - int64(hu) - int64(tu)
	return hb.String() + fmt.Sprintf("\n[… %d characters cut …]\n", cut) + tb.String(), hb.String(), tb.String(), cut
}

// known returns the stream's text with invalid UTF-8 replaced, split at its gaps.
func (m *outputModel) known() []string {
	var parts []string
	var b strings.Builder
	for _, it := range m.items {
		if it.gap {
			parts = append(parts, b.String())
			b = strings.Builder{}
		} else {
			b.WriteRune(it.r)
		}
	}
	return append(parts, b.String())
}

func outUTF16Len(s string) int {
	n := 0
	for len(s) > 0 && s[0] < utf8.RuneSelf {
		n++
		s = s[1:]
	}
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// splitKept splits Take's text into head, cut count and tail; ok is false when there is no marker.
func outSplitKept(text string) (head string, cut int64, tail string, ok bool) {
	i := strings.Index(text, "\n[… ")
	if i < 0 {
		return "", 0, "", false
	}
	rest := text[i+len("\n[… "):]
	j := strings.Index(rest, " characters cut …]\n")
	if j < 0 {
		return "", 0, "", false
	}
	if _, err := fmt.Sscanf(rest[:j], "%d", &cut); err != nil {
		return "", 0, "", false
	}
	return text[:i], cut, rest[j+len(" characters cut …]\n"):], true
}

// checkTake takes from o and checks the result against the model and against the contract's properties.
func outCheckTake(t *testing.T, o *outputKeeper, m *outputModel) (string, int64) {
	t.Helper()
	wantTotal := m.total()
	if got := o.Total(); got != wantTotal {
		t.Fatalf("Total() = %d, want %d", got, wantTotal)
	}
	known := m.known()
	wantText, _, _, wantCut := m.take()
	text, cut := o.Take()
	if text != wantText || cut != wantCut {
		t.Fatalf("Take() = %q, %d\nwant     %q, %d", outTrunc(text), cut, outTrunc(wantText), wantCut)
	}
	if o.Total() != 0 {
		t.Fatalf("Total() after Take = %d", o.Total())
	}
	if !utf8.ValidString(text) {
		t.Fatalf("Take() text is not valid UTF-8")
	}
	if cut == 0 {
		if len(known) != 1 || text != known[0] {
			t.Fatalf("nothing cut but text is not the whole stream")
		}
		return text, cut
	}
	head, markerCut, tail, ok := outSplitKept(text)
	if !ok || markerCut != cut {
		t.Fatalf("text %q has no marker for %d", outTrunc(text), cut)
	}
	if !strings.HasPrefix(known[0], head) {
		t.Fatalf("head %q is not a prefix of the stream", outTrunc(head))
	}
	if !strings.HasSuffix(known[len(known)-1], tail) {
		t.Fatalf("tail %q is not a suffix of the stream", outTrunc(tail))
	}
	hu, tu := outUTF16Len(head), outUTF16Len(tail)
	if hu > m.head || tu > m.tail {
		t.Fatalf("head %d / tail %d characters exceed %d / %d", hu, tu, m.head, m.tail)
	}
	if int64(hu)+int64(tu)+cut != wantTotal {
		t.Fatalf("head %d + tail %d + cut %d != total %d", hu, tu, cut, wantTotal)
	}
	return text, cut
}

func outTrunc(s string) string {
	if len(s) > 200 {
		return s[:100] + "…" + s[len(s)-100:]
	}
	return s
}

func outMarker(n int) string { return fmt.Sprintf("\n[… %d characters cut …]\n", n) }

func TestOutput(t *testing.T) {
	const (
		emoji = "😀" // 2 characters
		e     = "é" // 1 character, 2 bytes
	)
	tests := []struct {
		name       string
		head, tail int
		ops        []outputOp
		want       string
		wantCut    int64
	}{
		{name: "empty", head: 3, tail: 3, want: ""},
		{name: "short stream", head: 5, tail: 5, ops: []outputOp{outAppend("abc")}, want: "abc"},
		{name: "exactly H+T", head: 3, tail: 3, ops: []outputOp{outAppend("abcdef")}, want: "abcdef"},
		{name: "exactly H+T in pieces", head: 3, tail: 3, ops: []outputOp{outAppend("ab"), outAppend("cd"), outAppend("ef")}, want: "abcdef"},
		{name: "one more than H+T", head: 3, tail: 3, ops: []outputOp{outAppend("abcdefg")}, want: "abc" + outMarker(1) + "efg", wantCut: 1},
		{name: "zero head", head: 0, tail: 3, ops: []outputOp{outAppend("abcdefg")}, want: outMarker(4) + "efg", wantCut: 4},
		{name: "zero tail", head: 3, tail: 0, ops: []outputOp{outAppend("abcdefg")}, want: "abc" + outMarker(4), wantCut: 4},
		{name: "zero both", head: 0, tail: 0, ops: []outputOp{outAppend("ab")}, want: outMarker(2), wantCut: 2},
		{name: "negative sizes are zero", head: -5, tail: -1, ops: []outputOp{outAppend("ab")}, want: outMarker(2), wantCut: 2},
		{name: "non-ASCII counts runes not bytes", head: 2, tail: 2, ops: []outputOp{outAppend(e + e + e + e)}, want: e + e + e + e},
		{name: "emoji counts 2", head: 2, tail: 2, ops: []outputOp{outAppend(emoji + emoji + "x")}, want: emoji + outMarker(2) + "x", wantCut: 2},
		{name: "emoji at head boundary is cut whole", head: 3, tail: 2, ops: []outputOp{outAppend("ab" + emoji + "cdefg")}, want: "ab" + outMarker(5) + "fg", wantCut: 5},
		{name: "emoji at tail start is cut whole", head: 2, tail: 3, ops: []outputOp{outAppend("abcdefg" + emoji + "hi")}, want: "ab" + outMarker(7) + "hi", wantCut: 7},
		{name: "emoji at both boundaries", head: 3, tail: 3, ops: []outputOp{outAppend("ab" + emoji + "middle" + emoji + "yz")}, want: "ab" + outMarker(10) + "yz", wantCut: 10},
		{name: "emoji straddling but stream fits", head: 3, tail: 3, ops: []outputOp{outAppend("ab" + emoji + "cd")}, want: "ab" + emoji + "cd"},
		{name: "single emoji in 1+1", head: 1, tail: 1, ops: []outputOp{outAppend(emoji)}, want: emoji},
		{name: "single emoji in 1+0", head: 1, tail: 0, ops: []outputOp{outAppend(emoji)}, want: outMarker(2), wantCut: 2},
		{name: "emoji split across appends is invalid", head: 9, tail: 9, ops: []outputOp{outAppend(emoji[:2]), outAppend(emoji[2:])}, want: "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{name: "invalid UTF-8 is one character per byte", head: 2, tail: 2, ops: []outputOp{outAppend("\xff\xfe\xc3(x\xe2\x82")}, want: "\uFFFD\uFFFD" + outMarker(3) + "\uFFFD\uFFFD", wantCut: 3},
		{name: "literal U+FFFD is kept", head: 1, tail: 1, ops: []outputOp{outAppend("\uFFFD\uFFFD")}, want: "\uFFFD\uFFFD"},
		{name: "skip before head full", head: 5, tail: 5, ops: []outputOp{outAppend("ab"), outSkip(3), outAppend("cd")}, want: "ab" + outMarker(3) + "cd", wantCut: 3},
		{name: "skip before head full then long text", head: 5, tail: 3, ops: []outputOp{outAppend("ab"), outSkip(3), outAppend("cdefgh")}, want: "ab" + outMarker(6) + "fgh", wantCut: 6},
		{name: "skip at start", head: 5, tail: 5, ops: []outputOp{outSkip(1), outAppend("abc")}, want: outMarker(1) + "abc", wantCut: 1},
		{name: "skip after head full", head: 2, tail: 5, ops: []outputOp{outAppend("abcd"), outSkip(4), outAppend("xy")}, want: "ab" + outMarker(6) + "xy", wantCut: 6},
		{name: "skip at end", head: 2, tail: 5, ops: []outputOp{outAppend("abcd"), outSkip(1)}, want: "ab" + outMarker(3), wantCut: 3},
		{name: "two skips", head: 2, tail: 5, ops: []outputOp{outAppend("a"), outSkip(1), outAppend("bc"), outSkip(2), outAppend("de")}, want: "a" + outMarker(5) + "de", wantCut: 5},
		{name: "skip zero and negative do nothing", head: 3, tail: 3, ops: []outputOp{outAppend("ab"), outSkip(0), outSkip(-4), outAppend("cd")}, want: "abcd"},
		{name: "many tiny appends", head: 3, tail: 3, ops: outTinyOps("abcdefghijklmnopqrstuvwxyz", 1000), want: "abc" + outMarker(25994) + "xyz", wantCut: 25994},
		{name: "marker text in stream is not special", head: 50, tail: 50, ops: []outputOp{outAppend(outMarker(7))}, want: outMarker(7)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newOutputKeeper(tc.head, tc.tail)
			m := &outputModel{head: max(tc.head, 0), tail: max(tc.tail, 0)}
			for _, op := range tc.ops {
				o.Append(op.text)
				o.Skip(op.skip)
				m.apply(op)
			}
			text, cut := outCheckTake(t, o, m)
			if text != tc.want || cut != tc.wantCut {
				t.Fatalf("Take() = %q, %d; want %q, %d", outTrunc(text), cut, outTrunc(tc.want), tc.wantCut)
			}
			// The Output is reusable after Take.
			for _, op := range tc.ops {
				o.Append(op.text)
				o.Skip(op.skip)
				m.apply(op)
			}
			outCheckTake(t, o, m)
		})
	}
}

func outTinyOps(alphabet string, times int) []outputOp {
	var ops []outputOp
	for range times {
		for _, r := range alphabet {
			ops = append(ops, outAppend(string(r)))
		}
	}
	return ops
}

func TestOutputTakeThenMore(t *testing.T) {
	o := newOutputKeeper(2, 2)
	o.Append("abcdef")
	if text, cut := o.Take(); text != "ab"+outMarker(2)+"ef" || cut != 2 {
		t.Fatalf("first Take = %q, %d", text, cut)
	}
	o.Skip(3)
	o.Append("xyz")
	if o.Total() != 6 {
		t.Fatalf("Total = %d", o.Total())
	}
	if text, cut := o.Take(); text != outMarker(4)+"yz" || cut != 4 {
		t.Fatalf("second Take = %q, %d", text, cut)
	}
	o.Append("hi")
	if text, cut := o.Take(); text != "hi" || cut != 0 {
		t.Fatalf("third Take = %q, %d", text, cut)
	}
	if text, cut := o.Take(); text != "" || cut != 0 {
		t.Fatalf("empty Take = %q, %d", text, cut)
	}
}

// TestOutputHugeAppend appends big streams in one call and checks the counts, the head and tail against the
// stream built here, and that the Output keeps only O(head+tail) bytes.
func TestOutputHugeAppend(t *testing.T) {
	mixed := func(n int) string {
		var b strings.Builder
		pieces := []string{"hello ", "é", "😀", "\xff", "世界", "\n", "\U0010FFFF", "\xf0\x9f"}
		for i := 0; b.Len() < n; i++ {
			b.WriteString(pieces[i*7%len(pieces)])
		}
		return b.String()
	}
	for _, tc := range []struct {
		name       string
		head, tail int
		stream     string
	}{
		{"100 MB ASCII", 1000, 1000, strings.Repeat("0123456789", 10<<20)},
		{"8 MB mixed", 1000, 1000, mixed(8 << 20)},
		{"8 MB mixed, odd sizes", 7, 13, mixed(8<<20 + 3)},
		{"4 MB emoji", 11, 11, strings.Repeat("😀", 1<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOutputKeeper(tc.head, tc.tail)
			o.Append(tc.stream)
			if kept := cap(o.head) + cap(o.rest); kept > 24*(tc.head+tc.tail)+1024 {
				t.Fatalf("keeps %d bytes of buffer for head %d, tail %d", kept, tc.head, tc.tail)
			}
			total := int64(outUTF16Len(tc.stream))
			if o.Total() != total {
				t.Fatalf("Total() = %d, want %d", o.Total(), total)
			}
			text, cut := o.Take()
			head, markerCut, tail, ok := outSplitKept(text)
			if !ok || markerCut != cut {
				t.Fatalf("no marker for cut %d", cut)
			}
			want := tc.stream // with invalid bytes replaced
			if !utf8.ValidString(want) {
				var b strings.Builder
				for _, r := range want {
					b.WriteRune(r)
				}
				want = b.String()
			}
			if !strings.HasPrefix(want, head) || !strings.HasSuffix(want, tail) {
				t.Fatalf("head %q / tail %q are not prefix / suffix", head, tail)
			}
			hu, tu := outUTF16Len(head), outUTF16Len(tail)
			if hu < tc.head-1 || hu > tc.head || tu < tc.tail-1 || tu > tc.tail {
				t.Fatalf("head %d, tail %d characters; want %d, %d (or one less at a pair)", hu, tu, tc.head, tc.tail)
			}
			if int64(hu)+int64(tu)+cut != total {
				t.Fatalf("head %d + tail %d + cut %d != total %d", hu, tu, cut, total)
			}
		})
	}
}

// TestOutputMemoryStaysBounded appends many small pieces and checks that the buffers do not grow.
func TestOutputMemoryStaysBounded(t *testing.T) {
	o := newOutputKeeper(100, 100)
	for i := range 200_000 {
		o.Append([]string{"abc", "é😀", "\xff", strings.Repeat("x", 300)}[i%4])
		if kept := cap(o.head) + cap(o.rest); kept > 24*200+1024 {
			t.Fatalf("after %d appends the buffers hold %d bytes", i, kept)
		}
	}
}

func TestOutputAppendAllocs(t *testing.T) {
	o := newOutputKeeper(100, 100)
	o.Append(strings.Repeat("warm up é😀 ", 100))
	allocs := testing.AllocsPerRun(100, func() { o.Append("some text é😀 and more\n") })
	if allocs != 0 {
		t.Fatalf("Append allocated %v times per call in steady state", allocs)
	}
}

// FuzzOutput runs random Append/Skip/Take sequences on random sizes and compares every Take with the model.
//
// Each op byte: low 2 bits choose Skip (of (op>>2)%8 characters, 0 being a no-op), Take, an Append of the
// next (op>>2)%16 raw bytes, or an Append of (op>>2)%16 pieces chosen by the next bytes from a palette of
// awkward text.
func FuzzOutput(f *testing.F) {
	f.Add(uint8(3), uint8(3), []byte("\x3ea\xf0b\x01"))
	f.Add(uint8(2), uint8(2), []byte{0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0x04, 0xff, 1, 2, 3})
	f.Add(uint8(0), uint8(5), []byte{0x0f, 2, 2, 2, 0x08, 0xfb, 0xff, 0xfe, 0x80, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f, 0x50})
	f.Add(uint8(7), uint8(0), []byte{0x3f, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0x01, 0x3f, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Add(uint8(15), uint8(15), []byte{0x3f, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 0x3f, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 0x3f, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0x10, 0x3f, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Add(uint8(1), uint8(1), []byte{0x07, 2, 0x07, 2, 0x05, 0x07, 2})
	palette := []string{"a", "é", "😀", "\xff", "\xf0\x9f", "世", "\U0010FFFF", strings.Repeat("z", 40)}
	f.Fuzz(func(t *testing.T, h, tl uint8, ops []byte) {
		o := newOutputKeeper(int(h%32), int(tl%32))
		m := &outputModel{head: int(h % 32), tail: int(tl % 32)}
		for len(ops) > 0 {
			op := ops[0]
			ops = ops[1:]
			arg := int(op >> 2)
			switch op & 3 {
			case 0:
				o.Skip(arg % 8)
				m.apply(outSkip(arg % 8))
			case 1:
				outCheckTake(t, o, m)
			case 2:
				n := min(arg%16, len(ops))
				o.Append(string(ops[:n]))
				m.apply(outAppend(string(ops[:n])))
				ops = ops[n:]
			case 3:
				var b strings.Builder
				for k := 0; k < arg%16 && len(ops) > 0; k++ {
					b.WriteString(palette[int(ops[0])%len(palette)])
					ops = ops[1:]
				}
				o.Append(b.String())
				m.apply(outAppend(b.String()))
			}
		}
		outCheckTake(t, o, m)
	})
}

func BenchmarkOutputAppend(b *testing.B) {
	for _, bc := range []struct{ name, text string }{
		{"ascii-line", "a typical line of program output, mostly ASCII\n"},
		{"mixed-line", "naïve café 東京 😀 output\n"},
		{"1MB-ascii", strings.Repeat("x", 1<<20)},
		{"1MB-mixed", strings.Repeat("é世😀x", 1<<20/10)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			o := newOutputKeeper(10000, 10000)
			b.SetBytes(int64(len(bc.text)))
			for b.Loop() {
				o.Append(bc.text)
			}
		})
	}
}
