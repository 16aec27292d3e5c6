package worker

// This file is the namespaces layer, made by the parent at spawn: new user,
// network, IPC, UTS and mount namespaces, the worker's uid and gid mapped to
// the parent's. Inside, the worker has no network but a down loopback, no
// System V IPC of the host, and (after the constructor drops them) no
// capabilities even in its own user namespace. It is off unless
// Config.Namespaces: seccomp and Landlock already deny what it hides, and it
// adds 0.3-0.9 ms to each spawn (BENCHMARKS.md).

import (
	"os"
	"syscall"
)

// namespaceFlags are the namespaces a worker gets.
const namespaceFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWNS

// withNamespaces asks for the namespaces in attr. The uid and gid inside are
// the parent's, so the worker's private directory and its socket stay its
// own; setgroups is denied, as unprivileged user namespaces require.
func withNamespaces(attr *syscall.SysProcAttr) {
	attr.Cloneflags |= namespaceFlags
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
}
