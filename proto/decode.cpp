// FieldReader: the first failure wins, so an error names exactly one field.
#include "proto/decode.h"

#include <boost/json/object.hpp>

namespace oppx::proto {

namespace json = boost::json;

Decoded<NoParams> decode(const json::value& v, std::type_identity<NoParams>) {
  if (!v.is_null() && !v.is_object()) return {boost::system::in_place_error, "params: expected object"};
  return NoParams{};
}

FieldReader::FieldReader(const json::value& v, std::string path) : path_(std::move(path)) {
  if (v.is_null()) return;
  obj_ = v.if_object();
  if (!obj_) error_ = path_ + ": expected object";
}

void FieldReader::fail(std::string_view key, std::string_view what) {
  if (error_.empty()) error_ = path_ + "." + std::string(key) + ": " + std::string(what);
}

void FieldReader::fail_nested(const std::string& where, const std::string& inner) {
  // The inner reader named its object "result" (or "params"): the path here replaces that word.
  if (!error_.empty()) return;
  auto dot = inner.find_first_of(".:");
  error_ = path_ + "." + where + (dot == std::string::npos ? ": " + inner : inner.substr(dot));
}

const json::value* FieldReader::find(std::string_view key, bool required) {
  if (!error_.empty()) return nullptr;
  const json::value* v = obj_ ? obj_->if_contains(key) : nullptr;
  if ((!v || v->is_null()) && required) fail(key, "required");
  return v && !v->is_null() ? v : nullptr;
}

std::optional<std::string> FieldReader::string(std::string_view key, bool required) {
  const json::value* v = find(key, required);
  if (!v) return std::nullopt;
  if (!v->is_string()) return fail(key, "expected string"), std::nullopt;
  return std::string(v->as_string());
}

std::optional<std::int64_t> FieldReader::integer(std::string_view key, bool required) {
  const json::value* v = find(key, required);
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(v->as_uint64());
  return fail(key, "expected integer"), std::nullopt;
}

std::optional<bool> FieldReader::boolean(std::string_view key, bool required) {
  const json::value* v = find(key, required);
  if (!v) return std::nullopt;
  if (!v->is_bool()) return fail(key, "expected boolean"), std::nullopt;
  return v->as_bool();
}

std::string FieldReader::absolute_path(std::string_view key) {
  std::string path = string(key, false).value_or("");
  if (!path.empty() && path[0] != '/') fail(key, "expected an absolute path");
  return path;
}

std::vector<std::string> FieldReader::strings(std::string_view key) {
  std::vector<std::string> out;
  const json::value* v = find(key, false);
  if (!v) return out;
  if (!v->is_array()) return fail(key, "expected an array of strings"), out;
  for (const auto& s : v->as_array()) {
    if (!s.is_string()) return fail(key, "expected an array of strings"), out;
    out.emplace_back(s.as_string());
  }
  return out;
}

StringMap FieldReader::string_map(std::string_view key) {
  StringMap out;
  const json::value* v = find(key, false);
  if (!v) return out;
  if (!v->is_object()) return fail(key, "expected an object of strings"), out;
  for (const auto& [k, s] : v->as_object()) {
    if (!s.is_string()) return fail(std::string(key) + "." + std::string(k), "expected string"), out;
    out.emplace(std::string(k), std::string(s.as_string()));
  }
  return out;
}

json::value FieldReader::any(std::string_view key) {
  const json::value* v = find(key, false);
  return v ? *v : json::value();
}

void put_if_set(boost::json::object& o, std::string_view key, const std::string& value) {
  if (!value.empty()) o[key] = value;
}

std::string string_field(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::string string_field(const boost::json::value& v, std::string_view key) {
  const boost::json::object* o = v.if_object();
  return o ? string_field(*o, key) : std::string();
}

bool bool_field(const boost::json::value& v, std::string_view key) {
  const boost::json::object* o = v.if_object();
  const boost::json::value* b = o ? o->if_contains(key) : nullptr;
  return b && b->is_bool() && b->as_bool();
}

std::string unreadable_reply(const std::string& why) {
  return "the daemon's answer is not what this oppx reads (" + why +
         "): the daemon is likely from another build; run `oppx daemon restart`";
}

}  // namespace oppx::proto
