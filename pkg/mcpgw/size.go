package mcpgw

// This file holds the one size syntax of the gateway: the config's limits
// ("memory", "maxMemory") and the CLI's --memory both read sizes with
// ParseSize, so a size one accepts the other accepts too.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// sizeUnits are the units a size may use: binary (IEC) only, written exactly
// so, since "64MB" is read as 64 MiB as often as 64,000,000 bytes. A size
// with no unit is a number of bytes.
var sizeUnits = []struct {
	unit  string
	bytes int64
}{
	{"", 1}, {"B", 1}, {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
}

// ErrBadSize: a size that ParseSize does not read. The error's text says
// what to write instead.
var ErrBadSize = errors.New("not a size")

// sizeError is ParseSize's error: its text is the whole message.
type sizeError struct{ msg string }

func (e *sizeError) Error() string { return e.msg }
func (e *sizeError) Unwrap() error { return ErrBadSize }

// ParseSize reads a size: a whole number of bytes ("1048576"), or a whole
// number and one of the units B, KiB, MiB, GiB, with at most one space
// between ("64MiB", "512 KiB"). Units are binary and case-sensitive: "64MB",
// "64M", "64mib" and "64k" are refused with the size they probably mean
// ("did you mean "64MiB"?"), since decimal and binary readings differ. No
// sign, fraction or other space. It does not check a range: 0 is a size.
// The error wraps ErrBadSize and quotes s, cut.
func ParseSize(s string) (int64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	num, unit := s[:i], strings.TrimPrefix(s[i:], " ")
	bad := &sizeError{fmt.Sprintf(`%s is not a size; write a whole number with one of B, KiB, MiB, GiB, like "64MiB"`, quoteValue(s))}
	if num == "" {
		return 0, bad
	}
	for _, u := range sizeUnits {
		if u.unit != unit {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > (1<<62)/u.bytes {
			return 0, &sizeError{fmt.Sprintf("%s is too large; at most %s", quoteValue(s), FormatSize(wire.MaxMemory))}
		}
		return n * u.bytes, nil
	}
	for _, u := range sizeUnits[2:] {
		l, lu := strings.ToLower(unit), strings.ToLower(u.unit)
		if l == lu || l == lu[:1] || l == lu[:1]+"b" {
			return 0, &sizeError{fmt.Sprintf(`%s is ambiguous; did you mean "%s%s"? sizes use binary units B, KiB, MiB, GiB`, quoteValue(s), num, u.unit)}
		}
	}
	return 0, bad
}

// FormatSize writes a byte count as ParseSize reads it, in the largest
// binary unit that divides it ("64MiB"), or as "N bytes".
func FormatSize(n int64) string {
	for i := len(sizeUnits) - 1; i >= 2; i-- {
		if u := sizeUnits[i]; n != 0 && n%u.bytes == 0 {
			return fmt.Sprintf("%d%s", n/u.bytes, u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
