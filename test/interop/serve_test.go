package interop

// This file holds the helpers of the serving tests (http_test.go,
// conformance_test.go, stdio_test.go): one build of the gateway for all of
// them, and a gateway served over HTTP whose address is read from its
// stderr.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds of the serving tests' waits, each naming what it waits for.
const (
	serveTimeout    = 60 * time.Second // the gateway printing its address
	sigtermTimeout  = 60 * time.Second // the gateway exiting after SIGTERM (its grace is 2 s per program, in parallel)
	scenarioTimeout = 3 * time.Minute  // one conformance scenario
)

// testToken is the bearer token of the HTTP tests.
const testToken = "interop-token-0123456789abcdef"

// built is the one build of the gateway that the serving tests share.
var built struct {
	once    sync.Once
	dir     string
	path    string
	failure string
}

// TestMain runs this test binary as a downstream server when a test starts
// it in a mode (memory_test.go), and otherwise runs the tests, then removes
// the gateway the serving tests built.
func TestMain(m *testing.M) {
	if os.Getenv(modeEnv) == "big" {
		serveBig()
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// sharedGateway builds ./cmd/run-js-server once for the serving tests.
func sharedGateway(t *testing.T) string {
	t.Helper()
	dir := testDir(t)
	built.once.Do(func() {
		tmp, err := os.MkdirTemp("", "run-js-server-interop-")
		if err != nil {
			built.failure = err.Error()
			return
		}
		built.dir = tmp
		bin := filepath.Join(tmp, "run-js-server")
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBinary(t), "build", "-o", bin, "./cmd/run-js-server")
		cmd.Dir = filepath.Join(dir, "..", "..")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = stopTimeout
		out, err := cmd.CombinedOutput()
		switch {
		case ctx.Err() != nil:
			built.failure = fmt.Sprintf("go build ./cmd/run-js-server did not finish within %s; output:\n%s", buildTimeout, out)
		case err != nil:
			built.failure = fmt.Sprintf("go build ./cmd/run-js-server: %v; output:\n%s", err, out)
		default:
			built.path = bin
		}
	})
	if built.failure != "" {
		t.Fatal(built.failure)
	}
	return built.path
}

// lineLog is a process's stderr, kept whole, that signals when a line
// matching want appears. Safe for concurrent use.
type lineLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
	want    *regexp.Regexp
	found   chan string // gets the first match
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		if m := l.want.FindStringSubmatch(line); m != nil && l.found != nil {
			l.found <- m[1]
			l.found = nil
		}
	}
	return len(p), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// servingLine is the line the gateway prints when it serves over HTTP.
var servingLine = regexp.MustCompile(`serving MCP over Streamable HTTP at (http://\S+)`)

// serveHTTP starts the gateway with --http 127.0.0.1:0 and args, in its own
// process group (killed at cleanup), and returns the MCP endpoint's URL.
func serveHTTP(t *testing.T, gateway string, args ...string) (string, *proc, *lineLog) {
	t.Helper()
	log := &lineLog{want: servingLine, found: make(chan string, 1)}
	found := log.found
	cmd := exec.Command(gateway, append([]string{"--http", "127.0.0.1:0"}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = os.Environ()
	cmd.WaitDelay = stopTimeout
	p := start(t, "run-js-server --http", cmd, termGrace)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gateway output:\n%s", log)
		}
	})
	select {
	case url := <-found:
		return url, p, log
	case <-p.done:
		t.Fatalf("the gateway exited (%v) before serving; output:\n%s", p.err, log)
	case <-time.After(serveTimeout):
		t.Fatalf("the gateway did not print %q within %s; output:\n%s", servingLine, serveTimeout, log)
	}
	return "", nil, nil
}

// tokenFile writes the test token to a private file.
func tokenFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// nodeEnv is what the tests with Node peers need: node, this directory,
// and its node_modules.
func nodeEnv(t *testing.T) (node, dir string) {
	t.Helper()
	node, dir = requireNode(t), testDir(t)
	if !fileExists(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")) {
		prerequisite(t, "test/interop/node_modules is missing or incomplete; "+npmHint)
	}
	return node, dir
}

// readLines sends each line of r to the returned channel, closing it at
// the end.
func readLines(r *bufio.Reader) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				ch <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}
