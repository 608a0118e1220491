/* bench/echo_server: the smallest MCP server over stdio that the benchmark can talk to, so that
 * the figures measure oppx and not the server. One JSON-RPC message per line; it answers
 * initialize (with the client's protocol version), ping, tools/list (one tool, echo) and
 * tools/call echo ("Echo: " + message, the message's JSON escapes kept as they came). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct Span {
  const char* p;
  size_t n;
};

static const char* skip_ws(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) ++p;
  return p;
}

/* Past one JSON string whose opening quote is at p; returns end on a broken string. */
static const char* skip_string(const char* p, const char* end) {
  for (++p; p < end; ++p) {
    if (*p == '\\') {
      ++p;
    } else if (*p == '"') {
      return p + 1;
    }
  }
  return end;
}

/* Past one JSON value of any kind (containers by depth, strings by their escapes). */
static const char* skip_value(const char* p, const char* end) {
  p = skip_ws(p, end);
  if (p >= end) return end;
  if (*p == '"') return skip_string(p, end);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (p < end) {
      if (*p == '"') {
        p = skip_string(p, end);
        continue;
      }
      if (*p == '{' || *p == '[') ++depth;
      if (*p == '}' || *p == ']') {
        if (--depth == 0) return p + 1;
      }
      ++p;
    }
    return end;
  }
  while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') ++p;
  return p;
}

/* The value of `key` in the object `obj` (its top level only); 0 when absent. */
static int find_key(struct Span obj, const char* key, struct Span* out) {
  const char* end = obj.p + obj.n;
  const char* p = skip_ws(obj.p, end);
  if (p >= end || *p != '{') return 0;
  ++p;
  size_t klen = strlen(key);
  for (;;) {
    p = skip_ws(p, end);
    if (p >= end || *p != '"') return 0;
    const char* kstart = p + 1;
    p = skip_string(p, end);
    int match = (size_t)(p - 1 - kstart) == klen && memcmp(kstart, key, klen) == 0;
    p = skip_ws(p, end);
    if (p >= end || *p != ':') return 0;
    p = skip_ws(p + 1, end);
    const char* vstart = p;
    p = skip_value(p, end);
    if (match) {
      out->p = vstart;
      out->n = (size_t)(p - vstart);
      return 1;
    }
    p = skip_ws(p, end);
    if (p >= end || *p != ',') return 0;
    ++p;
  }
}

static int is_string(struct Span s, const char* text) {
  size_t n = strlen(text);
  return s.n == n + 2 && s.p[0] == '"' && memcmp(s.p + 1, text, n) == 0;
}

static char* out_buf;
static size_t out_cap;

/* Writes {"jsonrpc":"2.0","id":<id>,<body>}\n in one write(2): no stdio buffering to flush. */
static void reply(struct Span id, const char* body1, struct Span middle, const char* body2) {
  size_t need = id.n + middle.n + strlen(body1) + strlen(body2) + 64;
  if (need > out_cap) {
    out_cap = need * 2;
    out_buf = realloc(out_buf, out_cap);
    if (!out_buf) exit(1);
  }
  size_t n = 0;
  n += (size_t)sprintf(out_buf, "{\"jsonrpc\":\"2.0\",\"id\":");
  memcpy(out_buf + n, id.p, id.n);
  n += id.n;
  out_buf[n++] = ',';
  n += (size_t)sprintf(out_buf + n, "%s", body1);
  memcpy(out_buf + n, middle.p, middle.n);
  n += middle.n;
  n += (size_t)sprintf(out_buf + n, "%s}\n", body2);
  for (size_t done = 0; done < n;) {
    ssize_t w = write(1, out_buf + done, n - done);
    if (w <= 0) exit(1);
    done += (size_t)w;
  }
}

static void handle(struct Span msg) {
  struct Span id, method, params, none = {"", 0};
  if (!find_key(msg, "id", &id) || !find_key(msg, "method", &method)) return; /* notification or reply */
  int has_params = find_key(msg, "params", &params);
  if (is_string(method, "initialize")) {
    struct Span version = {"\"2025-11-25\"", 12};
    if (has_params) find_key(params, "protocolVersion", &version);
    reply(id, "\"result\":{\"protocolVersion\":", version,
          ",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"oppx-bench-echo\",\"version\":\"1.0.0\"}}");
  } else if (is_string(method, "ping")) {
    reply(id, "\"result\":{}", none, "");
  } else if (is_string(method, "tools/list")) {
    reply(id,
          "\"result\":{\"tools\":[{\"name\":\"echo\",\"description\":\"Echoes back the input string\","
          "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\"}},"
          "\"required\":[\"message\"]}}]}",
          none, "");
  } else if (is_string(method, "tools/call")) {
    struct Span name, args, message;
    if (!has_params || !find_key(params, "name", &name) || !is_string(name, "echo")) {
      reply(id, "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"unknown tool\"}],\"isError\":true}", none, "");
    } else if (!find_key(params, "arguments", &args) || !find_key(args, "message", &message) || message.n < 2 ||
               message.p[0] != '"') {
      reply(id,
            "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"message: expected a string\"}],\"isError\":true}",
            none, "");
    } else {
      struct Span inner = {message.p + 1, message.n - 2}; /* still JSON-escaped: copied as it is */
      reply(id, "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Echo: ", inner, "\"}]}");
    }
  } else {
    reply(id, "\"error\":{\"code\":-32601,\"message\":\"method not found\"}", none, "");
  }
}

int main(void) {
  char* line = NULL;
  size_t cap = 0;
  ssize_t n;
  /* getline reads through stdio's buffer: one read(2) can bring several pipelined requests. */
  while ((n = getline(&line, &cap, stdin)) > 0) {
    struct Span msg = {line, (size_t)n};
    handle(msg);
  }
  free(line);
  free(out_buf);
  return 0;
}
