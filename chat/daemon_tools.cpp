// DaemonTools: the agent's calls to oppxd (session/open, mcp/list and mcp/tools, permissions/judge
// and permissions/allow, tools/call with progress, browser/start).
#include "chat/daemon_tools.h"

#include "common/tool_text.h"
#include "proto/browser_api.h"
#include "proto/session_api.h"

#include <boost/json.hpp>

namespace oppx::chat {

namespace json = boost::json;

namespace {

constexpr std::chrono::milliseconds kDaemonCall{10'000};
constexpr std::chrono::milliseconds kListWait{120'000};     // connectors get 30 s each to start
constexpr std::chrono::milliseconds kToolCall{125'000};     // the daemon's own limit is 120 s
constexpr std::chrono::milliseconds kBrowserStart{60'000};  // the server's start, not Chromium's

std::string str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

DaemonTools::Verdict verdict_of(const boost::system::result<json::value, proto::RpcError>& r) {
  DaemonTools::Verdict v;
  if (!r) {
    v.why = "the daemon could not judge it: " + r.error().message;
    return v;  // ask
  }
  auto judged = proto::decode<proto::JudgeResult>(*r);
  if (!judged) {
    v.why = "the daemon's verdict could not be read: " + judged.error();
    return v;  // ask
  }
  v.decision = judged->decision;
  v.why = judged->why;
  v.rule = judged->rule;
  return v;
}

// "" when the call answered with a result of type `Result`, else why not.
template <class Result>
std::string failure_of(const boost::system::result<json::value, proto::RpcError>& r, std::string_view method) {
  if (!r) return r.error().message;
  auto decoded = proto::decode<Result>(*r);
  return decoded ? std::string() : "the daemon's " + std::string(method) + " reply: " + decoded.error();
}

}  // namespace

std::string DaemonTools::open_session(const std::string& mode) {
  auto r = client_.call("session/open", json::value_from(proto::SessionOpenParams{cwd_, mode}), kDaemonCall);
  return failure_of<proto::SessionOpenResult>(r, "session/open");
}

std::string DaemonTools::list(std::vector<ToolInfo>& tools, std::vector<ConnectorNote>& others) {
  tools.clear();
  others.clear();
  auto r = client_.call("mcp/list", json::object{{"wait", true}, {"cwd", cwd_}}, kListWait);
  if (!r) return r.error().message;
  const json::value* cs = r->as_object().if_contains("connectors");
  if (!cs || !cs->is_array()) return "the daemon's mcp/list reply has no connectors";
  for (const auto& cv : cs->as_array()) {
    if (!cv.is_object()) continue;
    const json::object& c = cv.as_object();
    std::string name = str(c, "name"), state = str(c, "state");
    if (state == "hidden" || state == "disabled") continue;
    if (state != "running") {
      ConnectorNote note{name, state, str(c, "reason"), str(c, "approve"), {}};
      if (const json::value* s = c.if_contains("steps"); s && s->is_array()) {
        for (const auto& step : s->as_array()) {
          if (step.is_string()) note.steps.emplace_back(step.as_string());
        }
      }
      others.push_back(std::move(note));
      continue;
    }
    auto t = client_.call("mcp/tools", json::object{{"name", name}, {"cwd", cwd_}}, kListWait);
    if (!t) continue;  // it went away between the two requests
    const json::value* list = t->as_object().if_contains("tools");
    if (!list || !list->is_array()) continue;
    for (const auto& tv : list->as_array()) {
      if (!tv.is_object()) continue;
      const json::object& tool = tv.as_object();
      ToolInfo info;
      info.connector = name;
      info.name = str(tool, "name");
      if (info.name.empty()) continue;
      info.description = str(tool, "description");
      if (const json::value* s = tool.if_contains("inputSchema")) info.input_schema = *s;
      if (const json::value* a = tool.if_contains("annotations"); a && a->is_object()) {
        const json::value* ro = a->as_object().if_contains("readOnlyHint");
        info.read_only = ro && ro->is_bool() && ro->as_bool();
      }
      info.line = tool_line(name, tool);
      tools.push_back(std::move(info));
    }
  }
  return {};
}

DaemonTools::Verdict DaemonTools::judge_tool(const ToolInfo& tool) {
  return verdict_of(client_.call(
      "permissions/judge", json::value_from(proto::JudgeParams{tool.connector, tool.name, "", cwd_}), kDaemonCall));
}

DaemonTools::Verdict DaemonTools::judge_command(const std::string& command) {
  return verdict_of(
      client_.call("permissions/judge", json::value_from(proto::JudgeParams{"", "", command, cwd_}), kDaemonCall));
}

std::string DaemonTools::allow(const std::string& rule, bool session) {
  auto r = client_.call("permissions/allow", json::value_from(proto::RuleParams{rule, cwd_, session}), kDaemonCall);
  return failure_of<proto::RuleResult>(r, "permissions/allow");
}

std::string DaemonTools::browser_start() {
  auto r = client_.call("browser/start", json::object{}, kBrowserStart);
  return failure_of<proto::BrowserStartResult>(r, "browser/start");
}

std::string DaemonTools::browser_stop() {
  auto r = client_.call("browser/stop", json::object{}, kDaemonCall);
  return failure_of<proto::BrowserStopResult>(r, "browser/stop");
}

void DaemonTools::interrupt() { client_.cancel_in_flight(); }

DaemonTools::CallResult DaemonTools::call(const ToolInfo& tool, const json::object& arguments,
                                          const Progress& on_progress) {
  CallResult out;
  json::object params{{"connector", tool.connector}, {"tool", tool.name}, {"arguments", arguments}, {"cwd", cwd_}};
  if (on_progress) {
    params["progress_token"] = "agent";
    client_.on_notification([&](const std::string& method, const json::value& p) {
      if (method != "tools/progress" || !p.is_object()) return;
      const json::object& o = p.as_object();
      auto number = [&](std::string_view k) -> std::optional<double> {
        const json::value* v = o.if_contains(k);
        if (!v || !(v->is_number())) return std::nullopt;
        return v->to_number<double>();
      };
      on_progress(number("progress").value_or(0), number("total"), str(o, "message"));
    });
  }
  auto r = client_.call("tools/call", params, kToolCall);
  client_.on_notification(nullptr);
  if (r) {
    const json::object& o = r->as_object();
    out.ok = true;
    out.text = str(o, "text");
    const json::value* e = o.if_contains("isError");
    out.is_error = e && e->is_bool() && e->as_bool();
    return out;
  }
  const proto::RpcError& e = r.error();
  out.text = e.message;
  if (e.kind == "connector_down") {
    out.down = true;
    out.text = str(e.data, "reason");
    if (out.text.empty()) out.text = e.message;
    out.reason_kind = str(e.data, "reason_kind");
    if (const json::value* s = e.data.if_contains("steps"); s && s->is_array()) {
      for (const auto& step : s->as_array()) {
        if (step.is_string()) out.steps.emplace_back(step.as_string());
      }
    }
  }
  return out;
}

}  // namespace oppx::chat
