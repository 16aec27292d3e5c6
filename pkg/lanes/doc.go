// Package lanes bounds the calls the gateway makes to each downstream MCP
// server. Each server gets one Lane: a FIFO queue in front of at most
// MaxActive running calls, holding at most MaxOutstanding calls in all
// (running plus queued). A call past that bound is refused at once, so a
// runaway program meets ErrLaneFull instead of building a queue without end.
//
// Ownership: the gateway owns one Lane per downstream server, creates it with
// New and is the only one to Close it. A Lane starts no goroutines: a call
// waits for its slot in the goroutine that called Do and runs fn there, so
// when Do returns nothing of the call is left in the lane. The lane owns only
// the slots; fn owns the downstream request and its outcome.
//
// Order: Do takes its place when it is called. A caller that must keep an
// order across goroutines (the gateway admits a program's calls in the order
// its worker sent them, on one goroutine, and waits for each on its own)
// takes the places with Enter, which never blocks, and waits and runs with
// the Ticket's Do; every Ticket is used or left exactly once.
//
// What the gateway reports: Do's Stats.Started says whether fn ran. When it
// is false nothing was sent downstream (lane full, lane closed, or the
// caller's context ended while queued), and the gateway reports ToolRefused,
// which is safe to retry. When it is true the outcome is fn's own.
package lanes
