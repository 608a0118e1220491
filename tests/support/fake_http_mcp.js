// A fake MCP server over streamable HTTP that makes faults on purpose, for the HTTP connector
// tests (real servers are used for everything else). Node built-ins only. Listens on port 0 of
// 127.0.0.1 and prints "ports N M ready" on stdout (M: the second origin, for redirects).
//   usage: node fake_http_mcp.js MODE [ARG...] [--version=V]   (modes: see the switch in answer())
//   --version=V: initialize answers with protocol version V, whatever the client asked for.
//   --port=N: listen on port N instead of a free one (a server back on the port it had).
//   --modern: it speaks MCP 2026-07-28 (server/discover lists it), in any mode.
"use strict";
const http = require("http");
const https = require("https");
const fs = require("fs");

const argv = process.argv.slice(2);
const forcedVersion = (argv.find((a) => a.startsWith("--version=")) || "").slice("--version=".length);
const fixedPort = Number((argv.find((a) => a.startsWith("--port=")) || "--port=0").slice("--port=".length));
const modern = argv.includes("--modern"); // server/discover lists MCP 2026-07-28: no session, no GET stream
const [mode, ...args] = argv.filter((a) => !a.startsWith("--version=") && !a.startsWith("--port=") && a !== "--modern");
const say = (s) => process.stdout.write(s + "\n");

let sessions = new Set();
let nextSession = 1;
let initializeCount = 0;
let sessionRequests = 0;
let nextEventId = 1;
const replay = new Map(); // event id -> the event still to send after it (mode drop-stream)
let droppedAt = 0; // when drop-stream cut its stream, to measure the client's wait before resuming
let resumes = 0; // GETs with Last-Event-ID (modes drop-forever, poll)
let pollAnswer = null; // the response that mode "poll" sends once it is done polling
let connections = 0; // TCP connections accepted (modes count, close-idle)
let calls = 0;
const notes = []; // notifications waiting for the next poll of the server's stream (mode notify-poll)
const extraTools = []; // grows in modes "notify" and "announce", announced on the server's own stream
const listeners = []; // open GET streams (modes "notify", "announce")
const held = []; // GETs not answered yet (mode "announce late-stream")
const callsOf = new Map(); // tool -> tools/call received (mode drop-call)

function result(id, r) {
  return JSON.stringify({ jsonrpc: "2.0", id, result: r });
}

function mcpResult(msg) {
  switch (msg.method) {
    case "initialize": {
      const asked = msg.params && msg.params.protocolVersion;
      const known = ["2025-11-25", "2025-06-18", "2025-03-26"];
      return {
        protocolVersion: forcedVersion || (known.includes(asked) ? asked : "2025-11-25"),
        capabilities: { tools: {} },
        serverInfo: { name: "fake-http", version: "1" },
      };
    }
    case "tools/list":
      return {
        tools: [
          ...extraTools,
          { name: "echo", description: "Echoes its message", inputSchema: { type: "object" } },
          { name: "slow", description: "Answers after a while", inputSchema: { type: "object" } },
          ...(mode === "drop-call" ? [{ name: "peek", description: "Reads only", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } }] : []),
        ],
      };
    case "tools/call": {
      const a = (msg.params && msg.params.arguments) || {};
      return { content: [{ type: "text", text: "echo: " + (a.message || "") }] };
    }
    case "ping":
      return {};
    case "server/discover":
      return modern ? { supportedVersions: ["2026-07-28"], capabilities: { tools: {} } } : null;
    default:
      return null;
  }
}

// A tool is added and list_changed sent on each open server stream (modes notify, announce).
function addTool(name, description) {
  extraTools.push({ name, description, inputSchema: { type: "object" } });
  const note = JSON.stringify({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
  say(`tool ${name} added; list_changed sent on ${listeners.length} server streams`);
  for (const l of listeners) l.write(sseEvent(note, String(nextEventId++)));
}

function openListener(res) {
  res.writeHead(200, { "Content-Type": "text/event-stream" });
  res.write(": the server's own stream\n\n");
  listeners.push(res);
  say("server stream opened");
}

function sendJson(res, status, body, headers = {}) {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(body);
}

function sseEvent(data, id) {
  return (id ? `id: ${id}\n` : "") + `event: message\ndata: ${data}\n\n`;
}

// The ordinary answer: JSON, or an event stream with ids when `sse`.
function answerOk(req, res, msg, sse) {
  const headers = {};
  if (msg.method === "initialize") {
    const sid = `sess-${nextSession++}`;
    sessions.add(sid);
    headers["Mcp-Session-Id"] = sid;
  }
  const r = mcpResult(msg);
  const body =
    r === null
      ? JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "no such method" } })
      : result(msg.id, r);
  if (!sse) return sendJson(res, 200, body, headers);
  res.writeHead(200, { "Content-Type": "text/event-stream", ...headers });
  res.write(": a comment first\n\n");
  res.end(sseEvent(body, String(nextEventId++)));
}

function oneEventThenDrop(req, res) {
  res.writeHead(200, { "Content-Type": "text/event-stream" });
  res.write("retry: 100\n");
  res.write(sseEvent(JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "working" } }), String(nextEventId++)));
  setTimeout(() => req.socket.destroy(), 20);
}

function primeThenEnd(res) {
  res.writeHead(200, { "Content-Type": "text/event-stream" });
  res.end(`retry: 100\nid: ${nextEventId++}\ndata:\n\n`);
}

function rawResponse(req, lines, body) {
  req.socket.write(lines.join("\r\n") + "\r\n\r\n" + body);
  req.socket.end();
}

function torture(res, body) {
  // A BOM, CRLF and CR endings, comments, a junk retry, data over several lines, split writes.
  const text =
    "\uFEFF: torture\r\nretry: junk\r\nretry: -5\rretry: 1e12\n: ping\r\n\r\nid: t1\r\nevent: message\r\n" +
    "data: " +
    body.replace(/,"/g, ',\r\ndata: "') +
    "\r\n\r\n";
  res.writeHead(200, { "Content-Type": "text/event-stream" });
  const bytes = Buffer.from(text, "utf8");
  let i = 0;
  const step = () => {
    if (i >= bytes.length) return res.end();
    const n = 1 + (i % 7);
    res.write(bytes.subarray(i, i + n));
    i += n;
    setTimeout(step, 1);
  };
  step();
}

// Requests other than initialize and notifications go through the fault of the mode.
function answer(req, res, msg) {
  if (msg.method === "initialize") initializeCount++, say(`initialize #${initializeCount}`);
  const isCall = msg.method === "tools/call";
  const sid = req.headers["mcp-session-id"];
  if (sid !== undefined && msg.method !== "initialize") {
    if (!sessions.has(sid)) {
      say(`unknown session ${sid}`);
      return sendJson(res, 404, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }));
    }
    sessionRequests++;
    const forgetAfter = mode === "session404" ? Number(args[0] || 3) : mode === "session404-always" ? 0 : -1;
    if (forgetAfter >= 0 && sessionRequests > forgetAfter && isCall) {
      say("forgetting every session");
      sessions = new Set();
      sessionRequests = 0;
      return sendJson(res, 404, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }));
    }
  }
  if (msg.method === "notifications/cancelled") say("notifications/cancelled");
  if (mode === "announce") say(`POST ${msg.method || "response"}`);
  if (mode === "announce" && msg.method === "notifications/initialized") {
    // Like server-everything, whose initialized handler registers tools: the list changes while
    // initialized is handled (which takes a while here) and the news goes to the server's own
    // stream if one is open, else nowhere (as the SDK's servers do).
    return setTimeout(() => {
      if (args[0] !== "late-stream") addTool("added", "Added while initialized was handled");
      res.writeHead(202);
      res.end();
    }, 300);
  }
  if (mode === "announce" && msg.method === "tools/list" && args[0] === "late-stream" && !extraTools.length) {
    // "announce late-stream": the list changes right after the first tools/list was answered,
    // before the server's own stream (held until then) opened: that news is lost.
    res.on("finish", () => {
      addTool("added", "Added after the first tools/list");
      for (const l of held.splice(0)) openListener(l);
    });
  }
  if (msg.id === undefined || msg.method === undefined) {
    res.writeHead(202);
    return res.end();
  }
  switch (mode) {
    case "sse":
      return answerOk(req, res, msg, true);
    case "torture":
      if (isCall) return torture(res, result(msg.id, mcpResult(msg)));
      return answerOk(req, res, msg, true);
    case "bad-session":
      if (msg.method === "initialize") {
        const kinds = { space: "abc def", nonascii: "s\u00e9ssion", ctl: "abc\u0001def", cr: "abc\rX-Injected: 1" };
        const body = result(msg.id, mcpResult(msg));
        return rawResponse(req, ["HTTP/1.1 200 OK", "Content-Type: application/json", `Content-Length: ${Buffer.byteLength(body)}`,
          "Connection: close", Buffer.from("Mcp-Session-Id: " + kinds[args[0] || "space"], "utf8").toString("latin1")], body);
      }
      break;
    case "notify":
      if (isCall) {
        // The tool list changes; the news goes out on the server's own stream (GET).
        addTool("added", "Added after a call");
      }
      break;
    case "notify-poll":
      if (isCall) {
        extraTools.push({ name: "added", description: "Added after a call", inputSchema: { type: "object" } });
        notes.push(JSON.stringify({ jsonrpc: "2.0", method: "notifications/tools/list_changed" }));
      }
      break;
    case "html":
      if (isCall) {
        res.writeHead(502, { "Content-Type": "text/html; charset=utf-8" });
        return res.end("<html><body><h1>502 Bad Gateway</h1></body></html>");
      }
      break;
    case "html200":
      if (isCall) {
        res.writeHead(200, { "Content-Type": "text/html" });
        return res.end("<!doctype html><html><body>Sign in</body></html>");
      }
      break;
    case "wrongtype":
      if (isCall) {
        res.writeHead(200, { "Content-Type": "text/plain" });
        return res.end("hello");
      }
      break;
    case "badjson":
      if (isCall) return sendJson(res, 200, "{\"jsonrpc\": \"2.0\", \"id\": ");
      break;
    case "accepted":
      if (isCall) {
        res.writeHead(202);
        return res.end();
      }
      break;
    case "drop-stream":
      if (isCall) {
        const first = String(nextEventId++);
        replay.set(first, sseEvent(result(msg.id, mcpResult(msg)), String(nextEventId++)));
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        res.write(`retry: ${args[0] || "50"}\n`);
        res.write(sseEvent(JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "working" } }), first));
        say(`dropping the stream after event ${first}`);
        return setTimeout(() => {
          droppedAt = Date.now();
          req.socket.destroy();
        }, 20);
      }
      return answerOk(req, res, msg, true);
    case "drop-forever":
      // One event that is not the response, then the connection breaks; every resumption alike.
      if (isCall) return oneEventThenDrop(req, res);
      break;
    case "poll":
      // MCP 2025-11-25 polling: a priming event (an id, empty data), then the stream ends cleanly
      // without the response; the response comes on the resumption number ARG.
      if (isCall) {
        pollAnswer = result(msg.id, mcpResult(msg));
        return primeThenEnd(res);
      }
      break;
    case "login-lost":
      // The login is lost in the middle of a session: the session started, a call is refused.
      if (isCall) {
        say("refusing a call with 401");
        return sendJson(res, 401, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Unauthorized" } }));
      }
      break;
    case "claims-kind":
      // A tool's JSON-RPC error whose data.kind is the one in the call's arguments: one of the
      // kinds the daemon acts on (login, unreachable...), which a server's answer cannot claim.
      if (isCall) {
        const kind = (msg.params && msg.params.arguments && msg.params.arguments.kind) || "login";
        const error = { code: -32000, message: `the tool claims ${kind}`, data: { kind } };
        return sendJson(res, 200, JSON.stringify({ jsonrpc: "2.0", id: msg.id, error }));
      }
      break;
    case "count":
      if (isCall) say(`tools/call #${++calls} on connection #${req.socket.number}`);
      break;
    case "drop-call":
      // The first call of each tool is read whole, then its connection closed without an answer
      // (a server that crashed or restarted in the middle). With ARG "exit" the server is gone
      // too: nothing listens on its port any more.
      if (isCall) {
        const tool = msg.params && msg.params.name;
        const n = (callsOf.get(tool) || 0) + 1;
        callsOf.set(tool, n);
        say(`tools/call #${n} of ${tool}`);
        if (n > 1) break;
        if (args[0] === "exit") {
          server.close();
          return setImmediate(() => {
            req.socket.destroy();
            process.exit(0);
          });
        }
        return req.socket.destroy();
      }
      break;
    case "close-idle":
      // The keep-alive connection is closed once the answer went out, as a server does to idle
      // ones; a request sent on it afterwards is never read (the client must use a new connection).
      if (isCall) {
        const n = ++calls;
        res.on("finish", () => {
          say(`closing connection #${req.socket.number} after call #${n}`);
          req.socket.destroy();
        });
      }
      break;
    case "drop-stream-noid":
      if (isCall) {
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        res.write(sseEvent(JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "working" } })));
        return setTimeout(() => req.socket.destroy(), 20);
      }
      break;
    case "trickle":
      if (isCall) {
        const head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + "a".repeat(200);
        let i = 0;
        const t = setInterval(() => {
          if (req.socket.destroyed || i >= head.length) return clearInterval(t);
          req.socket.write(head[i++]);
        }, 100);
        return;
      }
      break;
    case "ping":
      if (isCall) {
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        const t = setInterval(() => (res.destroyed ? clearInterval(t) : res.write(": ping\n\n")), 100);
        res.on("close", () => say("the client closed the stream of tools/call"));
        return;
      }
      break;
    case "flood":
      // One event's data line that never ends: 100 MiB without a line break, as fast as the
      // client reads it.
      if (isCall) {
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        const mib = Buffer.alloc(1 << 20, 0x61);
        let sent = 0;
        res.on("close", () => say(`flood closed after ${sent} MiB`));
        res.write("data: ");
        const more = () => {
          while (!res.destroyed && sent < 100) {
            sent++;
            if (!res.write(mib)) return res.once("drain", more);
          }
          if (!res.destroyed) res.end("\n\n");
        };
        return more();
      }
      break;
    case "idle":
      if (isCall) {
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        res.write(": one comment, then silence\n\n");
        return;
      }
      break;
  }
  answerOk(req, res, msg, false);
}

function readBody(req, done) {
  const parts = [];
  req.on("data", (c) => parts.push(c));
  req.on("end", () => done(Buffer.concat(parts).toString("utf8")));
}

function handle(req, res) {
  const url = req.url;
  if (mode === "silent") {
    // Accepts the connection, reads the request, never writes a byte.
    return readBody(req, () => say(`silent: ${req.method} read, never answered`));
  }
  if (mode === "auth" && req.headers["authorization"] !== "Bearer " + args[0]) {
    say("refused a request without the right token");
    return sendJson(res, 401, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Unauthorized" } }));
  }
  if (mode.startsWith("redirect")) {
    say(`${req.method} ${url} authorization=${req.headers["authorization"] ? "yes" : "no"} x-secret=${req.headers["x-secret"] ? "yes" : "no"}`);
    if (mode === "redirect-same" && url === "/mcp") return redirect(res, "/real/mcp");
    if (mode === "redirect-cross" && url === "/mcp") return redirect(res, `http://127.0.0.1:${second.address().port}/mcp`);
    if (mode === "redirect-loop") return redirect(res, url === "/a" ? "/b" : "/a");
    if (mode === "redirect-to-http") return redirect(res, `http://127.0.0.1:${second.address().port}/mcp`);
  }
  // Mode "status N": no MCP endpoint here; every POST is answered with HTTP N and a page.
  if (mode === "status" && req.method === "POST") {
    say(`POST ${url} answered with HTTP ${args[0]}`);
    return readBody(req, () => {
      res.writeHead(Number(args[0]), { "Content-Type": "text/html" });
      res.end("<html><body>Cannot POST " + url + "</body></html>");
    });
  }
  if (mode === "record" && req.method !== "POST")
    say(`${req.method} version=${req.headers["mcp-protocol-version"] || "-"} session=${req.headers["mcp-session-id"] || "-"}`);
  if (req.method === "DELETE") {
    say(`DELETE session ${req.headers["mcp-session-id"]}`);
    sessions.delete(req.headers["mcp-session-id"]);
    res.writeHead(200);
    return res.end();
  }
  if (req.method === "GET") {
    const last = req.headers["last-event-id"];
    if (mode === "drop-stream" && last && replay.has(last)) {
      say(`resumed after event ${last}, ${Date.now() - droppedAt} ms after the drop`);
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.end(replay.get(last));
      replay.delete(last);
      return;
    }
    if (mode === "drop-forever" && last) {
      say(`resume #${++resumes} after event ${last}`);
      return oneEventThenDrop(req, res);
    }
    if (mode === "poll" && last) {
      say(`poll #${++resumes} after event ${last}`);
      if (resumes < Number(args[0] || 3)) return primeThenEnd(res);
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      return res.end(sseEvent(pollAnswer, String(nextEventId++)));
    }
    if (mode === "notify-poll" && sessions.has(req.headers["mcp-session-id"])) {
      // MCP 2025-11-25 polling of the server's own stream: each GET gets what is waiting (or
      // only a priming event) and ends cleanly; the client comes back after `retry`.
      say(`server stream poll #${++resumes}`);
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      const waiting = notes.splice(0).map((n) => sseEvent(n, String(nextEventId++))).join("");
      return res.end(`retry: 100\nid: ${nextEventId++}\ndata:\n\n` + waiting);
    }
    if (mode === "announce" && sessions.has(req.headers["mcp-session-id"])) {
      if (args[0] === "late-stream" && !extraTools.length) return held.push(res), say("server stream held");
      return openListener(res);
    }
    if (mode === "notify" && sessions.has(req.headers["mcp-session-id"])) {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      // "notify late-headers": the headers go out only with the first event.
      if (args[0] !== "late-headers") res.write(": the server's own stream\n\n");
      listeners.push(res);
      return say("server stream opened");
    }
    res.writeHead(405);
    return res.end();
  }
  readBody(req, (text) => {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch (e) {
      return sendJson(res, 400, JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }));
    }
    if (mode === "record") say(`${msg.method || "response"} accept=${req.headers["accept"]} version=${req.headers["mcp-protocol-version"] || "-"} session=${req.headers["mcp-session-id"] || "-"}`);
    answer(req, res, msg);
  });
}

function redirect(res, location) {
  res.writeHead(307, { Location: location });
  res.end();
}

let server;
if (mode === "tls" || mode === "redirect-to-http") {
  const [cert, key] = mode === "tls" ? args : args;
  server = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, handle);
} else {
  server = http.createServer(handle);
}
// The second origin (another port) of the cross-origin redirects: it records what reached it.
const second = http.createServer((req, res) => {
  say(`second origin: ${req.method} authorization=${req.headers["authorization"] ? "yes" : "no"} x-secret=${req.headers["x-secret"] ? "yes" : "no"}`);
  handle2(req, res);
});
function handle2(req, res) {
  if (req.method !== "POST") {
    res.writeHead(405);
    return res.end();
  }
  readBody(req, (text) => answerOk(req, res, JSON.parse(text), false));
}
// Kept-alive connections stay for the whole test (Node closes idle ones after 5 s).
if (mode === "drop-call") server.keepAliveTimeout = 600000;
if (mode === "count" || mode === "close-idle")
  server.on("connection", (socket) => {
    socket.number = ++connections;
    say(`connection #${connections}`);
  });
second.listen(0, "127.0.0.1", () => {
  server.listen(fixedPort, "127.0.0.1", () => {
    say(`ports ${server.address().port} ${second.address().port} ready`);
  });
});
process.on("SIGTERM", () => process.exit(0));
