// Decoding and encoding of session/open and permissions/… params and results, and the rule grammar.
#include "proto/session_api.h"

#include "common/text.h"

#include <boost/json/object.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace oppx::proto {

namespace json = boost::json;

namespace {

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

std::string trimmed(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

// The fields of permissions/list's result, which the rule methods' results start with.
void read_rules(FieldReader& r, PermissionsListResult& out) {
  out.project = r.string("project", true).value_or("");
  out.file = r.string("file", false).value_or("");
  out.allow = r.strings("allow");
  out.deny = r.strings("deny");
  if (!r.any("session_allow").is_null()) out.session_allow = r.strings("session_allow");
  out.problem = r.string("problem", false).value_or("");
}

}  // namespace

std::optional<std::string> rule_problem(std::string_view rule) {
  const std::string forms = "rules are <connector>.<tool>, <connector>.*, run:<command prefix> or sandbox:network";
  // The agent's commands may use the network in their sandbox (chat/sandbox.h).
  if (rule == "sandbox:network") return std::nullopt;
  if (rule.rfind("run:", 0) == 0) {
    if (trimmed(rule.substr(4)).empty()) return "\"run:\" needs the start of a command after it; " + forms;
    if (rule.find_first_of("\n\r") != std::string_view::npos) return std::string("a rule is one line");
    return std::nullopt;
  }
  auto dot = rule.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == rule.size())
    return "\"" + escape_controls(rule) + "\" is not a rule: " + forms;
  std::string_view connector = rule.substr(0, dot), tool = rule.substr(dot + 1);
  if (!std::all_of(connector.begin(), connector.end(), name_char))
    return "\"" + escape_controls(connector) + "\" is not a connector name (letters, digits, '-' and '_')";
  if (std::any_of(tool.begin(), tool.end(), [](unsigned char c) { return c <= ' ' || c == 0x7F; }))
    return "\"" + escape_controls(tool) + "\" is not a tool name (no spaces or control characters)";
  return std::nullopt;
}

Decoded<SessionOpenParams> decode(const json::value& v, std::type_identity<SessionOpenParams>) {
  FieldReader r(v, "params");
  SessionOpenParams p;
  p.cwd = r.string("cwd", true).value_or("");
  p.mode = r.string("mode", false).value_or("chat");
  if (r.ok() && (p.cwd.empty() || p.cwd[0] != '/')) r.fail("cwd", "expected an absolute path");
  if (p.mode != "chat" && p.mode != "print" && p.mode != "plan" && p.mode != "editor")
    r.fail("mode", "expected chat, print, plan or editor");
  return finish(r, std::move(p));
}

Decoded<PermissionsListParams> decode(const json::value& v, std::type_identity<PermissionsListParams>) {
  FieldReader r(v, "params");
  PermissionsListParams p;
  p.cwd = r.absolute_path("cwd");
  return finish(r, std::move(p));
}

Decoded<RuleParams> decode(const json::value& v, std::type_identity<RuleParams>) {
  FieldReader r(v, "params");
  RuleParams p;
  p.rule = r.string("rule", true).value_or("");
  p.cwd = r.absolute_path("cwd");
  p.session = r.boolean("session", false).value_or(false);
  if (r.ok()) {
    if (auto why = rule_problem(p.rule)) r.fail("rule", *why);
  }
  return finish(r, std::move(p));
}

Decoded<JudgeParams> decode(const json::value& v, std::type_identity<JudgeParams>) {
  FieldReader r(v, "params");
  JudgeParams p;
  p.connector = r.string("connector", false).value_or("");
  p.tool = r.string("tool", false).value_or("");
  p.command = r.string("command", false).value_or("");
  p.cwd = r.absolute_path("cwd");
  if (r.ok() && p.command.empty() == (p.connector.empty() || p.tool.empty()))
    return {boost::system::in_place_error, "params: expected either connector and tool, or command"};
  return finish(r, std::move(p));
}

Decoded<SessionOpenResult> decode(const json::value& v, std::type_identity<SessionOpenResult>) {
  FieldReader r(v, "result");
  SessionOpenResult s;
  s.session = r.string("session", true).value_or("");
  s.cwd = r.string("cwd", false).value_or("");
  s.project = r.string("project", false).value_or("");
  s.mode = r.string("mode", false).value_or("");
  s.replaced = r.boolean("replaced", false).value_or(false);
  return finish(r, std::move(s));
}

Decoded<PermissionsListResult> decode(const json::value& v, std::type_identity<PermissionsListResult>) {
  FieldReader r(v, "result");
  PermissionsListResult l;
  read_rules(r, l);
  return finish(r, std::move(l));
}

Decoded<RuleResult> decode(const json::value& v, std::type_identity<RuleResult>) {
  FieldReader r(v, "result");
  RuleResult l;
  read_rules(r, l);
  l.rule = r.string("rule", true).value_or("");
  l.changed = r.boolean("changed", true).value_or(false);
  l.session = r.boolean("session", false).value_or(false);
  return finish(r, std::move(l));
}

Decoded<JudgeResult> decode(const json::value& v, std::type_identity<JudgeResult>) {
  FieldReader r(v, "result");
  JudgeResult j;
  j.decision = r.string("decision", true).value_or("");
  if (r.ok() && j.decision != "allow" && j.decision != "ask" && j.decision != "deny")
    r.fail("decision", "expected allow, ask or deny");
  j.why = r.string("why", false).value_or("");
  j.project = r.string("project", false).value_or("");
  j.rule = r.string("rule", false).value_or("");
  j.read_only = r.boolean("read_only", false);
  return finish(r, std::move(j));
}

namespace {
constexpr std::array<std::pair<PermissionAnswerKind, std::string_view>, 4> kPermissionAnswers{{
    {PermissionAnswerKind::kNo, "no"},
    {PermissionAnswerKind::kYes, "yes"},
    {PermissionAnswerKind::kSession, "session"},
    {PermissionAnswerKind::kAlways, "always"},
}};
}  // namespace

Decoded<PermissionQuestion> decode(const json::value& v, std::type_identity<PermissionQuestion>) {
  FieldReader r(v, "params");
  PermissionQuestion q;
  q.connector = r.string("connector", true).value_or("");
  q.tool = r.string("tool", true).value_or("");
  if (json::value a = r.any("arguments"); a.is_object()) q.arguments = std::move(a.as_object());
  q.why = r.string("why", false).value_or("");
  q.rule = r.string("rule", false).value_or("");
  q.read_only = r.boolean("read_only", false).value_or(false);
  return finish(r, std::move(q));
}

Decoded<PermissionAnswer> decode(const json::value& v, std::type_identity<PermissionAnswer>) {
  FieldReader r(v, "result");
  PermissionAnswer a;
  a.answer = read_enum(r, "answer", kPermissionAnswers);
  return finish(r, std::move(a));
}

void tag_invoke(json::value_from_tag, json::value& jv, const PermissionQuestion& v) {
  jv = json::object{{"connector", v.connector}, {"tool", v.tool},          {"arguments", v.arguments}, {"why", v.why},
                    {"rule", v.rule},           {"read_only", v.read_only}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const PermissionAnswer& v) {
  jv = json::object{{"answer", name_of(kPermissionAnswers, v.answer)}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const SessionOpenParams& v) {
  jv = json::object{{"cwd", v.cwd}, {"mode", v.mode}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const PermissionsListParams& v) {
  json::object o;
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const RuleParams& v) {
  json::object o{{"rule", v.rule}};
  if (v.session) o["session"] = true;
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const JudgeParams& v) {
  json::object o;
  put_if_set(o, "command", v.command);
  put_if_set(o, "connector", v.connector);
  put_if_set(o, "tool", v.tool);
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const SessionOpenResult& v) {
  jv = json::object{
      {"session", v.session}, {"cwd", v.cwd}, {"project", v.project}, {"mode", v.mode}, {"replaced", v.replaced}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const PermissionsListResult& v) {
  json::object o{{"project", v.project},
                 {"file", v.file},
                 {"allow", json::value_from(v.allow)},
                 {"deny", json::value_from(v.deny)}};
  if (v.session_allow) o["session_allow"] = json::value_from(*v.session_allow);
  put_if_set(o, "problem", v.problem);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const RuleResult& v) {
  jv = json::value_from(static_cast<const PermissionsListResult&>(v));
  json::object& o = jv.as_object();
  o["rule"] = v.rule;
  o["changed"] = v.changed;
  if (v.session) o["session"] = true;
}

void tag_invoke(json::value_from_tag, json::value& jv, const JudgeResult& v) {
  json::object o{{"decision", v.decision}, {"why", v.why}, {"project", v.project}};
  put_if_set(o, "rule", v.rule);
  if (v.read_only) o["read_only"] = *v.read_only;
  jv = std::move(o);
}

}  // namespace oppx::proto
