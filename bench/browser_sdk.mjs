// bench/browser_sdk.mjs: the official TypeScript SDK client starting Playwright's MCP server itself
// (the same flags oppxd gives it) and timing, as bench/browser_start does through oppxd: connect,
// navigate to the page (Chromium starts; the result is the first snapshot), one click.
//   usage: node bench/browser_sdk.mjs --npm-dir DIR --url URL -- command [args...]
// Prints one JSON line: {"connect_ms":…,"first_snapshot_ms":…,"click_ms":…,"ok":true|false}.
import { pathToFileURL } from "node:url";

const argv = process.argv.slice(2);
let npmDir = "build/npm", url = "", command = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--") {
    command = argv.slice(i + 1);
    break;
  }
  if (argv[i] === "--npm-dir") npmDir = argv[++i];
  else if (argv[i] === "--url") url = argv[++i];
}
const sdk = `${npmDir}/node_modules/@modelcontextprotocol/sdk/dist/esm`;
const { Client } = await import(pathToFileURL(`${sdk}/client/index.js`).href);
const { StdioClientTransport } = await import(pathToFileURL(`${sdk}/client/stdio.js`).href);

const t0 = performance.now();
const client = new Client({ name: "oppx-bench", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: "ignore" }));
const t1 = performance.now();
const nav = await client.callTool({ name: "browser_navigate", arguments: { url } });
const t2 = performance.now();
const click = await client.callTool({ name: "browser_click", arguments: { element: "Add", target: "#add" } });
const t3 = performance.now();
const ok = JSON.stringify(nav).includes("Counter") && !click.isError;
console.log(JSON.stringify({ connect_ms: t1 - t0, first_snapshot_ms: t2 - t0, click_ms: t3 - t2, ok }));
await client.close();
