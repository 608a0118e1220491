// The agent and the session's browser, on the real Playwright MCP server and Debian's chromium,
// with the scripted model server: the `browser` action asked once (y, a, N, text), its 21 tools
// joining the list, two clicks that are two, a read that repeats only when nothing changed, the
// loop guard, browser_evaluate asked every time, the hint, `oppx -p` with the browser on, and the
// install on the first yes.
#include "chat/agent.h"
#include "cli/browser.h"
#include "common/playwright.h"
#include "tests/support/browser_support.h"
#include "tests/support/model_steps.h"
#include "tests/support/scripted_front.h"
#include "tests/support/scripted_model.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>

namespace oppx::test {
namespace {

namespace json = boost::json;

std::string args(const json::object& o) { return says(json::serialize(o)); }

json::array action_enum(const json::object& body) {
  return body.at("response_format").at("json_schema").at("schema").at("properties").at("action").at("enum").as_array();
}
bool offers(const json::object& body, std::string_view name) {
  auto e = action_enum(body);
  return std::find(e.begin(), e.end(), json::value(name)) != e.end();
}
std::size_t playwright_tools(const json::object& body) {
  auto e = action_enum(body);
  return std::count_if(e.begin(), e.end(), [](const json::value& v) {
    return std::string_view(v.as_string()).rfind("playwright.", 0) == 0;
  });
}
std::string system_of(const json::object& body) {
  return std::string(body.at("messages").as_array().at(0).at("content").as_string());
}
std::string last_user(const json::object& body) {
  const auto& m = body.at("messages").as_array();
  for (auto it = m.rbegin(); it != m.rend(); ++it) {
    if (it->at("role") == "user") return std::string(it->at("content").as_string());
  }
  return {};
}

struct AgentBrowser : ::testing::Test {
  TempHome home;
  InRepository repo{home};
  Page page;
  std::optional<ScriptedModel> model;
  std::optional<SyncClient> client;
  std::optional<chat::DaemonTools> daemon;
  std::optional<chat::ModelClient> mclient;
  std::optional<chat::Agent> agent;
  ScriptedFront front;
  json::object click = {{"element", "Add button"}, {"target", "#add"}};

  void SetUp() override {
    link_engine(home);
    ASSERT_FALSE(page.url.empty()) << page.server.err();
  }
  void TearDown() override {
    agent.reset();
    client.reset();
    oppx({"daemon", "stop"});
    ::unsetenv("OPPX_SERVER");
  }
  void serve(const std::vector<std::string>& steps) {
    std::string list;
    for (const auto& s : steps) list += (list.empty() ? "" : ",") + s;
    model.emplace(home.root(), R"({"models": [{"id": "m1", "max_model_len": 65536}], "completions": [)" + list + "]}");
    ASSERT_TRUE(model->started()) << model->err();
    ::setenv("OPPX_SERVER", model->url().c_str(), 1);
  }
  // The chat's loop, in-process, with its own session.
  void open_chat() {
    client = hello_client(home);
    ASSERT_TRUE(client);
    daemon.emplace(*client, repo.root());
    ASSERT_EQ(daemon->open_session("chat"), "");
    chat::ModelConfig mc;
    mc.server = model->url();
    mc.model = "m1";
    mclient.emplace(mc);
    agent.emplace(*mclient, *daemon, front, chat::AgentOptions{"chat"});
    ASSERT_EQ(agent->start(), "");
  }
  std::vector<std::string> statuses(const chat::TurnResult& t) {
    std::vector<std::string> s;
    for (const auto& a : t.actions) s.push_back(a.name + " " + a.status);
    return s;
  }
};

TEST_F(AgentBrowser, AskedOnceAYesStartsItTwoClicksAreTwoAndEvaluateIsAskedEveryTime) {
  serve({action("browser"), action("playwright.browser_navigate"), args({{"url", page.url}}),
         action("playwright.browser_click"), args(click), action("playwright.browser_click"), args(click),
         action("playwright.browser_snapshot"), args({}), action("playwright.browser_snapshot"), args({}),
         action("playwright.browser_console_messages"), args({{"level", "error"}}),
         action("playwright.browser_evaluate"), args({{"function", "() => document.title"}}),
         action("playwright.browser_evaluate"), args({{"function", "() => document.title"}}),
         reply("Two clicks; one console error.")});
  open_chat();
  front.answers = {{chat::Answer::kYes, ""}, {chat::Answer::kYes, ""}, {chat::Answer::kAlwaysTool, ""}};
  chat::TurnResult t = agent->turn("open " + page.url + ", click Add twice and tell me the console errors");
  ASSERT_FALSE(t.error) << t.error->message;
  EXPECT_EQ(statuses(t),
            (std::vector<std::string>{"browser ran", "playwright.browser_navigate ran", "playwright.browser_click ran",
                                      "playwright.browser_click ran", "playwright.browser_snapshot ran",
                                      "playwright.browser_snapshot repeat", "playwright.browser_console_messages ran",
                                      "playwright.browser_evaluate ran", "playwright.browser_evaluate ran"}));
  // Two clicks are two: the page counts them; the console error is in the result.
  EXPECT_NE(t.actions.at(4).text.find("clicks: 2"), std::string::npos) << t.actions.at(4).text;
  EXPECT_NE(t.actions.at(6).text.find("widget failed to load"), std::string::npos) << t.actions.at(6).text;
  // Asked: the browser once, then evaluate each time; "always" for evaluate saved nothing.
  ASSERT_EQ(front.asked.size(), 3u);
  EXPECT_EQ(front.asked[0].action, "browser");
  EXPECT_EQ(front.asked[1].action, "playwright.browser_evaluate");
  EXPECT_TRUE(front.asked[1].once_only);
  EXPECT_EQ(front.asked[2].action, "playwright.browser_evaluate");
  EXPECT_EQ(oppx({"permissions", "list", "--json"}).out.find("playwright"), std::string::npos);

  auto bodies = model->completions();
  // Before: the action and its line, and the hint on the message (it names a URL).
  EXPECT_TRUE(offers(bodies[0], "browser"));
  EXPECT_EQ(playwright_tools(bodies[0]), 0u);
  EXPECT_NE(system_of(bodies[0]).find("\n- browser: start a headless browser"), std::string::npos);
  EXPECT_NE(last_user(bodies[0]).find("grep and read see the files, not a running page"), std::string::npos);
  // After: 21 tools and no browser action; the prompt was rebuilt once and the user told.
  EXPECT_FALSE(offers(bodies[1], "browser"));
  EXPECT_EQ(playwright_tools(bodies[1]), 21u);
  EXPECT_FALSE(offers(bodies[1], "playwright.browser_take_screenshot"));
  EXPECT_NE(system_of(bodies[1]).find("- playwright.browser_click: "), std::string::npos);
  EXPECT_NE(front.notices.find("prefix cache"), std::string::npos) << front.notices;
  EXPECT_TRUE(agent->browser_running());
}

TEST_F(AgentBrowser, TheSameClickSixTimesInARowIsRefusedAsALoop) {
  std::vector<std::string> steps{action("browser"), action("playwright.browser_navigate"), args({{"url", page.url}})};
  for (int i = 0; i < 6; ++i) {
    steps.push_back(action("playwright.browser_click"));
    steps.push_back(args(click));
  }
  steps.insert(steps.end(), {action("playwright.browser_snapshot"), args({}), reply("Stopped.")});
  serve(steps);
  open_chat();
  front.answers = {{chat::Answer::kYes, ""}};
  chat::TurnResult t = agent->turn("click Add until it counts 6");
  ASSERT_FALSE(t.error) << t.error->message;
  ASSERT_EQ(t.actions.size(), 9u);  // browser, navigate, six clicks, snapshot
  for (int i = 2; i < 7; ++i) EXPECT_EQ(t.actions[i].status, "ran") << i;
  EXPECT_EQ(t.actions[7].status, "refused");
  EXPECT_NE(t.actions[7].text.find("a loop"), std::string::npos) << t.actions[7].text;
  EXPECT_NE(t.actions[8].text.find("clicks: 5"), std::string::npos) << t.actions[8].text;
}

TEST_F(AgentBrowser, TextIsPassedOnANoHoldsForTheSessionAndTheHintGoesWithTheOffer) {
  serve({action("browser"), action("browser"), action("browser"), reply("I'll read the code instead."),
         reply("Still without it.")});
  open_chat();
  front.answers = {{chat::Answer::kText, "use curl instead"}, {chat::Answer::kNo, ""}};
  chat::TurnResult t = agent->turn("the dev server shows a blank page");
  ASSERT_FALSE(t.error) << t.error->message;
  ASSERT_EQ(t.actions.size(), 2u);
  EXPECT_EQ(t.actions[0].status, "declined");
  EXPECT_EQ(t.actions[1].status, "declined");
  EXPECT_EQ(front.asked.size(), 2u) << "a third browser action is not asked: it is not offered";
  auto bodies = model->completions();
  EXPECT_NE(json::serialize(bodies[1]).find("use curl instead"), std::string::npos);
  EXPECT_TRUE(offers(bodies[1], "browser")) << "text is not a no";
  EXPECT_FALSE(offers(bodies[2], "browser"));
  EXPECT_EQ(system_of(bodies[2]).find("- browser:"), std::string::npos);
  EXPECT_NE(json::serialize(bodies[2]).find("Do not ask for it again"), std::string::npos);
  EXPECT_NE(json::serialize(bodies[3]).find("not an action you can take now"), std::string::npos);
  EXPECT_NE(last_user(bodies[0]).find("grep and read"), std::string::npos);
  // The next turn: still no browser, and no hint since it is not offered.
  chat::TurnResult again = agent->turn("and now localhost:5173 is blank too");
  ASSERT_FALSE(again.error);
  bodies = model->completions();
  EXPECT_FALSE(offers(bodies.back(), "browser"));
  EXPECT_EQ(last_user(bodies.back()).find("grep and read"), std::string::npos) << last_user(bodies.back());
  EXPECT_FALSE(agent->browser_running());
}

TEST_F(AgentBrowser, AlwaysTurnsItOnAndPrintModeThenStartsItWithTheSession) {
  // Print mode with the browser off: neither the action (it cannot ask) nor the tools.
  serve({reply("No browser here.")});
  Result off = oppx({"-p", "open", page.url}, 90s);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_FALSE(offers(model->completions()[0], "browser"));
  EXPECT_EQ(playwright_tools(model->completions()[0]), 0u);

  serve({action("browser"), reply("Started.")});
  open_chat();
  front.answers = {{chat::Answer::kAlwaysTool, ""}};
  chat::TurnResult t = agent->turn("check the page");
  ASSERT_EQ(t.actions.at(0).status, "ran") << t.actions.at(0).text;
  EXPECT_NE(read_file(home.root() + "/config/oppx/config.json").find("\"browser_auto\":true"), std::string::npos);

  // Print mode now has the browser from the start, before the first request, without asking.
  serve({action("playwright.browser_navigate"), args({{"url", page.url}}), reply("Opened.")});
  Result on = oppx({"-p", "open", page.url, "--json"}, 90s);
  ASSERT_EQ(on.exit_code, 0) << on.out << on.err;
  json::object out = json::parse(on.out).as_object();
  EXPECT_EQ(out.at("actions").at(0).at("status"), "ran") << on.out;
  EXPECT_NE(json::serialize(out.at("actions").at(0).at("text")).find("Counter"), std::string::npos) << on.out;
  EXPECT_EQ(playwright_tools(model->completions()[0]), 21u);
  EXPECT_FALSE(offers(model->completions()[0], "browser"));
}

// The first yes installs the pinned server with npm into the engine folder of the user (here the
// test's HOME) and the browser starts; `oppx browser install --update` refreshes it; without
// Node.js the install says what to do. npm's cache is the build folder's, not the user's.
struct InstallingFront : ScriptedFront {
  std::string prepare_browser() override { return cli::prepare_browser(); }
};

TEST(BrowserInstall, TheFirstYesInstallsThePinnedServerAndItStarts) {
  TempHome home;
  InRepository repo{home};
  Page page;
  ASSERT_FALSE(page.url.empty()) << page.server.err();
  ::setenv("npm_config_cache", OPPX_NPM_CACHE, 1);
  ASSERT_EQ(playwright::installed_version(), "");
  ScriptedModel model(home.root(), R"({"models": [{"id": "m1", "max_model_len": 65536}], "completions": [)" +
                                       action("browser") + "," + action("playwright.browser_navigate") + "," +
                                       says(json::serialize(json::object{{"url", page.url}})) + "," +
                                       reply("It says Counter.") + "]}");
  ASSERT_TRUE(model.started()) << model.err();
  auto client = hello_client(home);
  ASSERT_TRUE(client);
  chat::DaemonTools daemon(*client, repo.root());
  ASSERT_EQ(daemon.open_session("chat"), "");
  chat::ModelConfig mc;
  mc.server = model.url();
  mc.model = "m1";
  chat::ModelClient mclient(mc);
  InstallingFront front;
  front.answers = {{chat::Answer::kYes, ""}};
  chat::Agent agent(mclient, daemon, front, chat::AgentOptions{"chat"});
  ASSERT_EQ(agent.start(), "");
  chat::TurnResult t = agent.turn("what does " + page.url + " say?");
  ASSERT_FALSE(t.error) << t.error->message;
  ASSERT_EQ(t.actions.size(), 2u);
  EXPECT_EQ(t.actions[0].status, "ran") << t.actions[0].text;
  EXPECT_EQ(t.actions[1].status, "ran") << t.actions[1].text;
  EXPECT_EQ(playwright::installed_version(), playwright::kMcpVersion);
  EXPECT_EQ(playwright::engine_dir(), home.root() + "/data/oppx/playwright");

  Result update = oppx({"browser", "install", "--update"}, 120s);
  EXPECT_EQ(update.exit_code, 0) << update.err;
  EXPECT_NE(update.err.find("Refreshing @playwright/mcp@" + std::string(playwright::kMcpVersion)), std::string::npos)
      << update.err;
  EXPECT_EQ(oppx({"browser", "status", "--json"}).out.find("\"installed\":null"), std::string::npos);

  // No node on PATH: the install says so and what to do.
  std::string path = ::getenv("PATH");
  Result none = run({"env", "PATH=/nonexistent", OPPX_BIN, "browser", "install"});
  EXPECT_EQ(none.exit_code, 1) << none.out << none.err;
  EXPECT_NE(none.err.find("needs Node.js 18+"), std::string::npos) << none.err;
  EXPECT_EQ(::getenv("PATH"), path);
  client.reset();
  oppx({"daemon", "stop"});
  ::unsetenv("npm_config_cache");
}

}  // namespace
}  // namespace oppx::test
