// Fuzz target: the terminal boundary (cli/output, common/text). Properties: escape_controls leaves
// no C0 control or DEL (newline and tab only when kept) and no invisible character; json_line of
// any JSON value is one line of JSON with no control byte, and parses back to the same value (a
// string holding bytes that are not UTF-8 included: they come back as U+FFFD).
#include "cli/output.h"
#include "common/text.h"

#include <boost/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "terminal_escape: %s\n", what);
  std::abort();
}

// The invisible characters of common/text.cpp, as UTF-8: what must never reach the terminal raw.
bool holds_invisible(std::string_view s) {
  static const char* const kInvisible[] = {"\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202b",
                                           "\u202c", "\u202d", "\u202e", "\u2060", "\u2061", "\u2062", "\u2063",
                                           "\u2064", "\u2066", "\u2067", "\u2068", "\u2069", "\ufeff", "\u00ad"};
  for (const char* c : kInvisible) {
    if (s.find(c) != std::string_view::npos) return true;
  }
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {  // C1 controls, U+0080..U+009F
    if (static_cast<unsigned char>(s[i]) == 0xC2 && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9F)
      return true;
  }
  return false;
}

void check_escaped(std::string_view out, bool keep) {
  for (char ch : out) {
    auto c = static_cast<unsigned char>(ch);
    bool kept = keep && (c == '\n' || c == '\t');
    if ((c < 0x20 || c == 0x7f) && !kept) broken("a control byte passed escape_controls");
  }
  if (holds_invisible(out)) broken("an invisible character passed escape_controls");
}

// Equal, with a double allowed a few units in the last place: Boost.JSON 1.81 does not round
// every long number exactly, so two spellings of one double can read back a step apart.
bool same(const boost::json::value& a, const boost::json::value& b) {
  if (a.is_double() && b.is_double()) {
    double x = a.get_double(), y = b.get_double();
    for (int step = 0; step < 4 && x != y; ++step) x = std::nextafter(x, y);
    return x == y;
  }
  if (a.is_array() && b.is_array()) {
    const auto &l = a.get_array(), &r = b.get_array();
    if (l.size() != r.size()) return false;
    for (std::size_t i = 0; i < l.size(); ++i) {
      if (!same(l[i], r[i])) return false;
    }
    return true;
  }
  if (a.is_object() && b.is_object()) {
    const auto &l = a.get_object(), &r = b.get_object();
    if (l.size() != r.size()) return false;
    for (const auto& kv : l) {
      const boost::json::value* other = r.if_contains(kv.key());
      if (!other || !same(kv.value(), *other)) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view s(reinterpret_cast<const char*>(data), size);
  check_escaped(oppx::escape_controls(s, false), false);
  check_escaped(oppx::escape_controls(s, true), true);

  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(s, ec);
  if (ec) v = boost::json::string(s);  // not JSON: as one string (invalid UTF-8 too)
  std::string line = oppx::cli::json_line(v);
  if (line.empty() || line.back() != '\n') broken("json_line did not end with its newline");
  std::string_view body(line.data(), line.size() - 1);
  for (char ch : body) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) broken("a control byte in json_line");
  }
  if (holds_invisible(body)) broken("an invisible character in json_line");
  boost::json::value back = boost::json::parse(body, ec);
  if (ec) broken("json_line is not JSON");
  // The same value, of the same kinds, as the serializer's own line, unless a string held bytes
  // that are not UTF-8 (then they read as U+FFFD).
  boost::json::value plain = boost::json::parse(boost::json::serialize(v), ec);
  if (!ec && !same(back, plain)) broken("json_line changed the value");
  return 0;
}
