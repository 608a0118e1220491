// The form's rules of MCP elicitation (2025-11-25 and 2026-07-28 "Elicitation": a flat object of
// primitive properties: string with minLength/maxLength/format, number and integer with
// minimum/maximum, boolean, single choice by `enum` (titles in the legacy `enumNames`) or `oneOf`
// of const/title, several choices by an array whose items have `enum` or `anyOf`).
#include "proto/elicitation.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace oppx::proto {

namespace json = boost::json;

namespace {

std::string text_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::optional<double> number_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

// `enum` (with `enumNames`) or `oneOf`/`anyOf` of {const, title}.
void read_choices(const json::object& o, FormField& f) {
  if (const json::value* e = o.if_contains("enum"); e && e->is_array()) {
    const json::value* names = o.if_contains("enumNames");
    for (std::size_t i = 0; i < e->as_array().size(); ++i) {
      const json::value& c = e->as_array()[i];
      if (!c.is_string()) continue;
      f.choices.emplace_back(c.as_string());
      bool titled = names && names->is_array() && i < names->as_array().size() && names->as_array()[i].is_string();
      f.choice_titles.push_back(titled ? std::string(names->as_array()[i].as_string()) : std::string());
    }
    return;
  }
  for (std::string_view key : {"oneOf", "anyOf"}) {
    const json::value* list = o.if_contains(key);
    if (!list || !list->is_array()) continue;
    for (const json::value& c : list->as_array()) {
      if (!c.is_object()) continue;
      std::string value = text_of(c.as_object(), "const");
      if (value.empty() && !c.as_object().contains("const")) continue;
      f.choices.push_back(std::move(value));
      f.choice_titles.push_back(text_of(c.as_object(), "title"));
    }
  }
}

std::optional<FormField> field_of(std::string name, const json::object& p) {
  FormField f;
  f.name = std::move(name);
  f.title = text_of(p, "title");
  f.description = text_of(p, "description");
  std::string type = text_of(p, "type");
  if (type == "array") {
    const json::value* items = p.if_contains("items");
    if (!items || !items->is_object()) return std::nullopt;
    read_choices(items->as_object(), f);
    f.type = "choices";
  } else if (type == "string") {
    read_choices(p, f);
    f.type = f.choices.empty() ? "string" : "choice";
  } else if (type == "number" || type == "integer" || type == "boolean") {
    f.type = type;
  } else {
    return std::nullopt;
  }
  if (const json::value* d = p.if_contains("default")) f.default_value = *d;
  return f;
}

bool whole(double d) { return std::isfinite(d) && std::floor(d) == d; }

// "" or why `v` does not fit the property `p` of `f`.
std::string value_problem(const FormField& f, const json::object& p, const json::value& v) {
  auto in_choices = [&f](const json::value& c) {
    return c.is_string() && std::find(f.choices.begin(), f.choices.end(), c.as_string()) != f.choices.end();
  };
  if (f.type == "boolean") return v.is_bool() ? "" : "expected true or false";
  if (f.type == "number" || f.type == "integer") {
    if (!v.is_number() || (f.type == "integer" && !whole(v.to_number<double>())))
      return f.type == "integer" ? "expected a whole number" : "expected a number";
    double d = v.to_number<double>();
    if (auto lo = number_of(p, "minimum"); lo && d < *lo) return fmt::format("at least {} please", *lo);
    if (auto hi = number_of(p, "maximum"); hi && d > *hi) return fmt::format("at most {} please", *hi);
    return "";
  }
  if (f.type == "choice") return in_choices(v) ? "" : "not one of the choices";
  if (f.type == "choices") {
    if (!v.is_array()) return "expected a list of choices";
    for (const json::value& c : v.as_array())
      if (!in_choices(c)) return "not one of the choices";
    std::size_t n = v.as_array().size();
    if (auto lo = number_of(p, "minItems"); lo && n < *lo) return fmt::format("choose at least {}", *lo);
    if (auto hi = number_of(p, "maxItems"); hi && n > *hi) return fmt::format("choose at most {}", *hi);
    return "";
  }
  if (!v.is_string()) return "expected text";
  std::size_t n = v.as_string().size();
  if (auto lo = number_of(p, "minLength"); lo && n < *lo) return fmt::format("at least {} characters please", *lo);
  if (auto hi = number_of(p, "maxLength"); hi && n > *hi) return fmt::format("at most {} characters please", *hi);
  std::string format = text_of(p, "format");
  std::string_view s = v.as_string();
  if (format == "email" && (s.find('@') == 0 || s.find('@') == std::string_view::npos || s.find(' ') != s.npos))
    return "expected an email address";
  if (format == "uri" && s.find(':') == std::string_view::npos) return "expected an address (like https://…)";
  if (format == "date" && (s.size() != 10 || s[4] != '-' || s[7] != '-')) return "expected a date (YYYY-MM-DD)";
  return "";
}

const json::object* properties_of(const json::object& schema) {
  const json::value* p = schema.if_contains("properties");
  return p && p->is_object() ? &p->as_object() : nullptr;
}

std::vector<std::string> required_of(const json::object& schema) {
  std::vector<std::string> out;
  if (const json::value* r = schema.if_contains("required"); r && r->is_array())
    for (const json::value& n : r->as_array())
      if (n.is_string()) out.emplace_back(n.as_string());
  return out;
}

}  // namespace

std::optional<ElicitPolicy> elicit_policy(std::string_view name) {
  if (name == "ask") return ElicitPolicy::kAsk;
  if (name == "decline") return ElicitPolicy::kDecline;
  if (name == "accept-defaults") return ElicitPolicy::kAcceptDefaults;
  return std::nullopt;
}

std::vector<FormField> form_fields(const json::object& schema) {
  std::vector<FormField> out;
  const json::object* props = properties_of(schema);
  if (!props) return out;
  std::vector<std::string> required = required_of(schema);
  for (const auto& [name, p] : *props) {
    if (!p.is_object()) continue;
    auto f = field_of(std::string(name), p.as_object());
    if (!f) continue;
    f->required = std::find(required.begin(), required.end(), f->name) != required.end();
    out.push_back(std::move(*f));
  }
  return out;
}

json::object with_defaults(const json::object& schema, json::object content) {
  for (const FormField& f : form_fields(schema))
    if (f.default_value && !content.contains(f.name)) content[f.name] = *f.default_value;
  return content;
}

std::string form_problem(const json::object& schema, const json::object& content) {
  const json::object* props = properties_of(schema);
  for (const FormField& f : form_fields(schema)) {
    const json::value* v = content.if_contains(f.name);
    if (!v) {
      if (f.required) return fmt::format("{} is required", f.title.empty() ? f.name : f.title);
      continue;
    }
    if (std::string why = value_problem(f, props->at(f.name).as_object(), *v); !why.empty())
      return fmt::format("{}: {}", f.title.empty() ? f.name : f.title, why);
  }
  return "";
}

std::string field_problem(const json::object& schema, const FormField& f, const json::value& v) {
  const json::object* props = properties_of(schema);
  const json::value* p = props ? props->if_contains(f.name) : nullptr;
  return p && p->is_object() ? value_problem(f, p->as_object(), v) : "";
}

std::optional<json::value> field_value(const FormField& f, std::string_view typed, std::string& error) {
  error.clear();
  while (!typed.empty() && (typed.front() == ' ' || typed.front() == '\t')) typed.remove_prefix(1);
  while (!typed.empty() && (typed.back() == ' ' || typed.back() == '\t')) typed.remove_suffix(1);
  if (typed.empty()) return std::nullopt;
  auto choice = [&f](std::string_view t) -> std::optional<std::string> {
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
    if (ec == std::errc() && end == t.data() + t.size() && n >= 1 && n <= f.choices.size()) return f.choices[n - 1];
    for (std::size_t i = 0; i < f.choices.size(); ++i)
      if (f.choices[i] == t || (!f.choice_titles[i].empty() && f.choice_titles[i] == t)) return f.choices[i];
    return std::nullopt;
  };
  if (f.type == "boolean") {
    std::string t(typed);
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
    if (t == "y" || t == "yes" || t == "true") return json::value(true);
    if (t == "n" || t == "no" || t == "false") return json::value(false);
    error = "answer yes or no";
    return std::nullopt;
  }
  if (f.type == "number" || f.type == "integer") {
    double d = 0;
    auto [end, ec] = std::from_chars(typed.data(), typed.data() + typed.size(), d);
    if (ec != std::errc() || end != typed.data() + typed.size() || !std::isfinite(d) ||
        (f.type == "integer" && !whole(d))) {
      error = f.type == "integer" ? "expected a whole number" : "expected a number";
      return std::nullopt;
    }
    if (f.type == "integer") return json::value(static_cast<std::int64_t>(d));
    return json::value(d);
  }
  if (f.type == "choice") {
    if (auto c = choice(typed)) return json::value(*c);
    error = "not one of the choices";
    return std::nullopt;
  }
  if (f.type == "choices") {
    json::array picked;
    std::size_t from = 0;
    while (from <= typed.size()) {
      std::size_t comma = typed.find(',', from);
      std::string_view part =
          typed.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
      if (!part.empty()) {
        auto c = choice(part);
        if (!c) {
          error = "not one of the choices: " + std::string(part.substr(0, 40));
          return std::nullopt;
        }
        if (std::find(picked.begin(), picked.end(), json::value(*c)) == picked.end()) picked.emplace_back(*c);
      }
      if (comma == std::string_view::npos) break;
      from = comma + 1;
    }
    return json::value(std::move(picked));
  }
  return json::value(std::string(typed));
}

ElicitAnswer unasked_answer(ElicitPolicy policy, const ElicitQuestion& q) {
  ElicitAnswer a;
  if (policy != ElicitPolicy::kAcceptDefaults || q.mode != "form") return a;
  json::object content = with_defaults(q.schema, {});
  if (!form_problem(q.schema, content).empty()) return a;
  a.action = "accept";
  a.content = std::move(content);
  return a;
}

Decoded<ElicitQuestion> decode(const json::value& v, std::type_identity<ElicitQuestion>) {
  FieldReader r(v, "params");
  ElicitQuestion q;
  q.connector = r.string("connector", false).value_or("");
  q.tool = r.string("tool", false).value_or("");
  q.mode = r.string("mode", false).value_or("form");
  q.message = r.string("message", false).value_or("");
  if (json::value s = r.any("schema"); s.is_object()) q.schema = std::move(s.as_object());
  q.url = r.string("url", false).value_or("");
  if (q.mode != "form" && q.mode != "url") r.fail("mode", "expected form or url");
  return finish(r, std::move(q));
}

Decoded<ElicitAnswer> decode(const json::value& v, std::type_identity<ElicitAnswer>) {
  FieldReader r(v, "result");
  ElicitAnswer a;
  a.action = r.string("action", true).value_or("decline");
  if (a.action != "accept" && a.action != "decline" && a.action != "cancel")
    r.fail("action", "expected accept, decline or cancel");
  if (json::value c = r.any("content"); c.is_object()) a.content = std::move(c.as_object());
  return finish(r, std::move(a));
}

void tag_invoke(json::value_from_tag, json::value& jv, const ElicitQuestion& v) {
  json::object o{{"connector", v.connector}, {"tool", v.tool}, {"mode", v.mode}, {"message", v.message}};
  if (v.mode == "url") {
    o["url"] = v.url;
  } else {
    o["schema"] = v.schema;
  }
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const ElicitAnswer& v) {
  json::object o{{"action", v.action}};
  if (v.action == "accept" && !v.content.empty()) o["content"] = v.content;
  jv = std::move(o);
}

}  // namespace oppx::proto
