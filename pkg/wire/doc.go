// Package wire is the protocol between the parent (run-js-server) and one
// worker process: length-prefixed frames, the message types, the limits a run
// is held to, and a bounded JSON scanner used to check what crosses.
//
// Ownership: wire holds no state and starts no goroutines. The parent side of
// a run (package worker) owns the reading of one worker's frames and is the
// only place that decides what a frame from the worker means; the worker is
// untrusted, so every size here is checked before anything is allocated.
//
// Frame layout (all integers big-endian):
//
//	uint32  n        length of everything after this field (5 ≤ n ≤ the reader's cap)
//	byte    type     one of the Type constants
//	uint32  h        length of the header (h ≤ n-5)
//	[h]byte header   a JSON object, the message's fields
//	[n-5-h] payload  raw bytes whose meaning depends on the type (code, arguments,
//	                 a result, output text, a returned value, a catalog's
//	                 sections); raw so that large values are never escaped into
//	                 a JSON string and copied again.
//
// The headers of the frames sent once per call (call, result, output) are
// encoded and decoded by hand (header.go), as strictly as encoding/json;
// the others go through encoding/json. A run's catalog is prepared once
// (catalog.go) and crosses as sections of bytes: a worker reads of it only
// what its program asks for.
package wire
