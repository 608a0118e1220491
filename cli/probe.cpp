// The probe's cost figures. The model server is asked over a tiny blocking HTTP/1.1 client on a
// plain TCP socket (one request per connection, Connection: close, every step under one 4 s
// deadline): model servers on a LAN speak plain http in practice, and an https one is reported as
// not supported for the share rather than pulling TLS into the CLI for one number.
#include "cli/probe.h"

#include "common/paths.h"
#include "common/text.h"
#include "common/tool_text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <netdb.h>
#include <poll.h>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

namespace oppx::cli {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::milliseconds kServerLimit{4000};
constexpr std::size_t kMaxBody = 1u << 20;
constexpr std::int64_t kSmallContext = 32 * 1024;

struct Url {
  std::string host, port, base;
};

std::optional<Url> parse_http_url(std::string url, std::string& why) {
  if (url.rfind("https://", 0) == 0) {
    why = "the server is https, which the probe does not speak";
    return std::nullopt;
  }
  if (url.rfind("http://", 0) != 0) {
    why = "the server URL " + url + " does not start with http://";
    return std::nullopt;
  }
  url = url.substr(7);
  Url u;
  auto slash = url.find('/');
  std::string hostport = url.substr(0, slash);
  u.base = slash == std::string::npos ? "" : url.substr(slash);
  while (!u.base.empty() && u.base.back() == '/') u.base.pop_back();
  // An OpenAI base URL usually ends in /v1; the paths below add it themselves.
  if (u.base.size() >= 3 && u.base.compare(u.base.size() - 3, 3, "/v1") == 0) u.base.resize(u.base.size() - 3);
  if (!hostport.empty() && hostport[0] == '[') {
    auto close = hostport.find(']');
    u.host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') u.port = hostport.substr(close + 2);
  } else if (auto colon = hostport.rfind(':'); colon != std::string::npos) {
    u.host = hostport.substr(0, colon);
    u.port = hostport.substr(colon + 1);
  } else {
    u.host = hostport;
  }
  if (u.port.empty()) u.port = "80";
  if (u.host.empty()) {
    why = "the server URL has no host";
    return std::nullopt;
  }
  return u;
}

struct HttpReply {
  int status = 0;
  std::string body;
};

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

std::string dechunk(std::string_view body) {
  std::string out;
  while (!body.empty()) {
    auto eol = body.find("\r\n");
    if (eol == std::string_view::npos) break;
    std::size_t size = std::strtoul(std::string(body.substr(0, eol)).c_str(), nullptr, 16);
    body.remove_prefix(eol + 2);
    if (size == 0 || size > body.size()) break;
    out.append(body.substr(0, size));
    body.remove_prefix(std::min(body.size(), size + 2));
  }
  return out;
}

std::optional<HttpReply> http(const Url& u, std::string_view method, const std::string& path, const std::string& body,
                              Clock::time_point deadline, std::string& why) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = ::getaddrinfo(u.host.c_str(), u.port.c_str(), &hints, &res); rc != 0) {
    why = fmt::format("cannot resolve {}: {}", u.host, ::gai_strerror(rc));
    return std::nullopt;
  }
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = fmt::format("cannot connect to {}:{}: {}", u.host, u.port, std::strerror(errno));
      ::close(fd);
      fd = -1;
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (::poll(&p, 1, remaining_ms(deadline)) <= 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
        err != 0) {
      why = err ? fmt::format("cannot connect to {}:{}: {}", u.host, u.port, std::strerror(err))
                : fmt::format("{}:{} did not answer within {} s", u.host, u.port, kServerLimit.count() / 1000);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) return std::nullopt;
  std::string req =
      fmt::format("{} {}{} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n", method, u.base,
                  path, u.host.find(':') != std::string::npos ? "[" + u.host + "]:" + u.port : u.host + ":" + u.port);
  if (!body.empty()) req += fmt::format("Content-Type: application/json\r\nContent-Length: {}\r\n", body.size());
  req += "\r\n" + body;
  std::string in;
  std::size_t sent = 0;
  bool ok = true;
  while (ok) {
    pollfd p{fd, static_cast<short>(sent < req.size() ? POLLOUT : POLLIN), 0};
    if (::poll(&p, 1, remaining_ms(deadline)) <= 0) {
      why = fmt::format("{}:{} did not answer within {} s", u.host, u.port, kServerLimit.count() / 1000);
      ok = false;
      break;
    }
    if (sent < req.size()) {
      ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN) {
        why = fmt::format("cannot send to {}:{}: {}", u.host, u.port, std::strerror(errno));
        ok = false;
      }
      if (n > 0) sent += static_cast<std::size_t>(n);
      continue;
    }
    char buf[16384];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0 && errno != EAGAIN) {
      why = fmt::format("reading from {}:{}: {}", u.host, u.port, std::strerror(errno));
      ok = false;
    }
    if (n > 0) in.append(buf, static_cast<std::size_t>(n));
    if (in.size() > kMaxBody) {
      why = "the server's answer is larger than 1 MiB";
      ok = false;
    }
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  auto head_end = in.find("\r\n\r\n");
  if (in.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos || in.size() < 12) {
    why = "the server's answer is not HTTP";
    return std::nullopt;
  }
  HttpReply r;
  r.status = std::atoi(in.c_str() + 9);
  std::string head = in.substr(0, head_end);
  for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  r.body = in.substr(head_end + 4);
  if (head.find("transfer-encoding: chunked") != std::string::npos) r.body = dechunk(r.body);
  return r;
}

// The first integer under one of the names servers use for the context window, at any depth.
std::optional<std::int64_t> find_context(const json::value& v, int depth = 0) {
  static const char* kKeys[] = {"max_model_len", "context_length", "context_window",         "max_context_length",
                                "n_ctx",         "max_seq_len",    "max_position_embeddings"};
  if (depth > 6) return std::nullopt;
  if (const json::object* o = v.if_object()) {
    for (const char* k : kKeys) {
      if (const json::value* x = o->if_contains(k); x && x->is_int64() && x->as_int64() > 0) return x->as_int64();
      if (const json::value* x = o->if_contains(k); x && x->is_uint64())
        return static_cast<std::int64_t>(x->as_uint64());
    }
    for (auto& [k, x] : *o) {
      if (auto c = find_context(x, depth + 1)) return c;
    }
  } else if (const json::array* a = v.if_array()) {
    for (auto& x : *a) {
      if (auto c = find_context(x, depth + 1)) return c;
    }
  }
  return std::nullopt;
}

// A count of tokens as every line of the probe prints it: exact below 10,000 ("1500"); from there
// in thousands, "32k" for 32768 and for 32000 alike, as model cards name them.
std::string token_count(std::int64_t n) {
  if (n < 10'000) return fmt::format("{}", n);
  return n % 1024 == 0 ? fmt::format("{}k", n / 1024) : fmt::format("{}k", (n + 500) / 1000);
}

double share_of(std::int64_t tokens, std::int64_t context) {
  return 100.0 * static_cast<double>(tokens) / static_cast<double>(context);
}

}  // namespace

std::string model_server_url() {
  if (const char* s = std::getenv("OPPX_SERVER"); s && *s) return s;
  std::ifstream f(paths::config_dir() + "/config.json");
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  boost::system::error_code ec;
  json::value v = json::parse(ss.str(), ec);
  if (ec || !v.is_object()) return {};
  const json::value* s = v.as_object().if_contains("server");
  return s && s->is_string() ? std::string(s->as_string()) : std::string();
}

ProbeReport probe_cost(std::string_view connector, const std::string& list_text, const std::string& server) {
  ProbeReport r;
  r.tokens = estimate_tokens(list_text);
  if (server.empty()) {
    r.context_note = "no model server is configured (set \"server\" in config.json or OPPX_SERVER)";
  } else if (std::string why; auto url = parse_http_url(server, why)) {
    auto deadline = Clock::now() + kServerLimit;
    // The context: /v1/info, else /v1/models (vLLM says max_model_len there).
    for (const char* path : {"/v1/info", "/v1/models"}) {
      auto reply = http(*url, "GET", path, "", deadline, why);
      if (!reply) break;
      if (reply->status != 200) {
        why = fmt::format("{} answered {} to {}", server, reply->status, path);
        continue;
      }
      boost::system::error_code ec;
      json::value v = json::parse(reply->body, ec);
      if (!ec) r.context = find_context(v);
      if (r.context) break;
      why = fmt::format("{}{} does not name a context length", server, path);
    }
    if (!r.context) r.context_note = why;
    // The count: the server's own tokenizer, when it has the endpoint (vLLM: /tokenize).
    for (const char* path : {"/tokenize", "/v1/tokenize"}) {
      if (list_text.empty() || Clock::now() >= deadline) break;
      std::string tw;
      auto reply =
          http(*url, "POST", path, json::serialize(json::object{{"prompt", list_text}, {"add_special_tokens", false}}),
               deadline, tw);
      if (!reply) break;
      if (reply->status != 200) continue;
      boost::system::error_code ec;
      json::value v = json::parse(reply->body, ec);
      if (ec || !v.is_object()) continue;
      const json::object& o = v.as_object();
      if (const json::value* c = o.if_contains("count"); c && c->is_int64()) {
        r.tokens = c->as_int64();
        r.estimated = false;
        break;
      }
      if (const json::value* t = o.if_contains("tokens"); t && t->is_array()) {
        r.tokens = static_cast<std::int64_t>(t->as_array().size());
        r.estimated = false;
        break;
      }
    }
  } else {
    r.context_note = why;
  }
  if (r.context) {
    double share = share_of(r.tokens, *r.context);
    std::string cost = fmt::format(
        "This connector's tool list takes about {} tokens of every request ({:.1f}%), and each tool result uses "
        "more. Keep only the connectors you need (`oppx mcp remove {}` drops this one).",
        token_count(r.tokens), share, connector);
    // Either or both: a small window, a heavy share of it.
    if (*r.context <= kSmallContext) {
      r.warnings.push_back(
          {"SMALL_CONTEXT", fmt::format("the server's model has a small context window ({} tokens). {}",
                                        token_count(*r.context), cost)});
    }
    if (share >= 10.0) {
      r.warnings.push_back(
          {"HEAVY_SHARE",
           fmt::format("the tool list takes a tenth or more of the server's model's context window ({} tokens). {}",
                       token_count(*r.context), cost)});
    }
  }
  return r;
}

void complete_probe(json::value& add_result) {
  json::object* result = add_result.if_object();
  json::value* pv = result ? result->if_contains("probe") : nullptr;
  json::object* probe = pv ? pv->if_object() : nullptr;
  if (!probe || probe->contains("share") || probe->contains("context_note")) return;
  const json::value* name = result->if_contains("name");
  const json::value* lines = probe->if_contains("lines");
  std::string text;
  if (lines && lines->is_array()) {
    for (auto& l : lines->as_array()) {
      if (l.is_string()) text += std::string(l.as_string()) + "\n";
    }
  }
  ProbeReport r = probe_cost(name && name->is_string() ? std::string_view(name->as_string()) : std::string_view(), text,
                             model_server_url());
  (*probe)["tokens"] = r.tokens;
  (*probe)["estimated"] = r.estimated;
  if (r.estimated) {
    (*probe)["estimate"] = "about 4 characters a token";
  } else {
    probe->erase("estimate");
  }
  if (r.context) {
    (*probe)["context"] = *r.context;
    (*probe)["share"] = std::round(share_of(r.tokens, *r.context) * 10.0) / 10.0;
  } else {
    (*probe)["context_note"] = r.context_note;
  }
  json::array warnings;
  for (auto& [kind, message] : r.warnings) warnings.push_back(json::object{{"kind", kind}, {"message", message}});
  (*probe)["warnings"] = std::move(warnings);
}

std::vector<std::string> probe_lines(const json::object& probe) {
  auto number = [&probe](std::string_view k) {
    const json::value* v = probe.if_contains(k);
    return v && v->is_number() ? v->to_number<double>() : 0.0;
  };
  auto tokens = static_cast<std::int64_t>(number("tokens"));
  std::vector<std::string> out;
  out.push_back(
      probe.at("estimated") == json::value(true)
          ? fmt::format("Cost: about {} tokens a request (an estimate: ~4 characters a token, no tokenizer "
                        "endpoint was available to count them)",
                        token_count(tokens))
          : fmt::format("Cost: {} tokens a request (counted by the server's tokenizer)", token_count(tokens)));
  if (probe.contains("context")) {
    out.push_back(fmt::format("Share: {:.1f}% of the model's context of {} tokens", number("share"),
                              token_count(static_cast<std::int64_t>(number("context")))));
  } else if (const json::value* note = probe.if_contains("context_note"); note && note->is_string()) {
    out.push_back(fmt::format("Share of the model's context: unknown ({})", std::string_view(note->as_string())));
  }
  if (const json::value* w = probe.if_contains("warnings"); w && w->is_array()) {
    for (auto& x : w->as_array()) {
      const json::object& o = x.as_object();
      out.push_back(fmt::format("warning: {}: {}", std::string_view(o.at("kind").as_string()),
                                std::string_view(o.at("message").as_string())));
    }
  }
  return out;
}

int print_added(const json::value& v) {
  const json::object& o = v.as_object();
  auto str = [](const json::object& obj, std::string_view k) {
    const json::value* x = obj.if_contains(k);
    return x && x->is_string() ? std::string(x->as_string()) : std::string();
  };
  std::string name = str(o, "name");
  if (o.contains("warning")) fmt::print(stderr, "oppx: warning: {}\n", str(o, "warning"));
  fmt::print("{} {} in {}\n", o.at("replaced") == json::value(true) ? "Replaced" : "Added", name, str(o, "file"));
  if (o.contains("consent_error")) fmt::print(stderr, "oppx: {}\n", str(o, "consent_error"));
  const json::value* cv = o.if_contains("connector");
  if (!cv || !cv->is_object()) return 0;
  const json::object& c = cv->as_object();
  if (str(c, "state") == "hidden") {
    fmt::print("It does not run: {}\n", escape_controls(str(c, "reason")));
    return 0;
  }
  if (str(c, "state") != "running") {
    fmt::print("It did not start ({}): {}\n", str(c, "state"), escape_controls(str(c, "reason")));
    const json::value* steps = c.if_contains("steps");
    int n = 0;
    if (steps && steps->is_array()) {
      for (auto& st : steps->as_array()) {
        if (st.is_string()) fmt::print("  {}. {}\n", ++n, escape_controls(std::string(st.as_string())));
      }
    }
    // The steps say how to start it again; without them, the reconnect is the way.
    if (n > 0) {
      fmt::print("It is saved anyway.\n");
    } else {
      fmt::print("It is saved anyway; fix it and run `oppx mcp reconnect {}`.\n", name);
    }
    return 0;
  }
  const json::array& tools = c.at("tools").as_array();
  fmt::print("Running, {} tool{}:\n", tools.size(), tools.size() == 1 ? "" : "s");
  fmt::print("{}", tool_list_text(name, tools));
  // The probe's figures, asked of the model server once: by the caller (`oppx mcp add`, for its
  // --json as well) or here.
  json::value done = v;
  complete_probe(done);
  if (const json::value* probe = done.as_object().if_contains("probe"); probe && probe->is_object()) {
    for (auto& line : probe_lines(probe->as_object())) fmt::print("{}\n", line);
  }
  return 0;
}

}  // namespace oppx::cli
