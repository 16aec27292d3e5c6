package mcpgw

// This file holds the schema decoder of the TypeScript renderer (objects
// keep their keys in order, numbers their text) and the writer of JSON
// values as literal types.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

func tsWriteString(sb *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	sb.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// tsWriteJSON writes v as compact JSON, keys in their order, and reports
// false (having written part) when it would pass limit bytes.
func tsWriteJSON(sb *strings.Builder, v any, limit int) bool {
	if sb.Len() > limit {
		return false
	}
	switch v := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString(strconv.FormatBool(v))
	case json.Number:
		sb.WriteString(string(v))
	case string:
		if sb.Len()+len(v) > limit {
			return false
		}
		tsWriteString(sb, v)
	case []any:
		sb.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				sb.WriteString(", ")
			}
			if !tsWriteJSON(sb, e, limit) {
				return false
			}
		}
		sb.WriteByte(']')
	case *tsObject:
		sb.WriteString("{ ")
		for i, k := range v.keys {
			if i > 0 {
				sb.WriteString(", ")
			}
			if !tsWriteJSON(sb, k, limit) {
				return false
			}
			sb.WriteString(": ")
			if !tsWriteJSON(sb, v.vals[i], limit) {
				return false
			}
		}
		sb.WriteString(" }")
	}
	return sb.Len() <= limit
}

// tsObject is a JSON object with its keys in order. A repeated key keeps its
// first place and its last value, as decoders do.
type tsObject struct {
	keys  []string
	vals  []any
	index map[string]int
}

func (o *tsObject) get(k string) (any, bool) {
	i, ok := o.index[k]
	if !ok {
		return nil, false
	}
	return o.vals[i], true
}

func (o *tsObject) has(k string) bool {
	_, ok := o.index[k]
	return ok
}

func (o *tsObject) array(k string) ([]any, bool) {
	v, _ := o.get(k)
	a, ok := v.([]any)
	return a, ok
}

// tsDecode decodes one JSON value with objects as *tsObject and numbers as
// json.Number. Its recursion follows the nesting, which checkSchemaBytes
// has bounded.
func tsDecode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := tsDecodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func tsDecodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := tsDecodeValue(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token() // ]
		return arr, err
	case json.Delim('{'):
		o := &tsObject{index: map[string]int{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := tsDecodeValue(dec)
			if err != nil {
				return nil, err
			}
			if i, ok := o.index[k]; ok {
				o.vals[i] = v
				continue
			}
			o.index[k] = len(o.keys)
			o.keys = append(o.keys, k)
			o.vals = append(o.vals, v)
		}
		_, err := dec.Token() // }
		return o, err
	}
	return tok, nil
}
