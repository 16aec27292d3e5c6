package mcpgw

// This file holds a stdio server's process: starting it in its own process
// group, logging its stderr line by line, and stopping it (stdin closed,
// then SIGKILL to the group after stopWait).

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of a stdio server's process, each with its reason.
const (
	// stderrLineMax: a downstream's stderr is logged line by line, each cut
	// to this many bytes, so a flood costs log lines, never our memory.
	stderrLineMax = 2048
	// stopWait bounds waiting for a stdio server to exit after its stdin
	// closed, before its process group is killed.
	stopWait = 2 * time.Second
)

// startStdio starts a stdio server in its own process group, with its stderr
// logged line by line under its name (never on our stdout, which carries
// JSON-RPC).
func (d *downstream) startStdio() (mcp.Transport, *serverProc, error) {
	cmd := exec.Command(d.cfg.Command, d.cfg.Args...)
	cmd.Env = os.Environ()
	for k, v := range d.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = d.cfg.Cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", d.cfg.Command, err)
	}
	go d.logStderr(stderr)
	return &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: d.maxResult}, &serverProc{cmd: cmd}, nil
}

func (d *downstream) logStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, stderrLineMax)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 {
			d.log.Info("downstream stderr", "server", d.cfg.Name, "line", string(line))
		}
		for isPrefix && err == nil { // the rest of an over-long line: dropped
			_, isPrefix, err = br.ReadLine()
		}
		if err != nil {
			return
		}
	}
}

// serverProc is a stdio server's process.
type serverProc struct {
	cmd  *exec.Cmd
	once sync.Once
}

// stop waits up to stopWait for the server to exit (its stdin is closed with
// its session), then kills its process group, and reaps it. It is safe to
// call more than once and concurrently; every call returns after the reap.
func (p *serverProc) stop() {
	p.once.Do(func() {
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
			return
		case <-time.After(stopWait):
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
}
