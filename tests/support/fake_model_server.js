// A scripted OpenAI-compatible model server for the probe tests (oppx mcp add): it listens on
// 127.0.0.1 port 0, prints "port <n>" on stdout, and answers only what the probe asks.
//   node fake_model_server.js <info|models> <context> [tokenize-count]
// info: GET /v1/info → {"context_length": <context>}; models: /v1/info is 404 and GET /v1/models
// names max_model_len. With a tokenize count, POST /tokenize answers {"count": <n>}; else 404.
// hang: accepts connections and never answers (the probe's 4 s limit).
// With FAKE_TLS_CERT and FAKE_TLS_KEY (PEM files) in the environment, it speaks https.
const http = require("http");
const https = require("https");
const fs = require("fs");
const [mode, context, count] = process.argv.slice(2);
const json = (res, code, body) => {
  res.writeHead(code, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
};
const tls = process.env.FAKE_TLS_CERT
  ? { cert: fs.readFileSync(process.env.FAKE_TLS_CERT), key: fs.readFileSync(process.env.FAKE_TLS_KEY) }
  : null;
const handle = (req, res) => {
  if (mode === "hang") return;
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    if (req.method === "GET" && req.url === "/v1/info" && mode === "info")
      return json(res, 200, { model: "fake", context_length: Number(context) });
    if (req.method === "GET" && req.url === "/v1/models")
      return json(res, 200, { object: "list", data: [{ id: "fake", max_model_len: Number(context) }] });
    if (req.method === "POST" && req.url === "/tokenize" && count) {
      const prompt = JSON.parse(body).prompt;
      if (typeof prompt !== "string" || !prompt.includes(".echo: ")) return json(res, 400, { error: "no prompt" });
      return json(res, 200, { count: Number(count), max_model_len: Number(context) });
    }
    json(res, 404, { error: "not found" });
  });
};
const server = tls ? https.createServer(tls, handle) : http.createServer(handle);
server.listen(0, "127.0.0.1", () => console.log(`port ${server.address().port}`));
