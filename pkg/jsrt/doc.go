// Package jsrt runs one program in a QuickJS-ng runtime, through
// github.com/buke/quickjs-go, under the limits of its run: a memory limit, a
// JS stack limit, an interrupt handler that enforces the run's one monotonic
// deadline and its stop flag, and a cap on the calls it has out at once.
//
// Ownership: a runtime belongs to the goroutine that calls Prepare, which
// locks itself to its OS thread for good (QuickJS checks its stack limit
// against the C stack of the thread that created the runtime); the same
// goroutine then calls Prepared.Run (package-level Run does both). Nothing
// else touches the runtime: the Host's Wait is how results and stops reach
// it, and the only thing another goroutine may do is make Host.Stopped
// return true, which the interrupt handler reads.
//
// What a program sees is built by the prelude (prelude.js): tools, ALL_TOOLS,
// input, console, print, ToolRefused and ToolFailed. The context is created
// from a literal set of intrinsics (runtime.go) and never with the binding's
// NewContext, which would expose the std and os modules.
package jsrt
