// server-everything, the MCP reference server, through the CLI as a user runs it, over both
// transports with one scenario: its tools as the model sees them, echo, get-sum with --json, and
// a warm connector that the next command shares. What only HTTP has (a restarted server's new
// session, DELETE on reconnect) is in http_connector_test.cpp.
#include "tests/support/harness.h"
#include "tests/support/waits.h"

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

// Its elicitation tool asks the client whose call it is (mcp/elicit), with the server's form; the
// answer, with the form's defaults applied by the daemon, is what the server gets. A client that
// does not answer mcp/elicit declines. The call's time limit stands still while the user is asked.
TEST_P(Everything, ItsFormIsAskedOfTheCallerAndTheAnswerWithDefaultsReachesIt) {
  auto client = hello_client(home);
  ASSERT_TRUE(client);
  std::vector<json::value> asked;
  client->on_request([&](const std::string& method, const json::value& params) -> SyncClient::RequestResult {
    EXPECT_EQ(method, "mcp/elicit");
    asked.push_back(params);
    // A person takes longer than the call's limit (below) to fill a form in: had the limit run,
    // the daemon would have cancelled the call at the server by now (no request waiting).
    EXPECT_FALSE(status_until(home.socket(), json::object{{"requests_waiting", 0}}, 1500ms)) << "the call ran out";
    json::object content{{"name", "Ann Lee"}, {"check", true}, {"email", "ann@example.com"}};
    return json::value(json::object{{"action", "accept"}, {"content", std::move(content)}});
  });
  json::object call{{"connector", "everything"},
                    {"tool", "trigger-elicitation-request"},
                    {"arguments", json::object{}},
                    {"timeout_ms", 1000}};
  auto r = client->call("tools/call", call, std::chrono::seconds(30));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(asked.size(), 1u);
  const json::object& q = asked[0].as_object();
  EXPECT_EQ(q.at("connector"), "everything");
  EXPECT_EQ(q.at("tool"), "trigger-elicitation-request");
  EXPECT_EQ(q.at("mode"), "form");
  EXPECT_EQ(q.at("message"), "Please provide inputs for the following fields:");
  EXPECT_TRUE(q.at("schema").as_object().at("properties").as_object().contains("firstLine"));
  std::string text(r->as_object().at("text").as_string());
  EXPECT_NE(text.find("\"name\": \"Ann Lee\""), std::string::npos) << text;
  // A default the server gave, for a field the user left empty.
  EXPECT_NE(text.find("\"firstLine\": \"It was a dark and stormy night.\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"integer\": 42"), std::string::npos) << text;

  // An answer that does not fit the form (a required field missing) is declined.
  client->on_request([&](const std::string&, const json::value&) -> SyncClient::RequestResult {
    return json::value(json::object{{"action", "accept"}, {"content", json::object{{"check", true}}}});
  });
  call["timeout_ms"] = 30'000;
  r = client->call("tools/call", call, std::chrono::seconds(30));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(r->as_object().at("text").as_string().find("\"action\": \"decline\""), std::string::npos);

  // A client that cannot be asked declines.
  client->on_request(nullptr);
  r = client->call("tools/call", call, std::chrono::seconds(30));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(r->as_object().at("text").as_string().find("User declined"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Over, Everything, ::testing::Values(Over::kStdio, Over::kHttp),
                         [](const ::testing::TestParamInfo<Over>& i) {
                           return i.param == Over::kStdio ? std::string("stdio") : std::string("http");
                         });

}  // namespace
}  // namespace oppx::test
