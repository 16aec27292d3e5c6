package mcpgw

// This file reads the positions of a source map (version 3), as esbuild
// writes them for a TypeScript program, and looks a generated position up.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// mapSegment is one mapping: from a column of a generated line to a line
// and column of the source, all 0-based, columns in UTF-16 code units as
// source maps count them.
type mapSegment struct {
	genCol, srcLine, srcCol int
}

// sourceMap holds, for each generated line, its segments in column order.
type sourceMap struct {
	lines [][]mapSegment
}

// errBadSourceMap: the map is not one this reader understands; positions
// are then left as they are.
var errBadSourceMap = errors.New("bad source map")

// parseSourceMap decodes the "mappings" of a version 3 source map. Segments
// without a source position (one field) are skipped; names are ignored.
func parseSourceMap(raw []byte) (*sourceMap, error) {
	var doc struct {
		Version  int    `json:"version"`
		Mappings string `json:"mappings"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadSourceMap, err)
	}
	if doc.Version != 3 {
		return nil, fmt.Errorf("%w: version %d", errBadSourceMap, doc.Version)
	}
	m := &sourceMap{}
	var line []mapSegment
	var fields [5]int // genCol, source, srcLine, srcCol, name: the last four carry over lines
	s := doc.Mappings
	for i := 0; i <= len(s); {
		if i == len(s) || s[i] == ';' {
			m.lines = append(m.lines, line)
			line, fields[0] = nil, 0
			i++
			continue
		}
		if s[i] == ',' {
			i++
			continue
		}
		n := 0
		for ; i < len(s) && s[i] != ',' && s[i] != ';'; n++ {
			if n == len(fields) {
				return nil, fmt.Errorf("%w: a segment of more than %d fields", errBadSourceMap, len(fields))
			}
			v, next, err := decodeVLQ(s, i)
			if err != nil {
				return nil, err
			}
			fields[n] += v
			i = next
		}
		if n != 1 && n != 4 && n != 5 {
			return nil, fmt.Errorf("%w: a segment of %d fields", errBadSourceMap, n)
		}
		if n >= 4 {
			line = append(line, mapSegment{genCol: fields[0], srcLine: fields[2], srcCol: fields[3]})
		}
	}
	for _, l := range m.lines {
		sort.SliceStable(l, func(a, b int) bool { return l[a].genCol < l[b].genCol })
	}
	return m, nil
}

// decodeVLQ decodes one base64 VLQ value of s at i and returns it with the
// index after it.
func decodeVLQ(s string, i int) (value, next int, err error) {
	shift, result := 0, 0
	for {
		if i >= len(s) {
			return 0, i, fmt.Errorf("%w: a value ends mid-way", errBadSourceMap)
		}
		d := base64Digit(s[i])
		if d < 0 {
			return 0, i, fmt.Errorf("%w: %q is not a base64 digit", errBadSourceMap, s[i])
		}
		i++
		if shift > 30 {
			return 0, i, fmt.Errorf("%w: a value too large", errBadSourceMap)
		}
		result |= (d & 31) << shift
		shift += 5
		if d&32 == 0 {
			break
		}
	}
	if result&1 != 0 {
		return -(result >> 1), i, nil
	}
	return result >> 1, i, nil
}

func base64Digit(c byte) int {
	switch {
	case 'A' <= c && c <= 'Z':
		return int(c - 'A')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 26
	case '0' <= c && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}

// lookup finds the segment a generated position (0-based line and UTF-16
// column) falls in: the one at or before the column on that line; before
// the first segment of a line, that segment; on a line without segments,
// the last segment of an earlier line. ok is false when no segment comes
// at or before the line.
func (m *sourceMap) lookup(line, col int) (seg mapSegment, ok bool) {
	if line < 0 || line >= len(m.lines) {
		return mapSegment{}, false
	}
	if segs := m.lines[line]; len(segs) > 0 {
		k := sort.Search(len(segs), func(i int) bool { return segs[i].genCol > col }) - 1
		return segs[max(k, 0)], true
	}
	for l := line - 1; l >= 0; l-- {
		if segs := m.lines[l]; len(segs) > 0 {
			last := segs[len(segs)-1]
			last.genCol = -1 // on another line: no distance to add
			return last, true
		}
	}
	return mapSegment{}, false
}
