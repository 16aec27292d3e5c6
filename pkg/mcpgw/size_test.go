package mcpgw

import (
	"errors"
	"strings"
	"testing"
)

// TestParseSize: the one size rule of the config and the CLI. Binary units
// written exactly; anything that may be read two ways is refused with the
// size it probably means.
func TestParseSize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		err  string // "" when it parses; else in the error
	}{
		{name: "MiB", in: "64MiB", want: 64 << 20},
		{name: "GiB", in: "1GiB", want: 1 << 30},
		{name: "one space", in: "512 KiB", want: 512 << 10},
		{name: "bytes", in: "4194304", want: 4 << 20},
		{name: "B", in: "100B", want: 100},
		{name: "zero is a size", in: "0", want: 0},
		{name: "decimal MB", in: "64MB", err: `"64MB" is ambiguous; did you mean "64MiB"?`},
		{name: "bare m", in: "64m", err: `"64m" is ambiguous; did you mean "64MiB"?`},
		{name: "lower gb", in: "1gb", err: `"1gb" is ambiguous; did you mean "1GiB"?`},
		{name: "lower kib", in: "8kib", err: `"8kib" is ambiguous; did you mean "8KiB"?`},
		{name: "lower b", in: "100b", err: `"100b" is not a size`},
		{name: "empty", in: "", err: `"" is not a size`},
		{name: "unit alone", in: "MiB", err: `"MiB" is not a size`},
		{name: "negative", in: "-1MiB", err: `"-1MiB" is not a size`},
		{name: "fraction", in: "1.5GiB", err: `"1.5GiB" is not a size`},
		{name: "two spaces", in: "1  GiB", err: `is not a size`},
		{name: "leading space", in: " 1GiB", err: `is not a size`},
		{name: "overflow", in: "9999999999999GiB", err: `"9999999999999GiB" is too large; at most 2GiB`},
		{name: "digits past int64", in: "99999999999999999999999", err: "is too large"},
		{name: "long text is cut", in: strings.Repeat("x", 500), err: `is not a size`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if tt.err == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrBadSize) || !strings.Contains(err.Error(), tt.err) || got != 0 {
				t.Fatalf("ParseSize(%q) = %d, %v; want an ErrBadSize holding %q", tt.in, got, err, tt.err)
			}
			if len(err.Error()) > 200 {
				t.Fatalf("ParseSize(%q): error of %d bytes; the value must be cut", tt.in, len(err.Error()))
			}
		})
	}
}

// TestFormatSizeRoundTrip: what FormatSize writes, ParseSize reads back.
func TestFormatSizeRoundTrip(t *testing.T) {
	for _, n := range []int64{1 << 10, 4 << 20, 64 << 20, 3 << 30, 1536 << 10} {
		s := FormatSize(n)
		if got, err := ParseSize(s); err != nil || got != n {
			t.Errorf("FormatSize(%d) = %q, which ParseSize reads as %d, %v", n, s, got, err)
		}
	}
	if got := FormatSize(1000); got != "1000 bytes" {
		t.Errorf("FormatSize(1000) = %q", got)
	}
}
