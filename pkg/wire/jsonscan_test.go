package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

type jsonScanCase struct {
	name      string
	in        []byte
	maxValues int
	maxDepth  int
	want      JSONStats // checked when wantErr is nil
	wantErr   error     // a sentinel, or nil
	wantAt    int       // byte offset named in the error; -1 to skip the check
}

func scanOK(name, in string, values, depth int) jsonScanCase {
	return jsonScanCase{name: name, in: []byte(in), want: JSONStats{Values: values, Depth: depth}}
}

func scanBad(name, in string, at int) jsonScanCase {
	return jsonScanCase{name: name, in: []byte(in), wantErr: ErrJSONInvalid, wantAt: at}
}

func scanLimited(name string, in []byte, maxValues, maxDepth int, wantErr error, at int) jsonScanCase {
	return jsonScanCase{name: name, in: in, maxValues: maxValues, maxDepth: maxDepth, wantErr: wantErr, wantAt: at}
}

var jsonScanCases = []jsonScanCase{
	// Scalars.
	scanOK("number", "1", 1, 0),
	scanOK("string", `"x"`, 1, 0),
	scanOK("true", "true", 1, 0),
	scanOK("false", "false", 1, 0),
	scanOK("null", "null", 1, 0),
	scanOK("surrounding whitespace", " \t\r\n 1 \t\r\n ", 1, 0),
	scanOK("negative zero", "-0", 1, 0),
	scanOK("fraction", "-12.50", 1, 0),
	scanOK("exponent", "1e5", 1, 0),
	scanOK("exponent upper signed", "1E+05", 1, 0),
	scanOK("exponent negative", "0.5e-3", 1, 0),
	scanOK("big number", "123456789012345678901234567890e999999", 1, 0),

	// Strings.
	scanOK("empty string", `""`, 1, 0),
	scanOK("all simple escapes", `"\" \\ \/ \b \f \n \r \t"`, 1, 0),
	scanOK("unicode escapes", `"\u00e9\uD83D\uDE00\uffff"`, 1, 0),
	scanOK("lone high surrogate escape", `"\ud800"`, 1, 0),
	scanOK("lone low surrogate escape", `"\udc00x"`, 1, 0),
	scanOK("raw UTF-8", `"héllo 😀"`, 1, 0),
	scanOK("invalid UTF-8 accepted like json.Valid", "\"\xff\xfe\xc3\x28\xed\xa0\x80\"", 1, 0),
	scanOK("DEL and high bytes", "\"\x7f\x80\"", 1, 0),
	scanOK("long string crossing 8-byte blocks", `"`+strings.Repeat("abcdefg\\n", 10)+`"`, 1, 0),

	// Containers.
	scanOK("empty array", "[]", 1, 1),
	scanOK("empty object", "{}", 1, 1),
	scanOK("empty containers with space", "[ ] ", 1, 1),
	scanOK("empty object with space", "{ \n }", 1, 1),
	scanOK("nested arrays", "[[1]]", 3, 2),
	scanOK("array of scalars", `[1, "a", true, false, null, -2.5e3]`, 7, 1),
	scanOK("object keys do not count", `{"a": 1, "b": {"c": [true, null]}}`, 6, 3),
	scanOK("duplicate keys count every value", `{"a":1,"a":2}`, 3, 1),
	scanOK("deep then shallow", `[[[[]]],[]]`, 5, 4),
	scanOK("whitespace everywhere", " { \"a\" : [ 1 , { } ] , \"b\" : \"c\" } ", 5, 3),

	// Invalid: structure.
	scanBad("empty input", "", 0),
	scanBad("only whitespace", " \n\t ", 4),
	scanBad("two values", "1 2", 2),
	scanBad("two objects", "{}{}", 2),
	scanBad("trailing garbage", `{"a":1}x`, 7),
	scanBad("trailing comma in array", "[1,]", 3),
	scanBad("trailing comma in object", `{"a":1,}`, 7),
	scanBad("leading comma", "[,1]", 1),
	scanBad("missing comma", "[1 2]", 3),
	scanBad("unclosed array", "[1", 2),
	scanBad("unclosed object", `{"a":1`, 6),
	scanBad("mismatched close", "[1}", 2),
	scanBad("mismatched close object", `{"a":1]`, 6),
	scanBad("close only", "]", 0),
	scanBad("non-string key", `{1:2}`, 1),
	scanBad("single-quoted key", `{'a':2}`, 1),
	scanBad("missing colon", `{"a" 1}`, 5),
	scanBad("missing value", `{"a":}`, 5),
	scanBad("byte order mark", "\xef\xbb\xbf1", 0),
	scanBad("NaN", "NaN", 0),
	scanBad("comment", "1 // c", 2),

	// Invalid: literals.
	scanBad("truncated true", "tru", 3),
	scanBad("misspelled false", "fals3", 4),
	scanBad("capitalised null", "Null", 0),
	scanBad("literal with suffix", "nullx", 4),

	// Invalid: numbers.
	scanBad("leading zero", "01", 1),
	scanBad("leading zeros negative", "-012", 2),
	scanBad("leading plus", "+1", 0),
	scanBad("leading dot", ".5", 0),
	scanBad("trailing dot", "1.", 2),
	scanBad("dot then exponent", "1.e5", 2),
	scanBad("lone minus", "-", 1),
	scanBad("minus then space", "- 1", 1),
	scanBad("empty exponent", "1e", 2),
	scanBad("exponent sign only", "1e+", 3),
	scanBad("hex", "0x10", 1),
	scanBad("infinity", "-Infinity", 1),

	// Invalid: strings.
	scanBad("unterminated string", `"abc`, 4),
	scanBad("control char in string", "\"a\x01b\"", 2),
	scanBad("raw newline in string", "\"a\nb\"", 2),
	scanBad("raw tab in string", "\"a\tb\"", 2),
	scanBad("NUL in string", "\"\x00\"", 1),
	scanBad("bad escape", `"\x"`, 2),
	scanBad("short unicode escape", `"\u12"`, 5),
	scanBad("non-hex unicode escape", `"\u12g4"`, 5),
	scanBad("escape at end", `"\`, 2),
	scanBad("upper-case U escape", `"\U0041"`, 2),

	// Limits.
	{name: "values exactly at limit", in: []byte("[1,2]"), maxValues: 3, want: JSONStats{Values: 3, Depth: 1}},
	scanLimited("values one over limit", []byte("[1,2,3]"), 3, 0, ErrTooManyValues, 5),
	{name: "depth exactly at limit", in: []byte("[[1]]"), maxDepth: 2, want: JSONStats{Values: 3, Depth: 2}},
	scanLimited("depth one over limit", []byte("[[[1]]]"), 0, 2, ErrTooDeep, 2),
	scanLimited("object depth over limit", []byte(`{"a":{"b":{}}}`), 0, 2, ErrTooDeep, 10),
	scanLimited("limit error before later syntax error", []byte("[1,2,3,x"), 2, 0, ErrTooManyValues, 3),
	scanLimited("syntax error before limit", []byte("[x,1,2,3]"), 2, 0, ErrJSONInvalid, 1),
	{name: "negative limits mean none", in: []byte("[[[[1,2,3]]]]"), maxValues: -1, maxDepth: -5, want: JSONStats{Values: 7, Depth: 4}},
	scanLimited("hostile: 1e6 nested brackets, depth 2000", bytes.Repeat([]byte("["), 1_000_000), 0, 2000, ErrTooDeep, 2000),
	scanLimited("hostile: 200k-element array, 100000 values", jsonHugeArray(200_000), 100_000, 0, ErrTooManyValues, -1),
	scanLimited("hostile: 1e6 nested brackets, no limit", bytes.Repeat([]byte("["), 1_000_000), 0, 0, ErrJSONInvalid, 1_000_000),
	scanLimited("hostile: 1e6 nested objects, depth 100", bytes.Repeat([]byte(`{"a":`), 1_000_000), 0, 100, ErrTooDeep, 500),
}

// jsonHugeArray returns "[0,1,2,...]" with n elements.
func jsonHugeArray(n int) []byte {
	b := []byte{'['}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", i)
	}
	return append(b, ']')
}

func TestScanJSON(t *testing.T) {
	for _, tc := range jsonScanCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ScanJSON(tc.in, tc.maxValues, tc.maxDepth)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("ScanJSON(%.80q) error %v, want %+v", tc.in, err, tc.want)
				}
				if got != tc.want {
					t.Fatalf("ScanJSON(%.80q) = %+v, want %+v", tc.in, got, tc.want)
				}
			} else {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ScanJSON(%.80q) = %+v, %v; want error %v", tc.in, got, err, tc.wantErr)
				}
				if got != (JSONStats{}) {
					t.Errorf("stats on error = %+v, want zero", got)
				}
				prefix := fmt.Sprintf("wire: %v at byte ", tc.wantErr)
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("error %q does not start with %q", err, prefix)
				}
				if tc.wantAt >= 0 {
					prefix += fmt.Sprintf("%d: ", tc.wantAt)
					if !strings.HasPrefix(err.Error(), prefix) {
						t.Errorf("error %q does not start with %q", err, prefix)
					}
				}
				for _, other := range []error{ErrJSONInvalid, ErrTooManyValues, ErrTooDeep} {
					if other != tc.wantErr && errors.Is(err, other) {
						t.Errorf("error %v also wraps %v", err, other)
					}
				}
			}
			// Without limits, validity must agree with json.Valid (nesting here stays below its 10000 cap
			// except in the unclosed hostile rows, which are invalid anyway).
			if len(tc.in) < 1<<20 {
				_, err0 := ScanJSON(tc.in, 0, 0)
				if (err0 == nil) != json.Valid(tc.in) {
					t.Errorf("no-limit ScanJSON error %v, but json.Valid = %v", err0, json.Valid(tc.in))
				}
			}
		})
	}
}

func TestScanJSONErrorMessage(t *testing.T) {
	_, err := ScanJSON([]byte(`{"a": [1, 2, x]}`), 0, 0)
	const want = `wire: invalid JSON at byte 13: unexpected character "x" expected a value`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
	_, err = ScanJSON([]byte(`[1`), 0, 0)
	if want := "wire: invalid JSON at byte 2: unexpected end of input"; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
	_, err = ScanJSON([]byte(`[[[]]]`), 0, 2)
	if want := "wire: JSON nested too deeply at byte 2: deeper than 2"; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
	_, err = ScanJSON([]byte(`[1,2]`), 2, 0)
	if want := "wire: too many JSON values at byte 3: more than 2"; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

// TestScanJSONDeepNoLimit checks the one documented difference from json.Valid: nesting past 10000.
func TestScanJSONDeepNoLimit(t *testing.T) {
	const depth = 100_000
	in := append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)
	got, err := ScanJSON(in, 0, 0)
	if err != nil || got != (JSONStats{Values: depth, Depth: depth}) {
		t.Fatalf("ScanJSON = %+v, %v", got, err)
	}
	if json.Valid(in) {
		t.Fatalf("json.Valid accepted depth %d; the documented difference is gone", depth)
	}
	if _, err := ScanJSON(in, 0, 10000); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("with maxDepth 10000: %v", err)
	}
}

func TestScanJSONNoAllocs(t *testing.T) {
	doc := jsonBenchDoc(1 << 16)
	allocs := testing.AllocsPerRun(10, func() {
		if _, err := ScanJSON(doc, 0, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ScanJSON allocated %v times per run on a valid document", allocs)
	}
}

func TestScanJSONRealisticDocument(t *testing.T) {
	doc := jsonBenchDoc(1 << 20)
	got, err := ScanJSON(doc, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := jsonRefCount(doc)
	if !ok || got != want {
		t.Fatalf("ScanJSON = %+v, reference = %+v (ok %v)", got, want, ok)
	}
}

// jsonRefCount counts values and depth by recursive descent over encoding/json's token stream (UseNumber).
// It reads tokens rather than unmarshalling into `any` because a map would merge duplicate keys.
func jsonRefCount(b []byte) (JSONStats, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var st JSONStats
	var value func(depth int) bool
	value = func(depth int) bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		st.Values++
		d, isDelim := tok.(json.Delim)
		if !isDelim {
			return true
		}
		if d != '[' && d != '{' {
			return false
		}
		st.Depth = max(st.Depth, depth+1)
		for dec.More() {
			if d == '{' {
				if k, err := dec.Token(); err != nil {
					return false
				} else if _, isKey := k.(string); !isKey {
					return false
				}
			}
			if !value(depth + 1) {
				return false
			}
		}
		end, err := dec.Token()
		return err == nil && (end == json.Delim(']') || end == json.Delim('}'))
	}
	if !value(0) {
		return JSONStats{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return JSONStats{}, false
	}
	return st, true
}

// jsonRefUnmarshalCount counts values and depth recursively over json.Unmarshal into any (UseNumber).
// It agrees with jsonRefCount except where an object repeats a key.
func jsonRefUnmarshalCount(b []byte) (JSONStats, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return JSONStats{}, false
	}
	var st JSONStats
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		st.Values++
		switch v := v.(type) {
		case []any:
			st.Depth = max(st.Depth, depth+1)
			for _, e := range v {
				walk(e, depth+1)
			}
		case map[string]any:
			st.Depth = max(st.Depth, depth+1)
			for _, e := range v {
				walk(e, depth+1)
			}
		}
	}
	walk(v, 0)
	return st, true
}

func FuzzScanJSON(f *testing.F) {
	for _, tc := range jsonScanCases {
		if len(tc.in) <= 4096 {
			f.Add(tc.in)
		}
	}
	for _, s := range []string{
		`{"a":[1,{"b":null}],"c":"\u00e9"}`, `[[[[[[]]]]]]`, `{"":{"":{"":""}}}`, `[1e1,0.1e-1,-0E+0]`,
		`"\ud83d\ude00"`, "[\"\xe2\x82\"]", `{"a":1,"a":{"a":[]}}`, ` [ true , false , null ] `,
	} {
		f.Add([]byte(s))
	}
	f.Add(jsonBenchDoc(4096))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ScanJSON(data, 0, 0)
		valid := json.Valid(data)
		if err == nil && st.Depth > 10000 {
			if valid {
				t.Fatalf("json.Valid accepted depth %d", st.Depth)
			}
			return // the documented difference
		}
		if (err == nil) != valid {
			t.Fatalf("ScanJSON(%q) error = %v, json.Valid = %v", data, err, valid)
		}
		if err != nil {
			if !errors.Is(err, ErrJSONInvalid) {
				t.Fatalf("no-limit error %v is not ErrJSONInvalid", err)
			}
			_, err = ScanJSON(data, 1, 1)
			if !errors.Is(err, ErrJSONInvalid) && !errors.Is(err, ErrTooManyValues) && !errors.Is(err, ErrTooDeep) {
				t.Fatalf("limited error %v wraps no sentinel", err)
			}
			return
		}
		// Limits: exactly enough passes, one less fails with the right sentinel.
		if got, err := ScanJSON(data, st.Values, st.Depth); err != nil || got != st {
			t.Fatalf("at exact limits: %+v, %v; want %+v", got, err, st)
		}
		if st.Values > 1 {
			if _, err := ScanJSON(data, st.Values-1, 0); !errors.Is(err, ErrTooManyValues) {
				t.Fatalf("maxValues %d: %v", st.Values-1, err)
			}
		}
		if st.Depth > 1 {
			if _, err := ScanJSON(data, 0, st.Depth-1); !errors.Is(err, ErrTooDeep) {
				t.Fatalf("maxDepth %d: %v", st.Depth-1, err)
			}
		}
		if st.Depth > 500 {
			return
		}
		want, ok := jsonRefCount(data)
		if !ok || st != want {
			t.Fatalf("ScanJSON(%q) = %+v, token reference = %+v (ok %v)", data, st, want, ok)
		}
		um, ok := jsonRefUnmarshalCount(data)
		if !ok || um.Values > st.Values || um.Depth > st.Depth || (um != st && !bytes.Contains(data, []byte(":"))) {
			t.Fatalf("ScanJSON(%q) = %+v, unmarshal reference = %+v (ok %v)", data, st, um, ok)
		}
	})
}

// jsonBenchDoc returns a deterministic, compact JSON document of about size bytes that looks like an API response:
// an array of records with strings (some escaped or non-ASCII), numbers, booleans, nulls and nested objects.
func jsonBenchDoc(size int) []byte {
	type address struct {
		Street string  `json:"street"`
		City   string  `json:"city"`
		Zip    string  `json:"zip"`
		Geo    any     `json:"geo"`
		Note   *string `json:"note"`
	}
	type record struct {
		ID        int64             `json:"id"`
		UUID      string            `json:"uuid"`
		Name      string            `json:"name"`
		Email     string            `json:"email"`
		Active    bool              `json:"active"`
		Score     float64           `json:"score"`
		Balance   string            `json:"balance"`
		Tags      []string          `json:"tags"`
		Address   address           `json:"address"`
		Friends   []map[string]any  `json:"friends"`
		About     string            `json:"about"`
		Meta      map[string]string `json:"meta"`
		Deleted   any               `json:"deleted_at"`
		CreatedAt string            `json:"created_at"`
	}
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " +
		"incididunt ut labore et dolore magna aliqua café naïve Zürich 東京 данные 😀 \"quoted\" tab\there new\nline")
	sentence := func(n int) string {
		var sb strings.Builder
		for i := range n {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[r.IntN(len(words))])
		}
		return sb.String()
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for id := int64(1); buf.Len() < size-600; id++ {
		rec := record{
			ID:        id,
			UUID:      fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff),
			Name:      sentence(2),
			Email:     fmt.Sprintf("user%d@example.com", id),
			Active:    r.IntN(2) == 0,
			Score:     r.Float64() * 1000,
			Balance:   fmt.Sprintf("$%d.%02d", r.IntN(100000), r.IntN(100)),
			Tags:      strings.Fields(sentence(1 + r.IntN(5))),
			Address:   address{Street: sentence(3), City: sentence(1), Zip: fmt.Sprintf("%05d", r.IntN(100000)), Geo: []float64{r.Float64()*180 - 90, r.Float64()*360 - 180}},
			About:     sentence(10 + r.IntN(30)),
			Meta:      map[string]string{"source": sentence(1), "rev": fmt.Sprint(r.IntN(100))},
			CreatedAt: time.Unix(1.6e9+r.Int64N(1e8), 0).UTC().Format(time.RFC3339),
		}
		for range r.IntN(4) {
			rec.Friends = append(rec.Friends, map[string]any{"id": r.IntN(1000), "name": sentence(2), "since": nil})
		}
		b, err := json.Marshal(rec)
		if err != nil {
			panic(err)
		}
		if id > 1 {
			buf.WriteByte(',')
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	return buf.Bytes()
}

func BenchmarkScanJSON(b *testing.B) {
	doc := jsonBenchDoc(1 << 20)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ScanJSON(doc, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONValid measures encoding/json.Valid on the same document, for comparison.
func BenchmarkJSONValid(b *testing.B) {
	doc := jsonBenchDoc(1 << 20)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if !json.Valid(doc) {
			b.Fatal("invalid")
		}
	}
}
