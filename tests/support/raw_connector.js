// A stdio MCP connector for the agent's action tests: every tools/call line is appended to
// <lines.txt> as it arrived. `peek` (read-only) and `erase` exit mid-call, every time; `note`
// answers "noted".
//   node raw_connector.js <lines.txt>
const fs = require("fs");
const readline = require("readline");
const linesPath = process.argv[2];
const tools = [
  { name: "peek", description: "Reads a value.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
  { name: "erase", description: "Erases a value.", inputSchema: { type: "object" } },
  {
    name: "note",
    description: "Notes a value.",
    inputSchema: { type: "object", properties: { x: { type: "number" }, tiny: { type: "number" }, whole: { type: "integer" } } },
    annotations: { readOnlyHint: true },
  },
];
// What each request is answered with; a tools/call is logged, and then the program exits (but
// for note).
const answers = {
  initialize: () => ({
    protocolVersion: "2025-06-18",
    capabilities: { tools: {} },
    serverInfo: { name: "raw", version: "1" },
  }),
  "tools/list": () => ({ tools }),
  "tools/call": (params, line) => {
    fs.appendFileSync(linesPath, line + "\n");
    if (params.name === "note") return { content: [{ type: "text", text: "noted" }] };
    process.exit(1);
  },
};
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;  // notifications
  const answer = answers[m.method] || (() => ({}));
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: answer(m.params, line) }) + "\n");
});
