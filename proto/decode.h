// Field-by-field decoding of JSON into wire structs, naming the failing field
// ("params.protocol: expected integer"). Unknown keys are ignored, never an error: newer clients
// may send more than this daemon knows, and a newer daemon may answer with more.
//
// Every wire struct T of proto/ has its decoder beside it, an overload
// `Decoded<T> decode(const boost::json::value&, std::type_identity<T>)`, so that `decode<T>(v)`
// finds it from the type alone: the daemon's method table deduces a method's decoder from its
// handler's parameter type, and clients decode results the same way.
//
// Beside them, two helpers every wire struct's file shares: put_if_set for encoders, and
// unreadable_reply, what a client says of a reply that does not decode.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace oppx::proto {

// A decoded struct, or the message naming its first failing field.
template <class T>
using Decoded = boost::system::result<T, std::string>;

template <class T>
Decoded<T> decode(const boost::json::value& v) {
  return decode(v, std::type_identity<T>{});
}

// A method's reply decoded as T: a failed call (its error's message) or a result that does not decode.
template <class T, class Reply>
Decoded<T> decode_reply(const Reply& reply) {
  if (!reply) return {boost::system::in_place_error, reply.error().message};
  return decode<T>(*reply);
}

// The params of a method that takes none: absent, null or an object (whose keys are ignored).
struct NoParams {};
Decoded<NoParams> decode(const boost::json::value& v, std::type_identity<NoParams>);

using StringMap = std::map<std::string, std::string, std::less<>>;

class FieldReader {
 public:
  // `path` names the object in messages, e.g. "params". A null value reads as an empty object.
  FieldReader(const boost::json::value& v, std::string path);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const boost::json::object* object() const { return obj_; }

  std::optional<std::string> string(std::string_view key, bool required);
  std::optional<std::int64_t> integer(std::string_view key, bool required);
  std::optional<bool> boolean(std::string_view key, bool required);
  // A folder the request is about: absent, or an absolute path.
  std::string absolute_path(std::string_view key);
  // An array of strings; absent reads as empty.
  std::vector<std::string> strings(std::string_view key);
  // An object of strings; absent reads as empty.
  StringMap string_map(std::string_view key);
  // Any JSON value, as it is; absent reads as null.
  boost::json::value any(std::string_view key);
  // An array of wire structs, each by its decoder; absent reads as empty.
  template <class T>
  std::vector<T> list(std::string_view key);
  // A wire struct, by its decoder; absent reads as nothing.
  template <class T>
  std::optional<T> nested(std::string_view key);

  // Fails `key` with `what` (the first failure wins).
  void fail(std::string_view key, std::string_view what);

 private:
  const boost::json::value* find(std::string_view key, bool required);
  // Takes a nested decoder's failure ("result.name: …") as this reader's, at `where`.
  void fail_nested(const std::string& where, const std::string& inner);

  const boost::json::object* obj_ = nullptr;
  std::string path_;
  std::string error_;
};

template <class T>
std::vector<T> FieldReader::list(std::string_view key) {
  std::vector<T> out;
  const boost::json::value* v = find(key, false);
  if (!v) return out;
  if (!v->is_array()) return fail(key, "expected array"), out;
  for (std::size_t i = 0; i < v->get_array().size(); ++i) {
    auto item = decode<T>(v->get_array()[i]);
    if (!item) return fail_nested(std::string(key) + "[" + std::to_string(i) + "]", item.error()), out;
    out.push_back(std::move(*item));
  }
  return out;
}

template <class T>
std::optional<T> FieldReader::nested(std::string_view key) {
  const boost::json::value* v = find(key, false);
  if (!v) return std::nullopt;
  auto item = decode<T>(*v);
  if (!item) return fail_nested(std::string(key), item.error()), std::nullopt;
  return std::move(*item);
}

// The result of a reader: the struct when every field read, else the first failure.
template <class T>
Decoded<T> finish(const FieldReader& r, T value) {
  if (!r.ok()) return {boost::system::in_place_error, r.error()};
  return value;
}

// What a client says of a reply that does not decode (`why` names the field, never a value): the
// daemon is likely from another build.
std::string unreadable_reply(const std::string& why);

// A loosely read field (no error wanted): the string at `key`, or "" when missing or not a string
// (or when `v` is no object); the bool at `key`, or false.
std::string string_field(const boost::json::object& o, std::string_view key);
std::string string_field(const boost::json::value& v, std::string_view key);
bool bool_field(const boost::json::value& v, std::string_view key);

// For encoders: an optional text field goes on the wire only when it is set.
void put_if_set(boost::json::object& o, std::string_view key, const std::string& value);

// Enums travel as their lower-case names: `names` pairs each value with its name, the first
// being what an unknown or missing name reads as (after failing its field).
template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& names, E e) {
  for (const auto& [value, name] : names)
    if (value == e) return name;
  return names[0].second;
}

template <class E, std::size_t N>
E read_enum(FieldReader& r, std::string_view key, const std::array<std::pair<E, std::string_view>, N>& names) {
  std::string s = r.string(key, true).value_or("");
  for (const auto& [value, name] : names)
    if (name == s) return value;
  if (r.ok()) r.fail(key, "unknown value");
  return names[0].first;
}

}  // namespace oppx::proto
