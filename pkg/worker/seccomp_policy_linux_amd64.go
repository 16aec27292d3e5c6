package worker

// This file is the worker's seccomp policy on linux/amd64: the system calls a
// worker may make once it has confined itself (while it waits for its start
// frame, runs a program, and ends), each with why. Everything else traps: the
// process dies by SIGSYS and the parent ends the run crashed, rule
// confinement, naming the call. The policy is compiled by compileSeccomp
// (seccomp_rules_linux.go); seccomp_policy_linux_test.go checks every entry.
//
// What the worker does after confinement: it reads and writes its socket
// (fd 3), writes stderr, reads /proc/self/status through the descriptor it
// opened before (peak RSS), allocates (QuickJS through glibc malloc; the Go
// runtime), sleeps and wakes threads (futex), and the Go runtime preempts its
// own threads with signals and may start new ones (pthread_create through
// cgo) at any time. Nothing else: no file is opened, no socket made, no
// process started.

import "golang.org/x/sys/unix"

// auditArchX8664 is AUDIT_ARCH_X86_64: the filter kills any call made
// through another ABI (int 0x80 i386 calls carry AUDIT_ARCH_I386).
const auditArchX8664 = 0xc000003e

// seccompArch is the architecture token this build's filter accepts.
const seccompArch = auditArchX8664

// The flags of a new thread that clone must carry: a thread of this process
// sharing its memory. Any namespace flag, or a missing CLONE_THREAD (a new
// process: fork), traps.
const (
	cloneCheckedFlags = unix.CLONE_THREAD | unix.CLONE_VM | unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP |
		unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
		unix.CLONE_UNTRACED | unix.CLONE_PTRACE | unix.CLONE_VFORK
	cloneThreadFlags = unix.CLONE_THREAD | unix.CLONE_VM
)

// seccompPolicy is the allowlist, grouped for the reader; the compiler
// sorts it for its search.
var seccompPolicy = append([]sysRule{
	// Checked arguments.
	{nr: unix.SYS_MMAP, name: "mmap", why: "memory for QuickJS (glibc malloc), the Go heap and thread stacks; never executable: QuickJS-ng has no JIT",
		allowIf: []argCheck{{arg: 2, mask: unix.PROT_EXEC, values: []uint32{0}}}},
	{nr: unix.SYS_MPROTECT, name: "mprotect", why: "glibc grows its malloc arenas and sets thread-stack guard pages; never to make memory executable",
		allowIf: []argCheck{{arg: 2, mask: unix.PROT_EXEC, values: []uint32{0}}}},
	{nr: unix.SYS_CLONE, name: "clone", why: "the Go runtime starts threads (pthread_create) at any time; only a thread of this process, never a new process or namespace",
		allowIf: []argCheck{{arg: 0, mask: cloneCheckedFlags, values: []uint32{cloneThreadFlags}}}},
	{nr: unix.SYS_CLONE3, name: "clone3", errno: unix.ENOSYS, why: "its flags sit behind a pointer a filter cannot read: answered ENOSYS, so glibc falls back to clone, whose flags are checked"},
	{nr: unix.SYS_TGKILL, name: "tgkill", why: "the Go runtime preempts its own threads with SIGURG, and a crash raises its signal; only to this process's threads",
		allowIf: []argCheck{{arg: 0, dyn: dynPID}}},
	{nr: unix.SYS_KILL, name: "kill", why: "the Go runtime's crash path signals its own process; no other process",
		allowIf: []argCheck{{arg: 0, dyn: dynPID}}},
	{nr: unix.SYS_RT_SIGACTION, name: "rt_sigaction", why: "the Go runtime's and glibc's crash paths reset a handler before re-raising; SIGSYS's handler (the report of a forbidden call) may never be changed: that call kills the process",
		killIf: &argCheck{arg: 0, values: []uint32{uint32(unix.SIGSYS)}}},
	{nr: unix.SYS_PREAD64, name: "pread64", why: "the peak-RSS figure of each run is read from /proc/self/status through the descriptor opened before confinement; no other descriptor",
		allowIf: []argCheck{{arg: 0, dyn: dynStatusFD}}},
	{nr: unix.SYS_SETSOCKOPT, name: "setsockopt", why: "the worker sets its socket's receive (and send) timeout once its run starts; no other option",
		allowIf: []argCheck{{arg: 1, values: []uint32{unix.SOL_SOCKET}}, {arg: 2, values: []uint32{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO}}}},

	// The socket to the parent and stderr.
	{nr: unix.SYS_READ, name: "read", why: "frames from the parent (fd 3)"},
	{nr: unix.SYS_RECVFROM, name: "recvfrom", why: "frames from the parent, blocking or not (fd 3)"},
	{nr: unix.SYS_WRITE, name: "write", why: "frames to the parent (fd 3), crash reports to stderr"},
	{nr: unix.SYS_EPOLL_PWAIT, name: "epoll_pwait", why: "the Go runtime's poller, made before confinement, is polled by its scheduler"},
	{nr: unix.SYS_CLOSE, name: "close", why: "a garbage collection may close a descriptor whose file it frees; closing can only take from the worker"},

	// Memory.
	{nr: unix.SYS_BRK, name: "brk", why: "glibc malloc's main arena (QuickJS's heap)"},
	{nr: unix.SYS_MUNMAP, name: "munmap", why: "glibc and the Go runtime give memory back"},
	{nr: unix.SYS_MREMAP, name: "mremap", why: "glibc realloc of large blocks (QuickJS strings and arrays)"},
	{nr: unix.SYS_MADVISE, name: "madvise", why: "the Go scavenger and glibc free return pages; thread-stack caches"},

	// Threads, time and signals.
	{nr: unix.SYS_FUTEX, name: "futex", why: "the Go runtime parks and wakes threads; glibc locks"},
	{nr: unix.SYS_NANOSLEEP, name: "nanosleep", why: "the Go runtime's sysmon and spinning threads sleep"},
	{nr: unix.SYS_CLOCK_NANOSLEEP, name: "clock_nanosleep", why: "glibc's sleeps (usleep)"},
	{nr: unix.SYS_SCHED_YIELD, name: "sched_yield", why: "the Go runtime yields while spinning"},
	{nr: unix.SYS_CLOCK_GETTIME, name: "clock_gettime", why: "time.Now and Date when the vDSO cannot answer (it usually does, without a system call)"},
	{nr: unix.SYS_GETTIMEOFDAY, name: "gettimeofday", why: "the same, through glibc"},
	{nr: unix.SYS_GETPID, name: "getpid", why: "the Go runtime addresses its own signals"},
	{nr: unix.SYS_GETTID, name: "gettid", why: "the Go runtime and glibc identify the current thread"},
	{nr: unix.SYS_RT_SIGPROCMASK, name: "rt_sigprocmask", why: "the Go runtime and glibc mask signals around thread start and in handlers"},
	{nr: unix.SYS_RT_SIGRETURN, name: "rt_sigreturn", why: "every signal handler returns through it (the Go runtime's preemption)"},
	{nr: unix.SYS_SIGALTSTACK, name: "sigaltstack", why: "every new Go thread sets its signal stack"},
	{nr: unix.SYS_SET_ROBUST_LIST, name: "set_robust_list", why: "glibc sets it up in every new thread"},
	{nr: unix.SYS_RSEQ, name: "rseq", why: "glibc registers restartable sequences in every new thread"},
	{nr: unix.SYS_SCHED_GETAFFINITY, name: "sched_getaffinity", why: "glibc and the Go runtime read the CPU set when threads start"},
	{nr: unix.SYS_GETRANDOM, name: "getrandom", why: "the Go runtime reseeds its random source when the vDSO cannot"},
	{nr: unix.SYS_RESTART_SYSCALL, name: "restart_syscall", why: "the kernel restarts a sleep interrupted by a signal"},
	{nr: unix.SYS_EXIT, name: "exit", why: "a thread ends (a Go thread locked to a goroutine that exits)"},
	{nr: unix.SYS_EXIT_GROUP, name: "exit_group", why: "the worker ends after its end frame"},
}, raceSyscalls...)

// deniedOnPurpose lists system calls the policy leaves out because a worker
// must never make them, each with the reason. It is documentation, checked
// by a test (none of them is in seccompPolicy), and it names them in a crash
// report.
var deniedOnPurpose = []sysRule{
	{nr: unix.SYS_OPEN, name: "open", why: "no file is opened after confinement"},
	{nr: unix.SYS_OPENAT, name: "openat", why: "no file is opened after confinement"},
	{nr: unix.SYS_OPENAT2, name: "openat2", why: "no file is opened after confinement"},
	{nr: unix.SYS_CREAT, name: "creat", why: "no file is created"},
	{nr: unix.SYS_SOCKET, name: "socket", why: "the worker's only socket is the one to its parent"},
	{nr: unix.SYS_SOCKETPAIR, name: "socketpair", why: "no new sockets"},
	{nr: unix.SYS_CONNECT, name: "connect", why: "the worker reaches nothing but its parent"},
	{nr: unix.SYS_BIND, name: "bind", why: "the worker serves nothing"},
	{nr: unix.SYS_LISTEN, name: "listen", why: "the worker serves nothing"},
	{nr: unix.SYS_ACCEPT4, name: "accept4", why: "the worker serves nothing"},
	{nr: unix.SYS_SENDTO, name: "sendto", why: "frames go out with write"},
	{nr: unix.SYS_SENDMSG, name: "sendmsg", why: "it could pass descriptors"},
	{nr: unix.SYS_RECVMSG, name: "recvmsg", why: "it could receive descriptors"},
	{nr: unix.SYS_EXECVE, name: "execve", why: "the worker starts no program"},
	{nr: unix.SYS_EXECVEAT, name: "execveat", why: "the worker starts no program"},
	{nr: unix.SYS_FORK, name: "fork", why: "the worker starts no process"},
	{nr: unix.SYS_VFORK, name: "vfork", why: "the worker starts no process"},
	{nr: unix.SYS_PTRACE, name: "ptrace", why: "no debugging of any process"},
	{nr: unix.SYS_PROCESS_VM_READV, name: "process_vm_readv", why: "no access to another process's memory"},
	{nr: unix.SYS_PROCESS_VM_WRITEV, name: "process_vm_writev", why: "no access to another process's memory"},
	{nr: unix.SYS_PIDFD_OPEN, name: "pidfd_open", why: "no handle on another process"},
	{nr: unix.SYS_PIDFD_GETFD, name: "pidfd_getfd", why: "no stealing of another process's descriptors"},
	{nr: unix.SYS_IO_URING_SETUP, name: "io_uring_setup", why: "io_uring runs operations the filter never sees"},
	{nr: unix.SYS_IO_URING_ENTER, name: "io_uring_enter", why: "io_uring runs operations the filter never sees"},
	{nr: unix.SYS_IO_URING_REGISTER, name: "io_uring_register", why: "io_uring runs operations the filter never sees"},
	{nr: unix.SYS_BPF, name: "bpf", why: "a large kernel attack surface"},
	{nr: unix.SYS_USERFAULTFD, name: "userfaultfd", why: "a classic aid to kernel exploits (pausing the kernel mid-copy)"},
	{nr: unix.SYS_KEYCTL, name: "keyctl", why: "no access to kernel keyrings"},
	{nr: unix.SYS_ADD_KEY, name: "add_key", why: "no access to kernel keyrings"},
	{nr: unix.SYS_REQUEST_KEY, name: "request_key", why: "no access to kernel keyrings"},
	{nr: unix.SYS_UNSHARE, name: "unshare", why: "no new namespaces (user namespaces widen the kernel's attack surface)"},
	{nr: unix.SYS_SETNS, name: "setns", why: "no entering other namespaces"},
	{nr: unix.SYS_MOUNT, name: "mount", why: "no mounts"},
	{nr: unix.SYS_PERSONALITY, name: "personality", why: "READ_IMPLIES_EXEC would make readable memory executable"},
	{nr: unix.SYS_PRCTL, name: "prctl", why: "the worker's attributes (dumpable, no_new_privs, ...) are fixed once confined"},
	{nr: unix.SYS_SECCOMP, name: "seccomp", why: "the filter is fixed once installed"},
	{nr: unix.SYS_PRLIMIT64, name: "prlimit64", why: "the limits are fixed once set"},
	{nr: unix.SYS_SETRLIMIT, name: "setrlimit", why: "the limits are fixed once set"},
	{nr: unix.SYS_PKEY_MPROTECT, name: "pkey_mprotect", why: "an mprotect whose protection the filter does not check"},
	{nr: unix.SYS_MEMFD_CREATE, name: "memfd_create", why: "no new descriptors"},
	{nr: unix.SYS_IOCTL, name: "ioctl", why: "no device control"},
	{nr: unix.SYS_PERF_EVENT_OPEN, name: "perf_event_open", why: "a large kernel attack surface"},
	{nr: unix.SYS_DUP, name: "dup", why: "no new descriptors"},
	{nr: unix.SYS_DUP3, name: "dup3", why: "no new descriptors"},
	{nr: unix.SYS_FCNTL, name: "fcntl", why: "no new descriptors (F_DUPFD) or locks"},
	{nr: unix.SYS_SHMGET, name: "shmget", why: "no System V IPC"},
	{nr: unix.SYS_MSGGET, name: "msgget", why: "no System V IPC"},
	{nr: unix.SYS_SEMGET, name: "semget", why: "no System V IPC"},
	{nr: unix.SYS_SETUID, name: "setuid", why: "no change of identity"},
	{nr: unix.SYS_CAPSET, name: "capset", why: "no change of capabilities"},
	{nr: unix.SYS_CHDIR, name: "chdir", why: "no file system access"},
	{nr: unix.SYS_GETDENTS64, name: "getdents64", why: "no file system access"},
	{nr: unix.SYS_UNAME, name: "uname", why: "nothing about the host"},
}
