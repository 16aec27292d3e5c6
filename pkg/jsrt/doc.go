// Package jsrt runs one program in a QuickJS-ng runtime, through
// github.com/buke/quickjs-go, under the limits of its run: a memory limit, a
// JS stack limit, an interrupt handler that enforces the run's one monotonic
// deadline and its stop flag, a watchdog that ends the run from Go when the
// engine does not give the thread back at the deadline, and a cap on the
// calls it has out at once.
//
// Ownership: a runtime belongs to the goroutine that calls Prepare, which
// locks itself to its OS thread for good (QuickJS checks its stack limit
// against the C stack of the thread that created the runtime); the same
// goroutine then calls Prepared.Run. Nothing
// else touches the runtime: the Host's Wait is how results and stops reach
// it, and the only things another goroutine does are make Host.Stopped
// return true, which the interrupt handler reads, and, once, the watchdog's
// Host.Abandon, which reads the call record under its mutex and never
// touches the engine.
//
// What a program sees is built by the prelude (prelude.js): tools, ALL_TOOLS,
// input, console, print, ToolRefused and ToolFailed. The prelude captures
// every intrinsic it uses before the program runs (primordials; its header
// says how), so a program that replaces built-ins changes what it sees, never
// what reaches the parent. The context is created from a literal set of
// intrinsics (runtime.go) and never with the binding's NewContext, which would
// expose the std and os modules.
//
// # Crossings between the engine and Go
//
// Every value that crosses goes through one of these, each checked for the
// class of defect of issue 11 (a pointer into memory the crossing does not
// own, a length taken from the wrong place, a copy that truncates, code of the
// program's run by the host):
//
//   - JS string to Go: jsUTF8 (crossing.go) only, on Value.ToUTF8 (binding
//     patch 0013, JS_ToCStringLen2 with cesu8 false). Safe for every string
//     kind: the engine copies unless the string is an 8-bit, ASCII, NORMAL
//     one, whose own bytes it returns holding a reference; ropes are
//     linearized first; the length is the byte length, so NULs are kept.
//     The matching free is the release jsUTF8 returns (JS_FreeCString on
//     the pointer ToUTF8 got, never on one derived from it). Lone
//     surrogates, which the engine encodes as 3-byte WTF-8, are rewritten in
//     place as U+FFFD (same length; such bytes only occur in the engine's
//     copy). jsUTF8 refuses a value that is not a string instead of running
//     its toString. The binding's ToString (JS_ToCString + C.GoString: stops
//     at a NUL), ToStringUTF16 (JS_ToCStringLenUTF16: the heap corruption of
//     issue 11, fixed for the binding by patch 0001 but not used here) and
//     JSONStringify (leaks its string, runs toJSON) are not used.
//   - The returned value's JSON leaves as the bytes jsUTF8 gave, never
//     released (Run never closes the runtime), written by the host from the
//     engine's memory (Report.Value).
//   - Go string to JS: the binding's NewString (JS_NewStringLen with the Go
//     string's pointer and length, copied by the engine during the call).
//   - JSON to JS: ParseJSONBytes (binding patch 0013; JS_ParseJSON needs a
//     NUL one past the end, which the host's result buffer carries, else it
//     copies) for results; ParseJSON for the limits, names and input, before
//     the program runs.
//   - Numbers: ToInt64 on values the prelude passed (JS_ToInt64, no
//     pointers); NewInt64.
//   - Property reads and writes: Get and Set by name (JS_GetPropertyStr with
//     the name's pointer and length; Set consumes its value) on the prelude's
//     own objects (its entry points and its null-prototype out object, whose
//     properties are plain data: no code runs), and GetIdx on the array the
//     prelude's explain returns.
//   - Exceptions: TakeException (binding patch 0013: JS_GetException, runs
//     nothing), read by the prelude's explain as data. The binding's
//     Exception, which converts to a Go error by reading name, message,
//     cause and stack and running JSON.stringify (getters and toJSON of the
//     program's), is used only before the program has run (loading the
//     prelude, parsing the input).
//   - Atoms: none directly; Get and Set make one per property name from the
//     name's pointer and length, freed by the binding.
//   - Array buffers: none; a program's typed arrays never cross (arguments
//     and results are JSON text).
package jsrt
