// The probe's cost figures. The model server (http or https) is asked through the one HTTP client
// (common/http.h), blocking, every exchange within what is left of one 4 s limit.
#include "cli/probe.h"

#include "cli/daemon_client.h"

#include "chat/model_client.h"
#include "common/http.h"
#include "common/paths.h"
#include "common/text.h"
#include "common/tool_text.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <cmath>
#include <chrono>
#include <fstream>
#include <sstream>

namespace oppx::cli {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::milliseconds kServerLimit{4000};
constexpr std::size_t kMaxBody = 1u << 20;

// The server's base URL, without a trailing /v1 (an OpenAI base URL usually ends in it; the paths
// below add it themselves). Refused with why when it is no http(s) URL.
std::optional<std::string> base_url(std::string url, std::string& why) {
  if (auto u = http::parse_url(url); !u) {
    why = "the server URL " + escape_controls(url) + " cannot be used: " + u.error();
    return std::nullopt;
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.size() >= 3 && url.compare(url.size() - 3, 3, "/v1") == 0) url.resize(url.size() - 3);
  return url;
}

// One exchange with the model server, within what is left of the probe's limit.
std::optional<http::Response> ask(const std::string& base, std::string method, const std::string& path,
                                  std::string body, Clock::time_point deadline, std::string& why) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) {
    why = fmt::format("{} did not answer within {} s", http::origin_of(base), kServerLimit.count() / 1000);
    return std::nullopt;
  }
  http::Request req;
  req.method = std::move(method);
  req.url = base + path;
  req.headers.push_back({"Accept", "application/json", {}});
  if (!body.empty()) req.headers.push_back({"Content-Type", "application/json", {}});
  req.body = std::move(body);
  req.timeouts = {left, left, left, left};
  auto got = http::fetch(req, kMaxBody);
  if (!got) {
    why = got.error().kind == "timeout"
              ? fmt::format("{} did not answer within {} s", http::origin_of(base), kServerLimit.count() / 1000)
              : got.error().message;
    return std::nullopt;
  }
  return std::move(*got);
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
  } else if (std::string why; auto url = base_url(server, why)) {
    auto deadline = Clock::now() + kServerLimit;
    chat::ModelConfig mc;
    mc.server = server;
    chat::ModelClient model(mc);
    chat::ContextInfo ctx = model.context_length(kServerLimit);
    r.context = ctx.tokens;
    if (!r.context) r.context_note = ctx.note;
    // The count: the server's own tokenizer, when it has the endpoint (vLLM: /tokenize).
    for (const char* path : {"/tokenize", "/v1/tokenize"}) {
      if (list_text.empty() || Clock::now() >= deadline) break;
      std::string tw;
      auto reply =
          ask(*url, "POST", path, proto::json_text(json::object{{"prompt", list_text}, {"add_special_tokens", false}}),
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
    r.warnings = cost_warnings(r.tokens, *r.context, "This connector's tool list takes",
                               fmt::format("`oppx mcp remove {}` drops this one", connector));
  }
  return r;
}

namespace {

// Adds what the model server says to `probe` (of connector `name`), once.
void complete(proto::AddProbe& probe, const std::string& name) {
  if (probe.completed()) return;
  std::string text;
  for (auto& l : probe.lines) text += l + "\n";
  ProbeReport r = probe_cost(name, text, model_server_url());
  probe.tokens = r.tokens;
  probe.estimated = r.estimated;
  probe.estimate = r.estimated ? "about 4 characters a token" : "";
  if (r.context) {
    probe.context = *r.context;
    probe.share = std::round(share_of(r.tokens, *r.context) * 10.0) / 10.0;
  } else {
    probe.context_note = r.context_note;
  }
  probe.warnings.emplace();
  for (auto& [kind, message] : r.warnings) probe.warnings->push_back({kind, message});
}

}  // namespace

void complete_probe(json::value& add_result) {
  auto result = proto::decode<proto::McpAddResult>(add_result);
  if (!result || !result->probe || result->probe->completed()) return;
  complete(*result->probe, result->name);
  // Only the probe is replaced: the rest of the reply is printed by --json as the daemon sent it.
  add_result.as_object()["probe"] = json::value_from(*result->probe);
}

std::vector<std::string> probe_lines(const proto::AddProbe& probe) {
  std::vector<std::string> out;
  out.push_back(
      probe.estimated
          ? fmt::format("Cost: about {} tokens a request (an estimate: ~4 characters a token, no tokenizer "
                        "endpoint was available to count them)",
                        token_count(probe.tokens))
          : fmt::format("Cost: {} tokens a request (counted by the server's tokenizer)", token_count(probe.tokens)));
  if (probe.context) {
    out.push_back(fmt::format("Share: {:.1f}% of the model's context of {} tokens", probe.share.value_or(0.0),
                              token_count(*probe.context)));
  } else if (!probe.context_note.empty()) {
    out.push_back(fmt::format("Share of the model's context: unknown ({})", probe.context_note));
  }
  for (auto& w : probe.warnings.value_or(std::vector<proto::ProbeWarning>{}))
    out.push_back(fmt::format("warning: {}: {}", w.kind, w.message));
  return out;
}

int print_added(const json::value& v) {
  auto added = proto::decode<proto::McpAddResult>(v);
  if (!added) return unreadable_answer(added.error());
  const proto::McpAddResult& a = *added;
  if (!a.warning.empty()) fmt::print(stderr, "oppx: warning: {}\n", a.warning);
  fmt::print("{} {} in {}\n", a.replaced ? "Replaced" : "Added", a.name, a.file);
  if (!a.consent_error.empty()) fmt::print(stderr, "oppx: {}\n", a.consent_error);
  if (!a.connector) return 0;
  const proto::ConnectorEntry& c = *a.connector;
  if (c.state == "hidden") {
    fmt::print("It does not run: {}\n", escape_controls(c.reason));
    return 0;
  }
  if (c.state != "running") {
    fmt::print("It did not start ({}): {}\n", c.state, escape_controls(c.reason));
    int n = 0;
    for (auto& st : c.steps) fmt::print("  {}. {}\n", ++n, escape_controls(st));
    // The steps say how to start it again; without them, the reconnect is the way.
    if (n > 0) {
      fmt::print("It is saved anyway.\n");
    } else {
      fmt::print("It is saved anyway; fix it and run `oppx mcp reconnect {}`.\n", a.name);
    }
    return 0;
  }
  static const json::array kNone;
  const json::array& tools = c.tools ? *c.tools : kNone;
  fmt::print("Running, {} tool{}:\n", tools.size(), tools.size() == 1 ? "" : "s");
  fmt::print("{}", tool_list_text(a.name, tools));
  // The probe's figures, asked of the model server once: by the caller (`oppx mcp add`, for its
  // --json as well) or here.
  if (a.probe) {
    proto::AddProbe probe = *a.probe;
    complete(probe, a.name);
    for (auto& line : probe_lines(probe)) fmt::print("{}\n", line);
  }
  return 0;
}

}  // namespace oppx::cli
