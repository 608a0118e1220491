// Encoding and decoding of the mcp/…, consent/… and tools/call wire structs. Encoders write only
// the fields that differ from the default, so a request is as short as the caller meant it.
#include "proto/mcp_api.h"

namespace oppx::proto {

namespace json = boost::json;

Decoded<McpListParams> decode(const json::value& v, std::type_identity<McpListParams>) {
  FieldReader r(v, "params");
  McpListParams p;
  p.wait = r.boolean("wait", false).value_or(false);
  p.cwd = r.absolute_path("cwd");
  return finish(r, std::move(p));
}

Decoded<McpToolsParams> decode(const json::value& v, std::type_identity<McpToolsParams>) {
  FieldReader r(v, "params");
  McpToolsParams p;
  p.name = r.string("name", true).value_or("");
  p.cwd = r.absolute_path("cwd");
  return finish(r, std::move(p));
}

Decoded<McpReconnectParams> decode(const json::value& v, std::type_identity<McpReconnectParams>) {
  FieldReader r(v, "params");
  McpReconnectParams p;
  p.name = r.string("name", false).value_or("");
  p.cwd = r.absolute_path("cwd");
  return finish(r, std::move(p));
}

Decoded<McpLoginParams> decode(const json::value& v, std::type_identity<McpLoginParams>) {
  FieldReader r(v, "params");
  McpLoginParams p;
  p.name = r.string("name", true).value_or("");
  p.cwd = r.absolute_path("cwd");
  return finish(r, std::move(p));
}

Decoded<McpLoginStart> decode(const json::value& v, std::type_identity<McpLoginStart>) {
  FieldReader r(v, "result");
  McpLoginStart s;
  s.login = r.string("login", true).value_or("");
  s.url = r.string("url", true).value_or("");
  s.redirect_uri = r.string("redirect_uri", true).value_or("");
  s.issuer = r.string("issuer", false).value_or("");
  s.scope = r.string("scope", false).value_or("");
  s.expires_in = r.integer("expires_in", false).value_or(0);
  return finish(r, std::move(s));
}

Decoded<McpLoginWaitParams> decode(const json::value& v, std::type_identity<McpLoginWaitParams>) {
  FieldReader r(v, "params");
  McpLoginWaitParams p;
  p.login = r.string("login", true).value_or("");
  return finish(r, std::move(p));
}

Decoded<McpLoginRedirectParams> decode(const json::value& v, std::type_identity<McpLoginRedirectParams>) {
  FieldReader r(v, "params");
  McpLoginRedirectParams p;
  p.login = r.string("login", true).value_or("");
  p.url = r.string("url", true).value_or("");
  return finish(r, std::move(p));
}

Decoded<McpLogoutResult> decode(const json::value& v, std::type_identity<McpLogoutResult>) {
  FieldReader r(v, "result");
  McpLogoutResult out;
  out.name = r.string("name", true).value_or("");
  out.forgotten = r.integer("forgotten", false).value_or(0);
  return finish(r, std::move(out));
}

Decoded<McpGetParams> decode(const json::value& v, std::type_identity<McpGetParams>) {
  FieldReader r(v, "params");
  McpGetParams p;
  p.name = r.string("name", true).value_or("");
  p.show_values = r.boolean("show_values", false).value_or(false);
  p.cwd = r.absolute_path("cwd");
  return finish(r, std::move(p));
}

Decoded<McpAddParams> decode(const json::value& v, std::type_identity<McpAddParams>) {
  FieldReader r(v, "params");
  McpAddParams p;
  p.name = r.string("name", true).value_or("");
  p.project = r.boolean("project", false).value_or(false);
  p.force = r.boolean("force", false).value_or(false);
  p.consent = r.boolean("consent", false).value_or(true);
  p.cwd = r.absolute_path("cwd");
  p.definition = r.any("definition");
  if (!p.definition.is_object()) r.fail("definition", "expected object");
  return finish(r, std::move(p));
}

Decoded<McpRemoveParams> decode(const json::value& v, std::type_identity<McpRemoveParams>) {
  FieldReader r(v, "params");
  McpRemoveParams p;
  p.name = r.string("name", true).value_or("");
  p.project = r.boolean("project", false).value_or(false);
  p.cwd = r.absolute_path("cwd");
  return finish(r, std::move(p));
}

Decoded<ConsentParams> decode(const json::value& v, std::type_identity<ConsentParams>) {
  FieldReader r(v, "params");
  ConsentParams p;
  p.name = r.string("name", true).value_or("");
  p.sha256 = r.string("sha256", false).value_or("");
  p.cwd = r.absolute_path("cwd");
  if (!r.any("files").is_null()) p.files = r.string_map("files");
  return finish(r, std::move(p));
}

Decoded<ToolsCallParams> decode(const json::value& v, std::type_identity<ToolsCallParams>) {
  FieldReader r(v, "params");
  ToolsCallParams p;
  p.connector = r.string("connector", true).value_or("");
  p.tool = r.string("tool", true).value_or("");
  p.timeout_ms = r.integer("timeout_ms", false).value_or(kCallTimeoutMs);
  p.cwd = r.absolute_path("cwd");
  json::value arguments = r.any("arguments");
  if (arguments.is_object())
    p.arguments = std::move(arguments);
  else if (!arguments.is_null())
    r.fail("arguments", "expected object");
  if (p.timeout_ms <= 0 || p.timeout_ms > kMaxCallTimeoutMs) r.fail("timeout_ms", "expected 1 to 3600000");
  p.progress_token = r.any("progress_token");
  if (!p.progress_token.is_null() && !p.progress_token.is_string() && !p.progress_token.is_int64())
    r.fail("progress_token", "expected a string or an integer");
  return finish(r, std::move(p));
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpListParams& v) {
  json::object o;
  if (v.wait) o["wait"] = true;
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpToolsParams& v) {
  json::object o{{"name", v.name}};
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpReconnectParams& v) {
  json::object o;
  put_if_set(o, "name", v.name);
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpLoginParams& v) {
  json::object o{{"name", v.name}};
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpLoginStart& v) {
  json::object o{{"login", v.login}, {"url", v.url}, {"redirect_uri", v.redirect_uri}};
  put_if_set(o, "issuer", v.issuer);
  put_if_set(o, "scope", v.scope);
  o["expires_in"] = v.expires_in;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpLoginWaitParams& v) {
  jv = json::object{{"login", v.login}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpLoginRedirectParams& v) {
  jv = json::object{{"login", v.login}, {"url", v.url}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpLogoutResult& v) {
  jv = json::object{{"name", v.name}, {"forgotten", v.forgotten}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpGetParams& v) {
  json::object o{{"name", v.name}};
  if (v.show_values) o["show_values"] = true;
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpAddParams& v) {
  json::object o{{"name", v.name}, {"definition", v.definition}};
  if (v.project) o["project"] = true;
  if (v.force) o["force"] = true;
  if (!v.consent) o["consent"] = false;
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpRemoveParams& v) {
  json::object o{{"name", v.name}};
  if (v.project) o["project"] = true;
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const ConsentParams& v) {
  json::object o{{"name", v.name}};
  put_if_set(o, "sha256", v.sha256);
  if (v.files) {
    json::object files;
    for (auto& [path, sha] : *v.files) files[path] = sha;
    o["files"] = std::move(files);
  }
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const ToolsCallParams& v) {
  json::object o{{"connector", v.connector}, {"tool", v.tool}, {"arguments", v.arguments}};
  if (v.timeout_ms != kCallTimeoutMs) o["timeout_ms"] = v.timeout_ms;
  if (!v.progress_token.is_null()) o["progress_token"] = v.progress_token;
  put_if_set(o, "cwd", v.cwd);
  jv = std::move(o);
}

}  // namespace oppx::proto
