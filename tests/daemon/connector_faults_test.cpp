// Faults of stdio connectors (RELIABILITY.md "MCP servers over stdio"), each made on purpose by
// fake_mcp_server: the stop order and no orphans (also after kill -9 of the daemon), oversize
// and endless lines, a stderr flood, servers that never read or never answer, endless tool pages
// and list_changed storms, messy output, escapes in descriptions, a crash loop, and recovery in a
// call (repeated only when it never reached the server or the tool is read-only).
#include "tests/support/connector_fixture.h"
#include "tests/support/waits.h"

#include "cli/daemon_client.h"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <optional>
#include <set>
#include <thread>
#include <sys/stat.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

struct ConnectorFaults : ConnectorFixture {
  std::string str(const json::object& o, std::string_view k) {
    const json::value* v = o.if_contains(k);
    return v && v->is_string() ? std::string(v->as_string()) : "";
  }
  static off_t file_size(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
  }
  // Removes every connector from mcp.json; the next command stops them.
  void remove_all() {
    write_config("");
    EXPECT_EQ(oppx({"mcp", "list"}).exit_code, 0);
  }
  // Every child of the daemon reaped (daemon/status "children": none but the group reaper, where
  // one runs), then `pid` gone from /proc: no zombie. The daemon says when it reaps; /proc is the
  // check that what it says is true.
  ::testing::AssertionResult all_reaped(pid_t pid) {
    if (!wait_for_exit(pid, 10s)) return ::testing::AssertionFailure() << pid << " did not exit";
    json::value now = status_of(home.socket());
    std::int64_t reaper = now.is_object() ? now.at("reaper_pid").as_int64() : 0;
    auto w = status_until(home.socket(), {{"children", reaper > 0 ? 1 : 0}}, 10s);
    if (!w) return ::testing::AssertionFailure() << "children left: " << w.describe();
    if (::access(("/proc/" + std::to_string(pid)).c_str(), F_OK) == 0)
      return ::testing::AssertionFailure() << pid << " is still in /proc (a zombie)";
    return ::testing::AssertionSuccess();
  }
};

TEST_F(ConnectorFaults, StopClosesStdinFirstAndNeedsNoSignalForOneThatEnds) {
  std::string dir = fake_dir("eof");
  write_config(stdio("eof", FAKE_MCP_SERVER, {"stdin_eof", dir}));
  ASSERT_EQ(entry("eof").at("state"), json::value("running"));
  pid_t pid = last_pid(dir);
  ASSERT_GT(pid, 0);
  remove_all();
  EXPECT_TRUE(cli::wait_for_exit(pid, 10s));
  EXPECT_TRUE(all_reaped(pid)) << "no zombie";
  EXPECT_EQ(lines(dir + "/events"), std::vector<std::string>{"eof"}) << "ended by its stdin closing, no SIGTERM";
}

TEST_F(ConnectorFaults, StopEndsOneThatIgnoresSigtermAndItsGrandchildren) {
  std::string stubborn = fake_dir("stubborn"), parent = fake_dir("parent");
  write_config(stdio("stubborn", FAKE_MCP_SERVER, {"ignore_term", stubborn}) + "," +
               stdio("parent", FAKE_MCP_SERVER, {"grandchild", parent}));
  ASSERT_EQ(entry("stubborn").at("state"), json::value("running"));
  ASSERT_EQ(entry("parent").at("state"), json::value("running"));
  pid_t a = last_pid(stubborn), b = last_pid(parent);
  auto g = lines(parent + "/grandchild.pid");
  ASSERT_EQ(g.size(), 1u);
  pid_t grandchild = static_cast<pid_t>(std::stol(g[0]));
  ASSERT_TRUE(process_alive(grandchild));
  remove_all();
  EXPECT_TRUE(cli::wait_for_exit(a, 15s)) << "SIGKILL ends what SIGTERM did not";
  auto events = lines(stubborn + "/events");
  EXPECT_NE(std::find(events.begin(), events.end(), "SIGTERM"), events.end()) << "SIGTERM came before SIGKILL";
  EXPECT_TRUE(cli::wait_for_exit(b, 15s));
  EXPECT_TRUE(cli::wait_for_exit(grandchild, 15s)) << "the grandchild goes with its group";
  EXPECT_TRUE(all_reaped(a));
}

TEST_F(ConnectorFaults, KillNineOfTheDaemonLeavesNoOrphans) {
  std::string dir = fake_dir("orphan");
  write_config(stdio("orphan", FAKE_MCP_SERVER, {"grandchild", dir}));
  ASSERT_EQ(entry("orphan").at("state"), json::value("running"));
  pid_t child = last_pid(dir);
  auto g = lines(dir + "/grandchild.pid");
  ASSERT_EQ(g.size(), 1u);
  pid_t grandchild = static_cast<pid_t>(std::stol(g[0]));
  auto daemon = daemon_pid(home.socket());
  ASSERT_TRUE(daemon);
  ASSERT_EQ(::kill(static_cast<pid_t>(*daemon), SIGKILL), 0);
  EXPECT_TRUE(cli::wait_for_exit(child, 10s)) << "PR_SET_PDEATHSIG ends the child";
  EXPECT_TRUE(cli::wait_for_exit(grandchild, 10s)) << "the group reaper ends the grandchild";
}

TEST_F(ConnectorFaults, AnOversizeOrEndlessLineStopsItAndMemoryStaysBounded) {
  write_config(stdio("huge", FAKE_MCP_SERVER, {"huge_line"}) + "," +
               stdio("endless", FAKE_MCP_SERVER, {"endless_line"}));
  DaemonProcess daemon(home, kSmallAsanQuarantine);
  ASSERT_GT(daemon.pid(), 0) << daemon.start_result().err;
  // Measured once both run and the worker is idle: their starts and the certificate roots the
  // worker loads at start are not what this test bounds.
  for (std::string name : {"huge", "endless"}) ASSERT_EQ(entry(name).at("state"), json::value("running")) << name;
  auto settled = status_until(home.socket(), json::object{{"worker_jobs", 0}});
  ASSERT_TRUE(settled) << settled.describe();
  std::int64_t before = settled.status.at("rss_kib").as_int64();
  for (std::string name : {"huge", "endless"}) {
    Result call = oppx({"mcp", "call", name, "echo"}, 60s);
    EXPECT_EQ(call.exit_code, 1) << name;
    EXPECT_NE(call.err.find("message too large"), std::string::npos) << call.err;
    auto e = entry(name);
    EXPECT_EQ(e.at("state"), json::value("failed"));
    EXPECT_NE(str(e, "reason").find("message too large"), std::string::npos) << str(e, "reason");
  }
  // The 16 MiB cap bounds what one line can hold, and the buffer goes back to the system: an
  // endless line would grow without the cap, and a buffer kept (by us, or by glibc in its heap)
  // would be 16 or 32 MiB. Measured growth: 1-1.5 MiB, under 1 MiB under ASan.
  std::int64_t after = status_of(home.socket()).at("rss_kib").as_int64();
  EXPECT_LT(after - before, 12 * 1024) << "daemon RSS grew from " << before << " to " << after << " KiB";
}

TEST_F(ConnectorFaults, AStderrFloodIsDrainedIntoTheBoundedLogAndCallsGoOn) {
  write_config(stdio("loud", FAKE_MCP_SERVER, {"stderr_flood"}));
  for (int i = 0; i < 4; ++i) {  // 3 MiB of stderr before each answer: it would block if not drained
    Result call = oppx({"mcp", "call", "loud", "echo"});
    ASSERT_EQ(call.exit_code, 0) << call.err;
    EXPECT_EQ(call.out, "fake echo\n");
  }
  std::string log = str(entry("loud"), "log");
  EXPECT_LE(file_size(log), 1 << 20);
  EXPECT_GT(file_size(log + ".1"), 0) << "rotated";
  EXPECT_LE(file_size(log + ".1"), 1 << 20);
}

// A slow disk (every write held 3 s before its fsync) delays nobody's call: while the tool-list
// cache write that one connector's start makes is still held, a call to another one answers.
TEST_F(ConnectorFaults, ASlowDiskDelaysNoCall) {
  DaemonProcess daemon(home, "OPPX_TEST_WRITE_DELAY_MS=3000");
  ASSERT_GT(daemon.pid(), 0) << daemon.start_result().err;
  const std::string cache = home.root() + "/state/oppx/mcp-tools-cache.json";
  const std::string held = cache + "." + std::to_string(daemon.pid()) + ".tmp";
  auto exists = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
  const std::string a = stdio("a", FAKE_MCP_SERVER, {"ok", fake_dir("a")});
  write_config(a);
  ASSERT_EQ(entry("a").at("state"), json::value("running"));
  ASSERT_TRUE(when_file_changes(
      cache, [&] { return exists(cache) && !exists(held); }, 15s))
      << "a's tools saved";
  auto c = client();

  write_config(a + "," + stdio("b", FAKE_MCP_SERVER, {"ok", fake_dir("b")}));
  Process list({OPPX_BIN, "mcp", "list"});  // starts b, whose tools are then saved
  ASSERT_TRUE(when_file_changes(
      cache, [&] { return exists(held); }, 15s))
      << "b's tools are being saved";
  auto t0 = std::chrono::steady_clock::now();
  auto r = c.call("tools/call", json::object{{"connector", "a"}, {"tool", "echo"}}, 10s);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_LT(took, 1500ms) << "the call waited for the disk";
  EXPECT_TRUE(exists(held)) << "the write was still held when the call was answered";
  EXPECT_EQ(list.wait().exit_code, 0);
  EXPECT_TRUE(when_file_changes(
      cache, [&] { return !exists(held) && read_file(cache).find("\"b\"") != std::string::npos; }, 10s));
}

// A decision is written on a slow disk (held 3 s before its fsync) and nobody's call waits for
// it: while a permission rule, a consent and a connector added are each still being written, a
// call to a running connector answers; each of them answers once written, and all survive.
TEST_F(ConnectorFaults, ASlowWriteOfADecisionDelaysNoCall) {
  DaemonProcess daemon(home, "OPPX_TEST_WRITE_DELAY_MS=3000");
  ASSERT_GT(daemon.pid(), 0) << daemon.start_result().err;
  auto exists = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
  auto held = [&](const std::string& path) { return path + "." + std::to_string(daemon.pid()) + ".tmp"; };
  const std::string state = home.root() + "/state/oppx/";
  const std::string a = stdio("a", FAKE_MCP_SERVER, {"ok", fake_dir("a")});
  write_config(a);
  ASSERT_EQ(entry("a").at("state"), json::value("running"));
  ASSERT_TRUE(when_files_change(
      state, [&] { return exists(state + "mcp-tools-cache.json") && !exists(held(state + "mcp-tools-cache.json")); },
      15s))
      << "a's tools saved";
  std::string repo = fake_dir("repo");
  ::mkdir((repo + "/.git").c_str(), 0700);
  std::ofstream(repo + "/.mcp.json") << R"({"mcpServers":{)" << stdio("r", FAKE_MCP_SERVER, {"ok"}) << "}}";
  auto c = client();
  auto shown = c.call("mcp/get", json::object{{"name", "r"}, {"cwd", repo}}, 10s);
  ASSERT_TRUE(shown) << shown.error().message;

  // Sends `method` from another client, waits until its write of `path` is held, and shows that a
  // call to a answers meanwhile; then that the decision was answered and is in the file.
  auto stalled = [&](const std::string& method, json::object params, const std::string& path,
                     const std::string& written) {
    SCOPED_TRACE(method);
    std::optional<boost::system::result<json::value, proto::RpcError>> answer;
    std::thread other([&] {
      auto d = client();
      answer = d.call(method, params, 20s);
    });
    bool holding = when_file_changes(
        path, [&] { return exists(held(path)); }, 15s);
    if (holding) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = c.call("tools/call", json::object{{"connector", "a"}, {"tool", "echo"}}, 10s);
      auto took = std::chrono::steady_clock::now() - t0;
      EXPECT_TRUE(r) << r.error().message;
      EXPECT_LT(took, 1500ms) << "the call waited for the disk";
      EXPECT_TRUE(exists(held(path))) << "the write was still held when the call was answered";
    }
    other.join();
    ASSERT_TRUE(holding) << "the write of " << path << " was never seen";
    ASSERT_TRUE(answer && *answer) << (answer ? answer->error().message : "no answer");
    EXPECT_NE(read_file(path).find(written), std::string::npos) << read_file(path);
  };
  stalled("permissions/allow", json::object{{"rule", "a.echo"}, {"cwd", repo}}, state + "permissions.json",
          "\"a.echo\"");
  stalled("consent/approve", json::object{{"name", "r"}, {"sha256", shown->at("sha256")}, {"cwd", repo}},
          state + "mcp-approved.json", "\"approve\"");
  stalled(
      "mcp/add",
      json::object{{"name", "b"}, {"definition", json::parse(R"({"command":")" FAKE_MCP_SERVER R"(","args":["ok"]})")}},
      home.root() + "/config/oppx/mcp.json", "\"b\"");
  auto r = c.call("mcp/get", json::object{{"name", "r"}, {"cwd", repo}}, 10s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->at("state"), json::value("running")) << "approved, it started";
  EXPECT_EQ(entry("b").at("state"), json::value("running"));
  EXPECT_NE(read_file(state + "permissions.json").find("\"a.echo\""), std::string::npos) << "the rule survived";
}

// A slow exec (each connector held 3 s before it) delays nobody's call: while b is being spawned,
// a call to a answers, and b then starts.
TEST_F(ConnectorFaults, ASlowSpawnDelaysNoCall) {
  DaemonProcess daemon(home, "OPPX_TEST_SPAWN_DELAY_MS=3000");
  ASSERT_GT(daemon.pid(), 0) << daemon.start_result().err;
  const std::string a = stdio("a", FAKE_MCP_SERVER, {"ok", fake_dir("a")});
  write_config(a);
  ASSERT_EQ(entry("a").at("state"), json::value("running"));
  auto c = client();
  std::string b_dir = fake_dir("b");
  write_config(a + "," + stdio("b", FAKE_MCP_SERVER, {"ok", b_dir}));
  Process list({OPPX_BIN, "mcp", "list"});  // starts b, held before its exec
  ASSERT_TRUE(when_file_changes(
      home.log(), [&] { return home.read_log().find("connector b: starting") != std::string::npos; }, 15s));
  auto t0 = std::chrono::steady_clock::now();
  auto r = c.call("tools/call", json::object{{"connector", "a"}, {"tool", "echo"}}, 10s);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_LT(took, 1500ms) << "the call waited for b's exec";
  EXPECT_LT(last_pid(b_dir), 0) << "b had not run yet when the call was answered";
  EXPECT_EQ(list.wait().exit_code, 0);
  EXPECT_EQ(entry("b").at("state"), json::value("running"));
  EXPECT_GT(last_pid(b_dir), 0);
}

TEST_F(ConnectorFaults, NeverReadingOrNeverAnsweringEndsAtTheStartTimeout) {
  ::setenv("OPPX_MCP_START_TIMEOUT_MS", "500", 1);
  write_config(stdio("deaf", FAKE_MCP_SERVER, {"never_read"}) + "," + stdio("mute", FAKE_MCP_SERVER, {"no_init"}) +
               "," + stdio("remote", FAKE_MCP_SERVER, {"no_init", "mcp-remote"}));
  for (std::string name : {"deaf", "mute"}) {
    auto e = entry(name);
    EXPECT_EQ(e.at("state"), json::value("failed")) << name;
    EXPECT_EQ(e.at("reason_kind"), json::value("timeout")) << name;
    auto steps = json::serialize(e.at("steps"));
    EXPECT_NE(steps.find("oppx mcp reconnect " + name), std::string::npos) << steps;
  }
  // An mcp-remote connector that does not answer waits for a login in the browser.
  auto remote = entry("remote");
  EXPECT_EQ(remote.at("reason_kind"), json::value("login"));
  EXPECT_NE(json::serialize(remote.at("steps")).find("~/.mcp-auth"), std::string::npos);
  Result list = oppx({"mcp", "list"});
  EXPECT_NE(list.out.find("    1. Run `oppx mcp reconnect remote`"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("    2. If that fails, delete"), std::string::npos) << list.out;
}

TEST_F(ConnectorFaults, ARepeatedCursorAndEndlessPagesAreCapped) {
  std::string rep = fake_dir("rep"), pages = fake_dir("pages");
  write_config(stdio("rep", FAKE_MCP_SERVER, {"cursor_repeat", rep}) + "," +
               stdio("pages", FAKE_MCP_SERVER, {"endless_pages", pages}));
  auto r = entry("rep");
  EXPECT_EQ(r.at("state"), json::value("running"));
  EXPECT_EQ(r.at("tools").as_array().size(), 1u) << "the same tool twice is kept once";
  EXPECT_EQ(lines(rep + "/lists").size(), 2u) << "the same cursor twice ends the list";
  auto p = entry("pages");
  EXPECT_EQ(p.at("state"), json::value("running"));
  EXPECT_EQ(lines(pages + "/lists").size(), 50u) << "at most 50 pages";
  EXPECT_EQ(p.at("tools").as_array().size(), 50u);
}

TEST_F(ConnectorFaults, AListChangedStormIsDebounced) {
  std::string dir = fake_dir("storm");
  write_config(stdio("storm", FAKE_MCP_SERVER, {"storm", dir}));
  ASSERT_EQ(entry("storm").at("tools").as_array().size(), 1u);
  Result call = oppx({"mcp", "call", "storm", "storm"});
  ASSERT_EQ(call.exit_code, 0) << call.err;
  EXPECT_TRUE(when_connectors_change(
      home.socket(), [&] { return entry("storm").at("tools").as_array().size() == 2; }, 10s))
      << "the list after the storm has echo2";
  auto n = lines(dir + "/lists").size();
  EXPECT_GE(n, 2u);
  EXPECT_LE(n, 5u) << "500 list_changed gave " << n - 1 << " refetches";
}

TEST_F(ConnectorFaults, MessyOutputIsSkippedAndTheSessionGoesOn) {
  write_config(stdio("messy", FAKE_MCP_SERVER, {"messy"}));
  // Running first: the 300 ms limit would otherwise also cover its start.
  ASSERT_EQ(entry("messy").at("state"), json::value("running"));
  auto c = client();
  auto slow = c.call("tools/call", json::object{{"connector", "messy"}, {"tool", "slow"}, {"timeout_ms", 300}}, 10s);
  ASSERT_FALSE(slow);
  EXPECT_EQ(slow.error().kind, "timeout");
  EXPECT_NE(slow.error().message.find("slow did not answer within 300 ms"), std::string::npos) << slow.error().message;
  for (int i = 0; i < 2; ++i) {  // the late answer to "slow" and a duplicate come before and after
    auto r = c.call("tools/call", json::object{{"connector", "messy"}, {"tool", "echo"}}, 10s);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->at("text"), json::value("fake echo"));
  }
  EXPECT_EQ(entry("messy").at("state"), json::value("running"));
}

TEST_F(ConnectorFaults, AnsiAndZeroWidthInDescriptionsAreEscaped) {
  write_config(stdio("ansi", FAKE_MCP_SERVER, {"ansi"}));
  Result tools = oppx({"mcp", "tools", "ansi"});
  ASSERT_EQ(tools.exit_code, 0) << tools.err;
  EXPECT_EQ(tools.out, "ansi.echo: \\x1b[31mRed\\x1b[0m and zero\\u{200b}width\\u{202e}\n");
}

TEST_F(ConnectorFaults, ACrashLoopBacksOffThenStaysFailedUntilReconnect) {
  std::string dir = fake_dir("loop");
  write_config(stdio("loop", FAKE_MCP_SERVER, {"die_at_start", dir}));
  ASSERT_EQ(oppx({"mcp", "list"}).exit_code, 0);
  auto given_up = [&] {
    Result r = oppx({"mcp", "list", "--json"});
    return r.out.find("stopped restarting it") != std::string::npos;
  };
  ASSERT_TRUE(when_connectors_change(home.socket(), given_up, 30s)) << oppx({"mcp", "list"}).out << home.read_log();
  auto starts = lines(dir + "/starts");
  ASSERT_EQ(starts.size(), 4u) << "it gave up after 4 quick stops";
  // The first stop came with its server/discover probe: it was started again at once, straight
  // with initialize; then the restarts back off.
  for (std::size_t i = 2; i < starts.size(); ++i) {
    std::int64_t gap = std::stoll(starts[i]) - std::stoll(starts[i - 1]);
    EXPECT_GE(gap, 900 * (1 << (i - 1))) << "backoff before start " << i + 1;
  }
  auto e = entry("loop");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_NE(str(e, "reason").find("fake: dying at start"), std::string::npos) << str(e, "reason");
  // A call does not restart one that was given up on; reconnect does.
  EXPECT_EQ(oppx({"mcp", "call", "loop", "echo"}).exit_code, 1);
  EXPECT_EQ(lines(dir + "/starts").size(), 4u);
  oppx({"mcp", "reconnect", "loop"});
  EXPECT_GE(lines(dir + "/starts").size(), 5u);
}

TEST_F(ConnectorFaults, AKilledConnectorIsStartedAgainForTheNextCall) {
  std::string dir = fake_dir("killed");
  write_config(stdio("killed", FAKE_MCP_SERVER, {"ok", dir}));
  ASSERT_EQ(oppx({"mcp", "call", "killed", "echo"}).exit_code, 0);
  pid_t first = last_pid(dir);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(cli::wait_for_exit(first, 10s));
  Result call = oppx({"mcp", "call", "killed", "echo"});
  EXPECT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "fake echo\n");
  EXPECT_NE(last_pid(dir), first);
}

TEST_F(ConnectorFaults, ACrashDuringAWriteIsReportedAndNotRepeated) {
  std::string dir = fake_dir("tools");
  write_config(stdio("tools", FAKE_MCP_SERVER, {"tools", dir}));
  Result call = oppx({"mcp", "call", "tools", "write"});
  EXPECT_EQ(call.exit_code, 1);
  EXPECT_NE(call.err.find("may or may not have run"), std::string::npos) << call.err;
  EXPECT_NE(call.err.find("fake: crashing in write"), std::string::npos) << call.err;
  EXPECT_EQ(lines(dir + "/invocations"), std::vector<std::string>{"write"}) << "a write must not run twice";
}

TEST_F(ConnectorFaults, ACrashDuringAReadOnlyToolIsRepeatedOnce) {
  std::string dir = fake_dir("tools");
  write_config(stdio("tools", FAKE_MCP_SERVER, {"tools", dir}));
  Result call = oppx({"mcp", "call", "tools", "read"});
  EXPECT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "read ok\n");
  EXPECT_EQ(lines(dir + "/invocations"), (std::vector<std::string>{"read", "read"}));
}

TEST_F(ConnectorFaults, ALostLoginTakesItDownButRefusedArgumentsDoNot) {
  write_config(stdio("auth", FAKE_MCP_SERVER, {"auth"}));
  Result field = oppx({"mcp", "call", "auth", "field"});
  EXPECT_EQ(field.exit_code, 1);
  EXPECT_NE(field.err.find("the login field is required"), std::string::npos) << field.err;
  EXPECT_EQ(entry("auth").at("state"), json::value("running")) << "a tool refusing its arguments is not a lost login";
  Result forbidden = oppx({"mcp", "call", "auth", "forbidden"});
  EXPECT_EQ(forbidden.exit_code, 1);
  EXPECT_NE(forbidden.err.find("API error 403: resource not accessible"), std::string::npos) << forbidden.err;
  EXPECT_EQ(entry("auth").at("state"), json::value("running")) << "a 403 of the API a tool talks to is not our login";
  auto c = client();
  auto r = c.call("tools/call", json::object{{"connector", "auth"}, {"tool", "expired"}}, 10s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "connector_down");
  EXPECT_EQ(r.error().data.at("reason_kind"), json::value("login"));
  EXPECT_NE(std::string(r.error().data.at("reason").as_string()).find("token expired"), std::string::npos);
  EXPECT_FALSE(r.error().data.at("steps").as_array().empty());
  auto e = entry("auth");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_EQ(e.at("reason_kind"), json::value("login"));
  // One reconnect brings it back.
  EXPECT_EQ(oppx({"mcp", "reconnect", "auth"}).exit_code, 0);
  EXPECT_EQ(entry("auth").at("state"), json::value("running"));
}

// RELIABILITY: a server's own error text never grants itself authority. An error claiming a kind
// the daemon acts on (a lost connection, a lost login, an unreachable server, a connector down)
// is the server's error: passed on, the program left running, the call not repeated.
TEST_F(ConnectorFaults, AServersErrorClaimingOneOfOurKindsIsOnlyItsOwn) {
  std::string dir = fake_dir("claims");
  write_config(stdio("claims", FAKE_MCP_SERVER, {"ok", dir}));
  ASSERT_EQ(entry("claims").at("state"), json::value("running"));
  pid_t pid = last_pid(dir);
  auto c = client();
  std::vector<std::string> kinds{"disconnected", "login", "unreachable", "timeout", "connector_down"};
  for (const std::string& kind : kinds) {
    auto r = c.call("tools/call",
                    json::object{{"connector", "claims"}, {"tool", "claim"}, {"arguments", {{"kind", kind}}}}, 10s);
    ASSERT_FALSE(r) << kind;
    EXPECT_EQ(r.error().message, "the server claims " + kind);
    EXPECT_EQ(r.error().kind, "") << "not ours: " << kind;
    EXPECT_EQ(r.error().data.at("server_kind"), json::value(kind));
    EXPECT_FALSE(r.error().data.contains("steps")) << kind;
    auto e = entry("claims");
    EXPECT_EQ(e.at("state"), json::value("running")) << kind;
  }
  EXPECT_EQ(lines(dir + "/claims"), kinds) << "each call ran once";
  EXPECT_EQ(lines(dir + "/pids"), std::vector<std::string>{std::to_string(pid)}) << "never restarted";
  EXPECT_TRUE(process_alive(pid));
}

// RELIABILITY: the child's environment is the usual variables plus its own env, nothing of the
// daemon's or the client's; it inherits no fd but 0–2.
TEST_F(ConnectorFaults, TheChildGetsOnlyTheUsualVariablesItsOwnEnvAndFdsZeroToTwo) {
  ::setenv("OPPX_TEST_LEAK", "1", 1);
  std::string dir = fake_dir("report");
  write_config(stdio_entry("report", FAKE_MCP_SERVER, {"report", dir}, {{"OWN_VARIABLE", "own"}}));
  ASSERT_EQ(entry("report").at("state"), json::value("running"));
  ::unsetenv("OPPX_TEST_LEAK");
  std::set<std::string> names;
  for (const std::string& var : lines(dir + "/environ")) {
    names.insert(var.substr(0, var.find('=')));
    if (var.rfind("OWN_VARIABLE=", 0) == 0) {
      EXPECT_EQ(var, "OWN_VARIABLE=own");
    }
  }
  EXPECT_TRUE(names.count("OWN_VARIABLE")) << read_file(dir + "/environ");
  EXPECT_FALSE(names.count("OPPX_TEST_LEAK")) << read_file(dir + "/environ");
  for (const std::string& name : names) {
    static const std::set<std::string> allowed{"HOME", "LOGNAME", "PATH", "SHELL",
                                               "TERM", "USER",    "LANG", "OWN_VARIABLE"};
    EXPECT_TRUE(allowed.count(name)) << name << " reached the child";
  }
  EXPECT_TRUE(names.count("HOME") && names.count("PATH")) << read_file(dir + "/environ");
  EXPECT_EQ(lines(dir + "/fds"), (std::vector<std::string>{"0", "1", "2"}));
}

// MCP: a server may ping its client at any time; the ping is answered.
TEST_F(ConnectorFaults, APingFromTheServerIsAnswered) {
  write_config(stdio("pinger", FAKE_MCP_SERVER, {"ok"}));
  Result call = oppx({"mcp", "call", "pinger", "ping_client"});
  EXPECT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "ping answered\n");
}

// MCP lifecycle: 2025-03-26 (and 2025-06-18, 2025-11-25) are accepted when the server answers
// with them; any other version is refused, and the reason names it.
TEST_F(ConnectorFaults, AnOlderKnownProtocolVersionIsAcceptedAndAnUnknownOneRefused) {
  write_config(stdio("older", FAKE_MCP_SERVER, {"ok", "--protocol=2025-03-26"}) + "," +
               stdio("ancient", FAKE_MCP_SERVER, {"ok", "--protocol=2023-01-01"}));
  EXPECT_EQ(entry("older").at("state"), json::value("running"));
  Result call = oppx({"mcp", "call", "older", "echo"});
  EXPECT_EQ(call.out, "fake echo\n") << call.err;
  auto e = entry("ancient");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_NE(str(e, "reason").find(R"(it speaks MCP protocol "2023-01-01", which oppx does not support)"),
            std::string::npos)
      << str(e, "reason");
  EXPECT_FALSE(e.at("steps").as_array().empty());
}

// Finding 6 of issue 25: a secret the daemon gave a connector, said back in a result that is no
// error (its text, its structuredContent, an echo of what it was sent), is hidden before the reply
// leaves the daemon: in `oppx mcp call --json` and on the socket alike.
TEST_F(ConnectorFaults, ASecretSaidBackInAResultIsHidden) {
  const std::string key = "sk-echo-0123456789abcdef";
  ::setenv("OPPX_TEST_ECHO_KEY", key.c_str(), 1);
  write_config(stdio_entry("leaky", FAKE_MCP_SERVER, {"leak"}, {{"API_KEY", "${OPPX_TEST_ECHO_KEY}"}}));
  ASSERT_EQ(entry("leaky").at("state"), json::value("running"));
  Result shown = oppx({"mcp", "call", "leaky", "show", "--json"});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("API_KEY=***"), std::string::npos) << shown.out;
  Result echoed =
      oppx({"mcp", "call", "leaky", "echo", json::serialize(json::object{{"message", "k " + key}}), "--json"});
  // (Its "arguments" are the caller's own, given back as they were sent: only what the server said is masked.)
  std::string echo_text = echoed.exit_code == 0 ? str(json::parse(echoed.out).as_object(), "text") : echoed.err;
  EXPECT_EQ(echo_text, "fake echo k ***") << echoed.out;
  SyncClient c = client();
  auto r = c.call("tools/call", json::object{{"connector", "leaky"}, {"tool", "show"}}, 30s);
  ASSERT_TRUE(r) << r.error().message;
  std::string reply = json::serialize(*r);
  EXPECT_NE(reply.find("API_KEY=***"), std::string::npos) << reply;
  for (const std::string& out : {shown.out, shown.err, echo_text, echoed.err, reply})
    EXPECT_EQ(out.find(key), std::string::npos) << "the key leaked into:\n" << out;
  ::unsetenv("OPPX_TEST_ECHO_KEY");
}

// A variable's name is never secret, its value is: the reason names an unset variable read by a
// header or a secret-looking env entry (the README's Linear example), never "it needs ***".
TEST_F(ConnectorFaults, AnUnsetSecretVariableIsNamedNotHidden) {
  write_config(stdio_entry("keyed", FAKE_MCP_SERVER, {"ok"}, {{"API_KEY", "${OPPX_TEST_UNSET_API_KEY}"}}) + "," +
               R"("linear":{"type":"http","url":"http://127.0.0.1:9/mcp",)"
               R"("headers":{"Authorization":"Bearer ${OPPX_TEST_UNSET_LINEAR_API_KEY}"}})");
  for (auto [name, variable] :
       {std::pair{"keyed", "OPPX_TEST_UNSET_API_KEY"}, std::pair{"linear", "OPPX_TEST_UNSET_LINEAR_API_KEY"}}) {
    auto e = entry(name);
    EXPECT_EQ(e.at("state"), json::value("failed")) << name;
    EXPECT_NE(str(e, "reason").find(fmt::format("it needs ${{{}}}, which is not set", variable)), std::string::npos)
        << str(e, "reason");
    EXPECT_EQ(str(e, "reason").find("***"), std::string::npos) << str(e, "reason");
  }
}

// ${VAR:-default} as in the shell: a default may read another variable. A reference that cannot
// be expanded fails its connector with a reason that says whether to set a variable or to correct
// the definition.
TEST_F(ConnectorFaults, ADefaultMayReadAVariableAndABadReferenceSaysWhatToDo) {
  ::setenv("OPPX_TEST_FAKE_SERVER", FAKE_MCP_SERVER, 1);
  std::string deep = "${OPPX_TEST_UNSET:-" FAKE_MCP_SERVER "}";
  for (int i = 0; i < 9; ++i) deep = "${OPPX_TEST_UNSET:-" + deep + "}";
  write_config(stdio("nested", "${OPPX_TEST_UNSET:-${OPPX_TEST_FAKE_SERVER}}", {"ok"}) + "," +
               stdio("unset", "${OPPX_TEST_UNSET}", {}) + "," + stdio("unclosed", "${OPPX_TEST_FAKE_SERVER", {}) + "," +
               stdio("deep", deep, {}));
  EXPECT_EQ(entry("nested").at("state"), json::value("running")) << str(entry("nested"), "reason");
  std::map<std::string, std::string> says{
      {"unset",
       "it needs ${OPPX_TEST_UNSET}, which is not set in the environment of the oppx command that started it; "
       "set it and run `oppx mcp reconnect unset`"},
      {"unclosed",
       "its definition has a \"${\" without a closing \"}\"; correct it and run `oppx mcp reconnect unclosed`"},
      {"deep",
       "its definition nests ${NAME:-default} defaults more than 8 deep; correct it and run `oppx mcp reconnect "
       "deep`"}};
  for (auto& [name, reason] : says) {
    auto e = entry(name);
    EXPECT_EQ(e.at("state"), json::value("failed")) << name;
    EXPECT_EQ(e.at("reason_kind"), json::value("config")) << name;
    EXPECT_NE(str(e, "reason").find(reason), std::string::npos) << str(e, "reason");
  }
  ::unsetenv("OPPX_TEST_FAKE_SERVER");
}

// A program that echoes its input sends oppx's own initialize back: it is not an MCP server,
// which is said at once instead of "it refused initialize" or a wait for the start limit.
TEST_F(ConnectorFaults, AProgramThatEchoesItsInputIsNotAnMcpServer) {
  write_config(stdio("echoer", "/bin/cat", {}));
  auto e = entry("echoer");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_EQ(e.at("reason_kind"), json::value("config"));
  EXPECT_NE(str(e, "reason").find("it sent oppx's own initialize request back: echoer is not an MCP server"),
            std::string::npos)
      << str(e, "reason");
}

// RELIABILITY: a command that exists but is not executable is "not installed", with steps.
TEST_F(ConnectorFaults, ACommandThatIsNotExecutableIsNotInstalled) {
  std::string path = home.root() + "/not-executable-server";
  { std::ofstream(path) << "#!/bin/sh\nexit 0\n"; }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  write_config(stdio("plain", path, {}));
  auto e = entry("plain");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_EQ(e.at("reason_kind"), json::value("not_installed"));
  EXPECT_NE(str(e, "reason").find("not executable"), std::string::npos) << str(e, "reason");
  ASSERT_EQ(e.at("steps").as_array().size(), 2u);
  EXPECT_NE(str(e, "reason").find(path), std::string::npos) << str(e, "reason");
  Result call = oppx({"mcp", "call", "plain", "x"});
  EXPECT_EQ(call.exit_code, 1);
  EXPECT_NE(call.err.find("  1. Install not-executable-server, or correct the command of plain"), std::string::npos)
      << call.err;
}

TEST_F(ConnectorFaults, ReconnectOfOneWaitsForALoginAndOfAllTheUsualTime) {
  write_config(stdio("one", FAKE_MCP_SERVER, {"ok", home.root()}));
  // Running first, from the daemon's own start: its program has written its pid before the
  // reconnect's does (else the program a reconnect replaces may write its pid after the new one).
  ASSERT_EQ(entry("one").at("state"), json::value("running"));
  ASSERT_EQ(oppx({"mcp", "reconnect", "one"}).exit_code, 0);
  EXPECT_NE(home.read_log().find("connector one: starting (start timeout 180 s)"), std::string::npos);
  // A program that stops after that is started again by oppx in the usual time, not the login's.
  // The program the reconnect started is the last one to write its pid (the one before it may
  // still be ending); what is logged after the kill is the restart.
  std::size_t logged = home.read_log().size();
  pid_t current = last_pid(home.root());
  ASSERT_GT(current, 0);
  ASSERT_EQ(::kill(current, SIGKILL), 0);
  auto restart = [&] { return home.read_log().find("connector one: starting (", logged); };
  EXPECT_TRUE(when_connectors_change(
      home.socket(),
      [&] { return restart() != std::string::npos && entry("one").at("state") == json::value("running"); }, 15s))
      << home.read_log();
  EXPECT_EQ(home.read_log().find("connector one: starting (start timeout 30 s)", logged), restart()) << home.read_log();
  logged = home.read_log().size();
  ASSERT_EQ(oppx({"mcp", "reconnect"}).exit_code, 0);
  EXPECT_NE(home.read_log().find("connector one: starting (start timeout 30 s)", logged), std::string::npos);
}

TEST_F(ConnectorFaults, AMissingProgramGetsNumberedSteps) {
  write_config(stdio("missing", "no-such-program-oppx", {}) + "," + stdio("nodey", "/nonexistent/npx", {"-y", "x"}));
  Result list = oppx({"mcp", "list"});
  EXPECT_NE(list.out.find("    1. Install no-such-program-oppx, or correct the command of missing"), std::string::npos)
      << list.out;
  EXPECT_NE(list.out.find("    2. Then run `oppx mcp reconnect missing`."), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("    1. Install Node.js 18 or newer"), std::string::npos) << list.out;
  Result call = oppx({"mcp", "call", "missing", "x"});
  EXPECT_EQ(call.exit_code, 1);
  EXPECT_NE(call.err.find("  1. Install no-such-program-oppx"), std::string::npos) << call.err;
  // A reconnect that does not bring it back fails, shows that one alone, and says why.
  Result again = oppx({"mcp", "reconnect", "missing"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.out.find("missing "), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("nodey"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("1. Install no-such-program-oppx"), std::string::npos) << again.out;
  EXPECT_EQ(oppx({"mcp", "reconnect"}).exit_code, 1);
  EXPECT_EQ(oppx({"mcp", "reconnect", "missing", "--json"}).exit_code, 1) << "the same status with --json";
}

// node's own words for a missing script are a few lines above the "Node.js v20…" it ends with:
// the reason quotes them, and a script that is missing is not installed (not started again).
TEST_F(ConnectorFaults, AScriptNodeCannotFindIsNotInstalledAndTheReasonNamesIt) {
  std::string script = home.root() + "/nonexistent.js";
  write_config(stdio("nx", "node", {script}));
  auto e = entry("nx");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_EQ(e.at("reason_kind"), json::value("not_installed"));
  std::string reason = str(e, "reason");
  EXPECT_NE(reason.find("(exit status 1): Error: Cannot find module '" + script + "'"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("Node.js v"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("starts it again"), std::string::npos) << reason;
  ASSERT_EQ(e.at("steps").as_array().size(), 2u);
  EXPECT_EQ(e.at("steps").as_array()[0],
            json::value("node runs, but cannot find the script or module it was given: install it, or correct the "
                        "command of nx in " +
                        home.root() + "/config/oppx/mcp.json."));
}

// Killed by a signal, its last stderr line is whatever it printed at start: not a reason.
TEST_F(ConnectorFaults, ASignalStopShowsNoStartBanner) {
  write_config(stdio("sig", "/bin/sh", {"-c", "echo 'Starting default (STDIO) server...' >&2; kill -KILL $$"}));
  auto e = entry("sig");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_EQ(e.at("reason_kind"), json::value("stopped"));
  std::string reason = str(e, "reason");
  EXPECT_NE(reason.find("its program stopped (signal 9); its log is"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("Starting default"), std::string::npos) << reason;
}

// The loop never waits on a child. A stderr line that arrives while the daemon is stopped is a
// readiness event queued for a pipe that a reconnect in the same turn closes; Asio hands the
// freed slot to the pidfd watch of the old child, so the event completes that watch early. The
// daemon must then look (WNOHANG) and watch again, not block until that child, which lives on
// after its stdin closes, exits: nothing (timers, clients) would run in the meantime.
// The daemon is the test's own child (not one the CLI starts, detached): only a parent is told
// that a process has stopped, and the request and the stderr line must both wait for it.
TEST_F(ConnectorFaults, AStaleEventOnAReusedSlotNeverFreezesTheDaemonOnALiveChild) {
  ForegroundDaemon daemon(home);
  ASSERT_TRUE(daemon.ready());
  const pid_t d = daemon.pid();
  std::string dir = fake_dir("usr1");
  write_config(stdio("usr1", FAKE_MCP_SERVER, {"usr1_stderr", dir}));
  ASSERT_EQ(entry("usr1").at("state"), json::value("running"));
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_EQ(entry("usr1").at("state"), json::value("running"));
    pid_t child = last_pid(dir);
    ASSERT_GT(child, 0);
    SyncClient c = client();
    auto usr1s = [&] {
      auto e = lines(dir + "/events");
      return std::count(e.begin(), e.end(), "usr1");
    };
    auto before = usr1s();
    ASSERT_EQ(::kill(d, SIGSTOP), 0);
    ASSERT_TRUE(wait_for_stop(d)) << "the daemon stopped";
    ASSERT_TRUE(c.write_raw(R"({"jsonrpc":"2.0","id":1,"method":"mcp/reconnect","params":{"name":"usr1"}})"
                            "\n"));
    ASSERT_EQ(::kill(child, SIGUSR1), 0);
    ASSERT_TRUE(when_files_change(dir, [&] { return usr1s() > before; })) << "the connector wrote its stderr line";
    ASSERT_EQ(::kill(d, SIGCONT), 0);
    auto fresh = SyncClient::connect(home.socket());
    ASSERT_TRUE(fresh) << fresh.error().message;
    auto status = fresh->call("daemon/status", json::object{}, 5s);
    if (!status) ::kill(child, SIGKILL);  // frees a frozen daemon, so that the test can end
    ASSERT_TRUE(status) << "the daemon froze: " << status.error().message;
    auto reply = c.read_line(20s);
    while (reply && reply->find("\"id\":1") == std::string::npos) reply = c.read_line(20s);  // notifications
    ASSERT_TRUE(reply) << "no answer to mcp/reconnect";
    EXPECT_NE(reply->find("\"result\""), std::string::npos) << *reply;
    EXPECT_TRUE(cli::wait_for_exit(child, 10s)) << "the old child ends (SIGTERM after its stdin closed)";
  }
}

}  // namespace
}  // namespace oppx::test
