package worker

import (
	"os"

	"golang.org/x/sys/unix"
)

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

// killGroup sends SIGKILL to the process group pgid. An empty group is not an
// error: killing is idempotent.
func killGroup(pgid int) {
	_ = unix.Kill(-pgid, unix.SIGKILL)
}

// removeAll removes a worker's private directory.
func removeAll(dir string) error { return os.RemoveAll(dir) }
