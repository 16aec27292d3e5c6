package worker

// The attacking worker: the test binary started with --mode attack-LAYERS
// confines itself like a real worker (all layers, or only the ones named, to
// show that each holds alone), says hello, reads its start frame, and then,
// as native code that escaped the engine would, makes the system calls that
// the run's input names. It ends with the result of the call (an errno) as
// its returned value, unless the kernel killed it first.

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/run-js-server/run-js-server/pkg/jsrt"
	"github.com/run-js-server/run-js-server/pkg/wire"
)

// attackInput is the run's input: the attack and what it aims at.
type attackInput struct {
	Attack   string `json:"attack"`
	Secret   string `json:"secret"`   // a file whose content must never leave
	TCP      string `json:"tcp"`      // host:port of a listener the test counts
	TCPPort  int    `json:"tcpPort"`  // its port
	Abstract string `json:"abstract"` // the name of an abstract unix listener
	Parent   int    `json:"parent"`   // the test process
}

// heldFileName is a file the attacking worker opens for writing before it
// confines itself: what RLIMIT_FSIZE must stop if code ever held such a
// descriptor.
const heldFileName = "held-before-confinement"

func attackWorker(mode string) {
	fd := WorkerFD
	if mode == "attack-liar" {
		liar()
	}
	closeInherited(fd)
	held, _ := unix.Open(heldFileName, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	jsrt.Prepare() // the threads and memory of a real worker
	mask := allLayers
	switch strings.TrimPrefix(mode, "attack-") {
	case "landlock":
		mask = maskLandlock
	case "rlimits":
		mask = maskRlimits
	case "none":
		mask = 0
	}
	setting, _ := confinementFromArgs(os.Args)
	t0 := time.Now()
	report, ok := confineLayers(setting, mask)
	took := time.Since(t0)
	h := &childHost{fd: fd, max: wire.MaxStartFrame}
	h.queueFrame(wire.TypeHello, wire.Hello{Protocol: wire.ProtocolVersion, PID: unix.Getpid(), Confinement: report}, nil)
	h.flush()
	if !ok {
		exit(exitConfinement)
	}
	var frame wire.Frame
	for {
		f, ok := h.next()
		if ok {
			frame = f
			break
		}
		h.recv(true)
	}
	var start wire.Start
	if frame.Decode(&start) != nil {
		exit(exitBadStart)
	}
	var in attackInput
	_ = json.Unmarshal(start.Input, &in)
	result := attack(in, held)
	if in.Attack == "time-confinement" {
		// Not an attack: how long confining took, in this process.
		result = fmt.Sprintf("%d %d", took.Nanoseconds(), readEarlyPrivileges().took.Nanoseconds())
	}
	v, _ := json.Marshal(result)
	h.queueFrame(wire.TypeEnd, wire.End{RunID: start.RunID, Status: wire.StatusReturned}, v)
	h.flush()
	exit(exitOK)
}

// errnoName names the outcome of a raw system call: "ok" or the errno's
// symbol.
func errnoName(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	return unix.ErrnoName(e)
}

func sys(nr uintptr, a ...uintptr) string {
	var args [6]uintptr
	copy(args[:], a)
	_, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
	return errnoName(e)
}

var (
	atFDCWD        = negative(unix.AT_FDCWD)
	keySpecSession = negative(unix.KEY_SPEC_SESSION_KEYRING)
)

func negative(v int) uintptr { return uintptr(v) }

func cstr(s string) uintptr {
	p, _ := unix.BytePtrFromString(s)
	return uintptr(unsafe.Pointer(p))
}

// attack makes the named calls and says how the kernel answered.
func attack(in attackInput, held int) string {
	switch in.Attack {
	case "open":
		return sys(unix.SYS_OPEN, cstr(in.Secret), unix.O_RDONLY)
	case "openat":
		return sys(unix.SYS_OPENAT, atFDCWD, cstr(in.Secret), unix.O_RDONLY)
	case "read-secret":
		// Opening works only where nothing denies it; then read and
		// return the content (which the test looks for everywhere).
		fd, err := unix.Open(in.Secret, unix.O_RDONLY, 0)
		if err != nil {
			return errnoName(err.(syscall.Errno))
		}
		b := make([]byte, 100)
		n, _ := unix.Read(fd, b)
		return "read:" + string(b[:max(n, 0)])
	case "create-in-cwd":
		return sys(unix.SYS_OPENAT, atFDCWD, cstr("planted"), unix.O_CREAT|unix.O_WRONLY, 0o600)
	case "socket-inet":
		return sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
	case "socket-inet6":
		return sys(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, 0)
	case "socket-unix":
		return sys(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)
	case "socket-netlink":
		return sys(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
	case "connect-tcp":
		// Through a new socket when one can be made, else through the
		// worker's own socket to the parent.
		s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			s = WorkerFD
		}
		err = unix.Connect(s, &unix.SockaddrInet4{Port: in.TCPPort, Addr: [4]byte{127, 0, 0, 1}})
		return errnoOf(err)
	case "connect-abstract":
		s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			return errnoOf(err)
		}
		return errnoOf(unix.Connect(s, &unix.SockaddrUnix{Name: "@" + in.Abstract}))
	case "connect-own-socket":
		return errnoOf(unix.Connect(WorkerFD, &unix.SockaddrInet4{Port: in.TCPPort, Addr: [4]byte{127, 0, 0, 1}}))
	case "execve":
		sh, _ := unix.BytePtrFromString("/bin/sh")
		argv := []*byte{sh, nil}
		return sys(unix.SYS_EXECVE, uintptr(unsafe.Pointer(sh)), uintptr(unsafe.Pointer(&argv[0])), 0)
	case "fork":
		return sys(unix.SYS_FORK)
	case "clone-process":
		return sys(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0)
	case "clone3":
		return sys(unix.SYS_CLONE3, 0, 0)
	case "ptrace-parent":
		return sys(unix.SYS_PTRACE, unix.PTRACE_ATTACH, uintptr(in.Parent))
	case "kill-parent":
		return sys(unix.SYS_KILL, uintptr(in.Parent), uintptr(unix.SIGKILL))
	case "signal-parent":
		return sys(unix.SYS_KILL, uintptr(in.Parent), 0)
	case "tgkill-parent":
		return sys(unix.SYS_TGKILL, uintptr(in.Parent), uintptr(in.Parent), uintptr(unix.SIGKILL))
	case "process-vm-readv":
		b := make([]byte, 8)
		local := unix.Iovec{Base: &b[0], Len: 8}
		remote := unix.Iovec{Base: &b[0], Len: 8}
		return sys(unix.SYS_PROCESS_VM_READV, uintptr(in.Parent), uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
	case "mmap-exec":
		return sys(unix.SYS_MMAP, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
	case "mprotect-exec":
		b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			return errnoOf(err)
		}
		return sys(unix.SYS_MPROTECT, uintptr(unsafe.Pointer(&b[0])), 4096, unix.PROT_READ|unix.PROT_EXEC)
	case "io_uring_setup":
		var params [120]byte
		return sys(unix.SYS_IO_URING_SETUP, 8, uintptr(unsafe.Pointer(&params[0])))
	case "bpf":
		var attr [128]byte
		return sys(unix.SYS_BPF, 0, uintptr(unsafe.Pointer(&attr[0])), 128)
	case "userfaultfd":
		return sys(unix.SYS_USERFAULTFD, 0)
	case "keyctl":
		return sys(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, keySpecSession, 0)
	case "unshare":
		return sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER)
	case "setns":
		return sys(unix.SYS_SETNS, 0, 0)
	case "mount":
		return sys(unix.SYS_MOUNT, cstr("none"), cstr("/tmp"), cstr("tmpfs"), 0, 0)
	case "personality":
		return sys(unix.SYS_PERSONALITY, readImpliesExec)
	case "prctl-dumpable":
		return sys(unix.SYS_PRCTL, unix.PR_SET_DUMPABLE, 1)
	case "replace-sigsys-handler":
		return sys(unix.SYS_RT_SIGACTION, uintptr(unix.SIGSYS), 0, 0, 8)
	case "pread-other-fd":
		b := make([]byte, 8)
		return sys(unix.SYS_PREAD64, 0, uintptr(unsafe.Pointer(&b[0])), 8, 0)
	case "setsockopt-other":
		v := int32(1 << 20)
		return sys(unix.SYS_SETSOCKOPT, WorkerFD, unix.SOL_SOCKET, unix.SO_SNDBUF, uintptr(unsafe.Pointer(&v)), 4)
	case "write-past-fsize":
		if held < 0 {
			return "no file was held"
		}
		return sys(unix.SYS_WRITE, uintptr(held), cstr("x"), 1)
	case "allocate-past-as":
		// 16 GiB, far above the run's heap plus the runtime's overhead,
		// far below what the machine could reserve without the limit.
		return sys(unix.SYS_MMAP, 0, 16<<30, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE, ^uintptr(0), 0)
	case "go-runtime":
		// Not an attack: what the Go runtime may do at any time once
		// confined must still work. New threads (each goroutine below
		// holds one, blocked), a collection, returning memory to the
		// kernel, a timer.
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				_ = unix.Nanosleep(&unix.Timespec{Nsec: 20e6}, nil)
			}()
		}
		wg.Wait()
		garbage := make([][]byte, 0, 64)
		for range 64 {
			garbage = append(garbage, make([]byte, 1<<20))
		}
		garbage = nil
		runtime.GC()
		debug.FreeOSMemory()
		time.Sleep(5 * time.Millisecond)
		return "ok"
	case "time-syscalls":
		// Not an attack: the cost of one system call the filter answers
		// from the kernel's cache (getpid) and one it runs the program for
		// (kill of itself with signal 0: its argument is checked).
		const n = 200_000
		pid := uintptr(unix.Getpid())
		t0 := time.Now()
		for range n {
			unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
		}
		t1 := time.Now()
		for range n {
			unix.RawSyscall(unix.SYS_KILL, pid, 0, 0)
		}
		t2 := time.Now()
		return fmt.Sprintf("%d %d", t1.Sub(t0).Nanoseconds()/n, t2.Sub(t1).Nanoseconds()/n)
	case "dup-past-nofile":
		return sys(unix.SYS_DUP, WorkerFD)
	}
	return "unknown attack " + in.Attack
}

func errnoOf(err error) string {
	if err == nil {
		return "ok"
	}
	if e, ok := err.(syscall.Errno); ok {
		return errnoName(e)
	}
	return err.Error()
}

// liar is a worker that confines nothing and says nothing of it in its
// hello, then tells stderr whatever program reaches it, and exits.
func liar() {
	f := os.NewFile(WorkerFD, "parent")
	_ = wire.WriteFrame(f, wire.TypeHello, wire.Hello{Protocol: wire.ProtocolVersion, PID: os.Getpid()}, nil)
	fr, err := wire.NewReader(f, wire.MaxStartFrame).Next()
	var start wire.Start
	if err == nil && fr.Decode(&start) == nil && start.Catalog.Names+start.Catalog.All <= len(fr.Payload) {
		fmt.Fprintf(os.Stderr, "received the program: %s\n", fr.Payload[start.Catalog.Names+start.Catalog.All:])
	}
	os.Exit(0)
}
