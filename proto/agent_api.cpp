// Encoding and decoding of the agent's wire structs. Enums travel as their lower-case names; an
// unknown name fails its field, naming it.
#include "proto/agent_api.h"

#include "proto/elicitation.h"

#include <array>
#include <utility>

namespace oppx::proto {

namespace json = boost::json;

namespace {

constexpr std::array<std::pair<AgentEventKind, std::string_view>, 4> kEventKinds{{
    {AgentEventKind::kText, "text"},
    {AgentEventKind::kNotice, "notice"},
    {AgentEventKind::kAction, "action"},
    {AgentEventKind::kProgress, "progress"},
}};
constexpr std::array<std::pair<AgentAnswerKind, std::string_view>, 5> kAnswers{{
    {AgentAnswerKind::kYes, "yes"},
    {AgentAnswerKind::kAlwaysTool, "always_tool"},
    {AgentAnswerKind::kAlwaysConnector, "always_connector"},
    {AgentAnswerKind::kNo, "no"},
    {AgentAnswerKind::kText, "text"},
}};

json::object object_of(FieldReader& r, std::string_view key) {
  json::value v = r.any(key);
  if (v.is_object()) return std::move(v.as_object());
  if (!v.is_null()) r.fail(key, "expected object");
  return {};
}

std::optional<double> number_of(FieldReader& r, std::string_view key) {
  json::value v = r.any(key);
  if (v.is_null()) return std::nullopt;
  if (v.is_number()) return v.to_number<double>();
  r.fail(key, "expected number");
  return std::nullopt;
}

json::array strings_json(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

template <class T>
json::array list_json(const std::vector<T>& v) {
  json::array a;
  for (const auto& x : v) a.push_back(json::value_from(x));
  return a;
}

}  // namespace

Decoded<AgentOpenParams> decode(const json::value& v, std::type_identity<AgentOpenParams>) {
  FieldReader r(v, "params");
  AgentOpenParams p;
  p.cwd = r.absolute_path("cwd");
  p.mode = r.string("mode", false).value_or("chat");
  if (r.ok() && p.mode != "chat" && p.mode != "print" && p.mode != "plan")
    r.fail("mode", "expected chat, print or plan");
  p.can_ask = r.boolean("can_ask", false).value_or(false);
  p.resume = r.boolean("resume", false).value_or(false);
  p.conversation = r.string("conversation", false).value_or("");
  p.browser = r.boolean("browser", false);
  p.elicit = r.string("elicit", false).value_or("");
  if (r.ok() && !p.elicit.empty() && !elicit_policy(p.elicit))
    r.fail("elicit", "expected ask, decline or accept-defaults");
  return finish(r, std::move(p));
}

Decoded<AgentConnectorNote> decode(const json::value& v, std::type_identity<AgentConnectorNote>) {
  FieldReader r(v, "result");
  AgentConnectorNote n;
  n.name = r.string("name", true).value_or("");
  n.state = r.string("state", true).value_or("");
  n.reason = r.string("reason", false).value_or("");
  n.approve = r.string("approve", false).value_or("");
  n.steps = r.strings("steps");
  return finish(r, std::move(n));
}

Decoded<AgentWarning> decode(const json::value& v, std::type_identity<AgentWarning>) {
  FieldReader r(v, "result");
  AgentWarning w;
  w.kind = r.string("kind", true).value_or("");
  w.message = r.string("message", true).value_or("");
  return finish(r, std::move(w));
}

Decoded<AgentOpenResult> decode(const json::value& v, std::type_identity<AgentOpenResult>) {
  FieldReader r(v, "result");
  AgentOpenResult o;
  o.model = r.string("model", true).value_or("");
  o.context_tokens = r.integer("context_tokens", false);
  o.tools = r.strings("tools");
  o.not_offered = r.list<AgentConnectorNote>("not_offered");
  o.warnings = r.list<AgentWarning>("warnings");
  o.notices = r.strings("notices");
  o.resumed_messages = r.integer("resumed_messages", false).value_or(0);
  return finish(r, std::move(o));
}

Decoded<AgentModelProblem> decode(const json::value& v, std::type_identity<AgentModelProblem>) {
  FieldReader r(v, "data");
  AgentModelProblem p;
  p.kind = r.string("model_kind", true).value_or("");
  p.message = r.string("message", false).value_or("");
  p.steps = r.strings("steps");
  p.http_status = r.integer("http_status", false).value_or(0);
  return finish(r, std::move(p));
}

Decoded<AgentTurnParams> decode(const json::value& v, std::type_identity<AgentTurnParams>) {
  FieldReader r(v, "params");
  AgentTurnParams p;
  p.message = r.string("message", true).value_or("");
  p.mode = r.string("mode", false);
  if (r.ok() && p.mode && *p.mode != "chat" && *p.mode != "plan") r.fail("mode", "expected chat or plan");
  return finish(r, std::move(p));
}

Decoded<AgentAction> decode(const json::value& v, std::type_identity<AgentAction>) {
  FieldReader r(v, "action");
  AgentAction a;
  a.name = r.string("name", true).value_or("");
  a.arguments = object_of(r, "arguments");
  a.status = r.string("status", true).value_or("");
  a.text = r.string("text", false).value_or("");
  a.could_not_ask = r.boolean("could_not_ask", false).value_or(false);
  return finish(r, std::move(a));
}

Decoded<AgentTurnResult> decode(const json::value& v, std::type_identity<AgentTurnResult>) {
  FieldReader r(v, "result");
  AgentTurnResult t;
  t.reply = r.string("reply", true).value_or("");
  t.actions = r.list<AgentAction>("actions");
  t.connectors_down = r.strings("connectors_down");
  t.usage = object_of(r, "usage");
  t.step_bound = r.boolean("step_bound", false).value_or(false);
  t.cancelled = r.boolean("cancelled", false).value_or(false);
  t.declined = r.boolean("declined", false).value_or(false);
  t.conversation = r.string("conversation", false).value_or("");
  t.error = r.nested<AgentModelProblem>("error");
  return finish(r, std::move(t));
}

Decoded<AgentEvent> decode(const json::value& v, std::type_identity<AgentEvent>) {
  FieldReader r(v, "params");
  AgentEvent e;
  e.kind = read_enum(r, "kind", kEventKinds);
  e.text = r.string("text", false).value_or("");
  e.action = r.nested<AgentAction>("action");
  e.progress = number_of(r, "progress").value_or(0);
  e.total = number_of(r, "total");
  e.message = r.string("message", false).value_or("");
  return finish(r, std::move(e));
}

Decoded<AgentQuestion> decode(const json::value& v, std::type_identity<AgentQuestion>) {
  FieldReader r(v, "params");
  AgentQuestion q;
  q.action = r.string("action", true).value_or("");
  q.command = r.string("command", false).value_or("");
  q.arguments = object_of(r, "arguments");
  q.read_only = r.boolean("read_only", false).value_or(false);
  q.why = r.string("why", false).value_or("");
  q.once_only = r.boolean("once_only", false).value_or(false);
  q.exposed = r.boolean("exposed", false).value_or(false);
  return finish(r, std::move(q));
}

Decoded<AgentAnswer> decode(const json::value& v, std::type_identity<AgentAnswer>) {
  FieldReader r(v, "result");
  AgentAnswer a;
  a.answer = read_enum(r, "answer", kAnswers);
  a.text = r.string("text", false).value_or("");
  return finish(r, std::move(a));
}

Decoded<AgentCancelResult> decode(const json::value& v, std::type_identity<AgentCancelResult>) {
  FieldReader r(v, "result");
  AgentCancelResult c;
  c.cancelled = r.boolean("cancelled", true).value_or(false);
  return finish(r, std::move(c));
}

Decoded<AgentConversationsParams> decode(const json::value& v, std::type_identity<AgentConversationsParams>) {
  FieldReader r(v, "params");
  AgentConversationsParams p;
  p.cwd = r.absolute_path("cwd");
  p.limit = r.integer("limit", false).value_or(20);
  if (r.ok() && (p.limit < 1 || p.limit > 1000)) r.fail("limit", "expected 1 to 1000");
  return finish(r, std::move(p));
}

Decoded<AgentConversation> decode(const json::value& v, std::type_identity<AgentConversation>) {
  FieldReader r(v, "result");
  AgentConversation c;
  c.conversation = r.string("conversation", true).value_or("");
  c.first = r.string("first", false).value_or("");
  c.messages = r.integer("messages", false).value_or(0);
  return finish(r, std::move(c));
}

Decoded<AgentConversationsResult> decode(const json::value& v, std::type_identity<AgentConversationsResult>) {
  FieldReader r(v, "result");
  AgentConversationsResult c;
  c.conversations = r.list<AgentConversation>("conversations");
  return finish(r, std::move(c));
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentConversationsParams& v) {
  json::object o{{"limit", v.limit}};
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentConversation& v) {
  jv = json::object{{"conversation", v.conversation}, {"first", v.first}, {"messages", v.messages}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentConversationsResult& v) {
  jv = json::object{{"conversations", list_json(v.conversations)}};
}

Decoded<AgentStateParams> decode(const json::value& v, std::type_identity<AgentStateParams>) {
  FieldReader r(v, "params");
  AgentStateParams p;
  p.mode = r.string("mode", false);
  if (r.ok() && p.mode && *p.mode != "chat" && *p.mode != "plan") r.fail("mode", "expected chat or plan");
  p.sandbox = r.string("sandbox", false);
  if (r.ok() && p.sandbox && *p.sandbox != "read-only" && *p.sandbox != "workspace-write" && *p.sandbox != "off")
    r.fail("sandbox", "expected read-only, workspace-write or off");
  p.network = r.boolean("network", false);
  p.clear = r.boolean("clear", false).value_or(false);
  p.refresh = r.boolean("refresh", false).value_or(false);
  p.browser = r.string("browser", false);
  if (r.ok() && p.browser && *p.browser != "start" && *p.browser != "stop") r.fail("browser", "expected start or stop");
  return finish(r, std::move(p));
}

Decoded<AgentTool> decode(const json::value& v, std::type_identity<AgentTool>) {
  FieldReader r(v, "result");
  AgentTool t;
  t.connector = r.string("connector", true).value_or("");
  t.line = r.string("line", true).value_or("");
  return finish(r, std::move(t));
}

Decoded<AgentState> decode(const json::value& v, std::type_identity<AgentState>) {
  FieldReader r(v, "result");
  AgentState s;
  s.model = r.string("model", true).value_or("");
  s.server = r.string("server", false).value_or("");
  s.context_tokens = r.integer("context_tokens", false);
  s.context_note = r.string("context_note", false).value_or("");
  s.mode = r.string("mode", true).value_or("");
  s.sandbox = r.string("sandbox", true).value_or("");
  s.network = r.boolean("network", false).value_or(false);
  s.sandbox_text = r.string("sandbox_text", false).value_or("");
  s.tools = r.list<AgentTool>("tools");
  s.not_offered = r.list<AgentConnectorNote>("not_offered");
  s.conversation = r.string("conversation", false).value_or("");
  s.system_tokens = r.integer("system_tokens", false).value_or(0);
  s.conversation_tokens = r.integer("conversation_tokens", false).value_or(0);
  s.browser_running = r.boolean("browser_running", false).value_or(false);
  s.browser_offered = r.boolean("browser_offered", false).value_or(false);
  s.problem = r.string("problem", false).value_or("");
  return finish(r, std::move(s));
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentStateParams& v) {
  json::object o;
  if (v.mode) o["mode"] = *v.mode;
  if (v.sandbox) o["sandbox"] = *v.sandbox;
  if (v.network) o["network"] = *v.network;
  if (v.clear) o["clear"] = true;
  if (v.refresh) o["refresh"] = true;
  if (v.browser) o["browser"] = *v.browser;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentTool& v) {
  jv = json::object{{"connector", v.connector}, {"line", v.line}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentState& v) {
  json::object o{{"model", v.model},
                 {"mode", v.mode},
                 {"sandbox", v.sandbox},
                 {"network", v.network},
                 {"tools", list_json(v.tools)},
                 {"not_offered", list_json(v.not_offered)},
                 {"system_tokens", v.system_tokens},
                 {"conversation_tokens", v.conversation_tokens},
                 {"browser_running", v.browser_running},
                 {"browser_offered", v.browser_offered}};
  put_if_set(o, "server", v.server);
  if (v.context_tokens) o["context_tokens"] = *v.context_tokens;
  put_if_set(o, "context_note", v.context_note);
  put_if_set(o, "sandbox_text", v.sandbox_text);
  put_if_set(o, "conversation", v.conversation);
  put_if_set(o, "problem", v.problem);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentOpenParams& v) {
  json::object o{{"mode", v.mode}, {"can_ask", v.can_ask}, {"resume", v.resume}};
  put_if_set(o, "cwd", v.cwd);
  put_if_set(o, "conversation", v.conversation);
  if (v.browser) o["browser"] = *v.browser;
  put_if_set(o, "elicit", v.elicit);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentConnectorNote& v) {
  json::object o{{"name", v.name}, {"state", v.state}, {"steps", strings_json(v.steps)}};
  put_if_set(o, "reason", v.reason);
  put_if_set(o, "approve", v.approve);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentWarning& v) {
  jv = json::object{{"kind", v.kind}, {"message", v.message}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentOpenResult& v) {
  json::object o{{"model", v.model},
                 {"tools", strings_json(v.tools)},
                 {"not_offered", list_json(v.not_offered)},
                 {"warnings", list_json(v.warnings)},
                 {"notices", strings_json(v.notices)},
                 {"resumed_messages", v.resumed_messages}};
  if (v.context_tokens) o["context_tokens"] = *v.context_tokens;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentModelProblem& v) {
  json::object o{{"model_kind", v.kind}, {"message", v.message}, {"steps", strings_json(v.steps)}};
  if (v.http_status) o["http_status"] = v.http_status;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentTurnParams& v) {
  json::object o{{"message", v.message}};
  if (v.mode) o["mode"] = *v.mode;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentAction& v) {
  json::object o{{"name", v.name}, {"arguments", v.arguments}, {"status", v.status}, {"text", v.text}};
  if (v.could_not_ask) o["could_not_ask"] = true;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentTurnResult& v) {
  json::object o{
      {"reply", v.reply},      {"actions", list_json(v.actions)}, {"connectors_down", strings_json(v.connectors_down)},
      {"usage", v.usage},      {"step_bound", v.step_bound},      {"cancelled", v.cancelled},
      {"declined", v.declined}};
  if (v.error) o["error"] = json::value_from(*v.error);
  put_if_set(o, "conversation", v.conversation);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentEvent& v) {
  json::object o{{"kind", name_of(kEventKinds, v.kind)}};
  switch (v.kind) {
    case AgentEventKind::kText:
    case AgentEventKind::kNotice:
      o["text"] = v.text;
      break;
    case AgentEventKind::kAction:
      if (v.action) o["action"] = json::value_from(*v.action);
      break;
    case AgentEventKind::kProgress:
      o["progress"] = v.progress;
      if (v.total) o["total"] = *v.total;
      put_if_set(o, "message", v.message);
      break;
  }
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentQuestion& v) {
  json::object o{{"action", v.action},       {"arguments", v.arguments}, {"read_only", v.read_only},
                 {"once_only", v.once_only}, {"exposed", v.exposed},     {"why", v.why}};
  put_if_set(o, "command", v.command);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentAnswer& v) {
  json::object o{{"answer", name_of(kAnswers, v.answer)}};
  put_if_set(o, "text", v.text);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const AgentCancelResult& v) {
  jv = json::object{{"cancelled", v.cancelled}};
}

}  // namespace oppx::proto
