// What a tools/call result gives the model (daemon/tool_result.h).
#include "daemon/tool_result.h"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace oppx::daemon {

namespace json = boost::json;

std::string result_text(const json::value& result, std::size_t limit, bool* truncated) {
  std::string text;
  if (const json::object* o = result.if_object()) {
    if (const json::value* content = o->if_contains("content"); content && content->is_array()) {
      for (const json::value& part : content->as_array()) {
        if (!part.is_object()) continue;
        const json::object& p = part.as_object();
        std::string type = p.contains("type") && p.at("type").is_string() ? std::string(p.at("type").as_string()) : "";
        if (!text.empty()) text += "\n";
        if (type == "text" && p.contains("text") && p.at("text").is_string()) {
          text += std::string(p.at("text").as_string());
        } else {
          std::string mime =
              p.contains("mimeType") && p.at("mimeType").is_string() ? std::string(p.at("mimeType").as_string()) : "";
          text += fmt::format("[{} content{}{} left out]", type.empty() ? "non-text" : type, mime.empty() ? "" : ": ",
                              mime);
        }
      }
    }
  }
  // Characters are UTF-8 code points: each starts with a byte that is not a continuation byte
  // (10xxxxxx), so the cut falls before one and never inside a multi-byte sequence. An invalid
  // byte counts as one character.
  *truncated = false;
  if (text.size() <= limit) return text;  // never more characters than bytes: nothing to count
  auto starts_char = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  std::size_t chars = 0, cut = text.size();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!starts_char(text[i])) continue;
    if (chars == limit) cut = i;
    ++chars;
  }
  *truncated = chars > limit;
  if (*truncated) {
    text.resize(cut);
    text += fmt::format("\n[… cut at {} of {} characters …]", limit, chars);
  }
  return text;
}

}  // namespace oppx::daemon
