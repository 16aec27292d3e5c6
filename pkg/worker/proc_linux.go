package worker

// This file holds the parent side's process calls: the socketpair and the
// process attributes a worker starts with, waiting for an exit without
// reaping, probing a spare, killing a process group and removing a private
// directory. Reaping itself is exec.Cmd.Wait, called by the supervisor and
// the Launcher.

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// socketpair makes the parent's and the child's ends of a worker's Unix
// stream socket, both close-on-exec (exec.Cmd.ExtraFiles passes the child's
// end on as fd 3).
func socketpair() (parentEnd, childEnd *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "worker"), os.NewFile(uintptr(fds[1]), "parent"), nil
}

// workerProcAttr is how a worker process starts: in its own process group
// (so killGroup reaches whatever it starts), with SIGKILL when the parent
// goes.
//
// Pdeathsig fires when the spawning *thread* exits (golang/go#27505), not
// only the process: never spawn from a goroutine that locks its thread and
// then exits. Go's own threads do not exit otherwise. The worker also exits
// at its socket's EOF, which covers the parent's death too.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitExit blocks until the process pid has exited, without reaping it: the
// zombie keeps its pid, and so its process group id, reserved until the
// caller has swept the group with killGroup and reaped with exec.Cmd.Wait.
// An error means the process cannot be waited on (it is not our child).
func waitExit(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// exited reports whether the process pid has exited (or cannot be waited
// on), without blocking and without reaping it: a spare that died while it
// waited is not handed to a run.
func exited(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != nil || info.Signo != 0
}

// killGroup sends SIGKILL to the process group pgid. An empty group is not an
// error: killing is idempotent.
func killGroup(pgid int) {
	_ = unix.Kill(-pgid, unix.SIGKILL)
}

// removeAll removes a worker's private directory.
func removeAll(dir string) error { return os.RemoveAll(dir) }
