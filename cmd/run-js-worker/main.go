// Command run-js-worker is run-js-server's worker process, built on its own so
// that it links only the isolate (pkg/worker, pkg/jsrt, pkg/wire): no MCP SDK,
// no schema validator. Every package a binary links runs its init in every
// process, and those two cost a worker about 3 ms of start and double its
// memory (BENCHMARKS.md). run-js-server starts it when it sits beside its own
// executable, and otherwise starts itself with --worker-fd.
//
// It is not for people: run-js-server starts it with a socket as fd 3.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/run-js-server/run-js-server/pkg/worker"
)

func main() {
	if len(os.Args) >= 3 && os.Args[1] == "--worker-fd" { // then --confinement SETTING, read by ChildMain
		if fd, err := strconv.Atoi(os.Args[2]); err == nil && fd >= 3 {
			worker.ChildMain(fd)
		}
	}
	fmt.Fprintln(os.Stderr, "run-js-worker: this is run-js-server's worker process; run-js-server starts it itself (run `run-js-server run FILE` to run a program)")
	os.Exit(2)
}
