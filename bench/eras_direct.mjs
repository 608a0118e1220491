// bench/eras_direct.mjs: the floor of bench/mcp_eras — tools/call echo written straight to
// tests/support/modern_server.mjs over stdio, in one MCP era, by a client with no logic at all
// (one JSON line out, one in), so that what the server library costs in each era is measured
// apart from oppxd. Prints one JSON line: calls, p50_us, p90_us, p99_us, min_us, errors.
//   node eras_direct.mjs --npm-dir DIR --era 2025-11-25|2026-07-28 [--calls N] [--warmup W]
import { spawn } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const era = arg("--era", "2026-07-28");
const calls = Number(arg("--calls", "1000"));
const warmup = Number(arg("--warmup", "100"));
const server = path.join(path.dirname(fileURLToPath(import.meta.url)), "../tests/support/modern_server.mjs");
const child = spawn("node", [server, "stdio"], {
  env: { ...process.env, OPPX_MODERN_SDK: path.join(arg("--npm-dir", ""), "node_modules") },
  stdio: ["pipe", "pipe", "ignore"],
});
const waiting = new Map();
readline.createInterface({ input: child.stdout }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id !== undefined && waiting.has(m.id)) {
    waiting.get(m.id)(m);
    waiting.delete(m.id);
  }
});
let id = 0;
const call = (method, params) =>
  new Promise((done) => {
    waiting.set(++id, done);
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });
// What oppx sends in each era: 2026-07-28 stamps every request with the protocol's _meta.
const meta = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {}, url: {} } },
  "io.modelcontextprotocol/clientInfo": { name: "oppx", version: "bench" },
};
const modern = era === "2026-07-28";
if (modern) {
  await call("server/discover", { _meta: meta });
} else {
  await call("initialize", { protocolVersion: era, capabilities: {}, clientInfo: { name: "bench", version: "1" } });
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
}
const params = () => ({ name: "echo", arguments: { message: "hi" }, ...(modern ? { _meta: meta } : {}) });
let errors = 0;
const times = [];
for (let i = 0; i < warmup + calls; ++i) {
  const t0 = process.hrtime.bigint();
  const m = await call("tools/call", params());
  const us = Number(process.hrtime.bigint() - t0) / 1000;
  if (!m.result || m.result.content?.[0]?.text !== "Echo: hi") ++errors;
  if (i >= warmup) times.push(us);
}
child.kill();
times.sort((a, b) => a - b);
const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
console.log(JSON.stringify({ calls: times.length, p50_us: at(0.5), p90_us: at(0.9), p99_us: at(0.99), min_us: times[0], errors }));
