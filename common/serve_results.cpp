// See serve_results.h.
#include "common/serve_results.h"

#include "proto/decode.h"
#include "proto/mcp_versions.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <utility>

namespace oppx::serve {

namespace json = boost::json;

namespace {

// How much of a call's arguments the permission question shows.
constexpr std::size_t kShownArguments = 2000;

const json::value* meta_field(const json::value& params, std::string_view key) {
  const json::object* o = params.if_object();
  const json::value* meta = o ? o->if_contains("_meta") : nullptr;
  return meta && meta->is_object() ? meta->as_object().if_contains(key) : nullptr;
}

}  // namespace

bool is_modern(const json::value& params) {
  return meta_field(params, proto::mcp::kMetaVersion) || modern_capabilities(params);
}

const json::value* modern_capabilities(const json::value& params) {
  return meta_field(params, proto::mcp::kMetaCapabilities);
}

bool modern_shows_forms(const json::value& params) {
  const json::value* caps = modern_capabilities(params);
  return caps && shows(*caps, "form");
}

bool shows(const json::value& caps, std::string_view mode) {
  const json::value* e = caps.is_object() ? caps.as_object().if_contains("elicitation") : nullptr;
  return e && e->is_object() && (e->as_object().contains(mode) || (mode == "form" && e->as_object().empty()));
}

json::value progress_token_of(const json::value& params) {
  const json::value* token = meta_field(params, "progressToken");
  return token && !token->is_null() ? *token : json::value(nullptr);
}

json::object text_result(std::string text, bool is_error) {
  return {{"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}, {"isError", is_error}};
}

json::object error_result(const proto::RpcError& e) {
  std::string text = e.message;
  if (const json::value* steps = e.data.if_contains("steps"); steps && steps->is_array()) {
    int n = 0;
    for (const json::value& s : steps->as_array())
      if (s.is_string()) text += fmt::format("\n{}. {}", ++n, std::string_view(s.as_string()));
  }
  return text_result(std::move(text), true);
}

json::object call_result(const json::value& r) {
  json::object out = text_result(proto::string_field(r, "text"), proto::bool_field(r, "isError"));
  if (std::string structured = proto::string_field(r, "structured"); !structured.empty()) {
    boost::system::error_code ec;
    json::value parsed = json::parse(structured, ec);
    if (!ec && parsed.is_object()) out["structuredContent"] = std::move(parsed);
  }
  return out;
}

json::object permission_form(const json::value& ask) {
  std::string rule = proto::string_field(ask, "rule");
  std::string args;
  if (const json::value* a = ask.is_object() ? ask.as_object().if_contains("arguments") : nullptr)
    args = proto::json_text(*a);
  if (args.size() > kShownArguments) {
    std::size_t cut = kShownArguments;
    while (cut > 0 && (static_cast<unsigned char>(args[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    args = fmt::format("{} … ({} more bytes not shown)", args.substr(0, cut), args.size() - cut);
  }
  std::string message =
      fmt::format("oppx: may {} run? {}.\nArguments: {}", rule, proto::string_field(ask, "why"), args);
  json::object answer{{"type", "string"},
                      {"title", "Allow it?"},
                      {"enum", json::array{"yes", "session", "always", "no"}},
                      {"enumNames", json::array{"Yes, this time", "Yes, until this client closes",
                                                "Always in this project (oppx permissions allow " + rule + ")", "No"}}};
  return {{"mode", "form"},
          {"message", message},
          {"requestedSchema", json::object{{"type", "object"},
                                           {"properties", json::object{{"answer", answer}}},
                                           {"required", json::array{"answer"}}}}};
}

json::object permission_answer(const json::value* result) {
  std::string choice = "no";
  if (result && proto::string_field(*result, "action") == "accept") {
    const json::value* content = result->as_object().if_contains("content");
    std::string a = content ? proto::string_field(*content, "answer") : "";
    if (a == "yes" || a == "session" || a == "always") choice = a;
  }
  return {{"answer", choice}};
}

json::object input_required(std::string_view key, json::object form, std::string state) {
  json::object asked{{key, json::object{{"method", "elicitation/create"}, {"params", std::move(form)}}}};
  return {{"resultType", "input_required"}, {"inputRequests", std::move(asked)}, {"requestState", std::move(state)}};
}

json::object complete(json::object result, bool modern) {
  if (!modern) return result;
  result["resultType"] = "complete";
  json::value& meta = result["_meta"];
  if (!meta.is_object()) meta = json::object{};
  meta.as_object()[proto::mcp::kMetaServerInfo] = server_info();
  return result;
}

json::object fresh_now(json::object result, bool modern) {
  if (modern) {
    result["ttlMs"] = 0;
    result["cacheScope"] = "private";
  }
  return complete(std::move(result), modern);
}

json::object server_info() { return {{"name", "oppx"}, {"version", OPPX_VERSION}}; }

json::object on_stream(json::object params, const json::value& listen_id) {
  params["_meta"] = json::object{{proto::mcp::kMetaSubscriptionId, listen_id}};
  return params;
}

}  // namespace oppx::serve
