// server-everything, the MCP reference server, through the CLI as a user runs it, over both
// transports with one scenario: its tools as the model sees them, echo, get-sum with --json, and
// a warm connector that the next command shares. What only HTTP has (a restarted server's new
// session, DELETE on reconnect) is in http_connector_test.cpp.
#include "tests/support/harness.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <memory>

#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

enum class Over { kStdio, kHttp };

struct Everything : ::testing::TestWithParam<Over> {
  TempHome home;
  std::unique_ptr<Process> server;  // HTTP: the server on a port of its own

  void SetUp() override {
    ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
    if (GetParam() == Over::kStdio) {
      home.write_mcp_config(stdio_entry("everything", "node", {kEverything, "stdio"}));
      return;
    }
    int port = free_port();
    server = std::make_unique<Process>(
        std::vector<std::string>{"env", "PORT=" + std::to_string(port), "node", kEverything, "streamableHttp"});
    ASSERT_TRUE(server->wait_for_stderr("listening on port")) << server->err();
    std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
    home.write_mcp_config("\"everything\":" + json::serialize(json::object{{"type", "http"}, {"url", url}}));
  }
  void TearDown() override { oppx({"daemon", "stop"}); }
};

TEST_P(Everything, ListsItsToolsEchoesAddsAndStaysWarmForTheNextCommand) {
  Result tools = oppx({"mcp", "tools", "everything"});
  ASSERT_EQ(tools.exit_code, 0) << tools.err;
  EXPECT_NE(tools.out.find("everything.echo: Echoes back the input string\n"), std::string::npos) << tools.out;
  EXPECT_NE(tools.out.find("everything.get-sum: "), std::string::npos) << tools.out;

  Result echo = oppx({"mcp", "call", "everything", "echo", R"({"message":"hello from oppx"})"});
  ASSERT_EQ(echo.exit_code, 0) << echo.err;
  EXPECT_EQ(echo.out, "Echo: hello from oppx\n");
  Result sum = oppx({"mcp", "call", "everything", "get-sum", R"({"a":2,"b":40})", "--json"});
  ASSERT_EQ(sum.exit_code, 0) << sum.err;
  auto j = json::parse(sum.out).as_object();
  EXPECT_EQ(j.at("text"), json::value("The sum of 2 and 40 is 42."));
  EXPECT_EQ(j.at("arguments"), json::parse(R"({"a":2,"b":40})"));
  EXPECT_EQ(j.at("untrusted"), json::value(true));

  Result list = oppx({"mcp"});
  EXPECT_NE(list.out.find("everything"), std::string::npos);
  EXPECT_NE(list.out.find("running"), std::string::npos);
  // Warm and shared: the same connector served every command, and is still there.
  auto st = status_of(home.socket());
  EXPECT_EQ(st.at("connectors").as_int64(), 1);
}

INSTANTIATE_TEST_SUITE_P(Over, Everything, ::testing::Values(Over::kStdio, Over::kHttp),
                         [](const ::testing::TestParamInfo<Over>& i) {
                           return i.param == Over::kStdio ? std::string("stdio") : std::string("http");
                         });

}  // namespace
}  // namespace oppx::test
