// OAuth logins from the terminal chat (issue 27), as a person does them: `oppx` in a real
// pseudo-terminal (tmux), tests/support/fake_oauth_server.js (an MCP server and its authorization
// server) as a real child, the scripted model server. The browser is $BROWSER: a script that
// follows the login's redirects (tests/conformance/browser.js), or one that only writes the
// address down, for a user whose browser is on another machine and who pastes where it ended.
#include "tests/support/model_steps.h"
#include "tests/support/scripted_model.h"
#include "tests/support/terminal.h"
#include "tests/support/waits.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include <sys/stat.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

const std::string kFakeOAuth = std::string(OPPX_TEST_SUPPORT) + "/fake_oauth_server.js";
const std::string kFollowingBrowser = std::string(OPPX_TEST_SUPPORT) + "/../conformance/browser.js";

struct ChatLogin : ::testing::Test {
  TempHome home;
  std::optional<ScriptedModel> model;
  std::unique_ptr<Process> fake;
  int port = 0;

  void SetUp() override {
    fake = std::make_unique<Process>(std::vector<std::string>{"node", kFakeOAuth, "--admin-tool"});
    ASSERT_TRUE(fake->wait_for_stdout(" ready\n")) << fake->err();
    int second = 0;
    std::sscanf(fake->out().c_str(), "ports %d %d", &port, &second);
    ASSERT_GT(port, 0) << fake->out();
    home.write_mcp_config(fmt::format(R"("web":{{"type":"http","url":"http://127.0.0.1:{}/mcp"}})", port));
  }
  void TearDown() override {
    oppx({"daemon", "stop"});
    ::unsetenv("BROWSER");
  }
  // $BROWSER for the chat and the commands this test runs (the tmux server takes this process's
  // environment when a Terminal starts it).
  static void browser(const std::string& command) { ::setenv("BROWSER", command.c_str(), 1); }
  void serve(const std::vector<std::string>& steps) {
    std::string list;
    for (const auto& s : steps) list += (list.empty() ? "" : ",") + s;
    model.emplace(home.root(), R"({"models": [{"id": "m1", "max_model_len": 32768}], "completions": [)" + list + "]}");
    ASSERT_TRUE(model->started()) << model->err();
    connectors_settled(home, home.root());  // the daemon started as the other chat tests start it
  }
  std::string fake_out() {
    fake->wait_for_stdout("\x01", std::chrono::milliseconds(100));
    return fake->out();
  }
};

TEST_F(ChatLogin, AToolThatNeedsAWiderLoginIsAskedLoggedInInPlaceAndCalledAgain) {
  browser("node " + kFollowingBrowser);
  Result first = oppx({"mcp", "login", "web"}, std::chrono::seconds(60));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err << fake_out();
  EXPECT_NE(first.out.find("web is running: 3 tools"), std::string::npos) << first.out;
  // list and get say who is logged in and until when; no command shows a token (the fake's are
  // "at-…" and "rt-…"), with --json neither.
  std::string issuer = fmt::format("logged in at http://127.0.0.1:{} until ", port);
  Result list = oppx({"mcp", "list"}), get = oppx({"mcp", "get", "web"}), as_json = oppx({"mcp", "list", "--json"});
  EXPECT_NE(list.out.find(issuer), std::string::npos) << list.out;
  EXPECT_NE(get.out.find("  login:    " + issuer), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("renewed automatically"), std::string::npos) << get.out;
  for (const std::string& shown : {first.out + first.err, list.out, get.out, as_json.out})
    EXPECT_FALSE(std::regex_search(shown, std::regex("(at|rt)-[A-Za-z0-9_-]{20}"))) << shown;
  serve({action("web.admin"), reply("The admin work is done.")});

  Terminal t(home, model->url());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.wait_for("/help for commands")) << t.screen();
  t.type("do the admin work");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Call web.admin")) << t.screen();
  t.type("y");
  t.keys({"Enter"});
  // The server refused it for want of a scope: the chat asks to log in again, naming it.
  ASSERT_TRUE(t.wait_for("Log in to it again in your browser, then repeat the call?")) << t.screen() << fake_out();
  EXPECT_NE(t.screen().find("mcp:admin"), std::string::npos) << t.screen();
  t.type("y");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("The admin work is done.")) << t.screen() << fake_out();
  std::string s = t.screen();
  EXPECT_NE(s.find("Logged in to web"), std::string::npos) << s;
  std::string out = fake_out();
  EXPECT_NE(out.find("mcp tools/call admin 403 insufficient_scope"), std::string::npos) << out;
  // The second login asked for the wider scope, and the call then went through once.
  auto body = model->completions().back();
  std::string sent = json::serialize(body);
  EXPECT_NE(sent.find("admin done"), std::string::npos) << sent;
  EXPECT_EQ(t.screen().find("oppx-exited"), std::string::npos) << t.screen();
}

TEST_F(ChatLogin, SlashMcpAuthTakesTheAddressPastedFromABrowserElsewhere) {
  // The "browser" only writes the address down; the user opens it on another machine and pastes
  // the address that browser was sent back to (which it could not load).
  std::string seen = home.root() + "/browser-url";
  std::string script = home.root() + "/remote-browser";
  std::ofstream(script) << "#!/bin/sh\nprintf '%s\\n' \"$1\" > '" << seen << "'\n";
  ::chmod(script.c_str(), 0700);
  browser(script);
  serve({reply("Hello.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.wait_for("/help for commands")) << t.screen();
  EXPECT_NE(t.screen().find("web  needs a login: /mcp auth web"), std::string::npos) << t.screen();
  t.type("/mcp auth web");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("paste here the address it was sent to")) << t.screen() << fake_out();
  ASSERT_TRUE(when_file_changes(seen, [&] { return !read_file(seen).empty(); })) << t.screen();
  std::string url = read_file(seen);
  url.erase(url.find_last_not_of("\n") + 1);
  // The other machine's browser: the authorization page answers with the redirect to the loopback
  // address, which is read, not followed.
  Process fetch({"node", "-e",
                 "fetch(process.argv[1], {redirect: 'manual'}).then((r) => "
                 "console.log('to ' + r.headers.get('location')))",
                 url});
  ASSERT_TRUE(fetch.wait_for_stdout("\n")) << fetch.err();
  std::string to = fetch.out().substr(3);
  to.erase(to.find_last_not_of("\n") + 1);
  ASSERT_EQ(to.rfind("http://127.0.0.1:", 0), 0u) << to;
  t.type(to);
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("web is running: 3 tools")) << t.screen() << fake_out();
  EXPECT_NE(t.screen().find("Logged in to web"), std::string::npos) << t.screen();
  EXPECT_NE(t.screen().find(to + "\n"), std::string::npos) << "the pasted address, echoed as typed: " << t.screen();
  // The prompt is the chat's again: what is typed next is a message.
  t.type("hi");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Hello.")) << t.screen();
  EXPECT_EQ(t.screen().find("oppx-exited"), std::string::npos) << t.screen();
}

TEST_F(ChatLogin, CtrlCStopsWaitingForALoginAndThePromptStaysUsable) {
  std::string script = home.root() + "/no-browser";
  std::ofstream(script) << "#!/bin/sh\nexit 0\n";
  ::chmod(script.c_str(), 0700);
  browser(script);
  serve({reply("Still here.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.wait_for("/help for commands")) << t.screen();
  t.type("/mcp auth web");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("or press Ctrl-C to stop waiting")) << t.screen() << fake_out();
  t.keys({"C-c"});
  ASSERT_TRUE(t.wait_for("Stopped waiting for the login of web")) << t.screen();
  t.type("hello");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Still here.")) << t.screen();
  EXPECT_EQ(t.screen().find("oppx-exited"), std::string::npos) << t.screen();
}

}  // namespace
}  // namespace oppx::test
