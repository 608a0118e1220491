// Encoding and decoding of the mcp/… results. The encoders write what docs/protocol.md lists for
// each, leaving out optional parts that are empty; the decoders read what they find, so a client
// reads an older or newer daemon's answer alike.
#include "proto/mcp_results.h"

namespace oppx::proto {

namespace json = boost::json;

namespace {

json::array array_of(const std::vector<std::string>& v) { return json::array(v.begin(), v.end()); }

json::object object_of(const StringMap& m) {
  json::object o;
  for (auto& [k, v] : m) o[k] = v;
  return o;
}

}  // namespace

Decoded<RunFile> decode(const json::value& v, std::type_identity<RunFile>) {
  FieldReader r(v, "result");
  RunFile f;
  f.path = r.string("path", true).value_or("");
  f.sha256 = r.string("sha256", false).value_or("");
  return finish(r, std::move(f));
}

void tag_invoke(json::value_from_tag, json::value& jv, const RunFile& v) {
  jv = json::object{{"path", v.path}, {"sha256", v.sha256}};
}

Decoded<LoginState> decode(const json::value& v, std::type_identity<LoginState>) {
  FieldReader r(v, "result");
  LoginState l;
  l.logged_in = r.boolean("logged_in", true).value_or(false);
  l.issuer = r.string("issuer", false).value_or("");
  l.expires_at = r.integer("expires_at", false).value_or(0);
  l.refreshes = r.boolean("refreshes", false).value_or(false);
  l.scope = r.string("scope", false).value_or("");
  return finish(r, std::move(l));
}

void tag_invoke(json::value_from_tag, json::value& jv, const LoginState& v) {
  json::object o{{"logged_in", v.logged_in}};
  put_if_set(o, "issuer", v.issuer);
  if (v.expires_at) o["expires_at"] = v.expires_at;
  if (v.logged_in) o["refreshes"] = v.refreshes;
  put_if_set(o, "scope", v.scope);
  jv = std::move(o);
}

Decoded<ConnectorEntry> decode(const json::value& v, std::type_identity<ConnectorEntry>) {
  FieldReader r(v, "result");
  ConnectorEntry c;
  c.name = r.string("name", true).value_or("");
  c.source = r.string("source", false).value_or("user");
  c.file = r.string("file", false).value_or("");
  c.type = r.string("type", false).value_or("");
  c.state = r.string("state", true).value_or("");
  c.log = r.string("log", false).value_or("");
  c.requests_waiting = r.integer("requests_waiting", false).value_or(0);
  c.protocol = r.string("protocol", false).value_or("");
  c.always_load = r.strings("always_load");
  json::value tools = r.any("tools");
  if (tools.is_array()) {
    c.tools = tools.get_array();
    c.tool_count = static_cast<std::int64_t>(c.tools->size());
  } else {
    c.tool_count = r.integer("tools", false).value_or(0);
  }
  c.cached = r.boolean("cached", false).value_or(false);
  c.denied = r.strings("denied");
  c.command = r.string("command", false).value_or("");
  c.cwd = r.string("cwd", false).value_or("");
  c.args = r.strings("args");
  c.env = r.string_map("env");
  c.url = r.string("url", false).value_or("");
  c.headers = r.string_map("headers");
  c.as_written = r.string("values", false).value_or("") == "as_written";
  c.reads = r.strings("reads");
  c.root = r.string("root", false).value_or("");
  c.sha256 = r.string("sha256", false).value_or("");
  c.files = r.list<RunFile>("files");
  c.consent = r.string("consent", false).value_or("");
  c.approve = r.string("approve", false).value_or("");
  c.hidden_by = r.string("hidden_by", false).value_or("");
  c.reason = r.string("reason", false).value_or("");
  c.reason_kind = r.string("reason_kind", false).value_or("");
  c.steps = r.strings("steps");
  c.folder = r.string("folder", false).value_or("");
  c.pid = r.integer("pid", false).value_or(0);
  if (auto hides = r.nested<ConnectorEntry>("hides")) c.hides = std::make_shared<const ConnectorEntry>(*hides);
  c.tools_changed = r.boolean("tools_changed", false);
  c.offers_changed = r.boolean("offers_changed", false);
  c.login = r.nested<LoginState>("login");
  return finish(r, std::move(c));
}

void tag_invoke(json::value_from_tag, json::value& jv, const ConnectorEntry& v) {
  json::object o{{"name", v.name}, {"source", v.source}};
  put_if_set(o, "file", v.file);
  put_if_set(o, "type", v.type);
  o["state"] = v.state;
  put_if_set(o, "log", v.log);
  if (v.source != "browser") o["requests_waiting"] = v.requests_waiting;
  put_if_set(o, "protocol", v.protocol);
  if (!v.always_load.empty()) o["always_load"] = json::value_from(v.always_load);
  o["tools"] = v.tools ? json::value(*v.tools) : json::value(v.tool_count);
  if (v.source != "browser") o["cached"] = v.cached;
  if (!v.denied.empty()) o["denied"] = array_of(v.denied);
  if (!v.url.empty()) {
    o["url"] = v.url;
    o["headers"] = object_of(v.headers);
  } else if (!v.command.empty()) {
    o["command"] = v.command;
    if (!v.cwd.empty()) o["cwd"] = v.cwd;
    o["args"] = array_of(v.args);
    o["env"] = object_of(v.env);
  }
  if (v.as_written) o["values"] = "as_written";
  if (v.source != "browser") o["reads"] = array_of(v.reads);
  if (!v.root.empty()) {
    o["root"] = v.root;
    o["sha256"] = v.sha256;
    json::array files;
    for (auto& f : v.files) files.push_back(json::value_from(f));
    o["files"] = std::move(files);
    o["consent"] = v.consent;
  }
  put_if_set(o, "approve", v.approve);
  put_if_set(o, "hidden_by", v.hidden_by);
  put_if_set(o, "reason", v.reason);
  if (!v.reason_kind.empty()) {
    o["reason_kind"] = v.reason_kind;
    o["steps"] = array_of(v.steps);
  }
  put_if_set(o, "folder", v.folder);
  if (v.pid) o["pid"] = v.pid;
  if (v.hides) o["hides"] = json::value_from(*v.hides);
  if (v.tools_changed) o["tools_changed"] = *v.tools_changed;
  if (v.offers_changed) o["offers_changed"] = *v.offers_changed;
  if (v.login) o["login"] = json::value_from(*v.login);
  jv = std::move(o);
}

Decoded<ProjectConnectors> decode(const json::value& v, std::type_identity<ProjectConnectors>) {
  FieldReader r(v, "result");
  ProjectConnectors p;
  p.root = r.string("root", false).value_or("");
  p.config = r.string("config", false).value_or("");
  p.error = r.string("error", false).value_or("");
  p.warnings = r.strings("warnings");
  return finish(r, std::move(p));
}

void tag_invoke(json::value_from_tag, json::value& jv, const ProjectConnectors& v) {
  json::object o{{"root", v.root}, {"config", v.config}};
  put_if_set(o, "error", v.error);
  if (!v.warnings.empty()) o["warnings"] = array_of(v.warnings);
  jv = std::move(o);
}

Decoded<McpListResult> decode(const json::value& v, std::type_identity<McpListResult>) {
  FieldReader r(v, "result");
  McpListResult l;
  l.connectors = r.list<ConnectorEntry>("connectors");
  l.config = r.string("config", false).value_or("");
  l.error = r.string("error", false).value_or("");
  l.warnings = r.strings("warnings");
  l.project = r.nested<ProjectConnectors>("project");
  l.consent_error = r.string("consent_error", false).value_or("");
  return finish(r, std::move(l));
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpListResult& v) {
  json::array list;
  for (auto& c : v.connectors) list.push_back(json::value_from(c));
  json::object o{{"config", v.config}};
  put_if_set(o, "error", v.error);
  if (v.project) o["project"] = json::value_from(*v.project);
  put_if_set(o, "consent_error", v.consent_error);
  o["connectors"] = std::move(list);
  o["warnings"] = array_of(v.warnings);
  jv = std::move(o);
}

Decoded<ToolsCallResult> decode(const json::value& v, std::type_identity<ToolsCallResult>) {
  FieldReader r(v, "result");
  ToolsCallResult c;
  c.connector = r.string("connector", false).value_or("");
  c.tool = r.string("tool", false).value_or("");
  c.arguments = r.any("arguments");
  c.text = r.string("text", true).value_or("");
  c.is_error = r.boolean("isError", false).value_or(false);
  c.truncated = r.boolean("truncated", false).value_or(false);
  c.untrusted = r.boolean("untrusted", false).value_or(true);
  c.structured = r.string("structured", false).value_or("");
  c.structured_problem = r.string("structured_problem", false).value_or("");
  c.text_file = r.string("text_file", false).value_or("");
  c.structured_file = r.string("structured_file", false).value_or("");
  return finish(r, std::move(c));
}

void tag_invoke(json::value_from_tag, json::value& jv, const ToolsCallResult& v) {
  json::object o{{"connector", v.connector}, {"tool", v.tool},           {"arguments", v.arguments}, {"text", v.text},
                 {"isError", v.is_error},    {"truncated", v.truncated}, {"untrusted", v.untrusted}};
  put_if_set(o, "structured", v.structured);
  put_if_set(o, "structured_problem", v.structured_problem);
  put_if_set(o, "text_file", v.text_file);
  put_if_set(o, "structured_file", v.structured_file);
  jv = std::move(o);
}

Decoded<ConnectorDown> decode(const json::value& v, std::type_identity<ConnectorDown>) {
  FieldReader r(v, "data");
  ConnectorDown d;
  d.connector = r.string("connector", false).value_or("");
  d.reason_kind = r.string("reason_kind", false).value_or("");
  d.reason = r.string("reason", false).value_or("");
  d.steps = r.strings("steps");
  return finish(r, std::move(d));
}

void tag_invoke(json::value_from_tag, json::value& jv, const ConnectorDown& v) {
  jv = json::object{
      {"connector", v.connector}, {"reason_kind", v.reason_kind}, {"reason", v.reason}, {"steps", array_of(v.steps)}};
}

Decoded<ToolsProgress> decode(const json::value& v, std::type_identity<ToolsProgress>) {
  FieldReader r(v, "params");
  ToolsProgress p;
  p.id = r.any("id");
  p.progress_token = r.any("progress_token");
  json::value progress = r.any("progress"), total = r.any("total");
  if (progress.is_number()) p.progress = progress.to_number<double>();
  if (total.is_number()) p.total = total.to_number<double>();
  p.message = r.string("message", false).value_or("");
  return finish(r, std::move(p));
}

void tag_invoke(json::value_from_tag, json::value& jv, const ToolsProgress& v) {
  json::object o{{"id", v.id}, {"progress_token", v.progress_token}};
  if (v.progress) o["progress"] = *v.progress;
  if (v.total) o["total"] = *v.total;
  put_if_set(o, "message", v.message);
  jv = std::move(o);
}

Decoded<ProbeWarning> decode(const json::value& v, std::type_identity<ProbeWarning>) {
  FieldReader r(v, "result");
  ProbeWarning w;
  w.kind = r.string("kind", true).value_or("");
  w.message = r.string("message", false).value_or("");
  return finish(r, std::move(w));
}

void tag_invoke(json::value_from_tag, json::value& jv, const ProbeWarning& v) {
  jv = json::object{{"kind", v.kind}, {"message", v.message}};
}

Decoded<AddProbe> decode(const json::value& v, std::type_identity<AddProbe>) {
  FieldReader r(v, "result");
  AddProbe p;
  p.lines = r.strings("lines");
  p.tokens = r.integer("tokens", false).value_or(0);
  p.estimated = r.boolean("estimated", false).value_or(true);
  p.estimate = r.string("estimate", false).value_or("");
  p.context = r.integer("context", false);
  if (json::value share = r.any("share"); share.is_number()) p.share = share.to_number<double>();
  p.context_note = r.string("context_note", false).value_or("");
  if (!r.any("warnings").is_null()) p.warnings = r.list<ProbeWarning>("warnings");
  return finish(r, std::move(p));
}

void tag_invoke(json::value_from_tag, json::value& jv, const AddProbe& v) {
  json::object o{{"lines", array_of(v.lines)}, {"tokens", v.tokens}, {"estimated", v.estimated}};
  put_if_set(o, "estimate", v.estimate);
  if (v.context) o["context"] = *v.context;
  if (v.share) o["share"] = *v.share;
  put_if_set(o, "context_note", v.context_note);
  if (v.warnings) {
    json::array w;
    for (auto& x : *v.warnings) w.push_back(json::value_from(x));
    o["warnings"] = std::move(w);
  }
  jv = std::move(o);
}

Decoded<McpAddResult> decode(const json::value& v, std::type_identity<McpAddResult>) {
  FieldReader r(v, "result");
  McpAddResult a;
  a.name = r.string("name", true).value_or("");
  a.file = r.string("file", false).value_or("");
  a.replaced = r.boolean("replaced", false).value_or(false);
  a.warning = r.string("warning", false).value_or("");
  a.consent_error = r.string("consent_error", false).value_or("");
  a.probe = r.nested<AddProbe>("probe");
  a.connector = r.nested<ConnectorEntry>("connector");
  return finish(r, std::move(a));
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpAddResult& v) {
  json::object o{{"name", v.name}, {"file", v.file}, {"replaced", v.replaced}};
  put_if_set(o, "warning", v.warning);
  put_if_set(o, "consent_error", v.consent_error);
  if (v.probe) o["probe"] = json::value_from(*v.probe);
  if (v.connector) o["connector"] = json::value_from(*v.connector);
  jv = std::move(o);
}

Decoded<McpRemoveResult> decode(const json::value& v, std::type_identity<McpRemoveResult>) {
  FieldReader r(v, "result");
  McpRemoveResult m;
  m.name = r.string("name", true).value_or("");
  m.file = r.string("file", false).value_or("");
  m.removed = r.boolean("removed", false).value_or(false);
  m.warning = r.string("warning", false).value_or("");
  m.consent_error = r.string("consent_error", false).value_or("");
  return finish(r, std::move(m));
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpRemoveResult& v) {
  json::object o{{"name", v.name}, {"file", v.file}, {"removed", v.removed}};
  put_if_set(o, "warning", v.warning);
  put_if_set(o, "consent_error", v.consent_error);
  jv = std::move(o);
}

Decoded<McpUnsubscribeResult> decode(const json::value& v, std::type_identity<McpUnsubscribeResult>) {
  FieldReader r(v, "result");
  McpUnsubscribeResult u;
  u.subscribed = r.boolean("subscribed", false).value_or(false);
  u.was_subscribed = r.boolean("was_subscribed", false).value_or(false);
  return finish(r, std::move(u));
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpUnsubscribeResult& v) {
  jv = json::object{{"subscribed", v.subscribed}, {"was_subscribed", v.was_subscribed}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const ConnectorRemoved& v) {
  json::object o{{"name", v.name}, {"source", v.root.empty() ? "user" : "project"}, {"state", "removed"}};
  put_if_set(o, "root", v.root);
  jv = std::move(o);
}

}  // namespace oppx::proto
