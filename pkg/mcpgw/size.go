package mcpgw

// This file holds the one size syntax of the gateway, for the config's
// limits and the CLI's --memory.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// sizeUnits are the units a size string may use: binary only, since
// "64MB" is read as 64 MiB as often as 64,000,000 bytes.
var sizeUnits = []struct {
	unit  string
	bytes int64
}{
	{"", 1}, {"B", 1}, {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
}

// parseSize parses "64MiB", "64 MiB", "512KiB" or "1048576", or says what is
// wrong with it.
func parseSize(s string) (int64, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	num, unit := s[:i], strings.TrimPrefix(s[i:], " ")
	bad := fmt.Sprintf(`%s is not a size; write a whole number with one of B, KiB, MiB, GiB, like "64MiB"`, quoteValue(s))
	if num == "" {
		return 0, bad
	}
	for _, u := range sizeUnits {
		if u.unit != unit {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > (1<<62)/u.bytes {
			return 0, fmt.Sprintf("%s is too large; at most %s", quoteValue(s), formatSize(wire.MaxMemory))
		}
		return n * u.bytes, ""
	}
	for _, u := range sizeUnits[2:] {
		l, lu := strings.ToLower(unit), strings.ToLower(u.unit)
		if l == lu || l == lu[:1] || l == lu[:1]+"b" {
			return 0, fmt.Sprintf(`%s is ambiguous; did you mean "%s%s"? sizes use binary units B, KiB, MiB, GiB`, quoteValue(s), num, u.unit)
		}
	}
	return 0, bad
}

// formatSize writes a byte count in the largest binary unit that divides it.
func formatSize(n int64) string {
	for i := len(sizeUnits) - 1; i >= 2; i-- {
		if u := sizeUnits[i]; n != 0 && n%u.bytes == 0 {
			return fmt.Sprintf("%d%s", n/u.bytes, u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
