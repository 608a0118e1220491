// result_for_model (daemon/tool_result.h): what a tools/call result gives the model. Text parts
// joined, binary content described, structuredContent checked against the outputSchema, the cut
// at a number of characters (UTF-8 code points, never inside one) with a marker that counts
// characters too.
#include "daemon/tool_result.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace oppx::daemon {
namespace {

namespace json = boost::json;

std::string text_of(const json::value& result, std::size_t limit = kResultLimit, bool* cut = nullptr) {
  ResultForModel r = result_for_model(result, limit, nullptr);
  if (cut) *cut = !r.whole_text.empty();
  return r.whole_text.empty() ? r.text : r.text + cut_marker(limit, r.text_chars, "");
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

TEST(ResultText, BinaryContentIsDescribedByKindTypeAndSizeAndTextResourcesAreKept) {
  auto r = json::parse(R"({"content":[
    {"type":"text","text":"before"},
    {"type":"image","data":")" +
                       std::string(4000, 'A') + R"(","mimeType":"image/png"},
    {"type":"resource","resource":{"uri":"file:///x","text":"inside","mimeType":"text/plain"}},
    {"type":"resource","resource":{"uri":"file:///y.gz","blob":"AAAA","mimeType":"application/gzip"}},
    {"type":"resource_link","uri":"test://static/1","name":"Resource 1","mimeType":"text/plain"},
    {"type":"audio","data":"AAA="},
    {"data":"no type"}]})");
  EXPECT_EQ(text_of(r),
            "before\n[image: image/png, 3 KiB, not shown]\n[resource file:///x, text/plain]\ninside\n"
            "[resource file:///y.gz: application/gzip, 3 bytes binary, not shown]\n"
            "[resource link test://static/1 (Resource 1), text/plain]\n[audio, 2 bytes, not shown]\n"
            "[non-text content left out]");
}

// structuredContent is given as compact JSON once it fits the tool's outputSchema; one that does
// not is not given, and why is said; a tool without a schema has its structuredContent as it is.
TEST(ResultText, StructuredContentIsCompactJsonOnceItFitsTheOutputSchema) {
  json::value schema = json::parse(R"({"type":"object","properties":{"temperature":{"type":"number"},
    "conditions":{"type":"string"}},"required":["temperature","conditions"],"additionalProperties":false})");
  auto ok = result_for_model(
      json::parse(R"({"content":[{"type":"text","text":"22.5 C"}],"structuredContent":{"temperature": 22.5,
        "conditions":"Partly cloudy"}})"),
      kResultLimit, &schema);
  EXPECT_EQ(ok.text, "22.5 C");
  EXPECT_EQ(ok.structured, R"({"temperature":22.5,"conditions":"Partly cloudy"})");
  EXPECT_EQ(ok.structured_problem, "");
  auto wrong =
      result_for_model(json::parse(R"({"content":[],"structuredContent":{"temperature":"hot","conditions":"sun"}})"),
                       kResultLimit, &schema);
  EXPECT_EQ(wrong.structured, "");
  EXPECT_EQ(wrong.structured_problem, "$.temperature: expected number");
  auto none = result_for_model(json::parse(R"({"content":[],"structuredContent":[1,2]})"), kResultLimit, nullptr);
  EXPECT_EQ(none.structured, "[1,2]");
  // Cut like the text, the whole kept for its file.
  auto big =
      result_for_model(json::value{{"structuredContent", json::value{{"s", std::string(2000, 'x')}}}}, 1000, nullptr);
  EXPECT_EQ(big.structured.size(), 1000u);
  EXPECT_EQ(big.structured_chars, 2008u);
  EXPECT_EQ(big.whole_structured.size(), 2008u);
  EXPECT_EQ(cut_marker(1000, 2008, "/c/r.json"),
            "\n[… cut at 1000 of 2008 characters; the whole result is in /c/r.json (read it with \"offset\": 1000 for "
            "what follows) …]");
}

TEST(ResultText, TheSchemaCheckSaysWhereAValueBreaksIt) {
  auto problem = [](const char* v, const char* s) { return schema_problem(json::parse(v), json::parse(s)); };
  EXPECT_EQ(problem(R"({"a":[1,2,"x"]})", R"({"properties":{"a":{"type":"array","items":{"type":"integer"}}}})"),
            "$.a[2]: expected integer");
  EXPECT_EQ(problem(R"({})", R"({"required":["id"]})"), "$.id: required, and missing");
  EXPECT_EQ(problem(R"({"x":1})", R"({"additionalProperties":false})"), "$.x: not a property the schema allows");
  EXPECT_EQ(problem(R"("c")", R"({"enum":["a","b"]})"), "$: not one of its enum");
  EXPECT_EQ(problem(R"(null)", R"({"type":["string","null"]})"), "");
  EXPECT_EQ(problem(R"(5)", R"({"type":"number","maximum":4})"), "$: above its maximum 4");
  EXPECT_EQ(problem(R"(2.0)", R"({"type":"integer"})"), "");
  EXPECT_EQ(problem(R"({"n":{"v":"s"}})",
                    R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"number"}}}},
                        "properties":{"n":{"$ref":"#/$defs/node"}}})"),
            "$.n.v: expected number");
  EXPECT_EQ(problem(R"({"n":1})", R"({"properties":{"n":{"$ref":"#/elsewhere"}}})"),
            "$.n: the schema's $ref cannot be followed");
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
