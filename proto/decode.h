// Field-by-field decoding of JSON params into wire structs, naming the failing field
// ("params.protocol: expected integer"). Unknown keys are ignored, never an error: newer clients
// may send more than this daemon knows.
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oppx::proto {

class FieldReader {
 public:
  // `path` names the object in messages, e.g. "params". A null value reads as an empty object.
  FieldReader(const boost::json::value& v, std::string path);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  std::optional<std::string> string(std::string_view key, bool required);
  std::optional<std::int64_t> integer(std::string_view key, bool required);
  std::optional<bool> boolean(std::string_view key, bool required);

 private:
  const boost::json::value* find(std::string_view key, bool required);
  void fail(std::string_view key, std::string_view what);

  const boost::json::object* obj_ = nullptr;
  std::string path_;
  std::string error_;
};

}  // namespace oppx::proto
