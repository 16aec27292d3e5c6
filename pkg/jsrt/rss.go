package jsrt

import (
	"bytes"
	"os"
	"strconv"
)

// PeakRSSKiB returns this process's peak resident set size (VmHWM) in KiB, or
// 0 if /proc cannot tell. One read of /proc/self/status.
func PeakRSSKiB() int64 { return procStatusKiB("VmHWM:") }

// rssKiB returns this process's current resident set size (VmRSS) in KiB.
func rssKiB() int64 { return procStatusKiB("VmRSS:") }

func procStatusKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	i := bytes.Index(b, []byte(field))
	if i < 0 {
		return 0
	}
	line := b[i+len(field):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(line), []byte("kB")))), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
