// Start on first use: a connector marked "lazy" (or all of them, config.json "lazy_connectors")
// is not started with the daemon while a tool list is cached for its definition; that list is
// listed and offered (to the agent too), and its first call starts it. One never run, or whose
// definition changed since, starts as any other. On server-everything, the reference server.
#include "tests/support/agent_fixture.h"
#include "tests/support/harness.h"
#include "tests/support/model_steps.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace oppx::test {
namespace {

namespace json = boost::json;

std::string everything_entry(const std::string& extra) {
  return R"("everything":{"command":"node","args":[")" + kEverything + R"(","stdio"])" + extra + "}";
}

json::object entry_of(const std::string& name) {
  Result r = oppx({"mcp", "list", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json::value list = json::parse(r.out);
  for (const auto& c : list.at("connectors").as_array())
    if (c.at("name").as_string() == name) return c.as_object();
  return {};
}

// Runs the daemon once with `entry`, so that its tools are cached, and stops it.
void first_run(TempHome& home, const std::string& entry) {
  home.write_mcp_config(entry);
  connectors_settled(home, "");
  EXPECT_EQ(entry_of("everything").at("state"), "running");
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
}

TEST(LazyStart, ALazyConnectorWaitsForItsFirstCallWithTheToolsOfItsLastRun) {
  ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
  TempHome home;
  // Never run: nothing cached, so it starts with the daemon like any other.
  first_run(home, everything_entry(R"(,"lazy":true)"));

  json::object idle = entry_of("everything");
  EXPECT_EQ(idle.at("state"), "idle");
  EXPECT_EQ(idle.at("cached"), true);
  EXPECT_GE(idle.at("tools").as_int64(), 13);
  EXPECT_EQ(status_of(home.socket()).at("children"), 0);  // nothing was started
  Result list = oppx({"mcp", "list"});
  EXPECT_NE(list.out.find("idle"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("(last run)"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("not running: lazy, it starts at its first call"), std::string::npos) << list.out;
  Result tools = oppx({"mcp", "tools", "everything"});
  ASSERT_EQ(tools.exit_code, 0) << tools.err;
  EXPECT_NE(tools.out.find("everything.echo: "), std::string::npos);
  EXPECT_NE(tools.err.find("not running (lazy: its first call starts it)"), std::string::npos) << tools.err;
  EXPECT_EQ(status_of(home.socket()).at("children"), 0);
  // Its cached tools are searched too, without starting it.
  auto client = hello_client(home);
  ASSERT_TRUE(client);
  auto found = client->call("tools/search", json::object{{"query", "echo"}}, 10s);
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_FALSE(found->at("tools").as_array().empty());
  EXPECT_EQ(found->at("tools").as_array().at(0).at("name"), "echo");
  EXPECT_EQ(status_of(home.socket()).at("children"), 0);

  // The first call starts it, and is answered.
  Result echo = oppx({"mcp", "call", "everything", "echo", R"({"message":"first"})"});
  ASSERT_EQ(echo.exit_code, 0) << echo.err;
  EXPECT_EQ(echo.out, "Echo: first\n");
  EXPECT_EQ(entry_of("everything").at("state"), "running");

  // An edited definition has no list cached: it starts with the daemon.
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
  home.write_mcp_config(everything_entry(R"(,"lazy":true,"env":{"EDITED":"1"})"));
  connectors_settled(home, "");
  EXPECT_EQ(entry_of("everything").at("state"), "running");
}

TEST(LazyStart, TheSettingMakesEveryConnectorLazy) {
  ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
  TempHome home;
  first_run(home, everything_entry(""));
  std::ofstream(std::string(std::getenv("XDG_CONFIG_HOME")) + "/oppx/config.json") << R"({"lazy_connectors": true})";
  EXPECT_EQ(entry_of("everything").at("state"), "idle");
  oppx({"daemon", "stop"});
}

// The agent offers an idle connector's tools from the first turn, and its call starts it.
struct LazyAgent : AgentFixture {
  void SetUp() override {
    ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
    first_run(home, everything_entry(R"(,"lazy":true)"));
  }
};

TEST_F(LazyAgent, TheFirstTurnOffersItsToolsAndItsCallStartsIt) {
  ASSERT_EQ(oppx({"permissions", "allow", "everything.echo"}).exit_code, 0);
  serve({action("everything.echo"), says(R"({"message":"lazy"})"), reply("Done.")});
  EXPECT_EQ(entry_of("everything").at("state"), "idle");
  json::object out = print_json({"echo", "lazy"}, 0);
  const json::array& actions = out.at("actions").as_array();
  ASSERT_EQ(actions.size(), 1u) << json::serialize(out);
  EXPECT_EQ(actions[0].at("status"), "ran");
  EXPECT_EQ(actions[0].at("text"), "Echo: lazy");
  EXPECT_EQ(entry_of("everything").at("state"), "running");
}

}  // namespace
}  // namespace oppx::test
