package wire

import (
	"encoding/binary"
	"fmt"
)

// JSONStats describes one JSON text.
type JSONStats struct {
	Values int // every value counts one: objects, arrays, strings, numbers, true, false, null (object keys do not count)
	Depth  int // deepest nesting of arrays/objects: `1` and `"x"` are 0, `[]` and `{}` are 1, `[[1]]` is 2
}

// JSONError is every error ScanJSON returns: which sentinel, and the byte
// offset where it was found (errors.As gives the offset, for a message that
// points at a line and column).
type JSONError struct {
	Err    error // ErrJSONInvalid, ErrTooManyValues or ErrTooDeep
	Offset int   // the offset in b of the byte that broke the rule or the limit
	Detail string
}

// Error is "wire: SENTINEL at byte OFFSET: DETAIL".
func (e *JSONError) Error() string {
	return fmt.Sprintf("wire: %v at byte %d: %s", e.Err, e.Offset, e.Detail)
}

// Unwrap gives the sentinel.
func (e *JSONError) Unwrap() error { return e.Err }

// ScanJSON checks that b holds exactly one JSON value (RFC 8259, whitespace around it allowed) and measures it,
// in one pass without recursion, stopping as soon as maxValues or maxDepth would be exceeded (a value <= 0 means no limit).
// Errors are a *JSONError, wrapping ErrJSONInvalid, ErrTooManyValues or ErrTooDeep and saying the byte offset, e.g.
// "wire: invalid JSON at byte 17: ...".
//
// It accepts exactly the texts that encoding/json.Valid accepts, with one exception: Valid also rejects nesting
// deeper than 10000, which ScanJSON leaves to maxDepth. In particular, as with Valid, bytes that are not valid
// UTF-8 are accepted inside strings, escapes are checked (`\ud800` alone is a valid escape) and raw control
// characters (below U+0020) inside strings are not. A value is counted (and checked against maxValues) when its
// first byte is seen, and a container's depth is checked when its opening bracket is seen; the offset in a limit
// error is that byte's. On error the returned JSONStats is the zero value. Memory use does not grow with len(b):
// only the open arrays and objects are tracked, one bit per level (so at most maxDepth bits when it is set).
func ScanJSON(b []byte, maxValues, maxDepth int) (JSONStats, error) {
	const (
		stValue = iota // a value must start here (after optional whitespace)
		stAfter        // a value has just ended
		stKey          // an object key must start here (after optional whitespace)
	)
	var (
		small  [4]uint64
		stack  = small[:0] // bit i set: level i+1 is an object, clear: an array
		n      = len(b)
		i      = 0
		depth  = 0
		values = 0
		deep   = 0
		state  = stValue
		c      byte
		err    error
	)
	for {
		for i < n && b[i] <= ' ' && jsonSpace[b[i]] {
			i++
		}
		switch state {
		case stValue:
			if i >= n {
				return JSONStats{}, jsonInvalid(b, i, "expected a value")
			}
			c = b[i]
			if !jsonValueStart[c] {
				return JSONStats{}, jsonInvalid(b, i, "expected a value")
			}
			values++
			if maxValues > 0 && values > maxValues {
				return JSONStats{}, &JSONError{Err: ErrTooManyValues, Offset: i, Detail: fmt.Sprintf("more than %d", maxValues)}
			}
			switch c {
			case '"':
				if i, err = jsonString(b, i); err != nil {
					return JSONStats{}, err
				}
				state = stAfter
			case '{', '[':
				if maxDepth > 0 && depth >= maxDepth {
					return JSONStats{}, &JSONError{Err: ErrTooDeep, Offset: i, Detail: fmt.Sprintf("deeper than %d", maxDepth)}
				}
				w, bit := depth>>6, uint64(1)<<(depth&63)
				if w == len(stack) {
					stack = append(stack, 0)
				}
				if c == '{' {
					stack[w] |= bit
				} else {
					stack[w] &^= bit
				}
				depth++
				deep = max(deep, depth)
				i++
				for i < n && b[i] <= ' ' && jsonSpace[b[i]] {
					i++
				}
				switch {
				case i < n && b[i] == c+2: // ']' is '['+2, '}' is '{'+2
					i++
					depth--
					state = stAfter
				case c == '{':
					state = stKey
				default:
					state = stValue
				}
			case 't':
				if i, err = jsonLiteral(b, i, "true"); err != nil {
					return JSONStats{}, err
				}
				state = stAfter
			case 'f':
				if i, err = jsonLiteral(b, i, "false"); err != nil {
					return JSONStats{}, err
				}
				state = stAfter
			case 'n':
				if i, err = jsonLiteral(b, i, "null"); err != nil {
					return JSONStats{}, err
				}
				state = stAfter
			default: // '-' or a digit
				if i, err = jsonNumber(b, i); err != nil {
					return JSONStats{}, err
				}
				state = stAfter
			}
		case stAfter:
			if depth == 0 {
				if i < n {
					return JSONStats{}, jsonInvalid(b, i, "after top-level value")
				}
				return JSONStats{Values: values, Depth: deep}, nil
			}
			if i >= n {
				return JSONStats{}, jsonInvalid(b, i, "")
			}
			top := depth - 1
			inObject := stack[top>>6]&(uint64(1)<<(top&63)) != 0
			switch c = b[i]; {
			case c == ',':
				i++
				if inObject {
					state = stKey
				} else {
					state = stValue
				}
			case c == '}' && inObject, c == ']' && !inObject:
				i++
				depth--
			case inObject:
				return JSONStats{}, jsonInvalid(b, i, "after object value, expected ',' or '}'")
			default:
				return JSONStats{}, jsonInvalid(b, i, "after array element, expected ',' or ']'")
			}
		case stKey:
			if i >= n || b[i] != '"' {
				return JSONStats{}, jsonInvalid(b, i, "expected a string for an object key")
			}
			if i, err = jsonString(b, i); err != nil {
				return JSONStats{}, err
			}
			for i < n && b[i] <= ' ' && jsonSpace[b[i]] {
				i++
			}
			if i >= n || b[i] != ':' {
				return JSONStats{}, jsonInvalid(b, i, "after object key, expected ':'")
			}
			i++
			state = stValue
		}
	}
}

// jsonString checks the string whose opening quote is at b[i] and returns the offset just past its closing quote.
func jsonString(b []byte, i int) (int, error) {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	n := len(b)
	i++
	for {
		// Eight bytes at a time while none of them is '"', '\\' or a control character.
		for i+8 <= n {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ (ones * '"')
			s := x ^ (ones * '\\')
			if ((x-ones*0x20)&^x|(q-ones)&^q|(s-ones)&^s)&high != 0 {
				break
			}
			i += 8
		}
		for i < n && jsonPlain[b[i]] {
			i++
		}
		if i >= n {
			return i, jsonInvalid(b, i, "in string literal")
		}
		switch b[i] {
		case '"':
			return i + 1, nil
		case '\\':
			i++
			if i >= n {
				return i, jsonInvalid(b, i, "in string escape code")
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for k := 0; k < 4; k++ {
					if i >= n || !jsonHex[b[i]] {
						return i, jsonInvalid(b, i, "in \\u hexadecimal character escape")
					}
					i++
				}
			default:
				return i, jsonInvalid(b, i, "in string escape code")
			}
		default: // a control character
			return i, jsonInvalid(b, i, "in string literal")
		}
	}
}

// jsonNumber checks the number starting at b[i] ('-' or a digit) and returns the offset just past it.
func jsonNumber(b []byte, i int) (int, error) {
	n := len(b)
	if b[i] == '-' {
		i++
	}
	switch {
	case i < n && b[i] == '0':
		i++
	case i < n && b[i] >= '1' && b[i] <= '9':
		for i++; i < n && jsonIsDigit(b[i]); i++ {
		}
	default:
		return i, jsonInvalid(b, i, "in numeric literal")
	}
	if i < n && b[i] == '.' {
		i++
		if i >= n || !jsonIsDigit(b[i]) {
			return i, jsonInvalid(b, i, "after decimal point in numeric literal")
		}
		for i++; i < n && jsonIsDigit(b[i]); i++ {
		}
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= n || !jsonIsDigit(b[i]) {
			return i, jsonInvalid(b, i, "in exponent of numeric literal")
		}
		for i++; i < n && jsonIsDigit(b[i]); i++ {
		}
	}
	return i, nil
}

// jsonLiteral checks that lit (true, false or null) starts at b[i] and returns the offset just past it.
func jsonLiteral(b []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(b) || b[i+k] != lit[k] {
			return i + k, jsonInvalid(b, i+k, "in literal "+lit)
		}
	}
	return i + len(lit), nil
}

// jsonInvalid returns an ErrJSONInvalid error about the byte at b[i] (or the end of b).
func jsonInvalid(b []byte, i int, context string) error {
	what := "unexpected end of input"
	if i < len(b) {
		what = fmt.Sprintf("unexpected character %q", b[i:i+1])
	}
	if context != "" {
		what += " " + context
	}
	return &JSONError{Err: ErrJSONInvalid, Offset: i, Detail: what}
}

func jsonIsDigit(c byte) bool { return c >= '0' && c <= '9' }

var jsonSpace, jsonValueStart, jsonPlain, jsonHex = func() (space, start, plain, hex [256]bool) {
	for _, c := range " \t\r\n" {
		space[c] = true
	}
	for _, c := range "{[\"tfn-0123456789" {
		start[c] = true
	}
	for c := 0x20; c < 256; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	for _, c := range "0123456789abcdefABCDEF" {
		hex[c] = true
	}
	return
}()
