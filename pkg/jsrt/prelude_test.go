package jsrt

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"runtime"
	"testing"

	"github.com/buke/quickjs-go"
)

var update = flag.Bool("update", false, "rewrite prelude.bc from prelude.js")

// compilePrelude compiles preludeSource as the worker's engine would.
func compilePrelude(t *testing.T) []byte {
	t.Helper()
	out := make(chan []byte, 1)
	go func() {
		runtime.LockOSThread()
		rt := quickjs.NewRuntime(quickjs.WithMaxStackSize(1<<20), quickjs.WithOwnerGoroutineCheck(false))
		ctx := newContext(rt)
		bc, err := ctx.Compile(preludeSource, quickjs.EvalFileName(preludeFile))
		if err != nil {
			t.Errorf("compile prelude.js: %v", err)
		}
		out <- bc
	}()
	return <-out
}

func TestPreludeBytecodeIsCurrent(t *testing.T) {
	bc := compilePrelude(t)
	if *update {
		if err := os.WriteFile("prelude.bc", bc, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(bc, preludeBytecode) {
		t.Fatal("prelude.bc is not prelude.js compiled by the bound engine; run: go test ./pkg/jsrt -run TestPreludeBytecodeIsCurrent -update")
	}
}

// TestPreludeAvoidsModuleDetection: the binding's Eval and Compile send a
// source containing these words through a second, unlimited runtime.
func TestPreludeAvoidsModuleDetection(t *testing.T) {
	if m := regexp.MustCompile(`import|export|await`).FindString(preludeSource); m != "" {
		t.Fatalf("prelude.js contains %q: the binding would probe it as a module in an unlimited runtime", m)
	}
}
