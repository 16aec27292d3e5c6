package worker

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// badWorker is a worker that breaks the protocol in the way its mode names.
// It talks to the parent over fd 3 with this package's own frame encoder.
func badWorker(mode string) {
	f := os.NewFile(WorkerFD, "parent")
	send := func(t wire.Type, hdr any, payload []byte) {
		if err := wire.WriteFrame(f, t, hdr, payload); err != nil {
			os.Exit(9)
		}
	}
	hello := func() { send(wire.TypeHello, wire.Hello{Protocol: wire.ProtocolVersion, PID: os.Getpid()}, nil) }
	var start wire.Start
	readStart := func() {
		fr, err := wire.NewReader(f, wire.MaxStartFrame).Next()
		if err != nil || fr.Decode(&start) != nil {
			os.Exit(8)
		}
	}
	call := func(id uint64, server, tool string, args string) {
		send(wire.TypeCall, wire.Call{RunID: start.RunID, ID: id, Server: server, Tool: tool}, []byte(args))
	}
	end := func(value string) {
		send(wire.TypeEnd, wire.End{RunID: start.RunID, Status: wire.StatusReturned}, []byte(value))
	}
	hang := func() { time.Sleep(time.Hour) }

	switch mode {
	case "ping-pong":
		pingPong(1000)
	case "echo-bytes":
		// The floor of a round trip: blocking read, write back, nothing else.
		b := make([]byte, 64)
		for {
			n, err := syscall.Read(WorkerFD, b)
			if err != nil || n == 0 {
				exit(0)
			}
			_, _ = syscall.Write(WorkerFD, b[:n])
		}
	case "garbage":
		_, _ = f.Write([]byte(strings.Repeat("this is not a frame\n", 100)))
		hang()
	case "huge-frame":
		_, _ = f.Write([]byte{0xFF, 0xFF, 0xFF, 0xFF, 'C'})
		hang()
	case "unknown-type":
		_, _ = f.Write([]byte{0, 0, 0, 7, 'Z', 0, 0, 0, 2, '{', '}'})
		hang()
	case "bad-hello":
		send(wire.TypeHello, wire.Hello{Protocol: 99}, nil)
		hang()
	case "no-hello":
		hang()
	case "call-before-hello":
		call(1, "issues", "list_issues", `{}`)
		hang()
	case "exit-before-end":
		hello()
		readStart()
		os.Exit(0)
	case "exit-mid-frame":
		hello()
		readStart()
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], 100)
		_, _ = f.Write(append(hdr[:], 'O', 0, 0, 0, 2, '{', '}', 'a', 'b'))
		os.Exit(0)
	case "crash-signal":
		hello()
		readStart()
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		hang()
	case "reused-call-id":
		hello()
		readStart()
		call(1, "issues", "list_issues", `{}`)
		call(1, "issues", "list_issues", `{}`)
		hang()
	case "skipped-call-id":
		hello()
		readStart()
		call(2, "issues", "list_issues", `{}`)
		hang()
	case "unknown-tool":
		hello()
		readStart()
		call(1, "issues", "delete_everything", `{}`)
		hang()
	case "unknown-run":
		hello()
		readStart()
		send(wire.TypeCall, wire.Call{RunID: "run-someone-else", ID: 1, Server: "issues", Tool: "list_issues"}, []byte(`{}`))
		hang()
	case "args-too-large":
		hello()
		readStart()
		call(1, "issues", "list_issues", `{"x":"`+strings.Repeat("a", wire.DefaultMaxArgBytes)+`"}`)
		hang()
	case "args-too-many-values":
		hello()
		readStart()
		call(1, "issues", "list_issues", `{"x":[`+strings.Repeat("0,", wire.DefaultMaxArgValues)+`0]}`)
		hang()
	case "args-not-object":
		hello()
		readStart()
		call(1, "issues", "list_issues", `[1,2]`)
		hang()
	case "args-invalid-json":
		hello()
		readStart()
		call(1, "issues", "list_issues", `{"a":`)
		hang()
	case "too-many-calls":
		hello()
		readStart()
		for i := uint64(1); i <= wire.DefaultMaxInFlight+1; i++ {
			call(i, "issues", "list_issues", `{}`)
		}
		hang()
	case "frame-after-end":
		// The end and a frame after it in one write: the parent reads them
		// together and checks both before it gives the ending.
		hello()
		readStart()
		endF, _ := wire.AppendFrame(nil, wire.TypeEnd, wire.End{RunID: start.RunID, Status: wire.StatusReturned}, []byte("1"))
		late, _ := wire.AppendFrame(endF, wire.TypeOutput, wire.Output{}, []byte("late"))
		if _, err := f.Write(late); err != nil {
			os.Exit(9)
		}
		hang()
	case "frame-after-end-later":
		// A frame well after the end: the ending has been given by then.
		hello()
		readStart()
		end(`1`)
		time.Sleep(300 * time.Millisecond)
		send(wire.TypeOutput, wire.Output{}, []byte("late"))
		hang()
	case "tools-request-twice":
		hello()
		readStart()
		send(wire.TypeToolsRequest, nil, nil)
		send(wire.TypeToolsRequest, nil, nil)
		hang()
	case "tools-request-with-payload":
		hello()
		readStart()
		send(wire.TypeToolsRequest, nil, []byte("give me more"))
		hang()
	case "end-claims-crashed":
		hello()
		readStart()
		send(wire.TypeEnd, wire.End{RunID: start.RunID, Status: wire.StatusCrashed, Error: &wire.ErrorInfo{Name: "x", Message: "y"}}, nil)
		hang()
	case "end-invalid-value":
		hello()
		readStart()
		end(`{not json`)
		hang()
	case "end-unsettled-unknown":
		hello()
		readStart()
		send(wire.TypeEnd, wire.End{RunID: start.RunID, Status: wire.StatusStalled, Error: &wire.ErrorInfo{Name: "x", Message: "y"}, Unsettled: []uint64{7}}, nil)
		hang()
	case "sends-result":
		hello()
		readStart()
		send(wire.TypeResult, wire.Result{ID: 1, Outcome: wire.OutcomeOK}, []byte(`{}`))
		hang()
	case "ignore-stop":
		// Ignores SIGTERM and never reads: only SIGKILL of the group ends it.
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		hello()
		readStart()
		for {
			time.Sleep(time.Hour)
		}
	case "end-then-linger":
		// Ends properly but does not exit: the parent kills it after the grace.
		hello()
		readStart()
		end(`"done"`)
		hang()
	case "grandchild":
		// Leaves a process behind in its group, reports its pid, then exits
		// without an end: the parent must kill the whole group.
		hello()
		readStart()
		c := exec.Command("/bin/sleep", "60")
		if err := c.Start(); err != nil {
			os.Exit(7)
		}
		send(wire.TypeOutput, wire.Output{}, []byte(fmt.Sprint(c.Process.Pid)))
		os.Exit(0)
	case "report-env":
		// Reports what the parent gave it: environment, directory, descriptors.
		ents, _ := os.ReadDir("/proc/self/fd")
		var fds []string
		for _, e := range ents {
			target, _ := os.Readlink("/proc/self/fd/" + e.Name())
			fds = append(fds, e.Name()+"="+target)
		}
		cwd, _ := os.Getwd()
		hello()
		readStart()
		b, _ := json.Marshal(map[string]any{"env": os.Environ(), "cwd": cwd, "fds": fds, "pgid": mustPgid()})
		send(wire.TypeOutput, wire.Output{}, b)
		end(`null`)
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "unknown bad-worker mode %q\n", mode)
		os.Exit(6)
	}
}

func mustPgid() int {
	pgid, _ := syscall.Getpgid(0)
	return pgid
}

// pingPong is a protocol-correct worker without JavaScript: it makes n
// sequential calls as fast as the parent answers, to measure the parent.
func pingPong(n int) {
	h := &childHost{fd: WorkerFD, max: wire.MaxStartFrame}
	h.queueFrame(wire.TypeHello, wire.Hello{Protocol: wire.ProtocolVersion}, nil)
	h.flush()
	var f wire.Frame
	for ok := false; !ok; {
		if f, ok = h.next(); !ok {
			h.recv(true)
		}
	}
	var start wire.Start
	_ = f.Decode(&start)
	h.max = 1 << 20
	for i := 1; i <= n; i++ {
		_ = h.Send(wire.Call{RunID: start.RunID, ID: uint64(i), Server: "issues", Tool: "list_issues"}, []byte(`{"i":1}`))
		h.Wait(time.Now().Add(time.Minute))
	}
	h.queueFrame(wire.TypeEnd, wire.End{RunID: start.RunID, Status: wire.StatusReturned}, []byte("1"))
	h.flush()
	exit(0)
}
