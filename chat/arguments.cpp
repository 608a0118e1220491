// Schema simplification, checking and cleaning of a tool's arguments. The checks are the ones a
// model's answer most often fails (a missing key, a string for a number, a value outside an enum);
// the full JSON Schema is the server's business, which answers the call with its own error.
#include "chat/arguments.h"

#include "common/text.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace oppx::chat {

namespace json = boost::json;

namespace {

constexpr int kMaxRefDepth = 4;

const std::set<std::string>& refused_keywords() {
  static const std::set<std::string> k{"$schema",     "$id",        "$comment", "format",        "pattern",
                                       "uniqueItems", "multipleOf", "contains", "propertyNames", "patternProperties",
                                       "not",         "if",         "then",     "else"};
  return k;
}

// The definition a local $ref points at, or null.
const json::value* resolve_ref(const json::object& root, std::string_view ref) {
  for (std::string_view prefix : {"#/$defs/", "#/definitions/"}) {
    if (ref.rfind(prefix, 0) != 0) continue;
    std::string_view name = ref.substr(prefix.size());
    const json::value* defs = root.if_contains(prefix == "#/$defs/" ? "$defs" : "definitions");
    if (defs && defs->is_object()) return defs->as_object().if_contains(name);
  }
  return nullptr;
}

json::value simplify(const json::value& v, const json::object& root, int depth) {
  if (const json::array* a = v.if_array()) {
    json::array out;
    for (const auto& x : *a) out.push_back(simplify(x, root, depth));
    return out;
  }
  const json::object* o = v.if_object();
  if (!o) return v;
  if (const json::value* ref = o->if_contains("$ref"); ref && ref->is_string()) {
    const json::value* target = resolve_ref(root, ref->as_string());
    if (!target || depth >= kMaxRefDepth) return json::object{{"type", "object"}};
    return simplify(*target, root, depth + 1);
  }
  // anyOf/oneOf of a type and null (an optional value in many generators): the plain type.
  for (const char* key : {"anyOf", "oneOf"}) {
    const json::value* alts = o->if_contains(key);
    if (!alts || !alts->is_array()) continue;
    const json::value* only = nullptr;
    int others = 0;
    for (const auto& alt : alts->as_array()) {
      bool null =
          alt.is_object() && alt.as_object().if_contains("type") && alt.as_object().at("type") == json::value("null");
      if (!null) {
        only = &alt;
        ++others;
      }
    }
    if (others == 1 && alts->as_array().size() == 2) {
      json::value plain = simplify(*only, root, depth);
      if (plain.is_object()) {
        for (const auto& [k, x] : *o) {
          if (k != key && !refused_keywords().count(std::string(k)) && !plain.as_object().contains(k))
            plain.as_object()[k] = simplify(x, root, depth);
        }
      }
      return plain;
    }
  }
  json::object out;
  for (const auto& [k, x] : *o) {
    std::string key(k);
    if (refused_keywords().count(key) || key == "$defs" || key == "definitions") continue;
    // Under "properties" the keys are names, not keywords: keep every one.
    if (key == "properties" && x.is_object()) {
      json::object props;
      for (const auto& [name, s] : x.as_object()) props[name] = simplify(s, root, depth);
      out[k] = std::move(props);
      continue;
    }
    out[k] = simplify(x, root, depth);
  }
  return out;
}

bool has_type(const json::value& v, std::string_view type) {
  if (type == "string") return v.is_string();
  if (type == "integer")
    return v.is_int64() || v.is_uint64() ||
           (v.is_double() && v.as_double() == static_cast<double>(static_cast<long long>(v.as_double())));
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_bool();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "null") return v.is_null();
  return true;  // a type we do not know is the server's to check
}

std::string kind_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return "a string";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return "a number";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::object:
      return "an object";
    case json::kind::array:
      return "an array";
    case json::kind::null:
      return "null";
  }
  return "a value";
}

}  // namespace

json::value simplify_schema(const json::value& schema) {
  if (!schema.is_object()) return json::object{{"type", "object"}};
  json::value out = simplify(schema, schema.as_object(), 0);
  if (!out.is_object() || !out.as_object().contains("type")) {
    if (!out.is_object()) out = json::object{};
    out.as_object()["type"] = "object";
  }
  return out;
}

std::optional<std::string> check_arguments(const json::value& arguments, const json::value& schema) {
  if (!arguments.is_object()) return "the arguments are " + kind_of(arguments) + ", not a JSON object";
  const json::object& args = arguments.as_object();
  const json::object* s = schema.if_object();
  if (!s) return std::nullopt;
  if (const json::value* req = s->if_contains("required"); req && req->is_array()) {
    for (const auto& k : req->as_array()) {
      if (k.is_string() && !args.contains(k.as_string()))
        return fmt::format("the required key \"{}\" is missing", escape_controls(k.as_string()));
    }
  }
  std::set<std::string> required;
  if (const json::value* req = s->if_contains("required"); req && req->is_array()) {
    for (const auto& k : req->as_array()) {
      if (k.is_string()) required.insert(std::string(k.as_string()));
    }
  }
  const json::value* props = s->if_contains("properties");
  if (!props || !props->is_object()) return std::nullopt;
  for (const auto& [name, value] : args) {
    const json::value* p = props->as_object().if_contains(name);
    if (!p || !p->is_object()) continue;
    const json::object& prop = p->as_object();
    // An optional value may be null (the schema said anyOf [T, null], simplified to T).
    if (value.is_null() && !required.count(std::string(name))) continue;
    if (const json::value* t = prop.if_contains("type")) {
      bool ok = false;
      std::string wanted;
      if (t->is_string()) {
        ok = has_type(value, t->as_string());
        wanted = std::string(t->as_string());
      } else if (t->is_array()) {
        for (const auto& one : t->as_array()) {
          if (!one.is_string()) continue;
          ok = ok || has_type(value, one.as_string());
          wanted += (wanted.empty() ? "" : " or ") + std::string(one.as_string());
        }
      } else {
        ok = true;
      }
      if (!ok) return fmt::format("\"{}\" should be {} but is {}", escape_controls(name), wanted, kind_of(value));
    }
    if (const json::value* e = prop.if_contains("enum"); e && e->is_array()) {
      bool in = false;
      std::string options;
      for (const auto& x : e->as_array()) {
        in = in || x == value;
        options += (options.empty() ? "" : ", ") + escape_controls(proto::json_text(x));
      }
      if (!in)
        return fmt::format("\"{}\" is {}, which is not one of {}", escape_controls(name),
                           escape_controls(proto::json_text(value)), options);
    }
  }
  return std::nullopt;
}

json::object clean_arguments(const json::value& answer, const json::value& schema) {
  if (!answer.is_object()) return {};
  const json::object* declared = nullptr;
  if (schema.is_object()) {
    if (const json::value* p = schema.as_object().if_contains("properties"); p && p->is_object())
      declared = &p->as_object();
  }
  auto declares = [&](std::string_view k) { return declared && declared->contains(k); };
  json::object args = answer.as_object();
  // Shaped like the whole action: its inner arguments are what the tool gets.
  if (const json::value* inner = args.if_contains("arguments"); inner && inner->is_object() && !declares("arguments"))
    args = inner->as_object();
  for (const auto& k : action_keys()) {
    if (!declares(k)) args.erase(k);
  }
  return args;
}

}  // namespace oppx::chat
