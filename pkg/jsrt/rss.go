package jsrt

import (
	"bytes"
	"strconv"
	"sync"
	"syscall"
)

// PeakRSSKiB returns this process's peak resident set size (VmHWM) in KiB, or
// 0 if /proc cannot tell. One read of /proc/self/status.
func PeakRSSKiB() int64 { return procStatusKiB("VmHWM:") }

// rssKiB returns this process's current resident set size (VmRSS) in KiB.
func rssKiB() int64 { return procStatusKiB("VmRSS:") }

// procStatus is /proc/self/status, opened once and kept: a confined worker
// may open nothing (Landlock and seccomp forbid it), but it may pread this
// descriptor, opened before it confined itself (Prepare reads it first).
var procStatus struct {
	once sync.Once
	fd   int
}

func statusFD() int {
	procStatus.once.Do(func() {
		fd, err := syscall.Open("/proc/self/status", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		procStatus.fd = fd
	})
	return procStatus.fd
}

// StatusFD opens /proc/self/status if it is not yet open, and returns its
// descriptor, which stays open for the life of the process (-1 if it cannot
// be opened). A process that confines itself calls it first, and allows
// pread on this descriptor alone.
func StatusFD() int { return statusFD() }

// ProcStatus returns the current text of /proc/self/status, read through the
// kept descriptor, or nil.
func ProcStatus() []byte {
	fd := statusFD()
	if fd < 0 {
		return nil
	}
	b := make([]byte, 8<<10) // the file is about 1.5 KiB
	for {
		n, err := syscall.Pread(fd, b, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return nil
		}
		return b[:n]
	}
}

func procStatusKiB(field string) int64 {
	b := ProcStatus()
	if b == nil {
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
