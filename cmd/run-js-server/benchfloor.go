package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/run-js-server/run-js-server/pkg/worker"
)

// floorSource is the minimal program the floors are measured with: a
// static Go binary (no cgo, no packages but syscall) that writes one byte
// on the worker's socket as soon as it runs, then echoes what it reads.
const floorSource = `package main

import "syscall"

func main() {
	b := make([]byte, 64)
	if _, err := syscall.Write(3, b[:1]); err != nil {
		syscall.Exit(1)
	}
	for {
		n, err := syscall.Read(3, b)
		if err != nil || n <= 0 {
			syscall.Exit(0)
		}
		if _, err := syscall.Write(3, b[:n]); err != nil {
			syscall.Exit(1)
		}
	}
}
`

// floors are the platform's costs on this machine, measured in the same
// run as the figures they stand under.
type floors struct {
	spawn    time.Duration // spawn → first byte of a minimal static binary, started as a worker is (p50)
	pingPong time.Duration // one 4-byte round trip over the worker's socket (median of batches)
	err      error         // why they could not be measured
	cfg      worker.Config // starts the floor program: the cold runs take a floor sample before each run
	cleanup  func()
}

// measureFloors builds the floor program in a temporary directory (it
// needs the go command) and measures both floors with it.
func measureFloors(samples int, pause time.Duration) floors {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return floors{err: fmt.Errorf("the floors need the go command to build their minimal program: %v", err)}
	}
	dir, err := os.MkdirTemp("", "run-js-floor-")
	if err != nil {
		return floors{err: err}
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module floor\n\ngo 1.22\n"), 0o644); err != nil {
		return floors{err: err}
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(floorSource), 0o644); err != nil {
		return floors{err: err}
	}
	bin := filepath.Join(dir, "floor")
	build := exec.Command(goCmd, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		return floors{err: fmt.Errorf("build the floor program: %v: %s", err, out)}
	}
	cfg := worker.Config{Command: []string{bin}}
	f := floors{cfg: cfg, cleanup: func() { os.RemoveAll(dir) }}
	var spawns []time.Duration
	for i := 0; i < samples; i++ {
		time.Sleep(pause)
		d, err := worker.SpawnFloor(cfg)
		if err != nil {
			return floors{err: err}
		}
		spawns = append(spawns, d)
	}
	f.spawn = pct(spawns, 50)
	var pp []time.Duration
	for i := 0; i < 5; i++ {
		d, err := worker.PingPongFloor(cfg, 2000)
		if err != nil {
			return floors{err: err}
		}
		pp = append(pp, d)
	}
	f.pingPong = pct(pp, 50)
	keep = true
	return f
}

// ratio is x / floor as "2.4×", or "–" without a floor.
func ratio(x, floor time.Duration) string {
	if floor <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", float64(x)/float64(floor))
}

// met is ✓ or ✗ for a figure against its goal.
func met(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}
