package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// headerSeeds are headers of every hand-decoded kind, good and bad.
var headerSeeds = []string{
	`{"runId":"run-1","id":1,"server":"s","tool":"t"}`,
	` { "runId" : "r" , "id" : 18446744073709551615 , "server" : "a\"b" , "tool" : "\u00e9\ud800" } `,
	`{"runId":"r","id":18446744073709551616,"server":"s","tool":"t"}`,
	`{"runId":"r","id":1.0}`, `{"id":-0}`, `{"id":1e2}`, `{"id":null,"server":null}`,
	`{"RUNID":"r"}`, `{"runid":"r"}`, `{"run\u0049d":"r"}`, `{"runId":"a","runId":"b"}`,
	`{"id":1,"outcome":"ok"}`, `{"id":2,"outcome":"refused","code":"c","message":"m\n","matches":["a",null,"b"]}`,
	`{"matches":null}`, `{"matches":[]}`, `{"matches":["a","b"],"matches":["c"]}`, `{"matches":[1]}`,
	`{}`, `{"skip":5}`, `{"skip":-5}`, `{"skip":9223372036854775808}`, `{"skip":"5"}`,
	`{"x":1}`, `{} x`, `{}}`, `[]`, `null`, ``, `{"id":1,}`, `{"id" 1}`, `{"tool":"\x01"}`,
	"{\"tool\":\"a\xffb\"}", `{"tool":"\ud834\udd1e"}`, `{"tool":true}`, `{"id":01}`,
}

// hasInexactKey reports whether the object in b has a key that is not
// exactly one of names (encoding/json matches such a key without regard to
// case; the hand decoder refuses it).
func hasInexactKey(b []byte, names ...string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	for k := range m {
		exact := false
		for _, n := range names {
			exact = exact || k == n
		}
		if !exact {
			return true
		}
	}
	return false
}

// checkHeaderDecoders decodes hdr by hand and with encoding/json as each
// hand-decoded message: where the hand decoder accepts, encoding/json must
// accept with the same value; where only encoding/json accepts, the header
// must have a key spelt in another case.
func checkHeaderDecoders(t *testing.T, hdr []byte) {
	f := Frame{Type: TypeCall, Header: hdr}
	check := func(name string, hand, std any, names ...string) {
		t.Helper()
		errHand := f.Decode(hand)
		errStd := f.decodeJSON(std)
		switch {
		case errHand == nil && errStd != nil:
			t.Fatalf("%s %q: the hand decoder accepts what encoding/json refuses: %v", name, hdr, errStd)
		case errHand == nil && !reflect.DeepEqual(hand, std):
			t.Fatalf("%s %q: hand %+v, encoding/json %+v", name, hdr, hand, std)
		case errHand != nil && errStd == nil && !hasInexactKey(hdr, names...):
			t.Fatalf("%s %q: the hand decoder refuses what encoding/json accepts: %v", name, hdr, errHand)
		}
	}
	check("call", &Call{}, &Call{}, "runId", "id", "server", "tool")
	check("result", &Result{}, &Result{}, "id", "outcome", "code", "message", "matches")
	check("output", &Output{}, &Output{}, "skip")
}

func TestHeaderDecodersAgreeWithEncodingJSON(t *testing.T) {
	for _, s := range headerSeeds {
		checkHeaderDecoders(t, []byte(s))
	}
}

// FuzzHeaderDecode: the hand decoders of the call, result and output
// headers against encoding/json (the differential above).
func FuzzHeaderDecode(f *testing.F) {
	for _, s := range headerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, hdr []byte) {
		checkHeaderDecoders(t, hdr)
	})
}

// FuzzHeaderEncode: a header encoded by hand decodes (with encoding/json)
// to what encoding/json's own encoding of it decodes to.
func FuzzHeaderEncode(f *testing.F) {
	f.Add("run-1", uint64(7), "srv", "tool", "refused", "code", "msg\n\"<&>\u2028", "a", int64(3))
	f.Add("\xff\x00", uint64(0), "", "\xed\xa0\x80", "", "", "", "", int64(-1))
	f.Fuzz(func(t *testing.T, runID string, id uint64, server, tool, outcome, code, message, match string, skip int64) {
		var matches []string
		if match != "" {
			matches = []string{match, ""}
		}
		for _, hdr := range []any{
			Call{RunID: runID, ID: id, Server: server, Tool: tool},
			&Result{ID: id, Outcome: outcome, Code: code, Message: message, Matches: matches},
			Output{Skip: skip},
		} {
			hand, err := AppendFrame(nil, TypeCall, hdr, nil)
			if err != nil {
				t.Fatal(err)
			}
			fr, _, _, err := Split(hand, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			std, err := json.Marshal(hdr)
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			if err := json.Unmarshal(fr.Header, &a); err != nil {
				t.Fatalf("hand-encoded %q is not JSON: %v", fr.Header, err)
			}
			if err := json.Unmarshal(std, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("hand %s, encoding/json %s", fr.Header, std)
			}
		}
	})
}
