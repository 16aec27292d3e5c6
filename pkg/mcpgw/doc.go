// Package mcpgw is the gateway: the config, the clients of the downstream MCP
// servers, the catalog of the tools programs may call, the validation of a
// call's arguments, and the MCP server an agent talks to (run_js, wait_js,
// stop_js, list_js, search_tools, server_info), with the table of programs
// left running past their yield (scripts.go). It also holds the demo
// downstream server.
//
// Ownership: a Gateway owns its downstream sessions and their processes
// (stdio servers run in their own process groups and are stopped by Close,
// with a ladder), one lane per server (package lanes) that bounds the calls
// in flight, the programs agents started (stopped and reaped by Close), and
// a worker.Launcher with spare workers. A call of a program reaches a server
// only through the admission a run is given (Gateway.admitter): on the run's
// reader goroutine, in the order the worker sent the calls, it refuses
// (nothing sent) a call to an unknown or unavailable server, with invalid
// arguments or past a full lane, and otherwise takes the call's place in the
// lane; the call then waits for its turn on its own goroutine and is sent
// with the time left on the run's deadline. Each downstream server's session
// is its downstream's (downstream.go): one start attempt at a time, run in
// the background (connect.go) and shared by the calls that wait for it; the
// goroutine awaitSessionEnd waits on each session, stops its process, marks
// the server unavailable with what happened and starts the next attempt.
// The agents' MCP servers are told when the tools change
// (catalogwatch.go). The running programs are counted in the Gateway's
// runSlots, and those an MCP session started are its scriptTable's.
//
// What the agent reads and writes: the six tools' arguments are checked
// against the table their schemas are made from (toolargs.go); a TypeScript
// program's types are stripped here, in the parent, with esbuild, and its
// ending's positions mapped back (typescript.go, sourcemap.go); search_tools
// ranks the catalog (search.go) and answers with TypeScript declarations
// (searchtool.go, tsdecl.go, tsresult.go).
//
// Serving: ServeStdio serves the agent on stdin and stdout through a line
// filter that answers or skips every bad line (serve_stdio.go); an
// HTTPServer serves it over Streamable HTTP and owns its http.Server and
// the MCP sessions, but not the Gateway, which its caller closes after
// HTTPServer.Shutdown (serve_http.go).
//
// Vocabulary: a script is a program run_js started, held by its MCP session;
// its script id is its run's id (worker.Run.ID), so one program has one id.
package mcpgw
