// The probe's cost figures. The model server (http or https) is asked through the one HTTP client
// (common/http.h), blocking, every exchange within what is left of one 4 s limit.
#include "cli/probe.h"

#include "chat/model_client.h"
#include "common/http.h"
#include "common/paths.h"
#include "common/text.h"
#include "common/tool_text.h"

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
constexpr std::int64_t kSmallContext = 32 * 1024;

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
          ask(*url, "POST", path, json::serialize(json::object{{"prompt", list_text}, {"add_special_tokens", false}}),
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

std::vector<std::pair<std::string, std::string>> cost_warnings(std::int64_t tokens, std::int64_t context,
                                                               std::string_view subject, std::string_view hint) {
  std::vector<std::pair<std::string, std::string>> out;
  double share = share_of(tokens, context);
  std::string cost = fmt::format(
      "{} about {} tokens of every request ({:.1f}%), and each tool result uses more. Keep only the connectors you "
      "need ({}).",
      subject, token_count(tokens), share, hint);
  // Either or both: a small window, a heavy share of it.
  if (context <= kSmallContext) {
    out.push_back({"SMALL_CONTEXT", fmt::format("the server's model has a small context window ({} tokens). {}",
                                                token_count(context), cost)});
  }
  if (share >= 10.0) {
    out.push_back(
        {"HEAVY_SHARE",
         fmt::format("the tool list takes a tenth or more of the server's model's context window ({} tokens). {}",
                     token_count(context), cost)});
  }
  return out;
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
