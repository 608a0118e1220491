// A scripted OpenAI-compatible model server for the chat's tests: it answers from a script and
// records every request. Listens on 127.0.0.1 port 0 and prints "port <n>" on stdout.
//   node scripted_model_server.js <script.json> <requests.jsonl>
// script: {"models": [{"id": "m1", "max_model_len": 8192}] | null (404),
//          "info": {...} | absent (404), "props": {...} | absent (404),
//          "completions": [step, ...]}       each POST /v1/chat/completions takes the next step
// step:   {"status": 200, "deltas": ["{\"a", "ction\"…"], "reasoning": true (deltas as
//          reasoning_content), "usage": {...}, "error_event": {...} (after the deltas),
//          "body": {...} (a non-200 answer, or with "json": true a whole completion),
//          "delay_ms": n (before the headers), "gap_ms": n (between deltas),
//          "hang": true (never answers), "hang_after": k (k deltas, then silence),
//          "match": "regex" (its first group, found in the request's messages as the model read
//          them, replaces {{match}} in the deltas: a model that copies a path it was told)}
// Each request is appended to requests.jsonl as {"method", "url", "authorization", "body"}.
const http = require("http");
const fs = require("fs");
const [scriptPath, logPath] = process.argv.slice(2);
const script = JSON.parse(fs.readFileSync(scriptPath, "utf8"));
let next = 0;
const json = (res, code, body) => {
  res.writeHead(code, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
};
const chunk = (delta, reasoning, finish) => ({
  id: "c1",
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta: reasoning ? { reasoning_content: delta } : { content: delta }, finish_reason: finish }],
});
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    fs.appendFileSync(
      logPath,
      JSON.stringify({ method: req.method, url: req.url, authorization: req.headers.authorization || "", body }) + "\n",
    );
    if (req.method === "GET" && req.url === "/v1/models") {
      if (!script.models) return json(res, 404, { error: "no models list" });
      return json(res, 200, { object: "list", data: script.models });
    }
    if (req.method === "GET" && req.url === "/v1/info" && script.info) return json(res, 200, script.info);
    if (req.method === "GET" && req.url === "/props" && script.props) return json(res, 200, script.props);
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") return json(res, 404, { error: "not found" });
    const step = (script.completions || [])[next++];
    if (!step) return json(res, 500, { error: { message: "the script has no more answers" } });
    if (step.hang) return;
    setTimeout(() => {
      if (step.status && step.status !== 200) return json(res, step.status, step.body || {});
      if (step.json) return json(res, 200, step.body);
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      let deltas = step.deltas || [];
      if (step.match) {
        const text = JSON.parse(body).messages.map((m) => m.content).join("\n");
        const found = new RegExp(step.match).exec(text);
        const value = found ? JSON.stringify(found[1]).slice(1, -1) : "";
        deltas = deltas.map((d) => d.split("{{match}}").join(value));
      }
      let i = 0;
      const send = () => {
        if (step.hang_after !== undefined && i >= step.hang_after) return;
        if (i < deltas.length) {
          res.write(`data: ${JSON.stringify(chunk(deltas[i], step.reasoning, null))}\n\n`);
          i++;
          return setTimeout(send, step.gap_ms || 0);
        }
        if (step.error_event) {
          res.write(`data: ${JSON.stringify({ error: step.error_event })}\n\n`);
          return res.end();
        }
        const last = chunk("", false, "stop");
        last.choices[0].delta = {};
        if (step.usage) last.usage = step.usage;
        res.write(`data: ${JSON.stringify(last)}\n\n`);
        res.write("data: [DONE]\n\n");
        res.end();
      };
      send();
    }, step.delay_ms || 0);
  });
});
server.listen(0, "127.0.0.1", () => console.log(`port ${server.address().port}`));
