// DaemonTools: the agent's calls to oppxd (session/open, mcp/list and mcp/tools, permissions/judge
// and permissions/allow, tools/call with progress, browser/start).
#include "chat/daemon_tools.h"
#include "proto/decode.h"

#include "common/tool_text.h"
#include "proto/browser_api.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"
#include "proto/session_api.h"
#include "proto/resources_api.h"
#include "proto/tool_search_api.h"

#include <boost/json.hpp>

#include <algorithm>

namespace oppx::chat {

namespace json = boost::json;

namespace {

constexpr std::chrono::milliseconds kDaemonCall{10'000};
constexpr std::chrono::milliseconds kToolsLimit{30'000};         // a running connector's list, from the cache
constexpr std::chrono::milliseconds kToolCall{125'000};          // the daemon's own limit is 120 s
constexpr std::chrono::milliseconds kBrowserStartLimit{60'000};  // the server's start, not Chromium's

using proto::string_field;

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
  auto r = client_.call(proto::kSessionOpen, json::value_from(proto::SessionOpenParams{cwd_, mode}), kDaemonCall);
  return failure_of<proto::SessionOpenResult>(r, proto::kSessionOpen);
}

std::string DaemonTools::list(std::vector<ToolInfo>& tools, std::vector<ConnectorNote>& others,
                              std::vector<std::string>& denied) {
  tools.clear();
  others.clear();
  denied.clear();
  // Never waits for a connector still starting (or reconnecting, or waiting for a login): the
  // session starts with what runs, and one that comes up joins at the next listing.
  auto r = client_.call(proto::kMcpList, json::value_from(proto::McpListParams{false, cwd_}), kDaemonCall);
  if (!r) return r.error().message;
  auto listed = proto::decode<proto::McpListResult>(*r);
  if (!listed) return proto::unreadable_reply(listed.error());
  for (const auto& c : listed->connectors) {
    if (c.state == "hidden" || c.state == "disabled") continue;
    // An idle one (lazy, not started yet) offers the tools of its last run; a call starts it.
    if (c.state != "running" && c.state != "idle") {
      others.push_back(ConnectorNote{c.name, c.state, c.reason, c.approve, c.steps});
      continue;
    }
    auto t = client_.call(proto::kMcpTools, json::value_from(proto::McpToolsParams{c.name, cwd_}), kToolsLimit);
    auto entry = proto::decode_reply<proto::ConnectorEntry>(t);
    if (!entry || !entry->tools) continue;  // it went away between the two requests
    for (const auto& tv : *entry->tools) {
      if (!tv.is_object()) continue;
      const json::object& tool = tv.as_object();
      ToolInfo info;
      info.connector = c.name;
      info.name = string_field(tool, "name");
      if (info.name.empty()) continue;
      // A tool a deny rule covers is not offered at all: the model is only told its name.
      if (std::find(entry->denied.begin(), entry->denied.end(), info.name) != entry->denied.end()) {
        denied.push_back(info.full_name());
        continue;
      }
      info.description = string_field(tool, "description");
      if (const json::value* s = tool.if_contains("inputSchema")) info.input_schema = *s;
      if (const json::value* a = tool.if_contains("annotations"); a && a->is_object()) {
        const json::value* ro = a->as_object().if_contains("readOnlyHint");
        info.read_only = ro && ro->is_bool() && ro->as_bool();
      }
      info.line = tool_line(c.name, tool);
      info.pinned = std::any_of(entry->always_load.begin(), entry->always_load.end(),
                                [&info](const std::string& p) { return p == "*" || p == info.name; });
      tools.push_back(std::move(info));
    }
  }
  return {};
}

std::string DaemonTools::read_resource(const std::string& name, const std::string& uri, std::string& text) {
  auto r = client_.call(proto::kMcpRead, json::value_from(proto::McpReadParams{name, uri, cwd_}), kToolsLimit);
  auto read = proto::decode_reply<proto::McpReadResult>(r);
  if (!read) return read.error();
  text = std::move(read->text);
  return {};
}

std::string DaemonTools::get_prompt(const std::string& name, const std::string& prompt,
                                    const proto::StringMap& arguments, std::string& text) {
  auto r = client_.call(proto::kMcpPrompt, json::value_from(proto::McpPromptParams{name, prompt, cwd_, arguments}),
                        kToolsLimit);
  auto got = proto::decode_reply<proto::McpPromptResult>(r);
  if (!got) return got.error();
  text.clear();
  bool roles = got->messages.size() > 1 ||
               std::any_of(got->messages.begin(), got->messages.end(), [](const auto& m) { return m.role != "user"; });
  for (const auto& m : got->messages) {
    if (!text.empty()) text += "\n\n";
    text += roles ? "[" + m.role + "]\n" + m.text : m.text;
  }
  return {};
}

std::string DaemonTools::search(const std::string& query, const std::string& context, std::int64_t limit,
                                std::vector<proto::ToolsSearchHit>& hits) {
  hits.clear();
  std::string words = context.substr(0, proto::kMaxSearchContext);
  // Never half a character: the daemon would refuse the line as invalid UTF-8.
  if (words.size() < context.size())
    while (!words.empty() && (static_cast<unsigned char>(context[words.size()]) & 0xC0) == 0x80) words.pop_back();
  auto r = client_.call(proto::kToolsSearch, json::value_from(proto::ToolsSearchParams{query, words, cwd_, limit}),
                        kDaemonCall);
  auto found = proto::decode_reply<proto::ToolsSearchResult>(r);
  if (!found) return found.error();
  hits = std::move(found->tools);
  return {};
}

DaemonTools::Verdict DaemonTools::judge_tool(const ToolInfo& tool) {
  return verdict_of(client_.call(proto::kPermissionsJudge,
                                 json::value_from(proto::JudgeParams{tool.connector, tool.name, "", cwd_}),
                                 kDaemonCall));
}

DaemonTools::Verdict DaemonTools::judge_command(const std::string& command) {
  return verdict_of(
      client_.call(proto::kPermissionsJudge, json::value_from(proto::JudgeParams{"", "", command, cwd_}), kDaemonCall));
}

std::optional<bool> DaemonTools::rule_says(const std::string& rule) {
  auto r = client_.call(proto::kPermissionsList, json::value_from(proto::PermissionsListParams{cwd_}), kDaemonCall);
  if (!r) return std::nullopt;
  auto list = proto::decode<proto::PermissionsListResult>(*r);
  if (!list) return std::nullopt;
  auto has = [&rule](const std::vector<std::string>& rules) {
    return std::find(rules.begin(), rules.end(), rule) != rules.end();
  };
  if (has(list->deny)) return false;
  if (has(list->allow) || (list->session_allow && has(*list->session_allow))) return true;
  return std::nullopt;
}

std::string DaemonTools::allow(const std::string& rule, bool session) {
  auto r =
      client_.call(proto::kPermissionsAllow, json::value_from(proto::RuleParams{rule, cwd_, session}), kDaemonCall);
  return failure_of<proto::RuleResult>(r, proto::kPermissionsAllow);
}

std::string DaemonTools::browser_start() {
  auto r = client_.call(proto::kBrowserStart, json::object{}, kBrowserStartLimit);
  return failure_of<proto::BrowserStartResult>(r, proto::kBrowserStart);
}

std::string DaemonTools::browser_stop() {
  auto r = client_.call(proto::kBrowserStop, json::object{}, kDaemonCall);
  return failure_of<proto::BrowserStopResult>(r, proto::kBrowserStop);
}

void DaemonTools::interrupt() { client_.cancel_in_flight(); }

DaemonTools::CallResult DaemonTools::call(const ToolInfo& tool, const json::object& arguments,
                                          const Progress& on_progress, const Elicit& on_elicit) {
  CallResult out;
  proto::ToolsCallParams params{.connector = tool.connector, .tool = tool.name, .cwd = cwd_, .arguments = arguments};
  if (on_progress) {
    params.progress_token = "agent";
    client_.on_notification([&](const std::string& method, const json::value& v) {
      if (method != proto::kToolsProgress) return;
      if (auto p = proto::decode<proto::ToolsProgress>(v)) on_progress(p->progress.value_or(0), p->total, p->message);
    });
  }
  // The daemon asks the session about a call its rules would ask about (permissions/ask). The loop
  // makes a call only once the rules or the user allowed it (Agent::permitted), so the answer is
  // yes for this very call, and no for anything else. What the connector's server asks the user
  // (mcp/elicit) goes to on_elicit.
  client_.on_request([&](const std::string& method, const json::value& v) -> SyncClient::RequestResult {
    if (method == proto::kMcpElicit) {
      auto q = proto::decode<proto::ElicitQuestion>(v);
      if (!q) return proto::RpcError::make(proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams, q.error());
      return json::value_from(on_elicit ? on_elicit(*q) : proto::ElicitAnswer{});
    }
    if (method != proto::kPermissionsAsk)
      return proto::RpcError::make(proto::ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                   "the agent does not answer " + method);
    auto q = proto::decode<proto::PermissionQuestion>(v);
    bool same = q && q->connector == tool.connector && q->tool == tool.name && q->arguments == arguments;
    return json::value_from(
        proto::PermissionAnswer{same ? proto::PermissionAnswerKind::kYes : proto::PermissionAnswerKind::kNo});
  });
  auto r = client_.call(proto::kToolsCall, json::value_from(params), kToolCall);
  client_.on_notification(nullptr);
  client_.on_request(nullptr);
  if (r) {
    auto result = proto::decode<proto::ToolsCallResult>(*r);
    if (!result) {
      out.text = proto::unreadable_reply(result.error());
      return out;
    }
    out.ok = true;
    out.text = result->text;
    out.structured = result->structured;
    for (const std::string* f : {&result->text_file, &result->structured_file})
      if (!f->empty()) out.kept.push_back(*f);
    out.is_error = result->is_error;
    return out;
  }
  const proto::RpcError& e = r.error();
  out.text = e.message;
  out.step_up = e.kind == proto::kind::kStepUp;
  if (e.kind == proto::kind::kConnectorDown) {
    out.down = true;
    auto down = proto::decode<proto::ConnectorDown>(e.data);
    out.text = down && !down->reason.empty() ? down->reason : e.message;
    if (down) {
      out.reason_kind = down->reason_kind;
      out.steps = down->steps;
    }
  }
  return out;
}

}  // namespace oppx::chat
