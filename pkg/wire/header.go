package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The headers of the frames that go back and forth once per call (call,
// result, output) are encoded and decoded here by hand: through
// encoding/json they cost several microseconds a call on each side, most of
// a call's budget. The decoder is as strict as Frame.Decode with
// encoding/json (one JSON object, only the message's fields, each of its
// type, nothing after it) and stricter in one way: a field's name must be
// spelt exactly, where encoding/json also takes it in another case. Strings
// decode to what encoding/json gives (invalid UTF-8 and lone surrogates
// become U+FFFD); FuzzHeaderDecode checks the two against each other.

// errHeaderShape is what a hand-decoded header that is not what the message
// allows reports; the caller wraps it in ErrBadFrame with the frame's type.
var errHeaderShape = errors.New("not the message's header")

// hdrScanner walks one header object.
type hdrScanner struct {
	b []byte
	i int
}

func (s *hdrScanner) space() {
	for s.i < len(s.b) && s.b[s.i] <= ' ' && jsonSpace[s.b[s.i]] {
		s.i++
	}
}

func (s *hdrScanner) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errHeaderShape, what, s.i)
}

// object calls field for each member of the object that b holds; field
// decodes the value at s.i and leaves s.i after it.
func (s *hdrScanner) object(field func(key string) error) error {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return s.fail("not a JSON object")
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
	} else {
		for {
			s.space()
			key, err := s.str()
			if err != nil {
				return err
			}
			s.space()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return s.fail("expected ':'")
			}
			s.i++
			s.space()
			if err := field(key); err != nil {
				return err
			}
			s.space()
			if s.i >= len(s.b) {
				return s.fail("unterminated object")
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.b[s.i] != '}' {
				return s.fail("expected ',' or '}'")
			}
			s.i++
			break
		}
	}
	s.space()
	if s.i != len(s.b) {
		return s.fail("trailing data after the JSON object")
	}
	return nil
}

// null takes a JSON null, which encoding/json treats as "leave the field as
// it is", and reports whether it did.
func (s *hdrScanner) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str decodes a JSON string. Plain valid UTF-8 is taken as is; anything
// else (escapes, invalid UTF-8) goes through encoding/json so that the
// result is exactly its.
func (s *hdrScanner) str() (string, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", s.fail("expected a string")
	}
	start := s.i
	end, err := jsonString(s.b, s.i)
	if err != nil {
		return "", fmt.Errorf("%w: %v", errHeaderShape, err)
	}
	s.i = end
	raw := s.b[start+1 : end-1]
	plain, ascii := true, true
	for _, c := range raw {
		if c == '\\' {
			plain = false
			break
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if plain && (ascii || utf8.Valid(raw)) {
		return string(raw), nil
	}
	var v string
	if err := json.Unmarshal(s.b[start:end], &v); err != nil {
		return "", fmt.Errorf("%w: %v", errHeaderShape, err)
	}
	return v, nil
}

// strField is a string member: a string, or null (no change).
func (s *hdrScanner) strField(dst *string) error {
	if s.null() {
		return nil
	}
	v, err := s.str()
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// number takes a JSON number's text.
func (s *hdrScanner) number() ([]byte, error) {
	if s.i >= len(s.b) || (s.b[s.i] != '-' && !jsonIsDigit(s.b[s.i])) {
		return nil, s.fail("expected a number")
	}
	start := s.i
	end, err := jsonNumber(s.b, s.i)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errHeaderShape, err)
	}
	s.i = end
	return s.b[start:end], nil
}

// uintField is an unsigned integer member, as encoding/json decodes one
// into a uint64: digits only (no fraction or exponent), within range; or null.
func (s *hdrScanner) uintField(dst *uint64) error {
	if s.null() {
		return nil
	}
	num, err := s.number()
	if err != nil {
		return err
	}
	v, err := strconv.ParseUint(string(num), 10, 64)
	if err != nil {
		return s.fail("not an unsigned 64-bit integer")
	}
	*dst = v
	return nil
}

// intField is intField's signed twin, for an int64.
func (s *hdrScanner) intField(dst *int64) error {
	if s.null() {
		return nil
	}
	num, err := s.number()
	if err != nil {
		return err
	}
	v, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		return s.fail("not a 64-bit integer")
	}
	*dst = v
	return nil
}

// strsField is a []string member: an array of strings (a null element is
// ""), or null (nil), as encoding/json decodes them.
func (s *hdrScanner) strsField(dst *[]string) error {
	if s.null() {
		*dst = nil
		return nil
	}
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return s.fail("expected an array")
	}
	s.i++
	out := (*dst)[:0]
	if out == nil {
		out = []string{}
	}
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		*dst = out
		return nil
	}
	for {
		s.space()
		var v string
		if err := s.strField(&v); err != nil {
			return err
		}
		out = append(out, v)
		s.space()
		if s.i >= len(s.b) {
			return s.fail("unterminated array")
		}
		if s.b[s.i] == ',' {
			s.i++
			continue
		}
		if s.b[s.i] != ']' {
			return s.fail("expected ',' or ']'")
		}
		s.i++
		*dst = out
		return nil
	}
}

func unknownField(key string) error {
	return fmt.Errorf("%w: unknown field %s", errHeaderShape, strconv.Quote(Cut(key, 80)))
}

// decodeCall decodes a call header into c.
func decodeCall(b []byte, c *Call) error {
	s := hdrScanner{b: b}
	return s.object(func(key string) error {
		switch key {
		case "runId":
			return s.strField(&c.RunID)
		case "id":
			return s.uintField(&c.ID)
		case "server":
			return s.strField(&c.Server)
		case "tool":
			return s.strField(&c.Tool)
		}
		return unknownField(key)
	})
}

// decodeResult decodes a result header into r.
func decodeResult(b []byte, r *Result) error {
	s := hdrScanner{b: b}
	return s.object(func(key string) error {
		switch key {
		case "id":
			return s.uintField(&r.ID)
		case "outcome":
			return s.strField(&r.Outcome)
		case "code":
			return s.strField(&r.Code)
		case "message":
			return s.strField(&r.Message)
		case "matches":
			return s.strsField(&r.Matches)
		}
		return unknownField(key)
	})
}

// decodeOutput decodes an output header into o.
func decodeOutput(b []byte, o *Output) error {
	s := hdrScanner{b: b}
	return s.object(func(key string) error {
		if key == "skip" {
			return s.intField(&o.Skip)
		}
		return unknownField(key)
	})
}

// appendHeader appends the JSON of the headers encoded by hand, and
// reports whether hdr was one of them.
func appendHeader(dst []byte, hdr any) ([]byte, bool) {
	switch h := hdr.(type) {
	case Call:
		return appendCall(dst, &h), true
	case *Call:
		if h == nil {
			return dst, false
		}
		return appendCall(dst, h), true
	case Result:
		return appendResult(dst, &h), true
	case *Result:
		if h == nil {
			return dst, false
		}
		return appendResult(dst, h), true
	case Output:
		return appendOutput(dst, &h), true
	case *Output:
		if h == nil {
			return dst, false
		}
		return appendOutput(dst, h), true
	}
	return dst, false
}

func appendCall(dst []byte, c *Call) []byte {
	dst = append(dst, `{"runId":`...)
	dst = AppendJSONString(dst, c.RunID, false)
	dst = append(dst, `,"id":`...)
	dst = strconv.AppendUint(dst, c.ID, 10)
	dst = append(dst, `,"server":`...)
	dst = AppendJSONString(dst, c.Server, false)
	dst = append(dst, `,"tool":`...)
	dst = AppendJSONString(dst, c.Tool, false)
	return append(dst, '}')
}

func appendResult(dst []byte, r *Result) []byte {
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendUint(dst, r.ID, 10)
	dst = append(dst, `,"outcome":`...)
	dst = AppendJSONString(dst, r.Outcome, false)
	if r.Code != "" {
		dst = append(dst, `,"code":`...)
		dst = AppendJSONString(dst, r.Code, false)
	}
	if r.Message != "" {
		dst = append(dst, `,"message":`...)
		dst = AppendJSONString(dst, r.Message, false)
	}
	if len(r.Matches) > 0 {
		dst = append(dst, `,"matches":[`...)
		for i, m := range r.Matches {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSONString(dst, m, false)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

func appendOutput(dst []byte, o *Output) []byte {
	if o.Skip == 0 {
		return append(dst, "{}"...)
	}
	dst = append(dst, `{"skip":`...)
	dst = strconv.AppendInt(dst, o.Skip, 10)
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json makes it; quotes, backslashes and control
// characters are escaped (and U+2028/U+2029, which some JavaScript parsers
// refuse raw). With html, <, > and & are escaped too, so that the text is
// exactly what encoding/json.Marshal writes.
func AppendJSONString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
