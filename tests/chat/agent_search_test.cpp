// Tool search in the agent loop, as `oppx -p` runs it against the scripted model server and the
// real daemon: while tools are searched for, the prompt names the connectors and not every tool,
// the action enum holds search_tools, and what a search finds is an action from the next step on;
// a pinned tool ("alwaysLoad") stays listed; "auto" turns search on once the list outgrows its
// share of the model's context, and says so.
#include "tests/support/agent_fixture.h"
#include "tests/support/model_steps.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace oppx::test {
namespace {

namespace json = boost::json;

std::string system_of(const json::object& body) {
  return std::string(body.at("messages").as_array().at(0).at("content").as_string());
}
const json::object& schema_of(const json::object& body) {
  return body.at("response_format").at("json_schema").at("schema").as_object();
}
bool offers(const json::object& body, std::string_view action) {
  const json::array& e = schema_of(body).at("properties").at("action").at("enum").as_array();
  return std::find(e.begin(), e.end(), json::value(action)) != e.end();
}

struct AgentSearch : AgentFixture {
  void write_config(const std::string& text) {
    std::string dir = std::string(std::getenv("XDG_CONFIG_HOME")) + "/oppx";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/config.json") << text;
  }
};

TEST_F(AgentSearch, TheModelSearchesAndWhatItFindsBecomesAnAction) {
  write_config(R"({"tool_search": "always"})");
  serve({action("search_tools", R"("query":"look up an issue")"), action("agentc.lookup"), says(R"({"id":"7"})"),
         reply("Issue 7 is open.")});
  json::object out = print_json({"what", "is", "issue", "7?"}, 0);
  EXPECT_EQ(out.at("reply"), "Issue 7 is open.");
  const json::array& actions = out.at("actions").as_array();
  ASSERT_EQ(actions.size(), 2u) << json::serialize(out);
  EXPECT_EQ(actions[0].at("name"), "search_tools");
  EXPECT_EQ(actions[0].at("status"), "ran");
  EXPECT_EQ(actions[0].at("arguments").at("query"), "look up an issue");
  EXPECT_NE(std::string(actions[0].at("text").as_string()).find("agentc.lookup"), std::string::npos);
  EXPECT_EQ(actions[1].at("name"), "agentc.lookup");
  EXPECT_EQ(actions[1].at("status"), "ran");

  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 4u);
  // Before the search: the connector with its count and a few names; no tool line, no tool action.
  std::string system = system_of(bodies[0]);
  EXPECT_NE(system.find("\n- agentc (6 tools): lookup, save_issue, ping, fail, …\n"), std::string::npos) << system;
  EXPECT_EQ(system.find("- agentc.lookup:"), std::string::npos) << system;
  EXPECT_TRUE(offers(bodies[0], "search_tools"));
  EXPECT_FALSE(offers(bodies[0], "agentc.lookup"));
  EXPECT_TRUE(schema_of(bodies[0]).at("properties").as_object().contains("query"));
  // After it: the found tool is an action, its line is in the result, and the system prompt (the
  // model server's cached prefix) did not change.
  EXPECT_TRUE(offers(bodies[1], "agentc.lookup"));
  std::string told = json::serialize(bodies[1].at("messages"));
  EXPECT_NE(told.find("search_tools found for \\\"look up an issue\\\""), std::string::npos) << told;
  EXPECT_NE(told.find("- agentc.lookup: Looks up an issue by its id"), std::string::npos) << told;
  EXPECT_EQ(system_of(bodies[1]), system);
  EXPECT_EQ(system_of(bodies[3]), system);
}

TEST_F(AgentSearch, APinnedToolStaysListedAndASearchForNothingSaysSo) {
  write_config(R"({"tool_search": "always"})");
  home.write_mcp_config(R"("agentc":{"command":"node","args":[")" + std::string(OPPX_TEST_SUPPORT) +
                        R"(/agent_connector.js",")" + calls + R"("],"alwaysLoad":["ping"]})");
  serve({action("search_tools", R"("query":"zzqx wvvy")"), reply("None.")});
  json::object out = print_json({"anything?"}, 0);
  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_TRUE(offers(bodies[0], "agentc.ping"));
  EXPECT_FALSE(offers(bodies[0], "agentc.lookup"));
  std::string system = system_of(bodies[0]);
  EXPECT_NE(system.find("Tools always at hand"), std::string::npos) << system;
  EXPECT_NE(system.find("\n- agentc.ping: Pings the service.\n"), std::string::npos) << system;
  std::string told = json::serialize(bodies[1].at("messages"));
  EXPECT_NE(told.find("search_tools found no tool for \\\"zzqx wvvy\\\""), std::string::npos) << told;
}

TEST_F(AgentSearch, AutoSearchesOnceTheListOutgrowsItsShareAndSaysSo) {
  // A whole list is offered while it fits its share (the default, 10% of 32k)...
  serve({reply("Listed.")});
  Result listed = print({"hello"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(offers(model->completions().at(0), "agentc.lookup"));
  EXPECT_FALSE(offers(model->completions().at(0), "search_tools"));
  EXPECT_EQ(listed.err.find("search_tools"), std::string::npos) << listed.err;
  // ...and searched once it takes more than the share set.
  write_config(R"({"tool_search_share": 1})");
  serve({reply("Searched.")}, 4096);
  Result searched = print({"hello"});
  ASSERT_EQ(searched.exit_code, 0) << searched.err;
  EXPECT_TRUE(offers(model->completions().at(0), "search_tools"));
  EXPECT_FALSE(offers(model->completions().at(0), "agentc.lookup"));
  EXPECT_NE(searched.err.find("over 1% of the model's context: the model finds the ones it needs with search_tools"),
            std::string::npos)
      << searched.err;
  // A wrong setting is said, and the default holds.
  write_config(R"({"tool_search": "sometimes"})");
  serve({reply("Default.")});
  Result wrong = print({"hello"});
  ASSERT_EQ(wrong.exit_code, 0) << wrong.err;
  EXPECT_NE(wrong.err.find("\"tool_search\" is one of \"auto\", \"always\" or \"never\""), std::string::npos)
      << wrong.err;
}

}  // namespace
}  // namespace oppx::test
