// A stdio MCP connector (2025-11-25) whose tools ask the user through the client (MCP
// elicitation/create), for the tests of questions from servers in `oppx -p` and the chat:
// confirm_deploy asks a form whose fields all have defaults but one optional; open_page asks the
// user to open an address (URL mode). Each tool's result says what the client answered.
//   node asking_connector.js
const readline = require("readline");
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const tools = [
  {
    name: "confirm_deploy",
    description: "Deploys the service after the user confirms where.",
    inputSchema: { type: "object" },
    annotations: { readOnlyHint: true },
  },
  {
    name: "open_page",
    description: "Has the user sign the terms on a web page.",
    inputSchema: { type: "object" },
    annotations: { readOnlyHint: true },
  },
];
const form = {
  mode: "form",
  message: "Where should it go?",
  requestedSchema: {
    type: "object",
    properties: {
      environment: {
        type: "string",
        title: "Environment",
        oneOf: [
          { const: "staging", title: "Staging" },
          { const: "production", title: "Production" },
        ],
        default: "staging",
      },
      replicas: { type: "integer", title: "Replicas", minimum: 1, maximum: 9, default: 2 },
      note: { type: "string", title: "Note" },
    },
    required: ["environment", "replicas"],
  },
};
const page = {
  mode: "url",
  message: "Sign the terms",
  url: "https://terms.example/sign?session=s3cr3t-page-4711",
  elicitationId: "e-1",
};
let capabilities = {};
let next = 1;
const waiting = new Map(); // our request id -> the tools/call id it serves
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.method === "initialize") {
    capabilities = m.params.capabilities || {};
    return send({
      jsonrpc: "2.0",
      id: m.id,
      result: { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "asking", version: "1" } },
    });
  }
  if (m.method === "tools/list") return send({ jsonrpc: "2.0", id: m.id, result: { tools } });
  if (m.id !== undefined && m.method === undefined && waiting.has(m.id)) {
    const call = waiting.get(m.id);
    waiting.delete(m.id);
    const answer = m.result ? JSON.stringify(m.result) : "error " + JSON.stringify(m.error);
    return send({ jsonrpc: "2.0", id: call, result: { content: [{ type: "text", text: "the user answered " + answer }] } });
  }
  if (m.method !== "tools/call") {
    if (m.id !== undefined) send({ jsonrpc: "2.0", id: m.id, result: {} });
    return;
  }
  if (!capabilities.elicitation) {
    return send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "no elicitation" }], isError: true } });
  }
  const id = "ask-" + next++;
  waiting.set(id, m.id);
  send({ jsonrpc: "2.0", id, method: "elicitation/create", params: m.params.name === "open_page" ? page : form });
});
