package mcpgw

// This file holds a stdio server's process: starting it in its own process
// group with the environment envpolicy.go gives it, logging its stderr line
// by line under its name (rate limited, the last lines kept for reasons),
// telling how it ended, and stopping it with a ladder.

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Limits of a stdio server's process, each with its reason.
const (
	// stderrLineMax: a downstream's stderr is logged line by line, each cut
	// to this many bytes, so a flood costs log lines, never our memory.
	stderrLineMax = 2048
	// stderrTailLines is how many of its last stderr lines a server's
	// reasons quote: a Node or Python error and the line or two before it.
	stderrTailLines = 5
	// stderrLinesPerSecond and stderrBurst bound how much of a server's
	// stderr reaches our log: a chatty server is heard, a flooding one is
	// counted.
	stderrLinesPerSecond = 50
	stderrBurst          = 200
)

// The steps of stopping a stdio server (stop), each bounded. Mutable for
// testing.
var (
	// stdinGrace: after its stdin closes, a well-behaved server exits (the
	// MCP spec's first step of shutdown).
	stdinGrace = 2 * time.Second
	// termGrace: after SIGTERM to its group.
	termGrace = 2 * time.Second
	// killWait: after SIGKILL to its group. SIGKILL cannot be caught; only a
	// process stuck in the kernel outlives this.
	killWait = 5 * time.Second
	// stderrDrainWait bounds reading what an exited server left on its
	// stderr: a descendant outside its group may hold the pipe open.
	stderrDrainWait = time.Second
)

// serverProc is a stdio server's process and our ends of its pipes. It owns
// the process: stop is the only thing that reaps it.
type serverProc struct {
	name   string
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File // our write end
	stdout *os.File // our read end
	exited chan struct{}
	stderr chan struct{} // closed when its stderr reached EOF

	tailMu sync.Mutex
	tail   []string // its last stderr lines, scrubbed

	once    sync.Once
	stopErr error
	state   *os.ProcessState // after stop
	how     string           // after stop: how it ended, by us or by itself
}

// startStdio starts the server's process in its own process group, with our
// own pipes for its stdin, stdout and stderr (so that reaping never races the
// readers), and starts its stderr logger and its exit watcher.
func (d *downstream) startStdio() (*serverProc, error) {
	cmd := exec.Command(d.cfg.Command, d.cfg.Args...)
	cmd.Env = serverEnviron(d.cfg, d.lookupEnv)
	cmd.Dir = d.cfg.Cwd
	// Pdeathsig: a server whose gateway died gets SIGTERM, though most
	// exit at their stdin's EOF anyway; it reaches only the direct child
	// (npx, a shell), whose own children see their stdin close.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	var pipes []*os.File // read and write ends of stdin, stdout, stderr
	for range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range pipes {
				f.Close()
			}
			return nil, err
		}
		pipes = append(pipes, r, w)
	}
	stdinR, stdinW := pipes[0], pipes[1]
	stdoutR, stdoutW := pipes[2], pipes[3]
	stderrR, stderrW := pipes[4], pipes[5]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	err := cmd.Start()
	// Their ends are theirs now (or no one's): close our copies.
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		stderrR.Close()
		return nil, fmt.Errorf("cannot start %s: %w", d.cfg.Command, err)
	}
	p := &serverProc{name: d.cfg.Name, cmd: cmd, pid: cmd.Process.Pid, stdin: stdinW, stdout: stdoutR,
		exited: make(chan struct{}), stderr: make(chan struct{})}
	go p.watchExit()
	go p.readStderr(stderrR, d.log, d.scrub, d.stderrLimit)
	return p, nil
}

// watchExit closes exited when the process has exited, without reaping it:
// its pid, and so its process group id, stay reserved until stop has swept
// the group and reaped.
func (p *serverProc) watchExit() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	close(p.exited)
}

// readStderr logs the server's stderr line by line, prefixed with its name,
// at Info (the default level), within the rate limit, and keeps the last
// stderrTailLines. Over-long lines are cut at stderrLineMax. It returns at
// EOF: when the server and everything that holds the pipe have gone.
func (p *serverProc) readStderr(f *os.File, log *slog.Logger, scrub func(string) string, limit *logLimiter) {
	defer close(p.stderr)
	defer f.Close()
	br := bufio.NewReaderSize(f, stderrLineMax)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || (err == nil && !isPrefix) {
			text := scrub(strings.TrimRight(string(line), "\r"))
			if isPrefix {
				text += " …"
			}
			p.tailMu.Lock()
			p.tail = append(p.tail, text)
			if len(p.tail) > stderrTailLines {
				p.tail = p.tail[1:]
			}
			p.tailMu.Unlock()
			if strings.TrimSpace(text) == "" {
				// a blank line: kept (the tail skips it), not logged
			} else if ok, dropped := limit.allow(time.Now()); ok {
				if dropped > 0 {
					log.Info(fmt.Sprintf("%s: (%d stderr lines not logged: more than %d a second)", p.name, dropped, stderrLinesPerSecond), "server", p.name, "stream", "stderr")
				}
				log.Info(p.name+": "+text, "server", p.name, "stream", "stderr")
			}
		}
		for isPrefix && err == nil { // the rest of an over-long line: dropped
			_, isPrefix, err = br.ReadLine()
		}
		if err != nil {
			return
		}
	}
}

// stderrTail is the server's last stderr lines, "" when it wrote none.
func (p *serverProc) stderrTail() string {
	p.tailMu.Lock()
	defer p.tailMu.Unlock()
	var out []string
	for _, l := range p.tail {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, " | ")
}

// hasExited reports, without blocking, whether the process has exited.
func (p *serverProc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stop ends the server with the ladder of the MCP spec and of our workers:
// close its stdin and wait stdinGrace; SIGTERM its process group and wait
// termGrace; SIGKILL the group and wait killWait. Once it has exited, the
// group is swept with SIGKILL (its strays), its stderr is drained (within
// stderrDrainWait), and then it is reaped. An error names its pid when it
// did not exit even after SIGKILL (a goroutine then reaps it whenever it
// goes). stop is safe to call more than once and concurrently: every call
// returns after the first one has finished, with its result.
func (p *serverProc) stop() error {
	p.once.Do(func() {
		p.stdin.Close()
		how := ""
		steps := []struct {
			sig  syscall.Signal
			wait time.Duration
			note string
		}{
			{0, stdinGrace, ""},
			{syscall.SIGTERM, termGrace, "it did not exit when its stdin closed, so it was sent SIGTERM"},
			{syscall.SIGKILL, killWait, "it did not exit on SIGTERM, so its process group was killed"},
		}
		done := false
		for _, st := range steps {
			if st.sig != 0 {
				_ = syscall.Kill(-p.pid, st.sig)
				how = st.note
			}
			select {
			case <-p.exited:
				done = true
			case <-time.After(st.wait):
			}
			if done {
				break
			}
		}
		if !done {
			p.stopErr = fmt.Errorf("server %s (pid %d) did not exit within %s of SIGKILL to its process group", p.name, p.pid, killWait)
			p.how = p.stopErr.Error()
			go func() { _ = p.cmd.Wait(); p.stdout.Close() }()
			return
		}
		_ = syscall.Kill(-p.pid, syscall.SIGKILL) // strays of its group, if any
		select {
		case <-p.stderr:
		case <-time.After(stderrDrainWait):
			// A descendant outside its group holds the pipe; its reader
			// goroutine ends when that one goes.
		}
		_ = p.cmd.Wait() // reaps: it has exited
		p.stdout.Close()
		p.state = p.cmd.ProcessState
		p.how = how
	})
	return p.stopErr
}

// ended says how the process ended, for a reason: its exit status or
// signal, what the ladder had to do, and its last stderr lines. Call after
// stop.
func (p *serverProc) ended() string { return p.endedStatus() + p.tailNote() }

// endedStatus is ended without the stderr lines.
func (p *serverProc) endedStatus() string {
	st := p.state
	if st == nil {
		return p.how
	}
	var s string
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		s = "was killed by signal " + unix.SignalName(ws.Signal())
	} else {
		s = fmt.Sprintf("exited with status %d", st.ExitCode())
	}
	if p.how != "" {
		s += " (" + p.how + ")"
	}
	return s
}

// tailNote is "; its stderr ends: LINES", or "" when it wrote none.
func (p *serverProc) tailNote() string {
	if tail := p.stderrTail(); tail != "" {
		return "; its stderr ends: " + tail
	}
	return ""
}
