// The session browser through the daemon, on the real Playwright MCP server (build/playwright) and
// Debian's chromium: a page served on 127.0.0.1 opened, a button clicked twice (two clicks), the
// console read, the offered tools and permissions; and that no browser process outlives its
// session: the connection closing, `oppx daemon stop`, and kill -9 of the daemon.
#include "daemon/browser.h"
#include "tests/support/browser_support.h"
#include "tests/support/harness.h"
#include "tests/support/waits.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <dirent.h>
#include <fstream>
#include <set>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

struct BrowserSession : ::testing::Test {
  TempHome home;
  std::string repo = home.root() + "/repo";
  std::optional<SyncClient> c;
  void SetUp() override {
    link_engine(home);
    ::mkdir(repo.c_str(), 0700);
    ::mkdir((repo + "/.git").c_str(), 0700);
    c = hello_client(home);
    ASSERT_TRUE(c);
    ASSERT_TRUE(call("session/open", {{"mode", "chat"}}));
  }
  boost::system::result<json::value, proto::RpcError> call(std::string_view method, json::object params,
                                                           std::chrono::milliseconds limit = 60s) {
    params["cwd"] = repo;
    return c->call(method, params, limit);
  }
  std::string tool(const std::string& name, json::object args) {
    auto r = call("tools/call", {{"connector", "playwright"}, {"tool", name}, {"arguments", std::move(args)}});
    if (!r) return "ERROR " + r.error().kind + ": " + r.error().message;
    return std::string(r->at("text").as_string());
  }
  pid_t server_pid() {
    auto s = call("browser/status", {});
    if (!s) return -1;
    const json::value& session = s->at("session");
    return session.is_object() && session.as_object().contains("pid")
               ? static_cast<pid_t>(session.at("pid").to_number<std::int64_t>())
               : -1;
  }
  // The spare server the daemon keeps for the next session, once it runs: its pid (-1 when it does
  // not run within `limit`).
  pid_t running_spare(std::chrono::milliseconds limit = 60s) {
    if (!status_until(*c, json::object{{"spare_state", "running"}}, limit)) return -1;
    auto s = call("browser/status", {});
    if (!s || s->at("spare").at("state") != "running") return -1;
    return static_cast<pid_t>(s->at("spare").at("pid").to_number<std::int64_t>());
  }
  // A page open in the session's browser and the spare server started after it: every process
  // of both (empty when the spare did not start).
  std::set<pid_t> open_page_and_spare(const std::string& url) {
    std::set<pid_t> tree = open_page(url);
    pid_t spare = running_spare();
    EXPECT_GT(spare, 0) << "no spare server after the first call";
    if (spare <= 0) return {};
    tree.insert(spare);
    return tree;
  }
  // The browser started and a page open in it: the server's processes, Chromium among them.
  std::set<pid_t> open_page(const std::string& url) {
    auto started = call("browser/start", {});
    EXPECT_TRUE(started) << started.error().message;
    std::string text = tool("browser_navigate", {{"url", url}});
    EXPECT_NE(text.find("Counter"), std::string::npos) << text;
    pid_t server = server_pid();
    std::set<pid_t> tree = descendants(server);
    tree.insert(server);
    EXPECT_TRUE(std::any_of(tree.begin(), tree.end(), is_chromium)) << "no Chromium below the server";
    return tree;
  }
};

TEST_F(BrowserSession, OpensAPageClicksTwiceReadsTheConsoleAndEndsWithTheConnection) {
  Page page;
  ASSERT_FALSE(page.url.empty()) << page.server.err();
  auto started = call("browser/start", {});
  ASSERT_TRUE(started) << started.error().message;
  EXPECT_EQ(started->at("state"), "running");
  EXPECT_EQ(started->at("tools"), 21);

  // The offered tools: 21 of the server's 25, without the four that are never offered.
  auto tools = call("mcp/tools", {{"name", "playwright"}});
  ASSERT_TRUE(tools);
  std::set<std::string> names;
  for (const auto& t : tools->at("tools").as_array()) names.insert(std::string(t.at("name").as_string()));
  EXPECT_EQ(names.size(), 21u);
  for (const char* hidden :
       {"browser_run_code_unsafe", "browser_file_upload", "browser_drop", "browser_take_screenshot"})
    EXPECT_FALSE(names.count(hidden)) << hidden;
  EXPECT_TRUE(names.count("browser_navigate") && names.count("browser_click") && names.count("browser_evaluate"));
  auto refused = call("tools/call", {{"connector", "playwright"}, {"tool", "browser_take_screenshot"}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, "not_offered");

  // The list shows it as this session's; permissions: the session allows it, evaluate is asked.
  auto list = call("mcp/list", {});
  ASSERT_TRUE(list);
  bool listed = false;
  for (const auto& e : list->at("connectors").as_array()) {
    if (e.at("name") == "playwright") listed = e.at("state") == "running" && e.at("source") == "browser";
  }
  EXPECT_TRUE(listed) << json::serialize(*list);
  EXPECT_EQ(call("permissions/judge", {{"connector", "playwright"}, {"tool", "browser_click"}})->at("decision"),
            "allow");
  auto evaluate = call("permissions/judge", {{"connector", "playwright"}, {"tool", "browser_evaluate"}});
  EXPECT_EQ(evaluate->at("decision"), "ask");
  EXPECT_NE(std::string(evaluate->at("why").as_string()).find("asked every time"), std::string::npos);
  ASSERT_TRUE(call("permissions/deny", {{"rule", "playwright.browser_click"}}));
  EXPECT_EQ(call("permissions/judge", {{"connector", "playwright"}, {"tool", "browser_click"}})->at("decision"),
            "deny");
  ASSERT_TRUE(call("permissions/remove", {{"rule", "playwright.browser_click"}}));

  // The snapshot and the console entries the server wrote to files are in the result.
  std::string opened = tool("browser_navigate", {{"url", page.url}});
  EXPECT_NE(opened.find("button \"Add\""), std::string::npos) << opened;
  EXPECT_NE(opened.find("widget failed to load"), std::string::npos) << opened;
  EXPECT_EQ(opened.find(".yml"), std::string::npos) << "the snapshot stayed a link: " << opened;
  // The server wrote it in the session's folder (its root), never in the repository.
  std::string folder(started->at("folder").as_string());
  EXPECT_NE(folder.find(home.root() + "/cache/oppx/browser/"), std::string::npos) << folder;
  EXPECT_NE(run({"sh", "-c", "ls " + folder + "/.playwright-mcp/*.yml"}).out, "");
  EXPECT_EQ(run({"sh", "-c", "find " + repo + " -name '*.yml'"}).out, "");
  auto ref_at = opened.find("button \"Add\" [ref=");
  ASSERT_NE(ref_at, std::string::npos);
  std::string ref = opened.substr(ref_at + 18, opened.find(']', ref_at) - ref_at - 18);
  std::string first = tool("browser_click", {{"element", "Add button"}, {"target", ref}});
  EXPECT_EQ(first.find("ERROR"), std::string::npos) << first;
  tool("browser_click", {{"element", "Add button"}, {"target", ref}});
  std::string after = tool("browser_snapshot", {});
  EXPECT_NE(after.find("clicks: 2"), std::string::npos) << after;
  std::string console = tool("browser_console_messages", {{"level", "error"}});
  EXPECT_NE(console.find("widget failed to load"), std::string::npos) << console;

  // The connection closes: the server and every Chromium process of it end.
  pid_t server = server_pid();
  std::set<pid_t> tree = descendants(server);
  tree.insert(server);
  ASSERT_TRUE(std::any_of(tree.begin(), tree.end(), is_chromium));
  c.reset();
  EXPECT_TRUE(wait_for_exits(tree, 15s)) << "a browser process outlived its session";
}

// Finding 1 of issue 25: a browser that stays on the web. With the real server and Chromium, a
// local file's source, javascript: and data: are refused by oppx before Playwright sees the call
// (in navigate and in a new tab), the file's text never appears, and a page on 127.0.0.1 opens.
TEST_F(BrowserSession, OpensOnlyWebAddresses) {
  Page page;
  ASSERT_FALSE(page.url.empty()) << page.server.err();
  std::string secret_file = home.root() + "/private-notes.txt";
  std::ofstream(secret_file) << "the-planted-private-line-4711\n";
  auto started = call("browser/start", {});
  ASSERT_TRUE(started) << started.error().message;
  std::vector<std::string> answers;
  for (const std::string& url :
       {"view-source:file://" + secret_file, "  ViEw-SoUrCe:file://" + secret_file, "\tview-so\nurce:" + page.url,
        std::string("  JaVaScRiPt:document.title='pwned'"), std::string("data:text/html,<h1>made</h1>"),
        "file://" + secret_file, std::string("chrome://version"), std::string("about:config"),
        std::string("blob:null/1234")}) {
    std::string said = tool("browser_navigate", {{"url", url}});
    EXPECT_EQ(said.rfind("ERROR refused_url: browser_navigate may not open a ", 0), 0u) << url << ": " << said;
    answers.push_back(said);
  }
  EXPECT_NE(answers[0].find("view-source: address (it shows the source of any address, your files included)"),
            std::string::npos)
      << answers[0];
  std::string tab = tool("browser_tabs", {{"action", "new"}, {"url", "view-source:file://" + secret_file}});
  EXPECT_EQ(tab.rfind("ERROR refused_url: browser_tabs may not open a view-source: address", 0), 0u) << tab;
  answers.push_back(tab);
  std::string opened = tool("browser_navigate", {{"url", page.url}});
  EXPECT_NE(opened.find("Counter"), std::string::npos) << opened;
  EXPECT_EQ(opened.find("pwned"), std::string::npos) << opened;
  std::string blank = tool("browser_navigate", {{"url", "about:blank"}});
  EXPECT_EQ(blank.find("ERROR"), std::string::npos) << blank;
  answers.push_back(tool("browser_snapshot", {}));
  for (auto& a : answers) EXPECT_EQ(a.find("the-planted-private-line-4711"), std::string::npos) << a;
  // Code the model wrote is asked every time, under any name a tool that takes code has.
  EXPECT_EQ(call("permissions/judge", {{"connector", "playwright"}, {"tool", "browser_evaluate"}})->at("decision"),
            "ask");
}

TEST(Browser, RefusesEveryAddressButWebPagesAsABrowserReadsThem) {
  for (const char* ok : {"http://127.0.0.1:8080/x", "HTTPS://example.com", "about:blank", "ABOUT:BLANK", "example.com",
                         "  https://example.com  ", "blob:https://example.com/1-2-3", "/relative"})
    EXPECT_EQ(daemon::refused_url(ok), "") << ok;
  for (const char* no :
       {"file:///etc/passwd", "FILE:///etc/passwd", "view-source:https://example.com", "view-source:file:///etc/passwd",
        "  JaVaScRiPt:alert(1)", "java\tscript:alert(1)", "\x01javascript:alert(1)", "data:text/html,x",
        "chrome://settings", "chrome-extension://abc/x", "devtools://devtools/x", "blob:null/1", "blob:file:///x",
        "filesystem:http://x/temporary/a", "about:config", "about:srcdoc", "localhost:8080", "ftp://example.com"})
    EXPECT_NE(daemon::refused_url(no), "") << no;
  EXPECT_EQ(daemon::refused_url("javascript:x"),
            "a javascript: address (it runs code the model wrote, which only browser_evaluate may do, asked every "
            "time); only http:, https: and about:blank may be opened");
  json::value nested = json::parse(R"({"action":"new","pages":[{"startUrl":"data:,x"}]})");
  EXPECT_NE(daemon::refused_browser_call("t", nested).find("t may not open a data: address"), std::string::npos);
  EXPECT_EQ(daemon::refused_browser_call("t", json::parse(R"({"text":"file:///etc/passwd"})")), "")
      << "text that is no address is typed, not opened";

  // Code tools: by name, and by a code argument in the listed schema.
  EXPECT_TRUE(daemon::asked_every_time("browser_evaluate"));
  EXPECT_TRUE(daemon::asked_every_time("browser_run_code_unsafe"));
  EXPECT_FALSE(daemon::asked_every_time("browser_click"));
  EXPECT_FALSE(daemon::asked_every_time("browser_act_test_only"));
  daemon::note_code_tools(json::parse(R"([{"name":"browser_act_test_only","inputSchema":{"type":"object",
      "properties":{"Function":{"type":"string"}}}},{"name":"browser_click","inputSchema":{"properties":{"element":{}}}}])")
                              .as_array());
  EXPECT_TRUE(daemon::asked_every_time("browser_act_test_only"));
  EXPECT_FALSE(daemon::asked_every_time("browser_click"));
}

// The daemon stops: the session's server, its Chromium and the spare server all end.
TEST_F(BrowserSession, EndsWithTheDaemonStop) {
  Page page;
  ASSERT_FALSE(page.url.empty());
  std::set<pid_t> tree = open_page_and_spare(page.url);
  ASSERT_FALSE(tree.empty());
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
  EXPECT_TRUE(wait_for_exits(tree, 15s)) << "a browser process outlived the daemon";
}

TEST_F(BrowserSession, EndsWhenTheDaemonIsKilled) {
  Page page;
  ASSERT_FALSE(page.url.empty());
  std::set<pid_t> tree = open_page_and_spare(page.url);
  ASSERT_FALSE(tree.empty());
  auto pid = daemon_pid(home.socket());
  ASSERT_TRUE(pid);
  ASSERT_EQ(::kill(static_cast<pid_t>(*pid), SIGKILL), 0);
  EXPECT_TRUE(wait_for_exits(tree, 15s)) << "a browser process outlived a killed daemon";
}

TEST_F(BrowserSession, IsKeptAcrossAReconnectOfEveryConnector) {
  auto started = call("browser/start", {});
  ASSERT_TRUE(started) << started.error().message;
  pid_t server = server_pid();
  ASSERT_TRUE(call("mcp/reconnect", {}));
  EXPECT_EQ(server_pid(), server);
  EXPECT_TRUE(process_alive(server));
}

// Chromium killed under the server (kill -9 of each of its processes): no call hangs, the session
// keeps its server, and the next navigate opens the page in a new Chromium.
TEST_F(BrowserSession, AKilledChromiumIsStartedAgainByTheNextCall) {
  Page page;
  ASSERT_FALSE(page.url.empty());
  std::set<pid_t> tree = open_page(page.url);
  pid_t server = server_pid();
  std::set<pid_t> chromium;
  for (pid_t p : tree) {
    if (p != server && is_chromium(p)) chromium.insert(p);
  }
  ASSERT_FALSE(chromium.empty());
  for (pid_t p : chromium) ::kill(p, SIGKILL);
  ASSERT_TRUE(wait_for_exits(chromium, 15s)) << "Chromium outlived kill -9";
  // The first call may find the old page gone (an error, never a hang); the next one opens it.
  std::string text = tool("browser_navigate", {{"url", page.url}});
  if (text.find("Counter") == std::string::npos) text = tool("browser_navigate", {{"url", page.url}});
  EXPECT_NE(text.find("Counter"), std::string::npos) << text;
  EXPECT_EQ(server_pid(), server) << "the session's server was replaced";
  std::set<pid_t> after = descendants(server);
  EXPECT_TRUE(std::any_of(after.begin(), after.end(), is_chromium)) << "no new Chromium below the server";
  for (pid_t p : chromium) EXPECT_FALSE(after.count(p));
}

// The spare: started once a session's browser was used, with nothing open (no Chromium below it),
// taken by the next session (the same pid, its files in that session's folder), then replaced.
TEST_F(BrowserSession, TheNextSessionTakesTheSpareServerAndANewOneIsStarted) {
  Page page;
  ASSERT_FALSE(page.url.empty());
  open_page(page.url);
  pid_t spare = running_spare();
  ASSERT_GT(spare, 0) << "no spare server after the first call";
  std::set<pid_t> below = descendants(spare);
  EXPECT_FALSE(std::any_of(below.begin(), below.end(), is_chromium)) << "the spare opened a browser";

  auto second = hello_client(home);
  ASSERT_TRUE(second);
  ASSERT_TRUE(second->call("session/open", json::object{{"mode", "chat"}, {"cwd", repo}}, 10s));
  auto started = second->call("browser/start", json::object{{"cwd", repo}}, 60s);
  ASSERT_TRUE(started) << started.error().message;
  EXPECT_EQ(started->at("pid"), spare) << json::serialize(*started);
  EXPECT_TRUE(std::string(started->at("log").as_string()).ends_with("/spare-1.log")) << json::serialize(*started);
  auto opened = second->call("tools/call",
                             json::object{{"connector", "playwright"},
                                          {"tool", "browser_navigate"},
                                          {"arguments", json::object{{"url", page.url}}},
                                          {"cwd", repo}},
                             60s);
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_NE(std::string(opened->at("text").as_string()).find("button \"Add\""), std::string::npos);
  // Its files went to the second session's folder, the root it was given when taken.
  std::string folder(started->at("folder").as_string());
  EXPECT_NE(run({"sh", "-c", "ls " + folder + "/.playwright-mcp/*.yml"}).out, "") << folder;

  // That call started the next spare.
  pid_t next = running_spare();
  EXPECT_GT(next, 0);
  EXPECT_NE(next, spare);
}

// OPPX_BROWSER_SPARE_IDLE_MS: a spare nobody takes is stopped after that long unused.
TEST_F(BrowserSession, AnUnusedSpareIsStoppedAfterItsIdleTime) {
  ::setenv("OPPX_BROWSER_SPARE_IDLE_MS", "3000", 1);
  c = hello_client(home);  // the spare's idle time is the environment of the client that used the browser
  ::unsetenv("OPPX_BROWSER_SPARE_IDLE_MS");
  ASSERT_TRUE(c);
  ASSERT_TRUE(call("session/open", {{"mode", "chat"}}));
  Page page;
  ASSERT_FALSE(page.url.empty());
  open_page(page.url);
  pid_t spare = running_spare();
  ASSERT_GT(spare, 0) << "no spare server after the first call";
  EXPECT_EQ(call("browser/status", {})->at("spare").at("idle_ms"), 3000);
  EXPECT_TRUE(wait_for_exit(spare, 30s)) << "the unused spare was not stopped";
  EXPECT_EQ(call("browser/status", {})->at("spare").at("state"), "off");
}

TEST(BrowserSpareIdle, ReadsItsVariableAndKeepsTheDefaultForNonsense) {
  using std::chrono::milliseconds;
  EXPECT_EQ(daemon::spare_idle({}), std::chrono::minutes(10));
  EXPECT_EQ(daemon::spare_idle({{"OPPX_BROWSER_SPARE_IDLE_MS", "0"}}), milliseconds(0));
  EXPECT_EQ(daemon::spare_idle({{"OPPX_BROWSER_SPARE_IDLE_MS", "2500"}}), milliseconds(2500));
  for (const char* bad : {"", "ten", "-5", "12ms", "99999999999"})
    EXPECT_EQ(daemon::spare_idle({{"OPPX_BROWSER_SPARE_IDLE_MS", bad}}), std::chrono::minutes(10)) << bad;
}

TEST(Browser, SaysWhatIsMissing) {
  TempHome home;
  auto c = hello_client(home);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->call("session/open", json::object{{"mode", "chat"}, {"cwd", home.root()}}, 10s));
  auto r = c->call("browser/start", json::object{}, 30s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "not_installed");
  EXPECT_NE(json::serialize(r.error().data).find("oppx browser install"), std::string::npos);

  // Installed, but no Chrome or Chromium on PATH (node alone): the message says what to install.
  link_engine(home);
  std::string bin = home.root() + "/bin";
  ::mkdir(bin.c_str(), 0700);
  std::string node = run({"sh", "-c", "command -v node"}).out;
  node.erase(node.find_last_not_of('\n') + 1);
  ASSERT_EQ(::symlink(node.c_str(), (bin + "/node").c_str()), 0);
  std::string path = ::getenv("PATH");
  ::setenv("PATH", bin.c_str(), 1);
  auto other = hello_client(home.socket());
  ::setenv("PATH", path.c_str(), 1);
  ASSERT_TRUE(other);
  ASSERT_TRUE(other->call("session/open", json::object{{"mode", "chat"}, {"cwd", home.root()}}, 10s));
  auto none = other->call("browser/start", json::object{}, 30s);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, "no_browser");
  EXPECT_NE(json::serialize(none.error().data).find("apt install chromium"), std::string::npos);
  // Without a session there is no browser to start.
  auto bare = hello_client(home.socket());
  auto no_session = bare->call("browser/start", json::object{}, 10s);
  ASSERT_FALSE(no_session);
  EXPECT_EQ(no_session.error().kind, "no_session");
}

TEST(Browser, AUserConnectorNamedPlaywrightIsIgnoredWithANote) {
  TempHome home;
  home.write_mcp_config(stdio_entry("playwright", "npx", {"@playwright/mcp@latest"}));
  auto r = oppx({"mcp", "list", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto list = json::parse(r.out);
  const json::object& entry = list.at("connectors").as_array().at(0).as_object();
  EXPECT_EQ(entry.at("state"), "unsupported");
  EXPECT_NE(json::serialize(entry).find("is ignored: oppx runs its own Playwright browser"), std::string::npos)
      << json::serialize(entry);
}

TEST(Browser, ResultsGetTheSnapshotAndConsoleFilesOfItsFolderOnly) {
  TempHome home;
  std::string folder = home.root() + "/cache/browser-session";
  ASSERT_EQ(::system(("mkdir -p " + folder).c_str()), 0);
  std::ofstream(folder + "/page-1.yml") << "- button \"Add\" [ref=e3]\n";
  std::ofstream(folder + "/console-1.log") << "[ERROR] first\n[ERROR] second\n";
  std::ofstream(home.root() + "/secret.yml") << "password: hunter2\n";
  json::value result = json::object{
      {"content",
       json::array{json::object{{"type", "text"},
                                {"text", "### Page\n- Page URL: http://x/\n### Snapshot\n- [Snapshot](" + folder +
                                             "/page-1.yml)\n### Events\n- New console entries: " + folder +
                                             "/console-1.log#L2\n- [Other](" + home.root() + "/secret.yml)"}}}}};
  daemon::inline_browser_files(result, folder);
  std::string text(result.at("content").at(0).at("text").as_string());
  EXPECT_NE(text.find("```yaml\n- button \"Add\" [ref=e3]\n```"), std::string::npos) << text;
  EXPECT_NE(text.find("- New console entries:\n[ERROR] second"), std::string::npos) << text;
  EXPECT_EQ(text.find("[ERROR] first"), std::string::npos) << text;
  EXPECT_EQ(text.find("hunter2"), std::string::npos) << "a file outside the folder was read";
  EXPECT_NE(text.find("secret.yml)"), std::string::npos);
}

}  // namespace
}  // namespace oppx::test
