#include "common/tool_text.h"

#include "common/text.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <fmt/format.h>

namespace oppx {

namespace json = boost::json;

namespace {

// Up to ". " or the end of the first line; at most `max` characters (UTF-8 code points, never cut
// inside one), the last of them "…" when cut.
std::string first_sentence(std::string_view d, std::size_t max) {
  auto end = d.find(". ");
  if (auto nl = d.find('\n'); nl < end) end = nl;
  std::string s(d.substr(0, end == std::string_view::npos ? d.size() : end));
  std::size_t chars = 0, cut = std::string::npos;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // a continuation byte
    if (++chars == max) cut = i;                                      // where the max-th character starts
    if (chars > max) {
      s = s.substr(0, cut) + "…";
      break;
    }
  }
  return escape_controls(s);
}

}  // namespace

std::string tool_line(std::string_view connector, const json::object& tool) {
  auto str = [&](std::string_view k) {
    const json::value* v = tool.if_contains(k);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
  };
  return fmt::format("{}.{}: {}", connector, escape_controls(str("name")), first_sentence(str("description"), 140));
}

std::string tool_list_text(std::string_view connector, const json::array& tools) {
  std::string text;
  for (auto& t : tools) {
    if (t.is_object()) text += tool_line(connector, t.as_object()) + "\n";
  }
  return text;
}

std::int64_t estimate_tokens(std::string_view text) { return static_cast<std::int64_t>((text.size() + 3) / 4); }

}  // namespace oppx
