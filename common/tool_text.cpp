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

namespace {
constexpr std::int64_t kSmallContext = 32 * 1024;
}  // namespace

std::string token_count(std::int64_t n) {
  if (n < 10'000) return fmt::format("{}", n);
  return n % 1024 == 0 ? fmt::format("{}k", n / 1024) : fmt::format("{}k", (n + 500) / 1000);
}

double share_of(std::int64_t tokens, std::int64_t context) {
  return 100.0 * static_cast<double>(tokens) / static_cast<double>(context);
}

std::vector<std::pair<std::string, std::string>> cost_warnings(std::int64_t tokens, std::int64_t context,
                                                               std::string_view subject, std::string_view hint) {
  std::vector<std::pair<std::string, std::string>> out;
  double share = share_of(tokens, context);
  std::string cost = fmt::format(
      "{} about {} tokens of every request ({:.1f}%), and each tool result uses more. Keep only the connectors you "
      "need ({}).",
      subject, token_count(tokens), share, hint);
  // Either or both: a small window, a heavy share of it.
  if (context <= kSmallContext) {
    out.push_back({"SMALL_CONTEXT", fmt::format("the server's model has a small context window ({} tokens). {}",
                                                token_count(context), cost)});
  }
  if (share >= 10.0) {
    out.push_back(
        {"HEAVY_SHARE",
         fmt::format("the tool list takes a tenth or more of the server's model's context window ({} tokens). {}",
                     token_count(context), cost)});
  }
  return out;
}

}  // namespace oppx
