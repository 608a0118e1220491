// What a tools/call result gives the model (daemon/tool_result.h).
#include "daemon/tool_result.h"
#include "proto/decode.h"

#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <cmath>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

using proto::string_field;

// The size of base64 `data` once decoded, in words ("48 KiB").
std::string decoded_size(const std::string& data) {
  std::size_t bytes = data.size() / 4 * 3;
  if (!data.empty() && data.back() == '=') --bytes;
  if (data.size() > 1 && data[data.size() - 2] == '=') --bytes;
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{} KiB", (bytes + 512) / 1024);
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

// One content part as text: a text part as it is; an embedded text resource with its address;
// anything binary described by kind, type and size, never inlined.
std::string describe_part(const json::object& p) {
  std::string type = string_field(p, "type");
  std::string mime = string_field(p, "mimeType");
  if (type == "text" && p.contains("text") && p.at("text").is_string()) return string_field(p, "text");
  if (type == "image" || type == "audio") {
    return fmt::format("[{}{}{}, {}, not shown]", type, mime.empty() ? "" : ": ", mime,
                       decoded_size(string_field(p, "data")));
  }
  if (type == "resource" && p.contains("resource") && p.at("resource").is_object()) {
    const json::object& r = p.at("resource").as_object();
    std::string uri = string_field(r, "uri"), rmime = string_field(r, "mimeType");
    if (r.contains("text") && r.at("text").is_string())
      return fmt::format("[resource {}{}{}]\n{}", uri, rmime.empty() ? "" : ", ", rmime, string_field(r, "text"));
    return fmt::format("[resource {}{}{}, {} binary, not shown]", uri, rmime.empty() ? "" : ": ", rmime,
                       decoded_size(string_field(r, "blob")));
  }
  if (type == "resource_link") {
    std::string name = string_field(p, "name");
    return fmt::format("[resource link {}{}{}{}{}]", string_field(p, "uri"), name.empty() ? "" : " (", name,
                       name.empty() ? "" : ")", mime.empty() ? "" : ", " + mime);
  }
  return fmt::format("[{} content{}{} left out]", type.empty() ? "non-text" : type, mime.empty() ? "" : ": ", mime);
}

std::string joined_content(const json::value& result) {
  std::string text;
  const json::object* o = result.if_object();
  const json::value* content = o ? o->if_contains("content") : nullptr;
  if (!content || !content->is_array()) return text;
  bool first = true;
  for (const json::value& part : content->as_array()) {
    if (!part.is_object()) continue;
    if (!first) text += "\n";
    first = false;
    text += describe_part(part.as_object());
  }
  return text;
}

// Characters are UTF-8 code points: each starts with a byte that is not a continuation byte
// (10xxxxxx), so the cut falls before one and never inside a multi-byte sequence. An invalid
// byte counts as one character. Returns the count; `text` is cut to `limit` of them.
std::size_t cut_chars(std::string& text, std::size_t limit) {
  auto starts_char = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  std::size_t chars = 0, cut = text.size();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!starts_char(text[i])) continue;
    if (chars == limit) cut = i;
    ++chars;
  }
  if (chars > limit) text.resize(cut);
  return chars;
}

}  // namespace

// `text` cut at `limit`: the whole moves to `whole` when it was cut.
std::size_t cut_keeping(std::string& text, std::string& whole, std::size_t limit) {
  if (text.size() <= limit) return text.size();  // never more characters than bytes: nothing to count
  std::string all = text;
  std::size_t chars = cut_chars(text, limit);
  if (chars > limit) whole = std::move(all);
  return chars;
}

std::string part_text(const json::object& part) { return describe_part(part); }

namespace {

const json::value* resolve(const json::value& schema, const json::value& root) {
  const json::object* o = schema.if_object();
  const json::value* ref = o ? o->if_contains("$ref") : nullptr;
  if (!ref || !ref->is_string()) return &schema;
  std::string_view r = ref->get_string();
  for (std::string_view prefix : {"#/$defs/", "#/definitions/"}) {
    if (!r.starts_with(prefix)) continue;
    const json::object* ro = root.if_object();
    const json::value* defs = ro ? ro->if_contains(prefix.substr(2, prefix.size() - 3)) : nullptr;
    const json::value* d = defs && defs->is_object() ? defs->as_object().if_contains(r.substr(prefix.size())) : nullptr;
    return d ? d : nullptr;
  }
  return r == "#" ? &root : nullptr;
}

bool has_type(const json::value& v, std::string_view t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_bool();
  if (t == "null") return v.is_null();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    if (v.is_int64() || v.is_uint64()) return true;
    return v.is_double() && std::isfinite(v.get_double()) && std::trunc(v.get_double()) == v.get_double();
  }
  return true;  // a type we do not know: not held against the value
}

double number(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  return v.is_double() ? v.get_double() : 0;
}

std::size_t chars_of(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string check(const json::value& v, const json::value& schema_in, const json::value& root, const std::string& at,
                  int depth) {
  if (depth > 64) return {};
  const json::value* schema = resolve(schema_in, root);
  if (!schema) return at + ": the schema's $ref cannot be followed";
  const json::object* s = schema->if_object();
  if (!s) return {};  // true, or a schema we do not read
  if (const json::value* t = s->if_contains("type")) {
    bool ok = false;
    std::string names;
    if (t->is_string()) {
      ok = has_type(v, t->get_string());
      names = t->get_string();
    } else if (t->is_array()) {
      for (const auto& one : t->get_array()) {
        if (!one.is_string()) continue;
        ok = ok || has_type(v, one.get_string());
        names += (names.empty() ? "" : " or ") + std::string(one.get_string());
      }
    } else {
      ok = true;
    }
    if (!ok) return fmt::format("{}: expected {}", at, names);
  }
  if (const json::value* e = s->if_contains("enum"); e && e->is_array()) {
    bool found = false;
    for (const auto& one : e->get_array()) found = found || one == v;
    if (!found) return at + ": not one of its enum";
  }
  if (const json::value* c = s->if_contains("const"); c && *c != v) return at + ": not its const";
  if (v.is_number()) {
    if (const json::value* m = s->if_contains("minimum"); m && m->is_number() && number(v) < number(*m))
      return fmt::format("{}: below its minimum {}", at, json::serialize(*m));
    if (const json::value* m = s->if_contains("maximum"); m && m->is_number() && number(v) > number(*m))
      return fmt::format("{}: above its maximum {}", at, json::serialize(*m));
  }
  if (v.is_string()) {
    std::size_t n = chars_of(v.get_string());
    if (const json::value* m = s->if_contains("minLength"); m && m->is_number() && n < number(*m))
      return at + ": shorter than its minLength";
    if (const json::value* m = s->if_contains("maxLength"); m && m->is_number() && n > number(*m))
      return at + ": longer than its maxLength";
  }
  if (v.is_array()) {
    const json::array& a = v.get_array();
    if (const json::value* m = s->if_contains("minItems"); m && m->is_number() && a.size() < number(*m))
      return at + ": fewer items than its minItems";
    if (const json::value* m = s->if_contains("maxItems"); m && m->is_number() && a.size() > number(*m))
      return at + ": more items than its maxItems";
    if (const json::value* items = s->if_contains("items"); items && items->is_object()) {
      for (std::size_t i = 0; i < a.size(); ++i) {
        std::string p = check(a[i], *items, root, fmt::format("{}[{}]", at, i), depth + 1);
        if (!p.empty()) return p;
      }
    }
  }
  if (v.is_object()) {
    const json::object& o = v.get_object();
    if (const json::value* req = s->if_contains("required"); req && req->is_array()) {
      for (const auto& k : req->get_array())
        if (k.is_string() && !o.contains(k.get_string()))
          return fmt::format("{}.{}: required, and missing", at, std::string_view(k.get_string()));
    }
    const json::object* props =
        s->contains("properties") && s->at("properties").is_object() ? &s->at("properties").get_object() : nullptr;
    const json::value* extra = s->if_contains("additionalProperties");
    for (const auto& [k, value] : o) {
      std::string where = fmt::format("{}.{}", at, std::string_view(k));
      if (props && props->contains(k)) {
        std::string p = check(value, props->at(k), root, where, depth + 1);
        if (!p.empty()) return p;
      } else if (extra && extra->is_bool() && !extra->get_bool()) {
        return where + ": not a property the schema allows";
      } else if (extra && extra->is_object()) {
        std::string p = check(value, *extra, root, where, depth + 1);
        if (!p.empty()) return p;
      }
    }
  }
  return {};
}

}  // namespace

std::string schema_problem(const json::value& v, const json::value& schema) { return check(v, schema, schema, "$", 0); }

std::string cut_marker(std::size_t kept, std::size_t total, const std::string& file) {
  if (file.empty()) return fmt::format("\n[… cut at {} of {} characters …]", kept, total);
  return fmt::format(
      "\n[… cut at {} of {} characters; the whole result is in {} (read it with \"offset\": {} for what follows) …]",
      kept, total, file, kept);
}

ResultForModel result_for_model(const json::value& result, std::size_t limit, const json::value* output_schema) {
  ResultForModel r;
  r.text = joined_content(result);
  r.text_chars = cut_keeping(r.text, r.whole_text, limit);
  const json::object* o = result.if_object();
  const json::value* sc = o ? o->if_contains("structuredContent") : nullptr;
  if (!sc || sc->is_null()) return r;
  if (output_schema && !output_schema->is_null()) {
    r.structured_problem = schema_problem(*sc, *output_schema);
    if (!r.structured_problem.empty()) return r;
  }
  r.structured = proto::json_text(*sc);  // no spaces, numbers as people write them
  r.structured_chars = cut_keeping(r.structured, r.whole_structured, limit);
  return r;
}

}  // namespace oppx::daemon
