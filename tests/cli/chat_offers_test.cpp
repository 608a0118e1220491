// A connector's prompt and resource in the terminal chat (tmux), on server-everything: the line
// `/everything:args-prompt city=Paris` is the prompt's message, not one of the chat's own slash
// commands, and `@everything:<uri>` in a message attaches the resource, said in a notice; Tab
// completes both.
#include "tests/support/harness.h"
#include "tests/support/model_steps.h"
#include "tests/support/scripted_model.h"
#include "tests/support/terminal.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <regex>

namespace oppx::test {
namespace {

TEST(ChatOffers, APromptIsAMessageAndAResourceIsAttached) {
  ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
  TempHome home;
  InRepository repo{home};
  home.write_mcp_config(stdio_entry("everything", "node", {kEverything, "stdio"}));
  ScriptedModel model(home.root(), R"({"models": [{"id": "m1", "max_model_len": 32768}], "completions": [)" +
                                       reply("Sunny in Paris.") + "," + reply("It is about the architecture.") + "," +
                                       reply("Rainy in Rome.") + "," + reply("Read the features.") + "]}");
  ASSERT_TRUE(model.started()) << model.err();
  connectors_settled(home, repo.root());
  auto last_user_message = [&model] {
    auto bodies = model.completions();
    return bodies.empty() ? std::string()
                          : std::string(bodies.back().at("messages").as_array().back().at("content").as_string());
  };
  {
    Terminal t(home, model.url());
    ASSERT_TRUE(t.wait_for("/help for commands")) << t.screen();
    t.type("/everything:args-prompt city=Paris");
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("Sunny in Paris.")) << t.screen();
    EXPECT_EQ(last_user_message(), "What's weather in Paris?");
    EXPECT_EQ(t.screen().find("unknown"), std::string::npos) << t.screen();

    t.type("what is in @everything:demo://resource/static/document/architecture.md");
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("It is about the architecture.")) << t.screen();
    EXPECT_NE(t.screen().find("Attached @everything:demo://resource/static/document/architecture.md"),
              std::string::npos)
        << t.screen();
    EXPECT_NE(last_user_message().find("# Everything Server"), std::string::npos);

    // Tab completes a prompt's name and a resource's address, asked of the daemon.
    t.type("/everything:args");
    t.keys({"Tab"});
    t.type(" city=Rome");
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("Rainy in Rome.")) << t.screen();
    EXPECT_EQ(last_user_message(), "What's weather in Rome?");
    t.type("read @everything:demo://resource/static/document/feat");
    t.keys({"Tab", "Enter"});
    ASSERT_TRUE(t.wait_for("Read the features.")) << t.screen();
    EXPECT_NE(last_user_message().find("The resource @everything:demo://resource/static/document/features.md"),
              std::string::npos)
        << last_user_message().substr(0, 300);
  }
  oppx({"daemon", "stop"});
}

}  // namespace
}  // namespace oppx::test
