package worker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// WorkerFD is the descriptor number of the socket in a worker process: the
// first of exec.Cmd.ExtraFiles.
const WorkerFD = 3

// proc is one spawned worker process, before supervision: the parent's end of
// the socket, the process, its private directory and the read end of its
// stderr.
type proc struct {
	cmd    *exec.Cmd
	conn   net.Conn
	dir    string
	stderr *os.File

	// catalog is the catalog the worker was sent to hold (a spare), nil
	// for none: a run with this catalog then starts without sending it.
	catalog *wire.Catalog
}

// spawn starts one worker process: a Unix socketpair whose parent end is
// close-on-exec and whose child end becomes fd 3; nothing else inherited (Go
// opens every descriptor close-on-exec, and the worker closes all above 3 at
// start); an empty environment; a fresh private working directory; its own
// process group; SIGKILL when this thread of the parent dies; the
// confinement setting on its command line (and, with cfg.Namespaces, new
// namespaces: namespaces_linux.go). On any error everything made so far is
// undone.
func spawn(cfg Config) (p *proc, err error) {
	command := append(append([]string(nil), cfg.Command...), confinementFlag, cfg.Confinement.String())
	parentEnd, childEnd, err := socketpair()
	if err != nil {
		return nil, fmt.Errorf("%w: socketpair: %v", ErrSpawn, err)
	}
	defer childEnd.Close() // the child has its copy after Start
	defer func() {
		if err != nil {
			parentEnd.Close()
		}
	}()

	dir, err := os.MkdirTemp(cfg.TempDir, "run-js-")
	if err != nil {
		return nil, fmt.Errorf("%w: private directory: %v", ErrSpawn, err)
	}
	defer func() {
		if err != nil {
			_ = removeAll(dir)
		}
	}()

	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: stderr pipe: %v", ErrSpawn, err)
	}
	defer stderrW.Close()
	defer func() {
		if err != nil {
			stderrR.Close()
		}
	}()

	newCmd := func(namespaces bool) *exec.Cmd {
		cmd := exec.Command(command[0], command[1:]...)
		cmd.Env = []string{} // empty, not nil: nil would inherit ours
		cmd.Dir = dir
		cmd.Stdin = nil  // /dev/null
		cmd.Stdout = nil // /dev/null: the socket carries everything
		cmd.Stderr = stderrW
		cmd.ExtraFiles = []*os.File{childEnd}
		cmd.SysProcAttr = workerProcAttr()
		if namespaces {
			withNamespaces(cmd.SysProcAttr)
		}
		return cmd
	}
	namespaces := cfg.Namespaces && cfg.Confinement != ConfineOff
	cmd := newCmd(namespaces)
	err = cmd.Start()
	if err != nil && namespaces && cfg.Confinement != ConfineStrict {
		// No user namespaces here: best effort goes on without them (the
		// worker's report says so).
		cmd = newCmd(false)
		err = cmd.Start()
	}
	if err != nil && namespaces && cfg.Confinement == ConfineStrict {
		return nil, fmt.Errorf("%w: start %s in new namespaces (strict confinement; does this kernel allow unprivileged user namespaces? see user.max_user_namespaces): %v", ErrSpawn, command[0], err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: start %s: %v", ErrSpawn, command[0], err)
	}
	// From here a failure must kill and reap what we started.
	conn, err := net.FileConn(parentEnd)
	parentEnd.Close() // FileConn dup'ed it
	if err != nil {
		killGroup(cmd.Process.Pid)
		_ = cmd.Wait()
		return nil, fmt.Errorf("%w: socket: %v", ErrSpawn, err)
	}
	return &proc{cmd: cmd, conn: conn, dir: dir, stderr: stderrR}, nil
}

// ErrSpawn means a worker process could not be started.
var ErrSpawn = errors.New("cannot start worker")
