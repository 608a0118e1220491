// bench/sdk_client.mjs: the official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
// packaging/npm/package.json) calling an MCP server directly, for bench/mcp_calls to compare with
// oppxd. Warm: N tools/call echo after a warm-up, timed one by one, K of them in flight at every
// moment (1: one after the other), over stdio (a command after --) or streamable HTTP (--url).
// Cold (--cold R): R times, spawn the server, initialize, tools/list, the first tools/call (timed
// to its answer), then close (stop the server: timed apart). In process (--in-process MODULE):
// the server made by MODULE's createServer() (server-everything's dist/server/index.js) in this
// same Node process, linked by the SDK's in-memory transport: the SDK's own cost, no IPC at all.
// --tool names the echo tool (`everything__echo` through `oppx mcp serve`). A spawned server gets
// this process's whole environment (the SDK passes only a few variables unless told).
//   usage: node bench/sdk_client.mjs --npm-dir DIR [--calls N] [--warmup W] [--inflight K]
//                                    [--cold R] [--tool NAME]
//                                    (--url URL | --in-process MODULE | -- command [args...])
// Prints one JSON line: {"calls":N,"p50_us":…,"p90_us":…,"p99_us":…,"min_us":…,"mean_us":…,
// "calls_per_s":…,"errors":E,"first_error":…}; with --cold, "calls" counts the runs, and
// "close_p50_us" is the median time close took.
import { pathToFileURL } from "node:url";

const argv = process.argv.slice(2);
const opts = { npmDir: "build/npm", calls: 2000, warmup: 200, inflight: 1, cold: 0, url: "", inProcess: "", tool: "echo" };
let command = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--") {
    command = argv.slice(i + 1);
    break;
  }
  if (argv[i] === "--npm-dir") opts.npmDir = argv[++i];
  else if (argv[i] === "--calls") opts.calls = Number(argv[++i]);
  else if (argv[i] === "--warmup") opts.warmup = Number(argv[++i]);
  else if (argv[i] === "--inflight") opts.inflight = Math.max(1, Number(argv[++i]));
  else if (argv[i] === "--cold") opts.cold = Number(argv[++i]);
  else if (argv[i] === "--url") opts.url = argv[++i];
  else if (argv[i] === "--in-process") opts.inProcess = argv[++i];
  else if (argv[i] === "--tool") opts.tool = argv[++i];
  else {
    console.error(`sdk_client: unknown argument ${argv[i]}`);
    process.exit(2);
  }
}
if (command.length === 0 && !opts.url && !opts.inProcess) {
  console.error("sdk_client: give the server's command after --, or --url, or --in-process");
  process.exit(2);
}
if (opts.cold > 0 && (opts.url || opts.inProcess)) {
  console.error("sdk_client: --cold spawns the server: give its command after --, not --url");
  process.exit(2);
}

// The SDK lives in the project's npm folder, not beside this script: import it by path.
const sdk = `${opts.npmDir}/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const load = (file) => import(pathToFileURL(`${sdk}/client/${file}`).href);
const { Client } = await load("index.js");
const { StdioClientTransport } = await load("stdio.js");
const { StreamableHTTPClientTransport } = await load("streamableHttp.js");

const transport = () =>
  opts.url
    ? new StreamableHTTPClientTransport(new URL(opts.url))
    : new StdioClientTransport({ command: command[0], args: command.slice(1), env: { ...process.env }, stderr: "ignore" });

// In process: the server's end of an in-memory pair, connected first; `stop` ends its timers.
let stop = () => {};
async function connect(client) {
  if (!opts.inProcess) return client.connect(transport());
  const { InMemoryTransport } = await import(pathToFileURL(`${sdk}/inMemory.js`).href);
  const { createServer } = await import(pathToFileURL(opts.inProcess).href);
  const [clientEnd, serverEnd] = InMemoryTransport.createLinkedPair();
  const made = createServer();
  await made.server.connect(serverEnd);
  stop = () => made.cleanup?.();
  return client.connect(clientEnd);
}

let errors = 0;
let firstError = "";
function failed(why) {
  if (errors++ === 0) firstError = why;
}
async function echo(client) {
  try {
    const r = await client.callTool({ name: opts.tool, arguments: { message: "hello" } });
    const text = r.content?.[0]?.text;
    if (text !== "Echo: hello") failed(`unexpected reply: ${JSON.stringify(r)}`);
  } catch (e) {
    failed(String(e?.message ?? e));
  }
}
const now = () => process.hrtime.bigint();
const since = (t0) => Number(now() - t0) / 1000;

// `calls` calls with `inflight` of them outstanding at every moment; their latencies in µs.
async function warm(client, calls, times) {
  let issued = 0;
  async function lane() {
    while (issued < calls) {
      issued++;
      const t0 = now();
      await echo(client);
      times?.push(since(t0));
    }
  }
  await Promise.all(Array.from({ length: Math.min(opts.inflight, calls) }, lane));
}

const times = [];
const closes = [];
let seconds = 0;
if (opts.cold > 0) {
  for (let i = 0; i < opts.cold; i++) {
    const t0 = now();
    const client = new Client({ name: "oppx-bench", version: "1.0.0" });
    try {
      await client.connect(transport());
      const tools = await client.listTools();
      if (!tools.tools.some((t) => t.name === opts.tool)) failed(`tools/list has no ${opts.tool}`);
      await echo(client);
    } catch (e) {
      failed(String(e?.message ?? e));
    }
    times.push(since(t0));
    const t1 = now();
    await client.close();
    closes.push(since(t1));
  }
} else {
  const client = new Client({ name: "oppx-bench", version: "1.0.0" });
  await connect(client);
  await warm(client, opts.warmup);
  errors = 0;
  firstError = "";
  const t0 = now();
  await warm(client, opts.calls, times);
  seconds = since(t0) / 1e6;
  await client.close();
  stop();
}
times.sort((a, b) => a - b);
closes.sort((a, b) => a - b);
const at = (q, t = times) => t[Math.min(t.length - 1, Math.floor(q * t.length))];
const mean = times.reduce((a, b) => a + b, 0) / times.length;
const out = { calls: times.length, p50_us: at(0.5), p90_us: at(0.9), p99_us: at(0.99), min_us: times[0] };
Object.assign(out, { mean_us: mean, calls_per_s: seconds > 0 ? times.length / seconds : 0, errors });
if (closes.length) out.close_p50_us = at(0.5, closes);
if (errors) out.first_error = firstError;
console.log(JSON.stringify(out));
