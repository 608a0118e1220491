// A result cut for the model's context, as `oppx -p` runs it against server-everything: the model
// reads the rest with `read` and an offset from the file the marker names, and only the session
// whose call it was may: another session finds the file in oppx's own folders, which are never read.
#include "tests/support/agent_fixture.h"
#include "tests/support/model_steps.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

struct AgentResults : AgentFixture {
  void SetUp() override {
    ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
    home.write_mcp_config(R"("everything":{"command":"node","args":[")" + kEverything +
                          R"(","stdio"],"resultLimit":1000})");
  }
};

TEST_F(AgentResults, TheModelReadsTheRestOfACutResultAndOnlyItsOwnSessionMay) {
  ASSERT_EQ(oppx({"permissions", "allow", "everything.echo"}).exit_code, 0);
  std::string message = std::string(2990, 'x') + "THE END";
  // The model copies the path the marker names into its read, as a model does.
  json::object read_on{{"match", R"(the whole result is in (\S+) \(read)"},
                       {"deltas", json::array{R"({"action":"read","path":"{{match}}","offset":1000})"}}};
  serve({action("everything.echo"), says(json::serialize(json::object{{"message", message}})), json::serialize(read_on),
         reply("It ends with THE END.")});
  json::object out = print_json({"echo", "a", "long", "text"}, 0);
  const json::array& actions = out.at("actions").as_array();
  ASSERT_EQ(actions.size(), 2u) << json::serialize(out);
  std::string cut(actions[0].at("text").as_string());
  EXPECT_EQ(cut.find("THE END"), std::string::npos);
  EXPECT_EQ(actions[1].at("name"), "read");
  EXPECT_EQ(actions[1].at("status"), "ran") << json::serialize(actions[1]);
  EXPECT_EQ(actions[1].at("arguments").at("offset"), 1000);
  std::string rest(actions[1].at("text").as_string());
  EXPECT_EQ(rest.rfind("[characters 1000 to 3003 of 3003]\n", 0), 0u) << rest.substr(0, 200);
  EXPECT_NE(rest.find("THE END"), std::string::npos);
  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 4u);
  EXPECT_NE(json::serialize(bodies[3].at("messages")).find("THE END"), std::string::npos);

  // Another session: the same path is one of oppx's own folders, never read.
  std::string file = cut.substr(cut.find("the whole result is in ") + 23);
  file = file.substr(0, file.find(' '));
  serve({action("read", R"("path":)" + json::serialize(json::value(file))), reply("Not read.")});
  json::object other = print_json({"read", "it"}, 6);  // 6: something was declined
  const json::value& refused = other.at("actions").as_array().at(0);
  EXPECT_EQ(refused.at("status"), "declined") << json::serialize(refused);
}

}  // namespace
}  // namespace oppx::test
