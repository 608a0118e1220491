// Which MCP era a stdio server speaks, found at its first start and remembered (issue 28): the
// server/discover probe, then initialize when the server refuses it, leaves it unanswered past a
// short bound, or even stops on it; the next start (another daemon) goes straight to the era it
// spoke. Every server here is fake_mcp_server, a real child, whose log has each line it received.
#include "tests/support/connector_fixture.h"
#include "tests/support/model_steps.h"
#include "tests/support/scripted_model.h"
#include "tests/support/terminal.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace oppx::test {
namespace {

namespace json = boost::json;

struct McpEras : ConnectorFixture {
  // The methods of the requests a fake received, in order (its --log file).
  static std::vector<std::string> methods(const std::string& log) {
    std::vector<std::string> out;
    for (const std::string& line : lines(log)) {
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      const json::value* m = !ec && v.is_object() ? v.as_object().if_contains("method") : nullptr;
      if (m && m->is_string() && v.as_object().contains("id")) out.emplace_back(m->as_string());
    }
    return out;
  }
  // Stops the daemon and starts another, once its connectors started: what it knows of the
  // connector is what it kept on disk (its tools shown while it starts are those cached).
  void next_daemon() {
    ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
    connectors_settled(home, home.root());
  }
  void TearDown() override {
    ConnectorFixture::TearDown();
    ::unsetenv("OPPX_MCP_DISCOVER_TIMEOUT_MS");
  }
};

TEST_F(McpEras, AServerThatRefusesTheProbeIsInitializedAtOnceAndItsEraRemembered) {
  std::string dir = fake_dir("refuses");
  std::string log = dir + "/lines";
  write_config(stdio("refuses", FAKE_MCP_SERVER, {"ok", dir, "--log=" + log}));
  json::object e = entry("refuses");
  ASSERT_EQ(e.at("state"), json::value("running")) << e;
  EXPECT_EQ(e.at("protocol"), json::value("2025-06-18"));
  EXPECT_EQ(methods(log), (std::vector<std::string>{"server/discover", "initialize", "tools/list"}));
  EXPECT_EQ(lines(dir + "/pids").size(), 1u);

  next_daemon();
  ASSERT_EQ(entry("refuses").at("state"), json::value("running"));
  // Straight to initialize: no probe for a server known to speak 2025.
  EXPECT_EQ(methods(log),
            (std::vector<std::string>{"server/discover", "initialize", "tools/list", "initialize", "tools/list"}));
  EXPECT_EQ(lines(dir + "/pids").size(), 2u) << "one start per daemon";
}

TEST_F(McpEras, AProbeLeftUnansweredPastItsBoundIsFollowedByInitializeOnTheSameConnection) {
  ::setenv("OPPX_MCP_DISCOVER_TIMEOUT_MS", "300", 1);
  std::string dir = fake_dir("late");
  std::string log = dir + "/lines";
  write_config(stdio("late", FAKE_MCP_SERVER, {"discover_late", dir, "--log=" + log}));
  json::object e = entry("late");
  ASSERT_EQ(e.at("state"), json::value("running")) << e;
  EXPECT_EQ(methods(log), (std::vector<std::string>{"server/discover", "initialize", "tools/list"}));
  EXPECT_EQ(lines(dir + "/pids").size(), 1u) << "never started twice";
  // Its late refusal of the probe changed nothing: calls go through.
  Result call = oppx({"mcp", "call", "late", "echo", R"({"message":"hi"})"});
  EXPECT_EQ(call.out, "fake echo hi\n") << call.err;
}

TEST_F(McpEras, AServerThatStopsOnTheProbeIsStartedOnceMoreStraightWithInitialize) {
  std::string dir = fake_dir("stops");
  std::string log = dir + "/lines";
  write_config(stdio("stops", FAKE_MCP_SERVER, {"discover_exit", dir, "--log=" + log}));
  json::object e = entry("stops");
  ASSERT_EQ(e.at("state"), json::value("running")) << e;
  EXPECT_EQ(methods(log), (std::vector<std::string>{"server/discover", "initialize", "tools/list"}));
  EXPECT_EQ(lines(dir + "/pids").size(), 2u);
  Result call = oppx({"mcp", "call", "stops", "echo"});
  EXPECT_EQ(call.out, "fake echo\n") << call.err;

  // Remembered: the next daemon starts it once, with initialize.
  next_daemon();
  ASSERT_EQ(entry("stops").at("state"), json::value("running"));
  EXPECT_EQ(lines(dir + "/pids").size(), 3u);
  EXPECT_EQ(methods(log), (std::vector<std::string>{"server/discover", "initialize", "tools/list", "tools/call",
                                                    "initialize", "tools/list"}));
}

// A real MCP 2026-07-28 server (tests/support/modern_server.mjs, on the official 2.x server
// library) over stdio and over HTTP, beside server-everything (2025-11-25): one listing, calls,
// a question asked through a result that wants input, and one agent turn using both eras.
struct BothEras : ConnectorFixture {
  const std::string modern = std::string(OPPX_TEST_SUPPORT) + "/modern_server.mjs";
  const std::string sdk = std::string(OPPX_NPM_DIR) + "/node_modules";
  std::unique_ptr<Process> web;
  std::optional<ScriptedModel> model;

  void SetUp() override {
    web = std::make_unique<Process>(std::vector<std::string>{"env", "OPPX_MODERN_SDK=" + sdk, "node", modern, "http"});
    ASSERT_TRUE(web->wait_for_stderr("listening on port")) << web->err();
    int port = 0;
    std::sscanf(web->err().c_str(), "listening on port %d", &port);
    ASSERT_GT(port, 0) << web->err();
    write_config(stdio_entry("modern", "node", {modern, "stdio"}, {{"OPPX_MODERN_SDK", sdk}}) + "," +
                 "\"web\":" + json::serialize(json::object{{"type", "http"}, {"url", fmt_url(port)}}) + "," +
                 stdio("everything", "node", {kEverything, "stdio"}));
  }
  static std::string fmt_url(int port) { return "http://127.0.0.1:" + std::to_string(port) + "/mcp"; }
  void TearDown() override {
    ConnectorFixture::TearDown();
    ::unsetenv("OPPX_SERVER");
  }
};

TEST_F(BothEras, ListedCalledAndAskedSideBySide) {
  for (const char* name : {"modern", "web", "everything"})
    ASSERT_EQ(entry(name).at("state"), json::value("running")) << name << ": " << entry(name);
  EXPECT_EQ(entry("modern").at("protocol"), json::value("2026-07-28"));
  EXPECT_EQ(entry("web").at("protocol"), json::value("2026-07-28"));
  EXPECT_EQ(entry("everything").at("protocol"), json::value("2025-11-25"));
  Result list = oppx({"mcp", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  Result get = oppx({"mcp", "get", "web"});
  EXPECT_NE(get.out.find("  protocol: MCP 2026-07-28\n"), std::string::npos) << get.out;
  for (const char* name : {"modern", "web", "everything"}) {
    Result echo = oppx({"mcp", "call", name, "echo", R"({"message":"hi"})"});
    EXPECT_EQ(echo.out, "Echo: hi\n") << name << ": " << echo.err;
  }
  // The form its result asks for goes to the caller; the call is sent again with the answer.
  auto c = client();
  c.on_request([](const std::string& method, const json::value&) -> SyncClient::RequestResult {
    EXPECT_EQ(method, "mcp/elicit");
    return json::value(json::object{{"action", "accept"}, {"content", json::object{{"name", "Ann"}}}});
  });
  for (const char* name : {"modern", "web"}) {
    auto r = c.call("tools/call", json::object{{"connector", name}, {"tool", "confirm"}, {"arguments", {}}}, 30s);
    ASSERT_TRUE(r) << name << ": " << r.error().message;
    EXPECT_EQ(r->at("text"), json::value("confirmed Ann x2")) << name;
  }
  // A script's call declines it (its defaults do not complete the form), and says so.
  Result declined = oppx({"mcp", "call", "web", "confirm", "{}", "--elicit", "accept-defaults"});
  EXPECT_EQ(declined.out, "declined\n") << declined.err;
  EXPECT_NE(declined.err.find("its defaults do not complete the form (Name is required)"), std::string::npos)
      << declined.err;
}

// Its list changes arrive on the standing subscriptions/listen, over stdio and HTTP: a tool it adds
// is listed without a restart, and subscribers hear of it (mcp/changed).
TEST_F(BothEras, ListChangesArriveOnTheStandingSubscription) {
  for (const char* name : {"modern", "web"}) ASSERT_EQ(entry(name).at("state"), json::value("running")) << name;
  auto watcher = client();
  ASSERT_TRUE(watcher.call("mcp/subscribe", json::object{}, 10s));
  for (const char* name : {"modern", "web"}) {
    Result grow = oppx({"mcp", "call", name, "grow", "{}"});
    ASSERT_EQ(grow.exit_code, 0) << grow.err;
    bool heard = false;
    for (auto deadline = std::chrono::steady_clock::now() + 15s;
         !heard && std::chrono::steady_clock::now() < deadline;) {
      auto line = watcher.read_line(1s);
      if (!line) continue;
      json::value v = json::parse(*line);
      const json::value* p = v.as_object().if_contains("params");
      heard = v.as_object().contains("method") && v.at("method") == "mcp/changed" && p && p->at("name") == name &&
              p->as_object().contains("tools_changed") && p->at("tools_changed") == json::value(true);
    }
    ASSERT_TRUE(heard) << name;
    Result tools = oppx({"mcp", "tools", name});
    EXPECT_NE(tools.out.find(std::string(name) + ".grown"), std::string::npos) << tools.out;
  }
  // The standing subscriptions are no requests waiting.
  EXPECT_EQ(entry("web").at("requests_waiting"), json::value(0));
}

// The chat lists both eras' servers in its welcome box, and a 2026-07-28 server's form (asked
// through a result that wants input) is asked there like any other, then the call sent again.
TEST_F(BothEras, TheChatShowsBothErasAndAsksAModernServersForm) {
  for (const char* name : {"modern", "web", "everything"}) ASSERT_EQ(entry(name).at("state"), json::value("running"));
  model.emplace(home.root(), R"({"models": [{"id": "m1", "max_model_len": 32768}], "completions": [)" +
                                 action("web.confirm") + "," + reply("Confirmed.") + "]}");
  ASSERT_TRUE(model->started()) << model->err();
  Terminal t(home, model->url());
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.wait_for("/help for commands")) << t.screen();
  for (const char* line : {"modern      running", "web         running", "everything  running"})
    EXPECT_NE(t.screen().find(line), std::string::npos) << line << "\n" << t.screen();
  t.type("confirm it");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Call web.confirm")) << t.screen();
  t.type("y");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("web (confirm) asks:")) << t.screen();
  ASSERT_TRUE(t.wait_for("Name *:")) << t.screen();
  t.type("Ann");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Count (a whole number) [2]:")) << t.screen();
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Send it? [Y] yes")) << t.screen();
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Confirmed.")) << t.screen();
  std::string sent = json::serialize(model->completions().back());
  EXPECT_NE(sent.find("confirmed Ann x2"), std::string::npos) << sent;
}

TEST_F(BothEras, OneTurnCallsAServerOfEachEra) {
  for (const char* name : {"modern", "everything"}) ASSERT_EQ(entry(name).at("state"), json::value("running"));
  std::string steps = action("modern.add") + "," + says(R"({"a":2,"b":3})") + "," + action("everything.get-sum") + "," +
                      says(R"({"a":2,"b":40})") + "," + reply("5 and 42.");
  model.emplace(home.root(), R"({"models": [{"id": "m1", "max_model_len": 32768}], "completions": [)" + steps + "]}");
  ASSERT_TRUE(model->started()) << model->err();
  ::setenv("OPPX_SERVER", model->url().c_str(), 1);
  Result r = oppx({"-p", "add", "them", "--json"}, 60s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json::object out = json::parse(r.out).as_object();
  EXPECT_EQ(out.at("reply"), json::value("5 and 42."));
  const json::array& actions = out.at("actions").as_array();
  ASSERT_EQ(actions.size(), 2u) << r.out;
  EXPECT_EQ(actions[0].at("text"), json::value("The sum of 2 and 3 is 5."));
  EXPECT_EQ(actions[1].at("text"), json::value("The sum of 2 and 40 is 42."));
}

}  // namespace
}  // namespace oppx::test
