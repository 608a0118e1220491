// Encoding and decoding of the daemon/… wire structs. Decoders read only what they need and
// ignore the rest, so an older client still reads a newer daemon's replies.
#include "proto/daemon_api.h"

#include "proto/decode.h"

#include <boost/json/object.hpp>
#include <fmt/format.h>

#include <algorithm>

namespace oppx::proto {

namespace json = boost::json;

Decoded<HelloParams> decode(const json::value& params, std::type_identity<HelloParams>) {
  FieldReader r(params, "params");
  HelloParams p;
  auto protocol = r.integer("protocol", true);
  if (protocol && (*protocol < 0 || *protocol > 1'000'000)) r.fail("protocol", "out of range");
  p.client = r.string("client", false).value_or("");
  p.build = r.string("build", false).value_or("");
  p.cwd = r.absolute_path("cwd");
  p.env = r.string_map("env");
  p.protocol = static_cast<int>(protocol.value_or(0));
  return finish(r, std::move(p));
}

Decoded<HelloResult> decode(const json::value& result, std::type_identity<HelloResult>) {
  FieldReader r(result, "result");
  HelloResult h;
  auto protocol = r.integer("protocol", true);
  h.version = r.string("version", false).value_or("");
  h.build = r.string("build", false).value_or("");
  h.pid = r.integer("pid", false).value_or(0);
  if (!r.ok()) return r.error();
  h.protocol = static_cast<int>(*protocol);
  return h;
}

Decoded<StatusParams> decode(const json::value& params, std::type_identity<StatusParams>) {
  FieldReader r(params, "params");
  StatusParams p;
  p.timeout_ms = r.integer("timeout_ms", false).value_or(p.timeout_ms);
  if (!r.ok()) return r.error();
  if (p.timeout_ms <= 0 || p.timeout_ms > 3'600'000) return std::string("params.timeout_ms: expected 1 to 3600000");
  const json::value* until = params.is_object() ? params.as_object().if_contains("until") : nullptr;
  if (!until || until->is_null()) return p;
  if (!until->is_object()) return std::string("params.until: expected an object");
  for (auto& [k, v] : until->as_object()) {
    std::string field = "params.until." + std::string(k);
    if (std::find(kStatusWaitFields.begin(), kStatusWaitFields.end(), std::string_view(k)) == kStatusWaitFields.end())
      return fmt::format("{}: not a field a wait may name; one of {}", field, fmt::join(kStatusWaitFields, ", "));
    if (k == "spare_state") {
      if (!v.is_string()) return field + ": expected a string";
      p.until.emplace(std::string(k), v);
    } else {
      if (!v.is_int64() && !v.is_uint64()) return field + ": expected an integer";
      p.until.emplace(std::string(k), v.to_number<std::int64_t>());
    }
  }
  return p;
}

Decoded<StatusResult> decode(const json::value& result, std::type_identity<StatusResult>) {
  FieldReader r(result, "result");
  StatusResult s;
  s.pid = r.integer("pid", true).value_or(0);
  s.version = r.string("version", false).value_or("");
  s.build = r.string("build", false).value_or("");
  s.clients = r.integer("clients", false).value_or(0);
  s.connectors = r.integer("connectors", false).value_or(0);
  s.rss_kib = r.integer("rss_kib", false).value_or(0);
  s.buffered_bytes = r.integer("buffered_bytes", false).value_or(0);
  s.buffer_budget = r.integer("buffer_budget", false).value_or(0);
  s.socket = r.string("socket", false).value_or("");
  s.log = r.string("log", false).value_or("");
  s.uptime_ms = r.integer("uptime_ms", false).value_or(0);
  s.isolation = r.string("isolation", false).value_or("");
  s.isolation_reason = r.string("isolation_reason", false).value_or("");
  s.reaper_pid = r.integer("reaper_pid", false).value_or(0);
  s.requests_waiting = r.integer("requests_waiting", false).value_or(0);
  s.spare_state = r.string("spare_state", false).value_or("off");
  s.children = r.integer("children", false).value_or(0);
  s.worker_jobs = r.integer("worker_jobs", false).value_or(0);
  if (auto met = r.boolean("until_met", false)) s.until_met = *met;
  if (!r.ok()) return r.error();
  return s;
}

Decoded<ShutdownResult> decode(const json::value& result, std::type_identity<ShutdownResult>) {
  FieldReader r(result, "result");
  ShutdownResult s;
  s.stopping = r.boolean("stopping", false).value_or(false);
  return finish(r, s);
}

void tag_invoke(json::value_from_tag, json::value& jv, const HelloParams& v) {
  json::object env;
  for (auto& [k, val] : v.env) env[k] = val;
  jv = json::object{{"protocol", v.protocol}, {"client", v.client}, {"build", v.build}, {"env", std::move(env)}};
  put_if_set(jv.as_object(), "cwd", v.cwd);
}

void tag_invoke(json::value_from_tag, json::value& jv, const HelloResult& v) {
  jv = json::object{{"protocol", v.protocol}, {"version", v.version}, {"build", v.build}, {"pid", v.pid}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const StatusResult& v) {
  jv = json::object{{"pid", v.pid},
                    {"version", v.version},
                    {"build", v.build},
                    {"uptime_ms", v.uptime_ms},
                    {"clients", v.clients},
                    {"connectors", v.connectors},
                    {"rss_kib", v.rss_kib},
                    {"socket", v.socket},
                    {"log", v.log},
                    {"buffered_bytes", v.buffered_bytes},
                    {"buffer_budget", v.buffer_budget},
                    {"isolation", v.isolation},
                    {"isolation_reason", v.isolation_reason},
                    {"reaper_pid", v.reaper_pid},
                    {"requests_waiting", v.requests_waiting},
                    {"spare_state", v.spare_state},
                    {"children", v.children},
                    {"worker_jobs", v.worker_jobs}};
  if (v.until_met) jv.as_object()["until_met"] = *v.until_met;
}

void tag_invoke(json::value_from_tag, json::value& jv, const ShutdownResult& v) {
  jv = json::object{{"stopping", v.stopping}};
}

}  // namespace oppx::proto
