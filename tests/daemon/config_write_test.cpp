// daemon/config_write: the 2-space JSON it writes, and what `mcp add` refuses before anything is
// written (names, URLs, header names, line breaks in any value).
#include "daemon/config_write.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace oppx::daemon {
namespace {

namespace json = boost::json;

TEST(ConfigWrite, PrettyJsonIsTwoSpacesInKeyOrder) {
  EXPECT_EQ(
      pretty_json(json::parse(R"({"b":1,"a":{"x":[1,"two",{}],"y":[]},"c":"q\"\n"})")),
      "{\n  \"b\": 1,\n  \"a\": {\n    \"x\": [\n      1,\n      \"two\",\n      {}\n    ],\n    \"y\": []\n  },\n"
      "  \"c\": \"q\\\"\\n\"\n}\n");
}

TEST(ConfigWrite, CheckDefinitionRefusesWhatCouldSplitALineOrAName) {
  auto bad = [](std::string_view name, const char* def) {
    auto r = check_definition(name, json::parse(def));
    return r ? std::string() : r.error().message;
  };
  EXPECT_EQ(bad("ok-name_1", R"({"command":"x","args":["a"],"env":{"K":"${V}"}})"), "");
  EXPECT_NE(bad("", R"({"command":"x"})").find("it is empty"), std::string::npos);
  EXPECT_NE(bad("a b", R"({"command":"x"})").find("it holds a space"), std::string::npos);
  EXPECT_NE(bad("a/b", R"({"command":"x"})").find("it holds a slash"), std::string::npos);
  EXPECT_NE(bad("n", R"({"args":["a"]})").find("mcpServers.n.command: required"), std::string::npos);
  EXPECT_NE(bad("n", R"({"type":"http","url":"ws://h/mcp"})").find("must start with https://"), std::string::npos);
  EXPECT_NE(bad("n", R"({"type":"http","url":"https://h/","headers":{"Bad Name":"v"}})").find("not a valid HTTP"),
            std::string::npos);
  EXPECT_NE(bad("n", R"({"type":"http","url":"https://h/","headers":{"A":"v\r\nB: w"}})").find("line break"),
            std::string::npos);
  EXPECT_NE(bad("n", R"({"command":"x","env":{"K=J":"v"}})").find("environment variable"), std::string::npos);
  EXPECT_NE(bad("n", R"({"command":"x\u0000y"})").find("the command of n holds a line break or NUL"),
            std::string::npos);
}

}  // namespace
}  // namespace oppx::daemon
