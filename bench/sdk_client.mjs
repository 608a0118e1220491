// bench/sdk_client.mjs: the official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
// packaging/npm/package.json) calling an MCP server directly over stdio, for bench/mcp_calls to
// compare with oppxd: N sequential tools/call echo after a warm-up, timed one by one.
//   usage: node bench/sdk_client.mjs --npm-dir DIR [--calls N] [--warmup W] -- command [args...]
// Prints one JSON line: {"calls":N,"p50_us":…,"p99_us":…,"mean_us":…,"errors":E}.
import { pathToFileURL } from "node:url";

const argv = process.argv.slice(2);
const opts = { npmDir: "build/npm", calls: 2000, warmup: 200 };
let command = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--") {
    command = argv.slice(i + 1);
    break;
  }
  if (argv[i] === "--npm-dir") opts.npmDir = argv[++i];
  else if (argv[i] === "--calls") opts.calls = Number(argv[++i]);
  else if (argv[i] === "--warmup") opts.warmup = Number(argv[++i]);
  else {
    console.error(`sdk_client: unknown argument ${argv[i]}`);
    process.exit(2);
  }
}
if (command.length === 0) {
  console.error("sdk_client: give the server's command after --");
  process.exit(2);
}

// The SDK lives in the project's npm folder, not beside this script: import it by path.
const sdk = `${opts.npmDir}/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { Client } = await import(pathToFileURL(`${sdk}/client/index.js`).href);
const { StdioClientTransport } = await import(pathToFileURL(`${sdk}/client/stdio.js`).href);

const client = new Client({ name: "oppx-bench", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: "ignore" }));

let errors = 0;
async function once() {
  const r = await client.callTool({ name: "echo", arguments: { message: "hello" } });
  if (r.content?.[0]?.text !== "Echo: hello") errors++;
}
for (let i = 0; i < opts.warmup; i++) await once();
errors = 0;
const times = [];
for (let i = 0; i < opts.calls; i++) {
  const t0 = process.hrtime.bigint();
  await once();
  times.push(Number(process.hrtime.bigint() - t0) / 1000);
}
await client.close();
times.sort((a, b) => a - b);
const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
const mean = times.reduce((a, b) => a + b, 0) / times.length;
console.log(JSON.stringify({ calls: opts.calls, p50_us: at(0.5), p99_us: at(0.99), mean_us: mean, errors }));
