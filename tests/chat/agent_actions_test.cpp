// What the agent loop makes of the model's actions and says of their calls, as `oppx -p` runs
// it: an action without its own fields, a call whose connector went down while it ran, a failed
// call's arguments, numbers in arguments, and the environment a command gets.
#include "tests/support/agent_fixture.h"
#include "tests/support/model_steps.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace oppx::test {
namespace {

namespace json = boost::json;

std::string all_text(const json::object& body) { return json::serialize(body.at("messages")); }
std::string last_message(const json::object& body) {
  return std::string(body.at("messages").as_array().back().at("content").as_string());
}
struct AgentActions : AgentFixture {
  // raw_connector.js as the only connector, its tools/call lines as they arrived in `lines`.
  std::string lines = home.root() + "/lines.txt";
  void use_raw_connector() {
    home.write_mcp_config(stdio_entry("rawc", "node", {std::string(OPPX_TEST_SUPPORT) + "/raw_connector.js", lines}));
  }
};

TEST_F(AgentActions, AnActionWithoutItsOwnFieldIsAskedAgainOnceSayingWhatWasMissing) {
  struct Case {
    std::string action, field;
  };
  for (const Case& c :
       std::vector<Case>{{"reply", "text"}, {"read", "path"}, {"grep", "pattern"}, {"run", "command"}}) {
    SCOPED_TRACE(c.action);
    // Present but empty counts as missing; the second answer is usable.
    std::string empty = c.action == "reply" ? action("reply", R"("text":"  ")") : action(c.action);
    serve({empty, reply("Here is the answer.")});
    Result r = print({"what", "is", "here"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "Here is the answer.\n");
    auto bodies = model->completions();
    ASSERT_EQ(bodies.size(), 2u);
    std::string asked = last_message(bodies[1]);
    EXPECT_NE(asked.find("not a usable action"), std::string::npos) << asked;
    EXPECT_NE(asked.find(c.action + " needs"), std::string::npos) << asked;
    EXPECT_NE(asked.find("\"" + c.field + "\""), std::string::npos) << asked;
  }
}

TEST_F(AgentActions, TwoUnusableAnswersEndTheTurnWithAnErrorNeverAnEmptyReply) {
  serve({action("reply"), action("run")});
  Result r = print({"fix", "it"});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("oppx: the model did not answer with a usable action, twice in a row"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("run needs the shell command in \"command\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\n  1. "), std::string::npos) << r.err;
  EXPECT_EQ(model->completions().size(), 2u);

  serve({says(R"({"action":"nothing"})"), says("{}")});
  json::object out = print_json({"fix", "it"}, 5);
  EXPECT_EQ(out.at("reply"), "");
  EXPECT_EQ(out.at("error").at("kind"), "bad_reply");
  EXPECT_NE(std::string(out.at("error").at("message").as_string()).find("not one JSON object"), std::string::npos);

  // The unusable exchange is not kept: -c goes on from the user's message.
  serve({reply("Fixed.")});
  Result next = print({"-c", "try", "again"});
  ASSERT_EQ(next.exit_code, 0) << next.err;
  std::string sent = all_text(model->completions().at(0));
  EXPECT_NE(sent.find("fix it"), std::string::npos) << sent;
  EXPECT_EQ(sent.find("not a usable action"), std::string::npos) << sent;
}

TEST_F(AgentActions, AWriteWhoseConnectorWentDownMidCallMayOrMayNotHaveRunAndEveryoneIsTold) {
  use_raw_connector();
  ASSERT_EQ(oppx({"permissions", "allow", "rawc.erase"}).exit_code, 0);
  serve({action("rawc.erase"), reply("The erase may or may not have run; check it.")});
  Result r = print({"erase", "it", "--json"});
  EXPECT_EQ(r.exit_code, 7) << r.out << r.err;
  EXPECT_NE(r.err.find("oppx: rawc is down: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rawc.erase may or may not have run"), std::string::npos) << r.err;
  std::string told = last_message(model->completions().at(1));
  EXPECT_NE(told.find("rawc.erase may or may not have run"), std::string::npos) << told;
  EXPECT_NE(told.find("say that rawc.erase may or may not have run"), std::string::npos) << told;
  std::string got = read_file(lines);
  EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 1) << "never repeated: " << got;
  json::value out = json::parse(r.out);
  const json::value& a = out.at("actions").at(0);
  EXPECT_EQ(a.at("status"), "down");
  EXPECT_NE(std::string(a.at("text").as_string()).find("may or may not have run"), std::string::npos) << a;
}

TEST_F(AgentActions, AReadOnlyCallWhoseConnectorWentDownChangedNothingAndIsNotSaidToBeUnrepeated) {
  use_raw_connector();
  serve({action("rawc.peek"), reply("It went down.")});
  Result r = print({"peek"});
  EXPECT_EQ(r.exit_code, 7) << r.out << r.err;
  // The daemon repeated it once after a restart: two calls reached the program.
  std::string got = read_file(lines);
  EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 2) << got;
  std::string told = last_message(model->completions().at(1));
  EXPECT_NE(told.find("rawc.peek only reads"), std::string::npos) << told;
  EXPECT_EQ(told.find("may or may not have run"), std::string::npos) << told;
  EXPECT_EQ(told.find("not repeated"), std::string::npos) << told;
  EXPECT_EQ(r.err.find("not repeated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rawc.peek only reads"), std::string::npos) << r.err;
}

TEST_F(AgentActions, AFailedCallsMessageCutsItsArgumentsAndTheRecordKeepsThemWhole) {
  std::string big(20'000, 'a');
  serve({action("agentc.fail"), says(R"({"x":")" + big + R"("})"), reply("It failed.")});
  json::object out = print_json({"try", "it"}, 0);
  const json::value& a = out.at("actions").at(0);
  EXPECT_EQ(a.at("status"), "failed");
  EXPECT_EQ(a.at("arguments").at("x").as_string().size(), big.size()) << "--json keeps the arguments whole";
  std::string told = last_message(model->completions().at(2));
  EXPECT_NE(told.find("agentc.fail failed with the arguments {\"x\":\"aaa"), std::string::npos) << told.substr(0, 400);
  EXPECT_NE(told.find("[… cut at 300 of 20008 characters]"), std::string::npos) << told.substr(0, 400);
  // The error (the tool echoes x; the daemon caps a result at 12,000 characters) and a few hundred
  // characters of the arguments: no second copy of them.
  EXPECT_LT(told.size(), 12'000u + 1'000u);
}

TEST_F(AgentActions, ANumberWithAFractionIsSentAndShownAsTheModelWroteIt) {
  use_raw_connector();
  serve({action("rawc.note"), says(R"({"x":0.1,"tiny":-2.5e-7,"whole":3})"), reply("Noted.")});
  Result r = print({"note", "it", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string got = read_file(lines);
  EXPECT_NE(got.find(R"("arguments":{"x":0.1,"tiny":-2.5e-07,"whole":3})"), std::string::npos) << got;
  EXPECT_EQ(got.find("E-"), std::string::npos) << got;
  EXPECT_NE(r.out.find(R"({"x":0.1,"tiny":-2.5e-07,"whole":3})"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("1E-1"), std::string::npos) << r.out;
}

// The agent runs in oppxd, which keeps the environment of the command that started it: a command
// the agent runs gets the environment of the client it runs for.
TEST_F(AgentActions, ACommandGetsTheEnvironmentOfItsClientNotTheDaemons) {
  ::setenv("TZ", "Daemon/Zone", 1);
  serve({action("run", R"("command":"printenv TZ")"), reply("Done.")});  // the daemon starts with this TZ
  ::setenv("TZ", "Client/Zone", 1);
  ASSERT_EQ(oppx({"permissions", "allow", "run:printenv"}).exit_code, 0);
  json::object out = print_json({"show", "the", "zone"}, 0);
  ::unsetenv("TZ");
  const json::value& a = out.at("actions").at(0);
  EXPECT_EQ(a.at("status"), "ran") << a;
  std::string text(a.at("text").as_string());
  EXPECT_NE(text.find("Client/Zone"), std::string::npos) << text;
  EXPECT_EQ(text.find("Daemon/Zone"), std::string::npos) << text;
}

}  // namespace
}  // namespace oppx::test
