// A stdio MCP server (2025-11-25) that offers a stored tool list as it is (one of
// tests/data/tool_lists/*.json, what a real server listed) and answers every call with the tool's
// name: bench/tool_search serves twenty connectors' worth of real tool lists with it, without their
// services. Any other method is -32601, as real servers answer it.
//   node bench/list_server.mjs <list.json>
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const tools = JSON.parse(readFileSync(process.argv[2], "utf8")).tools;
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.id === undefined) return;
  if (m.method === "initialize")
    return send({
      id: m.id,
      result: { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "list", version: "1" } },
    });
  if (m.method === "tools/list") return send({ id: m.id, result: { tools } });
  if (m.method === "tools/call")
    return send({ id: m.id, result: { content: [{ type: "text", text: `${m.params?.name} ok` }] } });
  if (m.method === "ping") return send({ id: m.id, result: {} });
  send({ id: m.id, error: { code: -32601, message: "Method not found" } });
});
