// MCP 2026-07-28's body-derived headers (daemon/mcp_headers.h): the value encoding of the
// specification's table, the x-mcp-header marks a client must refuse, and the values of a call.
#include "daemon/mcp_headers.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace oppx::daemon::mcp_headers {
namespace {

namespace json = boost::json;

TEST(McpHeaders, ValuesAreEncodedAsTheSpecificationsTableSays) {
  EXPECT_EQ(header_value("us-west1"), "us-west1");
  EXPECT_EQ(header_value("us west 1"), "us west 1");
  EXPECT_EQ(header_value(""), "");
  EXPECT_EQ(header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
  EXPECT_EQ(header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
  EXPECT_EQ(header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
  EXPECT_EQ(header_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
  EXPECT_EQ(header_value("\tindented"), "=?base64?CWluZGVudGVk?=");
}

json::value schema(const char* properties) {
  return json::parse(std::string(R"({"type":"object","properties":)") + properties + "}");
}

TEST(McpHeaders, MarksOnPropertiesOfPrimitiveTypesAreKept) {
  auto marks = param_headers(schema(
      R"({"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},
          "opts":{"type":"object","properties":{"debug":{"type":"boolean","x-mcp-header":"Debug"}}},
          "query":{"type":"string"}})"));
  ASSERT_TRUE(marks) << marks.error();
  ASSERT_EQ(marks->size(), 3u);
  EXPECT_EQ((*marks)[2].name, "Debug");
  EXPECT_EQ((*marks)[2].path, (std::vector<std::string>{"opts", "debug"}));
  auto none = param_headers(json::parse(R"({"type":"object"})"));
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(McpHeaders, InvalidMarksMakeTheToolInvalid) {
  for (const char* bad : {
           R"({"v":{"type":"string","x-mcp-header":""}})",
           R"({"v":{"type":"object","x-mcp-header":"V"}})",
           R"({"v":{"type":"array","items":{"type":"string"},"x-mcp-header":"V"}})",
           R"({"v":{"type":"null","x-mcp-header":"V"}})",
           R"({"v":{"type":"number","x-mcp-header":"V"}})",
           R"({"a":{"type":"string","x-mcp-header":"Same"},"b":{"type":"string","x-mcp-header":"same"}})",
           R"({"v":{"type":"string","x-mcp-header":"has space"}})",
           R"({"v":{"type":"string","x-mcp-header":"Col:on"}})",
           R"({"v":{"type":"string","x-mcp-header":"Ünï"}})",
           R"({"v":{"type":"string","x-mcp-header":"Ctl\r\n"}})",
           R"({"v":{"type":"array","items":{"type":"string","x-mcp-header":"Item"}}})",
           R"({"v":{"anyOf":[{"type":"string","x-mcp-header":"Alt"}]}})",
       }) {
    EXPECT_FALSE(param_headers(schema(bad))) << bad;
  }
  EXPECT_FALSE(param_headers(json::parse(R"({"type":"string","x-mcp-header":"Root"})")));
  EXPECT_FALSE(param_headers(json::parse(R"({"$defs":{"x":{"type":"string","x-mcp-header":"Def"}}})")));
}

TEST(McpHeaders, ACallsHeadersArePresentValuesAsTextAndNullOrMissingOnesLeftOut) {
  auto marks = param_headers(schema(
      R"({"region":{"type":"string","x-mcp-header":"Region"},"priority":{"type":"integer","x-mcp-header":"Priority"},
          "verbose":{"type":"boolean","x-mcp-header":"Verbose"},"missing":{"type":"string","x-mcp-header":"Missing"},
          "o":{"type":"object","properties":{"deep":{"type":"string","x-mcp-header":"Deep"}}}})"));
  ASSERT_TRUE(marks) << marks.error();
  auto h = param_header_values(
      *marks, json::parse(R"({"region":"Hello, 世界","priority":42,"verbose":null,"o":{"deep":"d"}})"));
  std::vector<std::pair<std::string, std::string>> want{
      {"Mcp-Param-Region", "=?base64?SGVsbG8sIOS4lueVjA==?="}, {"Mcp-Param-Priority", "42"}, {"Mcp-Param-Deep", "d"}};
  EXPECT_EQ(h, want);
  auto b = param_header_values(*marks, json::parse(R"({"verbose":false,"priority":-7})"));
  std::vector<std::pair<std::string, std::string>> want_b{{"Mcp-Param-Priority", "-7"}, {"Mcp-Param-Verbose", "false"}};
  EXPECT_EQ(b, want_b);
}

TEST(McpHeaders, ARequestSaysItsVersionAndNameOnlyWithThe2026Meta) {
  auto call =
      stateless_request(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},)"
                        R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})",
                        "tools/call");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->version, "2026-07-28");
  EXPECT_EQ(call->name, "echo");
  auto read = stateless_request(
      R"({"method":"resources/read","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})",
      "resources/read");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->name, "file:///a");
  EXPECT_FALSE(stateless_request(R"({"method":"tools/call","params":{"name":"echo"}})", "tools/call"));
  EXPECT_FALSE(stateless_request("not json io.modelcontextprotocol/protocolVersion", "tools/call"));
}

TEST(McpHeaders, OnlyARefusalThatListsTheVersionIsSentAgain) {
  EXPECT_TRUE(version_refused_but_listed(
      R"({"error":{"code":-32022,"data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}})", "2026-07-28"));
  EXPECT_FALSE(
      version_refused_but_listed(R"({"error":{"code":-32022,"data":{"supported":["2027-01-01"]}}})", "2026-07-28"));
  EXPECT_FALSE(version_refused_but_listed(R"({"error":{"code":-32000,"message":"Bad Request"}})", "2026-07-28"));
  EXPECT_FALSE(version_refused_but_listed("", "2026-07-28"));
}

}  // namespace
}  // namespace oppx::daemon::mcp_headers
