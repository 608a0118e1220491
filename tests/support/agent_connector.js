// A stdio MCP connector for the agent loop's tests: tools that are read-only or not, with an enum,
// optional arguments, none at all, and a $ref. Every tools/call is appended to <calls.jsonl>, and
// every notifications/cancelled as {"cancelled": id}; `hang` reports progress once (when asked)
// and never answers.
//   node agent_connector.js <calls.jsonl>
// `crash` writes <calls.jsonl>.broken and exits mid-call; while that file exists the connector
// exits at start, so it stays down for good.
const fs = require("fs");
const readline = require("readline");
const callsPath = process.argv[2];
const broken = callsPath + ".broken";
if (fs.existsSync(broken)) {
  process.stderr.write("agent connector: broken for good (remove the .broken file)\n");
  process.exit(1);
}
const tools = [
  {
    name: "lookup",
    description: "Looks up an issue by its id. Returns its title and state.",
    inputSchema: {
      type: "object",
      properties: { id: { type: "string" }, detail: { type: "string", enum: ["short", "full"] } },
      required: ["id"],
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: "save_issue",
    description: "Saves an issue. Creates it when it has no id, otherwise updates it.",
    inputSchema: {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      $defs: {
        issue: {
          type: "object",
          properties: { title: { type: "string" }, priority: { type: "integer", enum: [1, 2, 3] } },
          required: ["title"],
        },
      },
      properties: { issue: { $ref: "#/$defs/issue" }, team: { type: "string", format: "uuid" } },
      required: ["issue"],
    },
  },
  { name: "ping", description: "Pings the service.", inputSchema: { type: "object" } },
  {
    name: "fail",
    description: "Always fails.",
    inputSchema: { type: "object", properties: { x: { type: "string" } }, required: ["x"] },
    annotations: { readOnlyHint: true },
  },
  { name: "crash", description: "Stops the connector for good.", inputSchema: { type: "object" } },
  { name: "hang", description: "Never answers.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
];
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const text = (id, t, isError) => send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: t }], isError } });
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.method === "initialize")
    return send({
      jsonrpc: "2.0",
      id: m.id,
      result: { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "agent", version: "1" } },
    });
  if (m.method === "tools/list") return send({ jsonrpc: "2.0", id: m.id, result: { tools } });
  if (m.method === "notifications/cancelled")
    return fs.appendFileSync(callsPath, JSON.stringify({ cancelled: m.params.requestId }) + "\n");
  if (m.method !== "tools/call") {
    if (m.id !== undefined) send({ jsonrpc: "2.0", id: m.id, result: {} });
    return;
  }
  const { name, arguments: args } = m.params;
  fs.appendFileSync(callsPath, JSON.stringify({ name, arguments: args || {} }) + "\n");
  if (name === "lookup") return text(m.id, `issue ${args.id}: The login page is blank (open)`, false);
  if (name === "save_issue") return text(m.id, `saved "${args.issue.title}"`, false);
  if (name === "ping") return text(m.id, "pong", false);
  if (name === "fail") return text(m.id, `the x field is wrong: ${args.x}`, true);
  if (name === "hang") {
    // One progress report, when asked for, then silence.
    const token = m.params._meta && m.params._meta.progressToken;
    if (token !== undefined)
      send({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: 1, total: 3, message: "waiting for the service" } });
    return;
  }
  if (name === "crash") {
    fs.writeFileSync(broken, "");
    process.exit(1);
  }
  send({ jsonrpc: "2.0", id: m.id, error: { code: -32602, message: `no tool ${name}` } });
});
