package mcpgw

// This file holds one attempt to start a downstream server (dial): spawn or
// reach it, initialize, list its tools, all within its startTimeout; and the
// reasons that say what happened when it fails.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// reasonError is an error whose text is already a reason.
type reasonError string

func (e reasonError) Error() string { return string(e) }

// exitNoticeWait bounds waiting, after a stdio server's connection failed,
// for its exit to be seen: a server that prints its error and exits closes
// its stdout a moment before it can be waited on.
const exitNoticeWait = time.Second

// dial makes one attempt. The connection lives on a context of its own
// (the SSE transport keeps its event stream on the context it connected
// with), ended by the returned cancel, by ctx (the attempt's: close cancels
// it) or by the start bound. Its error is the reason, scrubbed, with no
// cause attached: a cause could hold a secret.
func (d *downstream) dial(ctx context.Context) (session *mcp.ClientSession, proc *serverProc, cancel context.CancelFunc, tools []wire.Tool, missing []string, err error) {
	bound := d.cfg.StartTimeout
	connCtx, cancelConn := context.WithCancel(context.Background())
	var timedOut atomic.Bool
	timer := time.AfterFunc(bound, func() { timedOut.Store(true); cancelConn() })
	stopParent := context.AfterFunc(ctx, cancelConn)
	phase := "start"
	var status httpStatus
	defer func() {
		timer.Stop()
		stopParent()
		if err == nil && connCtx.Err() != nil {
			err = errors.New("cancelled")
		}
		if err == nil {
			return
		}
		if session != nil {
			_ = session.Close()
		}
		cancelConn()
		err = errors.New(d.scrub(d.failureReason(err, phase, proc, timedOut.Load(), ctx.Err() != nil, &status)))
		if proc != nil {
			_ = proc.stop()
		}
		session, cancel = nil, nil
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "run-js-server", Version: d.version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { go d.refreshTools() },
	})
	switch d.cfg.Transport {
	case TransportStdio:
		proc, err = d.startStdio()
		if err != nil {
			return
		}
		// A server that does not read its stdin blocks our write of
		// initialize: the bound (or close) closes its stdin under it.
		p := proc
		defer context.AfterFunc(connCtx, func() { p.stdin.Close() })()
		phase = "initialize"
		session, err = client.Connect(connCtx, stdioTransport{newStdioConn(proc, d)}, nil)
	case TransportHTTP:
		phase = "initialize"
		session, err = client.Connect(connCtx, d.streamable(&status), nil)
	case TransportSSE:
		phase = "initialize"
		session, err = client.Connect(connCtx, d.sse(&status), nil)
	default: // auto: Streamable HTTP first; an old server fails its POST of initialize
		phase = "initialize"
		session, err = client.Connect(connCtx, d.streamable(&status), nil)
		if err != nil {
			first := d.failureReason(err, phase, nil, false, false, &status)
			var status2 httpStatus
			var err2 error
			session, err2 = client.Connect(connCtx, d.sse(&status2), nil)
			if err2 != nil {
				err = reasonError(fmt.Sprintf("over Streamable HTTP, %s; over legacy SSE, %s", first, d.failureReason(err2, phase, nil, false, false, &status2)))
			} else {
				err = nil
			}
		}
	}
	if err != nil {
		return
	}
	phase = "tools/list"
	tools, missing, err = d.listTools(connCtx, session)
	if err != nil {
		return
	}
	return session, proc, cancelConn, tools, missing, nil
}

// failureReason says why an attempt failed, in the words a person needs: the
// bound it passed, how its process ended (with its last stderr lines), the
// HTTP status it got, a refused connection.
func (d *downstream) failureReason(err error, phase string, proc *serverProc, timedOut, cancelled bool, status *httpStatus) string {
	var said reasonError
	switch {
	case errors.As(err, &said) && !timedOut && !cancelled:
		return string(said)
	case cancelled:
		return "the gateway is closing"
	case timedOut:
		s := fmt.Sprintf("did not answer %s within %s", phase, d.cfg.StartTimeout)
		if phase == "start" {
			s = fmt.Sprintf("did not start within %s", d.cfg.StartTimeout)
		}
		if proc != nil {
			s += proc.tailNote()
		}
		return s
	case proc != nil:
		select {
		case <-proc.exited:
		case <-time.After(exitNoticeWait):
		}
		if proc.hasExited() {
			_ = proc.stop()
			return fmt.Sprintf("its process %s, before it answered %s%s", proc.endedStatus(), phase, proc.tailNote())
		}
		return fmt.Sprintf("%s failed: %v%s", phase, err, proc.tailNote())
	case phase == "start":
		return err.Error()
	}
	if code, text := status.get(); code != 0 {
		return fmt.Sprintf("%s failed: the server answered HTTP %d %s", phase, code, text)
	}
	if errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused") {
		return fmt.Sprintf("%s failed: connection refused (nothing listens at %s)", phase, hostOf(d.cfg.URL))
	}
	return fmt.Sprintf("%s failed: %v", phase, err)
}
