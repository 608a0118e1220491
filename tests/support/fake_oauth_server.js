// A fake remote MCP server protected by OAuth, and its own authorization server, in one process,
// for the OAuth login tests (tests/daemon/oauth_login_test.cpp). Node built-ins only. Listens on
// port 0 of 127.0.0.1 (and a second origin for the redirect test) and prints "ports N M ready".
//   usage: node fake_oauth_server.js [--lifetime=S] [--no-refresh] [--rotate] [--reject-refresh]
//          [--refresh-delay=MS] [--no-session] [--redirect-mcp] [--admin-tool] [--port=N]
//   --lifetime=S: access tokens expire after S seconds (expires_in; default 3600).
//   --no-refresh: no refresh token is issued. --rotate: each refresh gives a new refresh token
//   and the old one stops working. --reject-refresh: every refresh_token grant gets 400
//   invalid_grant. --refresh-delay=MS: a refresh is answered after MS (concurrent 401s overlap).
//   --no-session: initialize gives no Mcp-Session-Id. --redirect-mcp: POST /mcp answers 307 to the
//   second origin's /mcp, which records whether an Authorization header reached it.
//   --admin-tool: a third tool, "admin", answered 403 insufficient_scope (scope "mcp:tools
//   mcp:admin") unless the token's scope has mcp:admin (a step-up).
// Every event is a line on stdout ("token refresh_token ok", "mcp tools/call 200", …) so that tests
// wait for it; GET /_stats gives the counts as JSON; POST /_expire ends every access token now.
"use strict";
const http = require("http");
const crypto = require("crypto");

const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const a = argv.find((x) => x === `--${name}` || x.startsWith(`--${name}=`));
  if (!a) return fallback;
  return a.includes("=") ? a.slice(a.indexOf("=") + 1) : true;
};
const lifetime = Number(option("lifetime", 3600));
const issueRefresh = !option("no-refresh", false);
const rotate = !!option("rotate", false);
const rejectRefresh = !!option("reject-refresh", false);
const refreshDelay = Number(option("refresh-delay", 0));
const withSession = !option("no-session", false);
const redirectMcp = !!option("redirect-mcp", false);
const fixedPort = Number(option("port", 0));
const adminTool = !!option("admin-tool", false);
const say = (s) => process.stdout.write(s + "\n");

const clients = new Map(); // client_id -> registration
const codes = new Map(); // code -> what /authorize was asked
const accessTokens = new Map(); // token -> {expires (ms since epoch), client_id}
const refreshTokens = new Map(); // token -> {client_id, resource, valid}
const sessions = new Set();
let nextSession = 1;
const stats = {
  register: 0,
  authorize: 0,
  token: { authorization_code: 0, refresh_token: 0, other: 0 },
  token_ok: { authorization_code: 0, refresh_token: 0 },
  token_refused: 0,
  mcp: 0, // POSTs to /mcp on the main origin, with or without a token
  mcp_unauthorized: 0,
  mcp_methods: {},
  expired: 0, // /_expire calls
  bearer: { main: 0, second: 0 }, // requests that carried an Authorization header, per origin
  second: 0, // requests that reached the second origin
};

const base = () => `http://127.0.0.1:${server.address().port}`;
const random = () => crypto.randomBytes(24).toString("base64url");
const s256 = (verifier) => crypto.createHash("sha256").update(verifier).digest("base64url");

function readBody(req, done) {
  const parts = [];
  req.on("data", (c) => parts.push(c));
  req.on("end", () => done(Buffer.concat(parts).toString("utf8")));
}

function sendJson(res, status, body, headers = {}) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
    "Cache-Control": "no-store",
    ...headers,
  });
  res.end(text);
}

function tokenError(res, status, error, description) {
  stats.token_refused++;
  say(`token refused: ${error} (${description})`);
  sendJson(res, status, { error, error_description: description });
}

// The access token of a request when it is one this server issued, not expired, not revoked.
function validBearer(req) {
  const h = req.headers["authorization"] || "";
  const m = /^Bearer (.+)$/i.exec(h);
  if (!m) return null;
  const t = accessTokens.get(m[1]);
  if (!t || t.revoked || Date.now() >= t.expires) return null;
  return t;
}

function issue(clientId, resource, scope, res, grant) {
  const access = "at-" + random();
  accessTokens.set(access, { expires: Date.now() + lifetime * 1000, client_id: clientId, scope: scope || "" });
  const body = { access_token: access, token_type: "Bearer", expires_in: lifetime, scope: scope || undefined };
  if (issueRefresh) {
    const rt = "rt-" + random();
    refreshTokens.set(rt, { client_id: clientId, resource, scope, valid: true });
    body.refresh_token = rt;
  }
  stats.token_ok[grant]++;
  say(`token ${grant} ok`);
  sendJson(res, 200, body);
}

function mcpTools() {
  const admin = { name: "admin", description: "Needs the mcp:admin scope", inputSchema: { type: "object" } };
  return [
    ...(adminTool ? [admin] : []),
    {
      name: "echo",
      description: "Echoes its message",
      inputSchema: { type: "object", properties: { message: { type: "string" } } },
      annotations: { readOnlyHint: true },
    },
    { name: "whoami", description: "Says which client the token is for", inputSchema: { type: "object" } },
  ];
}

// One MCP message (JSON responses only): its answer, or null for a notification (202).
function mcpAnswer(msg, who, res) {
  const reply = (result, headers = {}) =>
    sendJson(res, 200, { jsonrpc: "2.0", id: msg.id, result }, headers);
  switch (msg.method) {
    case "initialize": {
      const headers = {};
      if (withSession) {
        const id = `sess-${nextSession++}`;
        sessions.add(id);
        headers["Mcp-Session-Id"] = id;
      }
      return reply(
        {
          protocolVersion: "2025-11-25",
          capabilities: { tools: {} },
          serverInfo: { name: "fake-oauth", version: "1" },
        },
        headers,
      );
    }
    case "tools/list":
      return reply({ tools: mcpTools() });
    case "tools/call": {
      const p = msg.params || {};
      const a = p.arguments || {};
      if (p.name === "admin" && !(who.scope || "").split(" ").includes("mcp:admin")) {
        say("mcp tools/call admin 403 insufficient_scope");
        res.writeHead(403, {
          "Content-Type": "application/json",
          "WWW-Authenticate": `Bearer error="insufficient_scope", scope="mcp:tools mcp:admin", resource_metadata="${base()}/.well-known/oauth-protected-resource/mcp"`,
        });
        return res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32001, message: "Forbidden" } }));
      }
      if (p.name === "admin") return reply({ content: [{ type: "text", text: "admin done" }] });
      if (p.name === "whoami") return reply({ content: [{ type: "text", text: "client " + (who ? who.client_id : "-") }] });
      return reply({ content: [{ type: "text", text: "echo: " + (a.message || "") }] });
    }
    case "ping":
      return reply({});
    default:
      if (msg.id === undefined) {
        res.writeHead(202);
        return res.end();
      }
      return sendJson(res, 200, { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } });
  }
}

function mcp(req, res) {
  if (req.headers["authorization"]) stats.bearer.main++;
  const who = validBearer(req);
  if (!who) {
    return readBody(req, (text) => {
      if (req.method === "POST") stats.mcp++;
      stats.mcp_unauthorized++;
      let method = "-";
      try {
        method = JSON.parse(text).method || "response";
      } catch (e) {}
      say(`mcp ${req.method} ${method} 401 ${req.headers["authorization"] ? "bad-token" : "no-token"}`);
      const error = req.headers["authorization"] ? ' error="invalid_token",' : "";
      res.writeHead(401, {
        "Content-Type": "application/json",
        "WWW-Authenticate": `Bearer${error} resource_metadata="${base()}/.well-known/oauth-protected-resource/mcp"`,
      });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Unauthorized" } }));
    });
  }
  if (req.method === "DELETE") {
    sessions.delete(req.headers["mcp-session-id"]);
    say(`mcp DELETE ${req.headers["mcp-session-id"] || "-"}`);
    res.writeHead(200);
    return res.end();
  }
  if (req.method !== "POST") {
    res.writeHead(405);
    return res.end();
  }
  readBody(req, (text) => {
    stats.mcp++;
    if (redirectMcp) {
      say("mcp POST redirected to the second origin");
      res.writeHead(307, { Location: `http://127.0.0.1:${second.address().port}/mcp` });
      return res.end();
    }
    let msg;
    try {
      msg = JSON.parse(text);
    } catch (e) {
      return sendJson(res, 400, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
    }
    const method = msg.method || "response";
    stats.mcp_methods[method] = (stats.mcp_methods[method] || 0) + 1;
    say(`mcp POST ${method} 200`);
    mcpAnswer(msg, who, res);
  });
}

function authorize(req, res, url) {
  stats.authorize++;
  const q = url.searchParams;
  const fail = (why) => {
    say(`authorize refused: ${why}`);
    res.writeHead(400, { "Content-Type": "text/plain" });
    res.end(why);
  };
  const client = clients.get(q.get("client_id"));
  if (!client) return fail("unknown client_id");
  const redirect = q.get("redirect_uri");
  if (!client.redirect_uris.includes(redirect)) return fail("redirect_uri not registered");
  if (q.get("response_type") !== "code") return fail("response_type must be code");
  if (q.get("code_challenge_method") !== "S256" || !q.get("code_challenge")) return fail("PKCE S256 required");
  if (!q.get("state")) return fail("no state");
  const code = "code-" + random();
  codes.set(code, {
    client_id: q.get("client_id"),
    redirect_uri: redirect,
    challenge: q.get("code_challenge"),
    resource: q.get("resource") || "",
    scope: q.get("scope") || "",
  });
  const to = new URL(redirect);
  to.searchParams.set("code", code);
  to.searchParams.set("state", q.get("state"));
  to.searchParams.set("iss", base());
  say("authorize ok");
  res.writeHead(302, { Location: to.toString() });
  res.end();
}

function token(req, res) {
  readBody(req, (text) => {
    const f = new URLSearchParams(text);
    const grant = f.get("grant_type");
    if (grant === "authorization_code" || grant === "refresh_token") stats.token[grant]++;
    else stats.token.other++;
    say(`token ${grant} requested`);
    if (grant === "authorization_code") {
      const c = codes.get(f.get("code"));
      if (!c) return tokenError(res, 400, "invalid_grant", "unknown or used code");
      codes.delete(f.get("code"));
      if (c.client_id !== f.get("client_id")) return tokenError(res, 400, "invalid_grant", "another client's code");
      if (c.redirect_uri !== f.get("redirect_uri")) return tokenError(res, 400, "invalid_grant", "redirect_uri differs");
      if (s256(f.get("code_verifier") || "") !== c.challenge)
        return tokenError(res, 400, "invalid_grant", "code_verifier does not match the challenge");
      if (f.get("resource") !== `${base()}/mcp` || c.resource !== f.get("resource"))
        return tokenError(res, 400, "invalid_target", `resource ${f.get("resource")}`);
      return issue(c.client_id, f.get("resource"), c.scope, res, grant);
    }
    if (grant === "refresh_token") {
      const answer = () => {
        if (rejectRefresh) return tokenError(res, 400, "invalid_grant", "refresh refused on purpose");
        const rt = refreshTokens.get(f.get("refresh_token"));
        if (!rt || !rt.valid) return tokenError(res, 400, "invalid_grant", "unknown or used refresh token");
        if (rt.client_id !== f.get("client_id")) return tokenError(res, 400, "invalid_grant", "another client's token");
        if (f.get("resource") && f.get("resource") !== rt.resource)
          return tokenError(res, 400, "invalid_target", `resource ${f.get("resource")}`);
        const access = "at-" + random();
        accessTokens.set(access, { expires: Date.now() + lifetime * 1000, client_id: rt.client_id, scope: rt.scope || "" });
        const body = { access_token: access, token_type: "Bearer", expires_in: lifetime, scope: rt.scope || undefined };
        if (rotate) {
          rt.valid = false;
          const next = "rt-" + random();
          refreshTokens.set(next, { ...rt, valid: true });
          body.refresh_token = next;
        }
        stats.token_ok.refresh_token++;
        say("token refresh_token ok");
        sendJson(res, 200, body);
      };
      return refreshDelay > 0 ? setTimeout(answer, refreshDelay) : answer();
    }
    tokenError(res, 400, "unsupported_grant_type", String(grant));
  });
}

function register(req, res) {
  readBody(req, (text) => {
    stats.register++;
    let body;
    try {
      body = JSON.parse(text);
    } catch (e) {
      return sendJson(res, 400, { error: "invalid_client_metadata", error_description: "not JSON" });
    }
    if (!Array.isArray(body.redirect_uris) || !body.redirect_uris.length)
      return sendJson(res, 400, { error: "invalid_redirect_uri", error_description: "no redirect_uris" });
    const id = "client-" + clients.size + "-" + random().slice(0, 8);
    const reg = {
      client_id: id,
      client_id_issued_at: Math.floor(Date.now() / 1000),
      redirect_uris: body.redirect_uris,
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
    clients.set(id, reg);
    say(`registered ${id}`);
    sendJson(res, 201, reg);
  });
}

function handle(req, res) {
  const url = new URL(req.url, base());
  const path = url.pathname;
  if (path === "/mcp") return mcp(req, res);
  if (req.method === "GET" && path === "/.well-known/oauth-protected-resource/mcp") {
    return sendJson(res, 200, {
      resource: `${base()}/mcp`,
      authorization_servers: [base()],
      scopes_supported: ["mcp:tools"],
      bearer_methods_supported: ["header"],
    });
  }
  if (req.method === "GET" && path === "/.well-known/oauth-authorization-server") {
    return sendJson(res, 200, {
      issuer: base(),
      authorization_endpoint: `${base()}/authorize`,
      token_endpoint: `${base()}/token`,
      registration_endpoint: `${base()}/register`,
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none"],
      scopes_supported: ["mcp:tools", "offline_access"],
      authorization_response_iss_parameter_supported: true,
    });
  }
  if (req.method === "POST" && path === "/register") return register(req, res);
  if (req.method === "GET" && path === "/authorize") return authorize(req, res, url);
  if (req.method === "POST" && path === "/token") return token(req, res);
  if (req.method === "GET" && path === "/_stats") return sendJson(res, 200, stats);
  if (req.method === "POST" && path === "/_expire") {
    for (const t of accessTokens.values()) t.revoked = true;
    stats.expired++;
    say("expired every access token");
    return sendJson(res, 200, { expired: accessTokens.size });
  }
  say(`not found: ${req.method} ${path}`);
  res.writeHead(404, { "Content-Type": "text/plain" });
  res.end("not found");
}

const server = http.createServer(handle);
// The second origin: what reaches it after /mcp's redirect. It answers as an MCP server without
// asking for a token, and says whether one came anyway.
const second = http.createServer((req, res) => {
  stats.second++;
  if (req.headers["authorization"]) stats.bearer.second++;
  say(`second origin: ${req.method} authorization=${req.headers["authorization"] ? "yes" : "no"}`);
  if (req.method !== "POST") {
    res.writeHead(405);
    return res.end();
  }
  readBody(req, (text) => {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch (e) {
      return sendJson(res, 400, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
    }
    mcpAnswer(msg, null, res);
  });
});
second.listen(0, "127.0.0.1", () => {
  server.listen(fixedPort, "127.0.0.1", () => {
    say(`ports ${server.address().port} ${second.address().port} ready`);
  });
});
process.on("SIGTERM", () => process.exit(0));
