// MCP 2026-07-28's body-derived HTTP headers (mcp_headers.h).
#include "daemon/mcp_headers.h"

#include "common/http.h"
#include "proto/mcp_versions.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace oppx::daemon::mcp_headers {

namespace json = boost::json;

namespace {

constexpr std::string_view kSentinelStart = "=?base64?", kSentinelEnd = "?=";

std::string base64(std::string_view v) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < v.size(); i += 3) {
    unsigned n = static_cast<unsigned>(static_cast<unsigned char>(v[i])) << 16;
    if (i + 1 < v.size()) n |= static_cast<unsigned>(static_cast<unsigned char>(v[i + 1])) << 8;
    if (i + 2 < v.size()) n |= static_cast<unsigned char>(v[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < v.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < v.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

// An RFC 9110 token.
bool token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), http::is_tchar); }

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string joined(const std::vector<std::string>& path) {
  std::string out;
  for (auto& p : path) out += (out.empty() ? "" : ".") + p;
  return out;
}

struct Walk {
  std::vector<ParamHeader> found;
  std::set<std::string> names;  // lower case
  std::string problem;

  // `chain`: reached from the root through `properties` keys alone (the root itself: empty).
  void schema(const json::value& v, bool chain, std::vector<std::string>& path) {
    if (!problem.empty()) return;
    if (v.is_array()) {
      for (auto& e : v.as_array()) schema(e, false, path);
      return;
    }
    if (!v.is_object()) return;
    const json::object& o = v.as_object();
    if (auto* mark = o.if_contains("x-mcp-header")) {
      if (!chain || path.empty()) {
        problem = fmt::format("x-mcp-header at {} is not on a property reached through \"properties\" alone",
                              path.empty() ? std::string("the schema's root") : joined(path));
        return;
      }
      take(*mark, o, path);
      if (!problem.empty()) return;
    }
    for (auto& [k, sub] : o) {
      if (k == "properties" && sub.is_object()) {
        for (auto& [name, prop] : sub.as_object()) {
          path.push_back(std::string(name));
          schema(prop, chain, path);
          path.pop_back();
        }
      } else if (k != "x-mcp-header") {
        schema(sub, false, path);
      }
    }
  }

  void take(const json::value& mark, const json::object& prop, const std::vector<std::string>& path) {
    std::string at = joined(path);
    if (!mark.is_string() || mark.as_string().empty()) {
      problem = fmt::format("the x-mcp-header of {} is empty or not a string", at);
      return;
    }
    std::string name(mark.as_string());
    if (!token(name)) {
      problem = fmt::format("the x-mcp-header of {} is not a header name (letters, digits and !#$%&'*+-.^_`|~)", at);
      return;
    }
    const json::value* type = prop.if_contains("type");
    std::string_view t = type && type->is_string() ? std::string_view(type->as_string()) : std::string_view();
    if (t != "string" && t != "integer" && t != "boolean") {
      problem = fmt::format("the x-mcp-header of {} is on a {} (only string, integer and boolean parameters)", at,
                            t.empty() ? std::string("parameter of no single type") : std::string(t));
      return;
    }
    if (!names.insert(lower(name)).second) {
      problem = fmt::format("the x-mcp-header \"{}\" is used twice (ignoring case)", name);
      return;
    }
    found.push_back({std::move(name), path});
  }
};

// The value at `path` as header text; empty when there is none to send.
std::optional<std::string> text_at(const json::value& arguments, const std::vector<std::string>& path) {
  const json::value* v = &arguments;
  for (auto& key : path) {
    v = v->is_object() ? v->as_object().if_contains(key) : nullptr;
    if (!v) return std::nullopt;
  }
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_bool()) return std::string(v->as_bool() ? "true" : "false");
  constexpr std::int64_t kSafe = (std::int64_t{1} << 53) - 1;
  if (v->is_int64() && std::llabs(v->as_int64()) <= kSafe) return std::to_string(v->as_int64());
  if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(kSafe)) return std::to_string(v->as_uint64());
  if (v->is_double() && std::trunc(v->as_double()) == v->as_double() &&
      std::fabs(v->as_double()) <= static_cast<double>(kSafe))
    return std::to_string(static_cast<std::int64_t>(v->as_double()));
  return std::nullopt;  // null, or not a primitive its schema allows
}

}  // namespace

std::optional<StatelessRequest> stateless_request(std::string_view text, std::string_view method) {
  if (text.find(proto::mcp::kMetaVersion) == std::string_view::npos) return std::nullopt;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  const json::value* p = !ec && v.is_object() ? v.as_object().if_contains("params") : nullptr;
  if (!p || !p->is_object()) return std::nullopt;
  const json::object& params = p->as_object();
  const json::value* meta = params.if_contains("_meta");
  const json::value* version =
      meta && meta->is_object() ? meta->as_object().if_contains(proto::mcp::kMetaVersion) : nullptr;
  if (!version || !version->is_string()) return std::nullopt;
  StatelessRequest out{std::string(version->as_string()), {}};
  std::string_view key = method == "resources/read" ? "uri" : "name";
  if (method == "tools/call" || method == "prompts/get" || method == "resources/read") {
    if (auto* n = params.if_contains(key); n && n->is_string()) out.name = std::string(n->as_string());
  }
  return out;
}

bool version_refused_but_listed(std::string_view body, std::string_view version) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  const json::value* e = !ec && v.is_object() ? v.as_object().if_contains("error") : nullptr;
  if (!e || !e->is_object()) return false;
  const json::value* code = e->as_object().if_contains("code");
  if (!code || !code->is_int64() || code->as_int64() != -32022) return false;
  const json::value* data = e->as_object().if_contains("data");
  const json::value* supported = data && data->is_object() ? data->as_object().if_contains("supported") : nullptr;
  if (!supported || !supported->is_array()) return false;
  for (auto& s : supported->as_array())
    if (s.is_string() && s.as_string() == version) return true;
  return false;
}

std::string header_value(std::string_view v) {
  bool sentinel = v.size() >= kSentinelStart.size() + kSentinelEnd.size() && v.substr(0, 9) == kSentinelStart &&
                  v.substr(v.size() - 2) == kSentinelEnd;
  bool plain = !sentinel && std::all_of(v.begin(), v.end(), [](char c) { return c >= 0x20 && c < 0x7f; }) &&
               (v.empty() || (v.front() != ' ' && v.back() != ' '));
  if (plain) return std::string(v);
  return std::string(kSentinelStart) + base64(v) + std::string(kSentinelEnd);
}

boost::system::result<std::vector<ParamHeader>, std::string> param_headers(const json::value& input_schema) {
  Walk w;
  std::vector<std::string> path;
  w.schema(input_schema, true, path);
  if (!w.problem.empty()) return w.problem;
  return std::move(w.found);
}

std::vector<std::pair<std::string, std::string>> param_header_values(const std::vector<ParamHeader>& marks,
                                                                     const json::value& arguments) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& m : marks) {
    if (auto text = text_at(arguments, m.path)) out.emplace_back("Mcp-Param-" + m.name, header_value(*text));
  }
  return out;
}

}  // namespace oppx::daemon::mcp_headers
