// Encoding and decoding of mcp/resources, mcp/read, mcp/prompts and mcp/prompt.
#include "proto/resources_api.h"

#include <boost/json/object.hpp>

namespace oppx::proto {

namespace json = boost::json;

namespace {

json::array array_at(FieldReader& r, std::string_view key) {
  json::value v = r.any(key);
  if (v.is_array()) return v.as_array();
  if (!v.is_null()) r.fail(key, "expected array");
  return {};
}

}  // namespace

Decoded<McpOffersParams> decode(const json::value& v, std::type_identity<McpOffersParams>) {
  FieldReader r(v, "params");
  McpOffersParams p;
  p.name = r.string("name", true).value_or("");
  p.cwd = r.absolute_path("cwd");
  return finish(r, std::move(p));
}

Decoded<McpReadParams> decode(const json::value& v, std::type_identity<McpReadParams>) {
  FieldReader r(v, "params");
  McpReadParams p;
  p.name = r.string("name", true).value_or("");
  p.uri = r.string("uri", true).value_or("");
  p.cwd = r.absolute_path("cwd");
  return finish(r, std::move(p));
}

Decoded<McpPromptParams> decode(const json::value& v, std::type_identity<McpPromptParams>) {
  FieldReader r(v, "params");
  McpPromptParams p;
  p.name = r.string("name", true).value_or("");
  p.prompt = r.string("prompt", true).value_or("");
  p.arguments = r.string_map("arguments");
  p.cwd = r.absolute_path("cwd");
  return finish(r, std::move(p));
}

Decoded<McpResourcesResult> decode(const json::value& v, std::type_identity<McpResourcesResult>) {
  FieldReader r(v, "result");
  McpResourcesResult out;
  out.connector = r.string("connector", false).value_or("");
  out.resources = array_at(r, "resources");
  out.templates = array_at(r, "templates");
  return finish(r, std::move(out));
}

Decoded<McpReadResult> decode(const json::value& v, std::type_identity<McpReadResult>) {
  FieldReader r(v, "result");
  McpReadResult out;
  out.connector = r.string("connector", false).value_or("");
  out.uri = r.string("uri", false).value_or("");
  out.text = r.string("text", true).value_or("");
  out.truncated = r.boolean("truncated", false).value_or(false);
  out.untrusted = r.boolean("untrusted", false).value_or(true);
  return finish(r, std::move(out));
}

Decoded<McpPromptsResult> decode(const json::value& v, std::type_identity<McpPromptsResult>) {
  FieldReader r(v, "result");
  McpPromptsResult out;
  out.connector = r.string("connector", false).value_or("");
  out.prompts = array_at(r, "prompts");
  return finish(r, std::move(out));
}

Decoded<PromptMessage> decode(const json::value& v, std::type_identity<PromptMessage>) {
  FieldReader r(v, "result.messages[]");
  PromptMessage m;
  m.role = r.string("role", true).value_or("");
  m.text = r.string("text", true).value_or("");
  return finish(r, std::move(m));
}

Decoded<McpPromptResult> decode(const json::value& v, std::type_identity<McpPromptResult>) {
  FieldReader r(v, "result");
  McpPromptResult out;
  out.connector = r.string("connector", false).value_or("");
  out.prompt = r.string("prompt", false).value_or("");
  out.description = r.string("description", false).value_or("");
  out.messages = r.list<PromptMessage>("messages");
  out.untrusted = r.boolean("untrusted", false).value_or(true);
  return finish(r, std::move(out));
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpOffersParams& v) {
  json::object o{{"name", v.name}};
  if (!v.cwd.empty()) o["cwd"] = v.cwd;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpReadParams& v) {
  json::object o{{"name", v.name}, {"uri", v.uri}};
  if (!v.cwd.empty()) o["cwd"] = v.cwd;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpPromptParams& v) {
  json::object args;
  for (const auto& [k, value] : v.arguments) args[k] = value;
  json::object o{{"name", v.name}, {"prompt", v.prompt}, {"arguments", std::move(args)}};
  if (!v.cwd.empty()) o["cwd"] = v.cwd;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpResourcesResult& v) {
  jv = json::object{{"connector", v.connector}, {"resources", v.resources}, {"templates", v.templates}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpReadResult& v) {
  jv = json::object{{"connector", v.connector},
                    {"uri", v.uri},
                    {"text", v.text},
                    {"truncated", v.truncated},
                    {"untrusted", v.untrusted}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpPromptsResult& v) {
  jv = json::object{{"connector", v.connector}, {"prompts", v.prompts}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const PromptMessage& v) {
  jv = json::object{{"role", v.role}, {"text", v.text}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const McpPromptResult& v) {
  json::array messages;
  for (const auto& m : v.messages) messages.push_back(json::value_from(m));
  jv = json::object{{"connector", v.connector},
                    {"prompt", v.prompt},
                    {"description", v.description},
                    {"messages", std::move(messages)},
                    {"untrusted", v.untrusted}};
}

}  // namespace oppx::proto
