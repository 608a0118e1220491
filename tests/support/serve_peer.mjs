// The official TypeScript SDK client as the peer of `oppx mcp serve` (tests/cli/mcp_serve_test.cpp):
// it spawns the server command given after --, with this process's whole environment (the SDK
// passes only a few variables unless told), runs one scenario and prints one JSON line per step.
// With --unix PATH it speaks streamable HTTP to the daemon's MCP socket instead (node's fetch has
// no Unix sockets: requests go through node:http with socketPath), --cwd FOLDER on its URL.
// With --modern the client is the official 2.x client: over stdio pinned to MCP 2026-07-28
// (server/discover, each request's _meta, questions carried by input_required results); over
// --unix in its "auto" mode, which falls back to 2025-11-25 (the HTTP socket serves that).
//   usage: node serve_peer.mjs --npm-dir DIR --scenario NAME [--answer yes|no|none] [--add CMD]
//                              [--modern] (--unix PATH [--cwd FOLDER] | -- command [args...])
// Scenarios:
//   basic      tools/list, then echo, get-sum (structured) and a long operation with progress
//              (--modern: first opens and closes a second list-change stream)
//   cancel     a long operation cancelled after its first progress notification, then echo and
//              the connector's requests_waiting (by running $OPPX_BIN mcp list --json)
//   changed    lists, runs the --add command (which adds a connector), waits for
//              notifications/tools/list_changed and lists again
//   ask        calls toggle-simulated-logging (not read-only): --answer says what the elicitation
//              handler answers (none: the client does not offer elicitation)
//   restart    echo, then the --add command (which restarts the daemon), then the
//              notifications/tools/list_changed that the new daemon's server sends to this idle
//              client, then echo again; with --then CMD, that command (which adds a connector) and
//              the list_changed that announces it, and the list after it
//   stopped    a long operation; at its first progress notification, the --add command (which
//              stops the daemon); the call's answer (within 20 s)
//   env        calls lazyenv__get-env (a connector started by this call) and prints its result
//   twisted    (--modern) answers a permission question by hand: toggle-simulated-logging's
//              input_required result, then a "yes" sent with another tool's name, the same
//              answer again with the right name, and an answer to a question never asked
//   kill       echo, then SIGKILL to the spawned `oppx mcp serve` while this client keeps its pipes
//              open; waits (10 s at most) for the daemon's log ($XDG_STATE_HOME/oppx/oppxd.log)
//              to say that the session ended
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import { Readable } from "node:stream";
import { pathToFileURL } from "node:url";

const argv = process.argv.slice(2);
const opts = {
  npmDir: "build/npm",
  scenario: "basic",
  answer: "none",
  add: "",
  then: "",
  unix: "",
  cwd: "",
  modern: false,
};
let command = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--") {
    command = argv.slice(i + 1);
    break;
  }
  if (argv[i] === "--npm-dir") opts.npmDir = argv[++i];
  else if (argv[i] === "--scenario") opts.scenario = argv[++i];
  else if (argv[i] === "--answer") opts.answer = argv[++i];
  else if (argv[i] === "--add") opts.add = argv[++i];
  else if (argv[i] === "--then") opts.then = argv[++i];
  else if (argv[i] === "--unix") opts.unix = argv[++i];
  else if (argv[i] === "--cwd") opts.cwd = argv[++i];
  else if (argv[i] === "--modern") opts.modern = true;
  else {
    console.error(`serve_peer: unknown argument ${argv[i]}`);
    process.exit(2);
  }
}

const load = (file) => import(pathToFileURL(`${opts.npmDir}/node_modules/@modelcontextprotocol/${file}`).href);
let Client, StdioClientTransport, StreamableHTTPClientTransport;
// The 1.x client takes a request's or notification's schema, the 2.x client its method.
let elicitRequest = "elicitation/create";
let listChanged = "notifications/tools/list_changed";
if (opts.modern) {
  ({ Client, StreamableHTTPClientTransport } = await load("client/dist/index.mjs"));
  ({ StdioClientTransport } = await load("client/dist/stdio.mjs"));
} else {
  ({ Client } = await load("sdk/dist/esm/client/index.js"));
  ({ StdioClientTransport } = await load("sdk/dist/esm/client/stdio.js"));
  ({ StreamableHTTPClientTransport } = await load("sdk/dist/esm/client/streamableHttp.js"));
  const types = await load("sdk/dist/esm/types.js");
  elicitRequest = types.ElicitRequestSchema;
  listChanged = types.ToolListChangedNotificationSchema;
}

const say = (o) => console.log(JSON.stringify(o));
const within = (ms, what, p) =>
  Promise.race([p, new Promise((_, no) => setTimeout(() => no(new Error(`no ${what} within ${ms} ms`)), ms).unref())]);

const capabilities = opts.answer === "none" ? {} : { elicitation: { form: {} } };
const client = new Client(
  { name: "serve-peer", version: "1.0.0" },
  opts.modern
    ? { capabilities, versionNegotiation: { mode: opts.unix ? "auto" : { pin: "2026-07-28" } } }
    : { capabilities },
);
const questions = [];
if (opts.answer !== "none") {
  client.setRequestHandler(elicitRequest, async (req) => {
    questions.push(req.params.message);
    const schema = req.params.requestedSchema;
    if (opts.answer === "no") return { action: "decline" };
    return { action: "accept", content: { answer: schema.properties.answer.enum.includes("yes") ? "yes" : "?" } };
  });
}
let changes = 0;
let changed = () => {};
client.setNotificationHandler(listChanged, () => {
  changes++;
  changed();
});

// fetch over a Unix socket: the request through node:http, the answer as a streamed Response.
const unixFetch = (socketPath) => (url, init = {}) =>
  new Promise((resolve, reject) => {
    const u = new URL(url);
    const headers = init.headers instanceof Headers ? Object.fromEntries(init.headers.entries()) : init.headers ?? {};
    const req = http.request({ socketPath, path: u.pathname + u.search, method: init.method ?? "GET", headers }, (res) => {
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) for (const x of [v].flat()) if (x !== undefined) h.append(k, x);
      const empty = [101, 204, 205, 304].includes(res.statusCode);
      resolve(new Response(empty ? null : Readable.toWeb(res), { status: res.statusCode, headers: h }));
    });
    req.on("error", reject);
    init.signal?.addEventListener("abort", () => req.destroy(new Error("aborted")));
    if (init.body) req.write(init.body);
    req.end();
  });

const transport = opts.unix
  ? new StreamableHTTPClientTransport(
      new URL(`http://localhost/mcp${opts.cwd ? `?cwd=${encodeURIComponent(opts.cwd)}` : ""}`),
      { fetch: unixFetch(opts.unix) },
    )
  : new StdioClientTransport({ command: command[0], args: command.slice(1), env: { ...process.env }, stderr: "inherit" });
await client.connect(transport);
say({
  step: "initialized",
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  protocol: client.getNegotiatedProtocolVersion?.() ?? null,
});

// The 2.x client opens its stream of list changes itself (subscriptions/listen), acknowledged.
if (opts.modern && client.getNegotiatedProtocolVersion() === "2026-07-28") await client.listen({ toolsListChanged: true });
// callTool(params, options): the 1.x client takes a result schema before the options.
const callTool = (params, options) =>
  opts.modern ? client.callTool(params, options) : client.callTool(params, undefined, options);
const names = async () => (await client.listTools()).tools.map((t) => t.name);

try {
  if (opts.scenario === "basic") {
    // A second list-change stream, opened and closed again (notifications/cancelled).
    if (opts.modern && client.getNegotiatedProtocolVersion() === "2026-07-28")
      await (await client.listen({ toolsListChanged: true })).close();
    const listed = await client.listTools();
    say({ step: "list", names: listed.tools.map((t) => t.name), echo: listed.tools.find((t) => t.name === "everything__echo") });
    const echo = await callTool({ name: "everything__echo", arguments: { message: "through oppx" } });
    say({ step: "echo", result: echo });
    const sum = await callTool({ name: "everything__get-structured-content", arguments: { location: "New York" } });
    say({ step: "structured", result: sum });
    const progress = [];
    const long = await callTool(
      { name: "everything__trigger-long-running-operation", arguments: { duration: 1, steps: 3 } },
      { onprogress: (p) => progress.push(p) },
    );
    say({ step: "progress", progress, result: long });
    try {
      await callTool({ name: "nobody__nothing", arguments: {} });
      say({ step: "unknown", error: null });
    } catch (e) {
      say({ step: "unknown", error: String(e.message), code: e.code });
    }
  } else if (opts.scenario === "cancel") {
    const controller = new AbortController();
    const started = Date.now();
    let first = null;
    const call = callTool(
      { name: "everything__trigger-long-running-operation", arguments: { duration: 60, steps: 60 } },
      {
        signal: controller.signal,
        onprogress: (p) => {
          if (!first) {
            first = p;
            controller.abort("the test cancels");
          }
        },
      },
    );
    try {
      await call;
      say({ step: "cancel", error: null });
    } catch (e) {
      say({ step: "cancel", error: String(e.message ?? e), first, ms: Date.now() - started });
    }
    // The connection stays usable after a cancel.
    const echo = await callTool({ name: "everything__echo", arguments: { message: "after" } });
    // While this client is still connected: the daemon holds no call open on the connector.
    const listed = JSON.parse(execFileSync(process.env.OPPX_BIN, ["mcp", "list", "--json"], { encoding: "utf8" }));
    const everything = listed.connectors.find((c) => c.name === "everything");
    say({ step: "after", result: echo, requests_waiting: everything.requests_waiting });
  } else if (opts.scenario === "changed") {
    say({ step: "list", names: await names() });
    const announced = new Promise((yes) => {
      changed = yes;
    });
    const t0 = Date.now();
    execFileSync("/bin/sh", ["-c", opts.add], { stdio: ["ignore", "ignore", "inherit"] });
    const added = Date.now() - t0;
    await within(60000, "notifications/tools/list_changed", announced);
    const announcedMs = Date.now() - t0;
    // The added connector may still be starting at the first notice: list until it shows.
    let now = await names();
    const deadline = Date.now() + 60000;
    while (!now.some((n) => n.startsWith("second__")) && Date.now() < deadline) {
      await within(60000, "another list_changed", new Promise((yes) => (changed = yes)));
      now = await names();
    }
    say({ step: "relisted", names: now, changes, added_ms: added, announced_ms: announcedMs, ms: Date.now() - t0 });
  } else if (opts.scenario === "restart") {
    const before = await callTool({ name: "everything__echo", arguments: { message: "before" } });
    const announced = new Promise((yes) => {
      changed = yes;
    });
    execFileSync("/bin/sh", ["-c", opts.add], { stdio: ["ignore", "ignore", "inherit"] });
    await within(20000, "notifications/tools/list_changed", announced);
    const after = await callTool({ name: "everything__echo", arguments: { message: "after" } });
    say({ step: "restart", before, after, changes });
    if (opts.then) {
      const again = new Promise((yes) => {
        changed = yes;
      });
      execFileSync("/bin/sh", ["-c", opts.then], { stdio: ["ignore", "ignore", "inherit"] });
      await within(20000, "notifications/tools/list_changed after the restart", again);
      let now = await names();
      const deadline = Date.now() + 20000;
      while (!now.some((n) => n.startsWith("second__")) && Date.now() < deadline) {
        await within(20000, "another list_changed", new Promise((yes) => (changed = yes)));
        now = await names();
      }
      say({ step: "relisted", names: now, changes });
    }
  } else if (opts.scenario === "stopped") {
    let stopped = false;
    const result = await within(
      20000,
      "answer to the call the daemon's stop cut",
      callTool(
        { name: "everything__trigger-long-running-operation", arguments: { duration: 60, steps: 60 } },
        {
          timeout: 120000,
          onprogress: () => {
            if (stopped) return;
            stopped = true;
            execFileSync("/bin/sh", ["-c", opts.add], { stdio: ["ignore", "ignore", "inherit"] });
          },
        },
      ),
    );
    say({ step: "stopped", result });
  } else if (opts.scenario === "env") {
    say({ step: "env", result: await callTool({ name: "lazyenv__get-env", arguments: {} }) });
  } else if (opts.scenario === "kill") {
    await callTool({ name: "everything__echo", arguments: { message: "before" } });
    const log = `${process.env.XDG_STATE_HOME}/oppx/oppxd.log`;
    const ended = () => readFileSync(log, "utf8").includes("`oppx mcp serve` went away");
    const endedBefore = ended();
    process.kill(transport.pid, "SIGKILL");
    const deadline = Date.now() + 10000;
    while (!ended() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    say({ step: "kill", ended_before: endedBefore, ended: ended() });
  } else if (opts.scenario === "twisted") {
    const manual = { allowInputRequired: true };
    const error = (p) => p.then((r) => ({ result: r }), (e) => ({ error: String(e.message ?? e) }));
    const asked = await callTool({ name: "everything__toggle-simulated-logging", arguments: {} }, manual);
    const yes = { [Object.keys(asked.inputRequests ?? {})[0]]: { action: "accept", content: { answer: "yes" } } };
    const again = (name, requestState) => error(callTool({ name, arguments: {}, inputResponses: yes, requestState }, manual));
    const other = await again("everything__echo", asked.requestState);
    const replayed = await again("everything__toggle-simulated-logging", asked.requestState);
    const forged = await again("everything__toggle-simulated-logging", "oppx-permission-999");
    say({ step: "twisted", asked, other, replayed, forged });
  } else if (opts.scenario === "ask") {
    const r = await callTool({ name: "everything__toggle-simulated-logging", arguments: {} });
    say({ step: "ask", result: r, questions });
  }
} catch (e) {
  say({ step: "failed", error: String(e.stack ?? e) });
  process.exitCode = 1;
}
await client.close();
say({ step: "closed" });
