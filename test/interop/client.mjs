#!/usr/bin/env node
// An MCP client on the TypeScript SDK that drives run-js-server over stdio:
// it starts the gateway, checks that it lists exactly the gateway's six tools
// (run_js, wait_js, stop_js, list_js, search_tools, server_info), calls run_js once, and prints the whole CallToolResult as
// JSON on stdout. Any protocol error ends it with status 1 and a message on
// stderr; a usage error, with status 2.
//
//   node client.mjs [--server BIN] [--config FILE] [--timeout-ms N]
//                   [--input JSON] [--language typescript] [--info]
//                   [--prepend-search QUERY] (--code-file FILE | --code CODE)
//
// --server defaults to $RUN_JS_SERVER_BIN, --config to $RUN_JS_SERVER_CONFIG.
// --timeout-ms is passed to run_js as timeout_ms, --language as language.
// --prepend-search first calls search_tools {query: QUERY} and puts its
// answer (TypeScript declarations) before the program, as an agent may. The
// tools the gateway listed are written to stderr as one line: "client: tools:
// [...]". With --info, server_info's structuredContent is written to stderr
// right after tools/list and again after run_js, as "client: server_info
// before: {...}" and "client: server_info after: {...}".
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const EXPECTED_TOOLS = ["list_js", "run_js", "search_tools", "server_info", "stop_js", "wait_js"];
// Bounds each MCP request, so that a gateway that never answers ends the
// client with a message instead of a hang.
const REQUEST_TIMEOUT_MS = 120_000;

function fail(status, message) {
  process.stderr.write(`client: ${message}\n`);
  process.exit(status);
}

let opts;
try {
  opts = parseArgs({
    options: {
      server: { type: "string", default: process.env.RUN_JS_SERVER_BIN },
      config: { type: "string", default: process.env.RUN_JS_SERVER_CONFIG },
      code: { type: "string" },
      "code-file": { type: "string" },
      input: { type: "string" },
      "timeout-ms": { type: "string" },
      language: { type: "string" },
      "prepend-search": { type: "string" },
      info: { type: "boolean", default: false },
    },
  }).values;
} catch (err) {
  fail(2, err.message);
}
if (!opts.server) fail(2, "no gateway binary: pass --server BIN or set RUN_JS_SERVER_BIN");
if (!opts.config) fail(2, "no config: pass --config FILE or set RUN_JS_SERVER_CONFIG");
if ((opts.code === undefined) === (opts["code-file"] === undefined)) {
  fail(2, "pass the program as exactly one of --code CODE or --code-file FILE");
}

const args = { code: opts.code ?? readFileSync(opts["code-file"], "utf8") };
if (opts.input !== undefined) {
  try {
    args.input = JSON.parse(opts.input);
  } catch (err) {
    fail(2, `--input is not JSON: ${err.message}`);
  }
}
if (opts["timeout-ms"] !== undefined) {
  args.timeout_ms = Number(opts["timeout-ms"]);
  if (!Number.isInteger(args.timeout_ms)) fail(2, `--timeout-ms ${opts["timeout-ms"]}: not an integer`);
}

if (opts.language !== undefined) args.language = opts.language;

const client = new Client({ name: "run-js-server-interop", version: "0.0.0" });
const transport = new StdioClientTransport({
  command: opts.server,
  args: ["--config", opts.config],
  env: process.env,
  stderr: "inherit", // the gateway's log goes to our stderr
});

async function step(what, fn) {
  try {
    return await fn();
  } catch (err) {
    fail(1, `${what}: ${err?.stack ?? err}`);
  }
}

await step(`initialize ${opts.server} --config ${opts.config}`, () =>
  client.connect(transport, { timeout: REQUEST_TIMEOUT_MS }),
);
const listed = await step("tools/list", () => client.listTools({}, { timeout: REQUEST_TIMEOUT_MS }));
const names = listed.tools.map((t) => t.name).sort();
process.stderr.write(`client: tools: ${JSON.stringify(names)}\n`);
if (JSON.stringify(names) !== JSON.stringify(EXPECTED_TOOLS)) {
  fail(1, `tools/list: got ${JSON.stringify(names)}, want exactly ${JSON.stringify(EXPECTED_TOOLS)}`);
}
async function info(when) {
  if (!opts.info) return;
  const r = await step("tools/call server_info", () =>
    client.callTool({ name: "server_info", arguments: {} }, undefined, { timeout: REQUEST_TIMEOUT_MS }),
  );
  process.stderr.write(`client: server_info ${when}: ${JSON.stringify(r.structuredContent)}\n`);
}
await info("before");
if (opts["prepend-search"] !== undefined) {
  const found = await step("tools/call search_tools", () =>
    client.callTool({ name: "search_tools", arguments: { query: opts["prepend-search"] } }, undefined, { timeout: REQUEST_TIMEOUT_MS }),
  );
  if (found.isError) fail(1, `search_tools: ${JSON.stringify(found)}`);
  args.code = found.content[0].text + "\n" + args.code;
}
const result = await step("tools/call run_js", () =>
  client.callTool({ name: "run_js", arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS }),
);
await info("after");
await new Promise((resolve) => process.stdout.write(JSON.stringify(result) + "\n", resolve));
await step("close", () => client.close());
process.exit(0);
