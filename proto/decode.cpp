// FieldReader: the first failure wins, so an error names exactly one field.
#include "proto/decode.h"

#include <boost/json/object.hpp>

namespace oppx::proto {

FieldReader::FieldReader(const boost::json::value& v, std::string path) : path_(std::move(path)) {
  if (v.is_null()) return;
  obj_ = v.if_object();
  if (!obj_) error_ = path_ + ": expected object";
}

void FieldReader::fail(std::string_view key, std::string_view what) {
  if (error_.empty()) error_ = path_ + "." + std::string(key) + ": " + std::string(what);
}

const boost::json::value* FieldReader::find(std::string_view key, bool required) {
  if (!error_.empty()) return nullptr;
  const boost::json::value* v = obj_ ? obj_->if_contains(key) : nullptr;
  if ((!v || v->is_null()) && required) fail(key, "required");
  return v && !v->is_null() ? v : nullptr;
}

std::optional<std::string> FieldReader::string(std::string_view key, bool required) {
  const boost::json::value* v = find(key, required);
  if (!v) return std::nullopt;
  if (!v->is_string()) return fail(key, "expected string"), std::nullopt;
  return std::string(v->as_string());
}

std::optional<std::int64_t> FieldReader::integer(std::string_view key, bool required) {
  const boost::json::value* v = find(key, required);
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(v->as_uint64());
  return fail(key, "expected integer"), std::nullopt;
}

std::optional<bool> FieldReader::boolean(std::string_view key, bool required) {
  const boost::json::value* v = find(key, required);
  if (!v) return std::nullopt;
  if (!v->is_bool()) return fail(key, "expected boolean"), std::nullopt;
  return v->as_bool();
}

}  // namespace oppx::proto
