// daemon/connector(s) through the CLI, as a user runs them (server-everything on both transports
// is everything_test.cpp): fake_mcp_server for the faults (crash mid-call, a call that never ends, junk lines,
// a server request we do not support), a missing program, an unset variable, hand edits, and no
// child outliving the daemon.
#include "tests/support/connector_fixture.h"

#include "cli/daemon_client.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

struct Connectors : ConnectorFixture {};

TEST_F(Connectors, AMissingProgramAndAnUnsetVariableAreExplained) {
  ::setenv("OPPX_TEST_SECRET", "do-not-print-me", 1);
  write_config(stdio("missing", "no-such-program-oppx", {}) + "," +
               stdio("needs", FAKE_MCP_SERVER, {"${OPPX_TEST_UNSET_VARIABLE}"}) + "," +
               R"("secret":{"command":")" FAKE_MCP_SERVER
               R"(","env":{"TOKEN":"${OPPX_TEST_SECRET}","LITERAL":"hunter2hunter2"}})");
  Result list = oppx({"mcp", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  Result human = oppx({"mcp", "list"});
  auto missing = entry("missing");
  EXPECT_EQ(missing.at("state"), json::value("failed"));
  EXPECT_EQ(missing.at("reason_kind"), json::value("not_installed"));
  EXPECT_NE(std::string(missing.at("reason").as_string()).find("no-such-program-oppx is not installed"),
            std::string::npos);
  auto needs = entry("needs");
  EXPECT_EQ(needs.at("state"), json::value("failed"));
  EXPECT_NE(std::string(needs.at("reason").as_string()).find("${OPPX_TEST_UNSET_VARIABLE}"), std::string::npos);
  auto secret = entry("secret");
  EXPECT_EQ(secret.at("state"), json::value("running"));
  for (const std::string& out : {list.out, human.out, json::serialize(secret), home.read_log()}) {
    EXPECT_EQ(out.find("do-not-print-me"), std::string::npos) << out;
    EXPECT_EQ(out.find("hunter2hunter2"), std::string::npos) << out;
  }
  EXPECT_EQ(secret.at("env").at("TOKEN"), json::value("${OPPX_TEST_SECRET}"));
}

// A ${VAR} in the command or in a URL's host is expanded at start: the value shows in what the
// start meets (the program not found, the host not resolved), and is masked there as in server text.
TEST_F(Connectors, AVariableInACommandOrHostIsMaskedInReasonsAndTheLog) {
  ::setenv("OPPX_TEST_SECRET_DIR", "/tmp/s3cr3t-dir-4711", 1);
  ::setenv("OPPX_TEST_SECRET_HOST", "s3cr3t-host-4711", 1);
  ::setenv("OPPX_HTTP_TIMEOUTS", "connect=3000", 1);
  write_config(stdio("cmd", "${OPPX_TEST_SECRET_DIR}/bin/server", {}) + "," +
               R"("web":{"type":"http","url":"http://${OPPX_TEST_SECRET_HOST}.invalid/mcp"})");
  for (const char* name : {"cmd", "web"}) {
    SCOPED_TRACE(name);
    auto e = entry(name);
    EXPECT_EQ(e.at("state"), json::value("failed"));
    EXPECT_FALSE(std::string(e.at("reason").as_string()).empty());
    Result got = oppx({"mcp", "get", name});
    Result tools = oppx({"mcp", "tools", name});
    Result call = oppx({"mcp", "call", name, "echo", "--json"});
    for (const std::string& out : {json::serialize(e), got.out, got.err, tools.err, call.out, call.err})
      EXPECT_EQ(out.find("s3cr3t"), std::string::npos) << out;
  }
  Result list = oppx({"mcp", "list"});
  Result as_json = oppx({"mcp", "list", "--json"});
  for (const std::string& out : {list.out, list.err, as_json.out, home.read_log()})
    EXPECT_EQ(out.find("s3cr3t"), std::string::npos) << out;
  ::unsetenv("OPPX_HTTP_TIMEOUTS");
}

TEST_F(Connectors, ACrashMidCallIsReportedWithTheLastStderrLine) {
  write_config(stdio("crashy", FAKE_MCP_SERVER, {"crash_on_call"}));
  Result call = oppx({"mcp", "call", "crashy", "echo"});
  EXPECT_EQ(call.exit_code, 1);
  EXPECT_NE(call.err.find("may or may not have run"), std::string::npos) << call.err;
  EXPECT_NE(call.err.find("exit status 3"), std::string::npos) << call.err;
  EXPECT_NE(call.err.find("fake: crashing on purpose"), std::string::npos) << call.err;
  EXPECT_NE(call.err.find("  1. Look at its log"), std::string::npos) << "numbered steps: " << call.err;
  // reconnect brings it back.
  Result again = oppx({"mcp", "reconnect", "crashy"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(entry("crashy").at("state"), json::value("running"));
}

TEST_F(Connectors, TheCallCommandsTimeoutIsTheDaemonsLimitForTheTool) {
  write_config(stdio("slow", FAKE_MCP_SERVER, {"hang_call"}));
  // Running first: the 1 s limit would otherwise also cover its start.
  ASSERT_EQ(entry("slow").at("state"), json::value("running"));
  Result r = oppx({"mcp", "call", "slow", "echo", "--timeout", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("echo did not answer within 1 s; the call was cancelled"), std::string::npos) << r.err;
  // A script that asked for JSON gets the error as JSON on stdout, with the same exit status.
  Result js = oppx({"mcp", "call", "slow", "echo", "--timeout", "1", "--json"});
  EXPECT_EQ(js.exit_code, 1);
  boost::system::error_code ec;
  json::value v = json::parse(js.out, ec);
  ASSERT_FALSE(ec) << js.out;
  EXPECT_EQ(v.at("error").at("data").at("kind"), json::value("timeout")) << js.out;
  Result bad = oppx({"mcp", "call", "slow", "echo", "--timeout", "0"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--timeout takes a number of seconds from 1 to 3600"), std::string::npos) << bad.err;
}

TEST_F(Connectors, ASlowCallTimesOutAndTheConnectorStays) {
  write_config(stdio("slow", FAKE_MCP_SERVER, {"hang_call"}));
  auto c = client();
  auto r = c.call("tools/call", json::object{{"connector", "slow"}, {"tool", "echo"}, {"timeout_ms", 300}}, 10s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "timeout");
  EXPECT_EQ(entry("slow").at("state"), json::value("running"));
}

// The call's own time limit also bounds its wait for a connector still starting (whose limit is
// 30 s): it answers `timeout`, as a call that timed out does, long before the start gives up.
TEST_F(Connectors, ACallsTimeLimitAlsoBoundsTheWaitForAStart) {
  write_config(stdio("mute", FAKE_MCP_SERVER, {"no_init"}));
  auto c = client();
  auto r = c.call("tools/call", json::object{{"connector", "mute"}, {"tool", "echo"}, {"timeout_ms", 300}}, 10s);
  ASSERT_FALSE(r) << "no answer within 10 s, or a result";
  EXPECT_EQ(r.error().kind, "timeout") << r.error().message;
  EXPECT_NE(r.error().message.find("still starting"), std::string::npos) << r.error().message;
  Result list = oppx({"mcp", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(json::parse(list.out).at("connectors").at(0).at("state"), json::value("starting")) << "the start goes on";
}

TEST_F(Connectors, JunkLinesAndUnsupportedServerRequestsDoNotStopIt) {
  write_config(stdio("junk", FAKE_MCP_SERVER, {"junk"}) + "," + stdio("sampler", FAKE_MCP_SERVER, {"sampling"}));
  Result call = oppx({"mcp", "call", "junk", "echo"});
  EXPECT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "fake echo\n");
  EXPECT_EQ(entry("sampler").at("state"), json::value("running"))
      << "the sampling request must be answered with an error";
}

TEST_F(Connectors, McpListAnswersAtOnceWhileOneIsStillStarting) {
  write_config(stdio("mute", FAKE_MCP_SERVER, {"no_init"}));
  Result list = oppx({"mcp", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0);
  auto c = json::parse(list.out).at("connectors").at(0).as_object();
  EXPECT_EQ(c.at("state"), json::value("starting")) << "mcp list answers at once, even while one starts";
}

TEST_F(Connectors, HandEditsArePickedUpAndRemovedConnectorsStop) {
  pid_t child = start_marked_fake();
  ASSERT_GT(child, 0);
  write_config(stdio("two", FAKE_MCP_SERVER, {"ok", home.root() + "/two"}));
  Result list = oppx({"mcp", "list"});
  EXPECT_NE(list.out.find("two"), std::string::npos);
  EXPECT_EQ(list.out.find("one "), std::string::npos) << list.out;
  EXPECT_TRUE(cli::wait_for_exit(child, 10s)) << "the removed connector's process must end";
}

// `oppx mcp reconnect <name> --json` gives that connector alone, as the text does.
TEST_F(Connectors, AReconnectOfOneAnswersWithThatOneAlone) {
  write_config(stdio("one", FAKE_MCP_SERVER, {"ok", home.root() + "/one"}) + "," +
               stdio("two", FAKE_MCP_SERVER, {"ok", home.root() + "/two"}));
  Result one = oppx({"mcp", "reconnect", "one", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  json::value reply = json::parse(one.out);
  const json::array& listed = reply.at("connectors").as_array();
  ASSERT_EQ(listed.size(), 1u) << one.out;
  EXPECT_EQ(listed[0].at("name"), json::value("one"));
  EXPECT_EQ(listed[0].at("state"), json::value("running"));
  Result all = oppx({"mcp", "reconnect", "--json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(json::parse(all.out).at("connectors").as_array().size(), 2u) << all.out;
}

// A name that matches no connector is a failed command (1), not a usage error (2), as in
// `claude mcp`; with --json the error comes as JSON on stdout.
TEST_F(Connectors, ANameThatMatchesNoConnectorIsAFailedCommand) {
  write_config(stdio("one", FAKE_MCP_SERVER, {"ok", home.root() + "/one"}));
  for (std::vector<std::string> command : {std::vector<std::string>{"remove", "nope"},
                                           {"get", "nope"},
                                           {"tools", "nope"},
                                           {"call", "nope", "echo"},
                                           {"reconnect", "nope"},
                                           {"approve", "nope"},
                                           {"deny", "nope"}}) {
    for (bool as_json : {false, true}) {
      std::vector<std::string> args{"mcp"};
      args.insert(args.end(), command.begin(), command.end());
      if (as_json) args.emplace_back("--json");
      SCOPED_TRACE(command[0] + (as_json ? " --json" : ""));
      Result r = oppx(args);
      EXPECT_EQ(r.exit_code, 1) << r.err;
      EXPECT_NE(r.err.find("no connector named nope"), std::string::npos) << r.err;
      if (!as_json) continue;
      boost::system::error_code ec;
      json::value v = json::parse(r.out, ec);
      ASSERT_FALSE(ec) << r.out;
      EXPECT_EQ(v.at("error").at("data").at("kind"), json::value("unknown_connector")) << r.out;
    }
  }
}

TEST_F(Connectors, NoChildOutlivesTheDaemon) {
  pid_t child = start_marked_fake();
  ASSERT_GT(child, 0);
  EXPECT_EQ(::getsid(child), child) << "a connector runs in its own session";
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
  EXPECT_TRUE(cli::wait_for_exit(child, 10s));
}

}  // namespace
}  // namespace oppx::test
