// result_text (daemon/tool_result.h): what a tools/call result gives the model. Text parts joined,
// other content summarised, the cut at a number of characters (UTF-8 code points, never inside
// one) with a marker that counts characters too.
#include "daemon/tool_result.h"
#include "daemon/tool_result.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace oppx::daemon {
namespace {

namespace json = boost::json;

std::string text_of(const json::value& result, std::size_t limit = kResultLimit, bool* cut = nullptr) {
  bool truncated = false;
  std::string t = result_text(result, limit, &truncated);
  if (cut) *cut = truncated;
  return t;
}

json::value with_text(const std::string& text) {
  return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", text}}}}};
}

TEST(ResultText, TextPartsAreJoinedWithNewlines) {
  bool cut = true;
  EXPECT_EQ(text_of(json::parse(R"({"content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]})"),
                    kResultLimit, &cut),
            "one\ntwo");
  EXPECT_FALSE(cut);
  EXPECT_EQ(text_of(json::parse(R"({"content":[]})")), "");
  EXPECT_EQ(text_of(json::parse(R"({"isError":true})")), "");
}

TEST(ResultText, NonTextContentIsSummarised) {
  auto r = json::parse(R"({"content":[
    {"type":"text","text":"before"},
    {"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},
    {"type":"resource","resource":{"uri":"file:///x","text":"inside"}},
    {"type":"audio","data":"AAAA"},
    {"data":"no type"}]})");
  EXPECT_EQ(text_of(r),
            "before\n[image content: image/png left out]\n[resource content left out]\n[audio content left out]\n"
            "[non-text content left out]");
}

TEST(ResultText, IsErrorKeepsItsText) {
  auto r = json::parse(R"({"isError":true,"content":[{"type":"text","text":"no such file"}]})");
  EXPECT_EQ(text_of(r), "no such file");
}

TEST(ResultText, AtTheLimitNothingIsCutAndOverItAMarkerSaysHowMuch) {
  bool cut = true;
  EXPECT_EQ(text_of(with_text(std::string(12'000, 'a')), kResultLimit, &cut), std::string(12'000, 'a'));
  EXPECT_FALSE(cut);
  std::string t = text_of(with_text(std::string(12'001, 'a')), kResultLimit, &cut);
  EXPECT_TRUE(cut);
  EXPECT_EQ(t, std::string(12'000, 'a') + "\n[… cut at 12000 of 12001 characters …]");
}

// 6,000 two-byte characters are 12,000 bytes but 6,000 characters: nothing is cut. Over the
// limit the cut keeps whole characters and the marker counts characters, not bytes.
TEST(ResultText, TheLimitCountsCharactersNotBytes) {
  std::string e_acute = "\xC3\xA9";        // é, two bytes
  std::string euro = "\xE2\x82\xAC";       // €, three bytes
  std::string emoji = "\xF0\x9F\x98\x80";  // 😀, four bytes
  bool cut = true;
  std::string six_thousand;
  for (int i = 0; i < 6'000; ++i) six_thousand += e_acute;
  EXPECT_EQ(text_of(with_text(six_thousand), kResultLimit, &cut), six_thousand);
  EXPECT_FALSE(cut) << "12,000 bytes are only 6,000 characters";

  std::string at_limit;
  for (int i = 0; i < 12'000; ++i) at_limit += euro;
  EXPECT_EQ(text_of(with_text(at_limit), kResultLimit, &cut), at_limit);
  EXPECT_FALSE(cut);

  // 11,999 ASCII characters, then emoji: the cut falls after the first emoji, whole.
  std::string mixed = std::string(11'999, 'a') + emoji + emoji + euro;
  std::string t = text_of(with_text(mixed), kResultLimit, &cut);
  EXPECT_TRUE(cut);
  EXPECT_EQ(t, std::string(11'999, 'a') + emoji + "\n[… cut at 12000 of 12002 characters …]");

  // A small limit shows it plainly: 3 characters of 5, whatever their bytes.
  t = text_of(with_text(e_acute + euro + emoji + "b" + e_acute), 3, &cut);
  EXPECT_TRUE(cut);
  EXPECT_EQ(t, e_acute + euro + emoji + "\n[… cut at 3 of 5 characters …]");
}

}  // namespace
}  // namespace oppx::daemon
