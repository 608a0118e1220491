// Questions a connector's server asks the user during a call (MCP elicitation), where the agent
// runs: the terminal chat in a real pseudo-terminal (tmux) asks the form field by field and shows
// an address to open (never given to the model); `oppx -p` declines, or accepts a form's defaults
// with --elicit accept-defaults. The connector is tests/support/asking_connector.js (a real child),
// the model the scripted model server.
#include "cli/elicit_form.h"
#include "tests/support/model_steps.h"
#include "tests/support/scripted_model.h"
#include "tests/support/terminal.h"
#include "tests/support/waits.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

const std::string kAsking = std::string(OPPX_TEST_SUPPORT) + "/asking_connector.js";

struct ServerQuestions : ::testing::Test {
  TempHome home;
  std::optional<ScriptedModel> model;

  void SetUp() override { home.write_mcp_config(stdio_entry("asking", "node", {kAsking})); }
  void TearDown() override {
    oppx({"daemon", "stop"});
    ::unsetenv("OPPX_SERVER");
    ::unsetenv("BROWSER");
  }
  void serve(const std::vector<std::string>& steps) {
    std::string list;
    for (const auto& s : steps) list += (list.empty() ? "" : ",") + s;
    model.emplace(home.root(), R"({"models": [{"id": "m1", "max_model_len": 32768}], "completions": [)" + list + "]}");
    ASSERT_TRUE(model->started()) << model->err();
    ::setenv("OPPX_SERVER", model->url().c_str(), 1);
    connectors_settled(home, home.root());
  }
  // Every request the model server was sent, as one text.
  std::string sent_to_model() {
    std::string all;
    for (const auto& body : model->completions()) all += json::serialize(body);
    return all;
  }
};

TEST_F(ServerQuestions, TheChatAsksTheFormFieldByFieldAndTheToolGetsTheAnswer) {
  serve({action("asking.confirm_deploy"), reply("Deployed.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.wait_for("/help for commands")) << t.screen();
  t.type("deploy it");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("asking (confirm_deploy) asks:")) << t.screen();
  EXPECT_NE(t.screen().find("Where should it go?"), std::string::npos) << t.screen();
  ASSERT_TRUE(t.wait_for("Environment (a number from the list) * [Staging]:")) << t.screen();
  EXPECT_NE(t.screen().find("2) Production"), std::string::npos) << t.screen();
  t.type("2");
  t.keys({"Enter"});
  // A value outside the bounds is said and asked again; Enter then keeps the default.
  ASSERT_TRUE(t.wait_for("Replicas (a whole number) * [2]:")) << t.screen();
  t.type("12");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("at most 9 please")) << t.screen();
  t.type("x");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("expected a whole number")) << t.screen();
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Note:")) << t.screen();
  t.type("friday");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Send it? [Y] yes")) << t.screen();
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Deployed.")) << t.screen();
  // The tool's result (what the model reads next) carries the answer, with the default kept.
  std::string sent = sent_to_model();
  EXPECT_NE(sent.find(R"(the user answered {\"action\":\"accept\",\"content\":{\"environment\":\"production\",)"
                      R"(\"note\":\"friday\",\"replicas\":2}})"),
            std::string::npos)
      << sent;
  EXPECT_EQ(t.screen().find("oppx-exited"), std::string::npos) << t.screen();
}

TEST_F(ServerQuestions, TheChatShowsAnAddressToOpenAndItNeverReachesTheModel) {
  std::string seen = home.root() + "/browser-url";
  std::string script = home.root() + "/browser";
  std::ofstream(script) << "#!/bin/sh\nprintf '%s\\n' \"$1\" > '" << seen << "'\n";
  ::chmod(script.c_str(), 0700);
  ::setenv("BROWSER", script.c_str(), 1);
  serve({action("asking.open_page"), reply("Signed."), action("asking.open_page"), reply("Not signed.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.wait_for("/help for commands")) << t.screen();
  t.type("sign the terms");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("asks you to open this address in your browser:")) << t.screen();
  EXPECT_NE(t.screen().find("https://terms.example/sign?session=s3cr3t-page-4711"), std::string::npos);
  t.type("y");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Signed.")) << t.screen();
  EXPECT_NE(t.screen().find("Opened with $BROWSER."), std::string::npos) << t.screen();
  ASSERT_TRUE(when_file_changes(seen, [&] { return !read_file(seen).empty(); }));
  EXPECT_EQ(read_file(seen), "https://terms.example/sign?session=s3cr3t-page-4711\n");
  // Ctrl-C at the question cancels it (MCP "cancel"), and the chat goes on.
  t.type("again");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("asks you to open this address in your browser:", 2)) << t.screen();
  t.keys({"C-c"});
  ASSERT_TRUE(t.wait_for("Not signed.")) << t.screen();
  std::string sent = sent_to_model();
  EXPECT_EQ(sent.find("s3cr3t-page-4711"), std::string::npos) << sent;
  EXPECT_NE(sent.find(R"(the user answered {\"action\":\"accept\"})"), std::string::npos) << sent;
  EXPECT_NE(sent.find(R"(the user answered {\"action\":\"cancel\"})"), std::string::npos) << sent;
}

TEST_F(ServerQuestions, PrintModeDeclinesUnlessToldToAcceptTheDefaults) {
  serve({action("asking.confirm_deploy"), reply("Declined, so nothing was deployed."), action("asking.confirm_deploy"),
         reply("Deployed to staging.")});
  Result declined = oppx({"-p", "deploy", "it"}, std::chrono::seconds(60));
  ASSERT_EQ(declined.exit_code, 0) << declined.out << declined.err;
  EXPECT_NE(declined.err.find("asking asked to fill in a form; declined, as this session cannot ask"),
            std::string::npos)
      << declined.err;
  Result accepted = oppx({"-p", "deploy", "it", "--elicit", "accept-defaults"}, std::chrono::seconds(60));
  ASSERT_EQ(accepted.exit_code, 0) << accepted.out << accepted.err;
  EXPECT_EQ(accepted.out, "Deployed to staging.\n");
  EXPECT_NE(accepted.err.find("asking asked to fill in a form; accepted with its defaults"), std::string::npos)
      << accepted.err;
  std::string sent = sent_to_model();
  EXPECT_NE(sent.find(R"(the user answered {\"action\":\"decline\"})"), std::string::npos) << sent;
  EXPECT_NE(sent.find(R"(the user answered {\"action\":\"accept\",\"content\":{\"environment\":\"staging\",)"
                      R"(\"replicas\":2}})"),
            std::string::npos)
      << sent;
  Result wrong = oppx({"-p", "deploy", "--elicit", "ask"});
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("--elicit takes decline or accept-defaults (print mode cannot ask)"), std::string::npos)
      << wrong.err;
}

// An address the server gives is handed to a browser only when it is a web one: another scheme
// could start whatever program claims it. The server's text is escaped before it is shown.
TEST(ElicitForm, OnlyAWebAddressIsOpenedAndTheServersWordsAreEscaped) {
  std::string seen = std::string(::testing::TempDir()) + "/oppx-elicit-browser";
  ::unlink(seen.c_str());
  ::setenv("BROWSER", ("touch " + seen).c_str(), 1);
  proto::ElicitQuestion q{"evil", "t", "url", "open \x1b]52;c;AAAA\x07 me", {}, "ssh://attacker.example/x"};
  std::string said;
  auto answer = cli::ask_elicitation(
      q, [](const std::string&) { return std::optional<std::string>("y"); },
      [&said](const std::string& t) { said += t; });
  ::unsetenv("BROWSER");
  EXPECT_EQ(answer.action, "accept");
  EXPECT_NE(said.find("Not opened: only http and https addresses are opened"), std::string::npos) << said;
  EXPECT_EQ(said.find("Opened with"), std::string::npos) << said;
  EXPECT_EQ(said.find('\x1b'), std::string::npos) << "no escape sequence reaches the terminal";
}

}  // namespace
}  // namespace oppx::test
