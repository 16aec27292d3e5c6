package jsrt

import (
	"github.com/buke/quickjs-go"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// gcThreshold turns on QuickJS's automatic cycle collection (the binding's
// default leaves it off, so cyclic garbage would count against the memory
// limit until it ran out).
const gcThreshold = 256 << 10

// intrinsic is one entry of the policy of what the engine gives a program.
type intrinsic struct {
	name string
	opt  func(bool) quickjs.IntrinsicOption
	on   bool
	why  string
}

// intrinsics is the whole policy, default-deny: anything not listed here as on
// is off. BaseObjects (Object, Array, Error, Math, BigInt, ...) is always on
// in the binding. A test checks each entry from inside a program.
var intrinsics = []intrinsic{
	{"Eval", quickjs.WithEval, true, "needed to compile the program (AsyncFunction constructor); eval grants nothing the program lacks"},
	{"Promise", quickjs.WithPromise, true, "async functions and tool calls"},
	{"JSON", quickjs.WithJSON, true, "shaping data"},
	{"RegExp", quickjs.WithRegExp, true, "shaping text; libregexp polls the interrupt handler"},
	{"Date", quickjs.WithDate, true, "the only clock a program gets"},
	{"Proxy", quickjs.WithProxy, true, "the tools object; ordinary JS"},
	{"MapSet", quickjs.WithMapSet, true, "Map, Set, WeakMap, WeakSet"},
	{"TypedArrays", quickjs.WithTypedArrays, true, "binary data; Atomics.wait is refused by WithCanBlock(false)"},
	{"AToB", quickjs.WithAToB, true, "atob/btoa for base64 content blocks"},
	{"BigInt", quickjs.WithBigInt, false, "already in BaseObjects; adding it again leaks a prototype and makes rt.Close abort"},
	{"WeakRef", quickjs.WithWeakRef, false, "finalizers would run host-scheduled code after the program thinks it is done"},
	{"Performance", quickjs.WithPerformance, false, "a high-resolution clock beyond Date"},
	{"DOMException", quickjs.WithDOMException, true, "atob and btoa throw it; AToB brings it in any case"},
}

// newRuntime builds a runtime with every unsafe default of the binding set
// explicitly: the binding's NewRuntime has no memory limit, a stack limit of
// 0 (no check, so deep recursion is a SIGSEGV), automatic cycle collection
// off (cyclic garbage runs into the memory limit) and blocking Atomics.wait
// (past the deadline). So: memory limit, stack limit, cycle GC on, no
// blocking Atomics.wait, no module loader, no owner-goroutine check (it costs
// 50-100x per call and the thread is locked).
func newRuntime(l wire.Limits) *quickjs.Runtime {
	return quickjs.NewRuntime(
		quickjs.WithMemoryLimit(uint64(l.MemoryBytes)),
		quickjs.WithMaxStackSize(uint64(l.StackBytes)),
		quickjs.WithGCThreshold(gcThreshold),
		quickjs.WithCanBlock(false),
		quickjs.WithModuleImport(false),
		quickjs.WithOwnerGoroutineCheck(false),
	)
}

// newContext creates the program's context from the intrinsics table. Never
// the binding's NewContext, which registers the std and os modules (os.exec).
func newContext(rt *quickjs.Runtime) *quickjs.Context {
	opts := make([]quickjs.IntrinsicOption, 0, len(intrinsics))
	for _, in := range intrinsics {
		opts = append(opts, in.opt(in.on))
	}
	return rt.NewContextRaw(quickjs.NewIntrinsicSet(opts...))
}
