// Package worker runs each program in a fresh worker process: the parent's
// side (spawning, spare workers, supervision, the checks of every frame from
// the untrusted worker, the call record and the output kept) and the
// worker's own side (ChildMain in child.go, which runs the program with
// package jsrt).
//
// Who owns what:
//
//   - A Run owns its process and is the only thing that waits on it. Its
//     supervisor (supervise.go) reaps the worker, kills its process group
//     and removes its private directory, however the run ends. Run.Done,
//     Run.Wait and Run.Ending observe the ending, which is given as soon as
//     the end frame is checked (the reaping follows; Run.Reaped says when it
//     is done); a rule broken after that is reported to Config.OnBreach.
//   - The supervisor's goroutines: run owns the lifecycle (the timers, stop,
//     kill, the verdict and the reaping); the reader reads and checks every
//     frame and, for a call, admits it: an outcome decided at once (a
//     refusal, an in-process tool) is queued from the reader itself, any
//     other call gets one goroutine that performs it and queues its result;
//     the exit waiter reports the exit without reaping; the stderr drain
//     keeps its head and tail. The protocol state they share (the checker,
//     the ledger and the output kept) sits under supervisor.mu, held briefly
//     and never across I/O. Frames to the worker go through its outbox
//     (outbox.go): in order, whole, one writer at a time, in batches, the
//     reader never blocking on the socket.
//   - A Launcher owns its spares: processes spawned ahead, each sent the
//     current catalog to hold (SetCatalog) and handed to exactly one Run
//     (never reused); Close kills and reaps those not yet handed out.
//   - A CallFunc (the gateway's) owns the downstream call and its outcome;
//     the parent checks the outcome before the program sees it.
//   - In a worker process, the goroutine in ChildMain owns everything: it
//     runs the program on its locked thread and does the socket I/O itself.
//
// The process calls of the parent's side (waiting without reaping, killing a
// process group, probing a spare) are in proc_linux.go.
package worker
