#!/usr/bin/env node
// Agents on the TypeScript SDK that drive run-js-server over Streamable HTTP
// (run-js-server --http ADDR --demo). The bearer token comes from
// $RUN_JS_SERVER_TOKEN. Each mode prints one JSON summary line on stdout
// (the Go test in http_test.go checks it); any unexpected protocol error
// ends the client with status 1 and a message on stderr; a usage error,
// with status 2.
//
//   node http_client.mjs --url http://127.0.0.1:PORT/mcp --mode MODE
//
// Modes:
//   sessions  two sessions at once: three runs each (calling the demo
//             server), then three running scripts each: the per-session
//             cap, another session's script id refused, progress while
//             waiting, a cancelled wait that leaves its program running,
//             and stop_js of every script.
//   refusals  401 without and with a wrong token (status, WWW-Authenticate,
//             and what the SDK client reports), 403 for a foreign Origin,
//             a body over the cap (413), and the session still serving
//             after it.
//   hold      two sessions with three running scripts each, and a wait_js
//             in flight on each (with a progress token: its first
//             notification shows it arrived): prints {"ready": ...}, then
//             the answers of the waits when they come (after the gateway's
//             SIGTERM), then waits to be killed.
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const EXPECTED_TOOLS = ["list_js", "run_js", "search_tools", "server_info", "stop_js", "wait_js"];
// Bounds each MCP request, so that a gateway that never answers ends the
// client with a message instead of a hang.
const REQUEST_TIMEOUT_MS = 120_000;

function fail(status, message) {
  process.stderr.write(`http_client: ${message}\n`);
  process.exit(status);
}

let opts;
try {
  opts = parseArgs({ options: { url: { type: "string" }, mode: { type: "string" } } }).values;
} catch (err) {
  fail(2, err.message);
}
if (!opts.url) fail(2, "pass --url http://HOST:PORT/mcp");
const token = process.env.RUN_JS_SERVER_TOKEN ?? "";
const url = new URL(opts.url);

async function step(what, fn) {
  try {
    return await fn();
  } catch (err) {
    fail(1, `${what}: ${err?.stack ?? err}`);
  }
}

// connect opens a session with the given headers (the token by default).
async function connect(name, headers = { Authorization: `Bearer ${token}` }) {
  const client = new Client({ name, version: "0.0.0" });
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  return client;
}

function call(client, name, args, options = {}) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS, ...options });
}

const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
const loop = { code: "while (true) {}", yield_ms: 100, timeout_ms: 120_000 };

async function startScripts(client, n) {
  const ids = [];
  for (let i = 0; i < n; i++) {
    const res = await call(client, "run_js", loop);
    if (res.structuredContent?.status !== "running") fail(1, `run_js did not leave the program running: ${text(res)}`);
    ids.push(res.structuredContent.scriptId);
  }
  return ids;
}

// rawPost sends one initialize request by hand, to see the status, the
// headers and the body of a refusal.
async function rawPost(headers, body) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
    body: body ?? JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } } }),
  });
  const out = { status: res.status, wwwAuthenticate: res.headers.get("www-authenticate"), body: (await res.text()).slice(0, 500) };
  return out;
}

async function refusedConnect(name, headers) {
  try {
    const c = await connect(name, headers);
    await c.close();
    return { connected: true };
  } catch (err) {
    return { connected: false, code: err?.code, message: String(err?.message ?? err).slice(0, 500) };
  }
}

async function sessions() {
  const [a, b] = await step("connect two sessions", () => Promise.all([connect("agent-a"), connect("agent-b")]));
  const summary = { tools: {}, runs: {}, scripts: {} };
  for (const [who, c] of [["a", a], ["b", b]]) {
    const listed = await step(`tools/list (${who})`, () => c.listTools({}, { timeout: REQUEST_TIMEOUT_MS }));
    summary.tools[who] = listed.tools.map((t) => t.name).sort();
  }
  if (JSON.stringify(summary.tools.a) !== JSON.stringify(EXPECTED_TOOLS)) fail(1, `tools/list: ${JSON.stringify(summary.tools.a)}`);

  // Three runs in each session, all at once.
  const program = `const r = await tools.demo.get_issue({id: input.id});
return {who: input.who, n: input.n, id: r.structuredContent.issue.id, state: r.structuredContent.issue.state}`;
  const runs = [];
  for (const [who, c] of [["a", a], ["b", b]]) {
    for (let n = 0; n < 3; n++) {
      runs.push(call(c, "run_js", { code: program, input: { who, n, id: 101 + n } }).then((res) => ({ who, res })));
    }
  }
  for (const { who, res } of await step("six runs", () => Promise.all(runs))) {
    (summary.runs[who] ??= []).push({ isError: res.isError, status: res.structuredContent?.status, value: res.structuredContent?.value });
  }

  // Three running scripts in each session: both at the per-session cap.
  const ida = await step("start A's scripts", () => startScripts(a, 3));
  const idb = await step("start B's scripts", () => startScripts(b, 3));
  const fourth = await step("a fourth script in A", () => call(a, "run_js", loop));
  summary.fourth = { isError: fourth.isError, text: text(fourth) };
  const foreignWait = await step("B waits on A's script", () => call(b, "wait_js", { scriptId: ida[0] }));
  const foreignStop = await step("B stops A's script", () => call(b, "stop_js", { scriptId: ida[0] }));
  summary.foreign = {
    wait: { isError: foreignWait.isError, text: text(foreignWait) },
    stop: { isError: foreignStop.isError, text: text(foreignStop) },
  };
  const listA = await step("list_js (A)", () => call(a, "list_js", {}));
  const listB = await step("list_js (B)", () => call(b, "list_js", {}));
  summary.lists = {
    a: listA.structuredContent.scripts.map((s) => [s.scriptId, s.state]),
    b: listB.structuredContent.scripts.map((s) => [s.scriptId, s.state]),
  };
  summary.ids = { a: ida, b: idb };

  // Progress while waiting.
  let progress = 0;
  const waited = await step("wait_js with progress", () =>
    call(a, "wait_js", { scriptId: ida[1], yield_ms: 2500 }, { onprogress: () => progress++ }),
  );
  summary.progress = { notifications: progress, status: waited.structuredContent?.status };

  // A cancelled wait ends the wait, not the program.
  let cancelled = null;
  try {
    await call(a, "wait_js", { scriptId: ida[2], yield_ms: 60_000 }, { signal: AbortSignal.timeout(300) });
  } catch (err) {
    cancelled = String(err?.message ?? err);
  }
  const after = await step("list_js after the cancel", () => call(a, "list_js", {}));
  summary.cancel = { error: cancelled, state: after.structuredContent.scripts.find((s) => s.scriptId === ida[2])?.state };

  // Each session stops its own. The cancelled wait ends on the gateway when
  // it handles the cancellation; until then a script has its one watcher
  // and stop_js says so: retry that, for at most 10 s.
  summary.stopped = {};
  for (const [who, c, ids] of [["a", a, ida], ["b", b, idb]]) {
    summary.stopped[who] = [];
    for (const id of ids) {
      let res;
      for (const until = Date.now() + 10_000; ; ) {
        res = await step(`stop_js ${id}`, () => call(c, "stop_js", { scriptId: id }));
        if (!(res.isError && text(res).includes("already waiting")) || Date.now() > until) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      summary.stopped[who].push(res.structuredContent?.status ?? text(res));
    }
  }
  await Promise.all([a.close(), b.close()]);
  return summary;
}

async function refusals() {
  const summary = {
    raw: {
      noToken: await rawPost({}),
      wrongToken: await rawPost({ Authorization: `Bearer ${"x".repeat(token.length)}` }),
      foreignOrigin: await rawPost({ Authorization: `Bearer ${token}`, Origin: "http://evil.example.com" }),
    },
    sdk: {
      noToken: await refusedConnect("no-token", {}),
      wrongToken: await refusedConnect("wrong-token", { Authorization: "Bearer wrong-token-0123456789" }),
      foreignOrigin: await refusedConnect("foreign-origin", { Authorization: `Bearer ${token}`, Origin: "http://evil.example.com" }),
    },
  };
  const c = await step("connect with the token", () => connect("agent"));
  try {
    await call(c, "run_js", { code: "return 1 // " + "x".repeat(17 << 20) });
    summary.overCap = { refused: false };
  } catch (err) {
    summary.overCap = { refused: true, code: err?.code, message: String(err?.message ?? err).slice(0, 500) };
  }
  const after = await step("run_js after the refused body", () => call(c, "run_js", { code: "return 6 * 7" }));
  summary.afterOverCap = { status: after.structuredContent?.status, value: after.structuredContent?.value };
  await c.close();
  return summary;
}

async function hold() {
  const [a, b] = await step("connect two sessions", () => Promise.all([connect("agent-a"), connect("agent-b")]));
  const ida = await step("start A's scripts", () => startScripts(a, 3));
  const idb = await step("start B's scripts", () => startScripts(b, 3));
  // A progress notification of a wait proves it is in flight on the
  // gateway: only then is the gateway ready for its SIGTERM.
  const inFlight = [];
  const waits = [[a, ida[0]], [b, idb[0]]].map(([c, id]) => {
    let seen;
    inFlight.push(new Promise((resolve) => (seen = resolve)));
    return call(c, "wait_js", { scriptId: id, yield_ms: 60_000 }, { onprogress: () => seen() }).then(
      (res) => ({ id, status: res.structuredContent?.status, isError: res.isError }),
      (err) => ({ id, error: String(err?.message ?? err).slice(0, 300) }),
    );
  });
  await Promise.all(inFlight);
  process.stdout.write(JSON.stringify({ ready: true, ids: [...ida, ...idb] }) + "\n");
  const results = await Promise.all(waits);
  process.stdout.write(JSON.stringify({ waits: results }) + "\n");
  await new Promise(() => {}); // until killed
}

const modes = { sessions, refusals, hold };
if (!modes[opts.mode]) fail(2, `--mode must be one of ${Object.keys(modes).join(", ")}`);
const summary = await modes[opts.mode]();
await new Promise((resolve) => process.stdout.write(JSON.stringify(summary) + "\n", resolve));
process.exit(0);
