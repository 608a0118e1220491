// Start and sharing, through the daemon as clients use it: user connectors start with the
// daemon, a changed variable restarts only its connector, subscribers hear of changes (a burst of
// list_changed gives one fetch), the tool list is cached across restarts, progress reaches the
// caller, a caller that goes away cancels its call (and so does $/cancelRequest, the session
// staying open), and two clients share one child.
#include "tests/support/harness.h"

#include "cli/daemon_client.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

struct Sessions : ::testing::Test {
  TempHome home;
  std::string received = home.root() + "/received.log";  // what the fake server was sent

  // The fake, marked with this test's folder so that pgrep finds only our own.
  std::string fake(const std::string& name, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"ok", home.root() + "/" + name, "--log=" + received};
    args.insert(args.end(), extra.begin(), extra.end());
    return stdio_entry(name, FAKE_MCP_SERVER, args);
  }
  std::vector<pid_t> pids_of(const std::string& name) {
    Result ps = run({"pgrep", "-f", std::string(FAKE_MCP_SERVER) + " ok " + home.root() + "/" + name + " "});
    std::vector<pid_t> out;
    std::istringstream in(ps.out);
    for (long pid; in >> pid;) out.push_back(static_cast<pid_t>(pid));
    return out;
  }
  json::object listed(const std::string& name) {
    Result r = oppx({"mcp", "list", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return {};
    json::value list = json::parse(r.out);
    for (auto& c : list.at("connectors").as_array()) {
      if (c.at("name") == json::value(name)) return c.as_object();
    }
    return {};
  }
  bool becomes_running(const std::string& name) {
    return when_connectors_change(home.socket(), [&] { return listed(name).at("state") == json::value("running"); });
  }
  // The daemon started with `var` set to `value`, and the running connector "reads" that reads
  // it: the pids of its program (one, else the test failed).
  std::vector<pid_t> started_reading(const std::string& var, const std::string& value) {
    ::setenv(var.c_str(), value.c_str(), 1);
    home.write_mcp_config(fake("reads", {"${" + var + "}"}));
    EXPECT_EQ(oppx({"daemon", "start"}).exit_code, 0);
    EXPECT_TRUE(becomes_running("reads"));
    std::vector<pid_t> pids = pids_of("reads");
    EXPECT_EQ(pids.size(), 1u);
    return pids;
  }
  // The lines the fake received whose method is `method`, parsed.
  std::vector<json::object> received_of(const std::string& method) {
    std::vector<json::object> out;
    std::istringstream in(read_file(received));
    for (std::string line; std::getline(in, line);) {
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      if (!ec && v.is_object() && v.as_object().contains("method") && v.at("method") == json::value(method))
        out.push_back(v.as_object());
    }
    return out;
  }
  void TearDown() override { oppx({"daemon", "stop"}); }
};

// Reads lines from a raw client until a notification `method` satisfies `pred`.
bool notified(SyncClient& c, const std::string& method, const std::function<bool(const json::object&)>& pred) {
  for (;;) {
    auto line = c.read_line(10s);
    if (!line) return false;
    json::value v = json::parse(*line);
    if (v.as_object().contains("method") && v.at("method") == json::value(method) && pred(v.at("params").as_object()))
      return true;
  }
}

TEST_F(Sessions, UserConnectorsStartWithTheDaemonNotAtTheFirstRequest) {
  home.write_mcp_config(fake("one") + "," + fake("two"));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  // No mcp/… request was made: the daemon started both on its own and finished the handshakes.
  EXPECT_TRUE(when_file_changes(received, [&] { return received_of("tools/list").size() == 2; }))
      << "received: " << read_file(received);
  EXPECT_EQ(pids_of("one").size(), 1u);
  EXPECT_EQ(pids_of("two").size(), 1u);
  EXPECT_TRUE(becomes_running("one"));
  EXPECT_EQ(received_of("initialize").size(), 2u) << "the first request must not start them again";
}

TEST_F(Sessions, AChangedVariableRestartsOnlyTheConnectorThatReadsIt) {
  ::setenv("OPPX_TEST_TOKEN", "first", 1);
  ::unsetenv("OPPX_TEST_LATE");
  home.write_mcp_config(fake("reads", {"${OPPX_TEST_TOKEN}"}) + "," + fake("plain") + "," +
                        fake("late", {"${OPPX_TEST_LATE}"}));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  ASSERT_TRUE(when_file_changes(received, [&] { return received_of("tools/list").size() == 2; }));
  EXPECT_EQ(listed("late").at("reason_kind"), json::value("config"));
  std::vector<pid_t> reads = pids_of("reads"), plain = pids_of("plain");
  ASSERT_EQ(reads.size(), 1u);
  ASSERT_EQ(plain.size(), 1u);

  // The same values: nothing restarts. A client without the variable: nothing restarts either.
  EXPECT_TRUE(becomes_running("reads"));
  ::unsetenv("OPPX_TEST_TOKEN");
  EXPECT_EQ(listed("reads").at("state"), json::value("running"));
  EXPECT_EQ(pids_of("reads"), reads);
  // A value that could never be used (a line break in it) is like none: it stops nothing.
  ::setenv("OPPX_TEST_TOKEN", "pasted\r\nwith a line break", 1);
  EXPECT_EQ(listed("reads").at("state"), json::value("running"));
  EXPECT_EQ(pids_of("reads"), reads);

  // Another value: a read-only command restarts nothing that runs, but starts the one that lacked it.
  ::setenv("OPPX_TEST_TOKEN", "second", 1);
  ::setenv("OPPX_TEST_LATE", "now-set", 1);
  EXPECT_TRUE(becomes_running("late")) << "a connector that lacked its variable starts once a client has it";
  EXPECT_EQ(pids_of("reads"), reads);
  // A call may restart: that connector restarts with it, the other stays as it was.
  EXPECT_EQ(oppx({"mcp", "call", "reads", "echo"}).exit_code, 0);
  EXPECT_TRUE(cli::wait_for_exit(reads[0], 10s)) << "the connector reading the changed variable restarts";
  EXPECT_TRUE(when_connectors_change(home.socket(), [&] { return pids_of("reads").size() == 1; }));
  EXPECT_EQ(pids_of("plain"), plain);
  ::unsetenv("OPPX_TEST_TOKEN");
  ::unsetenv("OPPX_TEST_LATE");
}

// A command that only reads (list, get, tools) restarts nothing, even from a shell where a
// variable the connector reads has another value: a call running on it goes on.
TEST_F(Sessions, AReadOnlyCommandWithAnotherValueRestartsNothing) {
  std::vector<pid_t> pids = started_reading("OPPX_TEST_SECRET", "first-value");
  ASSERT_EQ(pids.size(), 1u);
  // A call (not read-only) that the server holds until a second one comes.
  Process held({OPPX_BIN, "mcp", "call", "reads", "rendezvous", R"({"message":"held"})"});
  ASSERT_TRUE(when_file_changes(received, [&] { return received_of("tools/call").size() == 1; }))
      << read_file(received);
  for (std::vector<std::string> command :
       {std::vector<std::string>{"list"}, {"list", "--json"}, {"get", "reads"}, {"tools", "reads"}}) {
    std::vector<std::string> argv{"env", "OPPX_TEST_SECRET=other-value", OPPX_BIN, "mcp"};
    argv.insert(argv.end(), command.begin(), command.end());
    Result r = run(argv);
    EXPECT_EQ(r.exit_code, 0) << command[0] << ": " << r.err;
  }
  EXPECT_EQ(pids_of("reads"), pids);
  Result second = oppx({"mcp", "call", "reads", "rendezvous", R"({"message":"second"})"});
  EXPECT_EQ(second.exit_code, 0) << second.err;
  Result first = held.wait();
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, "rendezvous held\n");
  EXPECT_EQ(pids_of("reads"), pids);
  EXPECT_EQ(home.read_log().find("restarting"), std::string::npos) << home.read_log();
  ::unsetenv("OPPX_TEST_SECRET");
}

// A call from a shell where the variable has another value restarts the connector, but only once
// the calls in flight on it have ended: the slow call is neither cut off nor repeated. The log
// names the variable, never a value.
TEST_F(Sessions, AChangedVariableRestartsAConnectorOnceItsCallsInFlightEnded) {
  ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
  ::setenv("OPPX_TEST_SECRET", "first-value", 1);
  home.write_mcp_config(
      stdio_entry("everything", "node", {kEverything, "stdio"}, {{"API_SECRET", "${OPPX_TEST_SECRET}"}}));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  ASSERT_TRUE(becomes_running("everything"));
  Process slow(
      {OPPX_BIN, "mcp", "call", "everything", "trigger-long-running-operation", R"({"duration":4,"steps":8})"});
  // The other call must come while this one runs: after its first step, 3.5 s are left.
  ASSERT_TRUE(slow.wait_for_stderr("trigger-long-running-operation: 1/8")) << slow.err();
  Result other = run(
      {"env", "OPPX_TEST_SECRET=second-value", OPPX_BIN, "mcp", "call", "everything", "echo", R"({"message":"after"})"},
      60s);
  Result first = slow.wait(30s);
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("Long running operation completed"), std::string::npos) << first.out;
  std::size_t starts = 0;
  for (std::size_t at = 0; (at = first.err.find(": 1/8", at)) != std::string::npos; ++at) ++starts;
  EXPECT_EQ(starts, 1u) << "the slow call ran once, never cut off and repeated: " << first.err;
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(other.out, "Echo: after\n");
  std::string log = home.read_log();
  std::size_t waits = log.find("connector everything: ${OPPX_TEST_SECRET} has another value");
  std::size_t restarts = log.find("connector everything: restarting, ${OPPX_TEST_SECRET} has another value");
  EXPECT_NE(waits, std::string::npos) << log;
  EXPECT_NE(restarts, std::string::npos) << log;
  EXPECT_LT(waits, restarts) << log;
  EXPECT_EQ(log.find("second-value"), std::string::npos) << log;
  EXPECT_EQ(log.find("first-value"), std::string::npos) << log;
  ::unsetenv("OPPX_TEST_SECRET");
}

// A reconnect from a shell that lacks a variable the connector reads starts it again with the
// last value it had, instead of taking it down for lack of it.
TEST_F(Sessions, AReconnectFromAShellWithoutTheVariableKeepsItsLastValue) {
  std::vector<pid_t> before = started_reading("OPPX_TEST_MYTOKEN", "token-value");
  ASSERT_EQ(before.size(), 1u);
  for (std::vector<std::string> which : {std::vector<std::string>{}, {"reads"}}) {
    std::vector<std::string> argv{"env", "-u", "OPPX_TEST_MYTOKEN", OPPX_BIN, "mcp", "reconnect"};
    argv.insert(argv.end(), which.begin(), which.end());
    Result r = run(argv, 30s);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("it needs ${OPPX_TEST_MYTOKEN}"), std::string::npos) << r.out;
  }
  EXPECT_TRUE(cli::wait_for_exit(before[0], 10s)) << "the reconnect started it again";
  ::unsetenv("OPPX_TEST_MYTOKEN");
  json::object e = listed("reads");
  EXPECT_EQ(e.at("state"), json::value("running")) << json::serialize(e);
  std::vector<pid_t> now = pids_of("reads");
  ASSERT_EQ(now.size(), 1u);
  std::string cmdline = read_file("/proc/" + std::to_string(now[0]) + "/cmdline");
  EXPECT_NE(cmdline.find("token-value"), std::string::npos) << "started with the last value it had";
}

TEST_F(Sessions, AnEditedDefinitionRestartsOnlyThatConnector) {
  home.write_mcp_config(fake("edited") + "," + fake("kept"));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  ASSERT_TRUE(becomes_running("edited"));
  ASSERT_TRUE(becomes_running("kept"));
  std::vector<pid_t> edited = pids_of("edited"), kept = pids_of("kept");
  ASSERT_EQ(edited.size(), 1u);
  ASSERT_EQ(kept.size(), 1u);

  home.write_mcp_config(fake("edited", {"another-argument"}) + "," + fake("kept"));
  listed("edited");  // a request: the daemon looks at the file again
  EXPECT_TRUE(cli::wait_for_exit(edited[0], 10s)) << "the edited connector's old program ends";
  EXPECT_TRUE(when_connectors_change(home.socket(),
                                     [&] { return pids_of("edited").size() == 1 && pids_of("edited") != edited; }));
  EXPECT_TRUE(becomes_running("edited"));
  EXPECT_EQ(pids_of("kept"), kept) << "the other one keeps its program";
  EXPECT_TRUE(process_alive(kept[0]));
}

// Connectors start side by side: one that never finishes its handshake (its start limit is 30 s)
// holds up no other one.
TEST_F(Sessions, AHangingStartHoldsUpNoOtherConnector) {
  std::string hold = home.root() + "/hold";
  std::ofstream(hold) << "hang\n";
  home.write_mcp_config(fake("hanging", {"--hang-init-if=" + hold}) + "," + fake("normal"));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  Result call = oppx({"mcp", "call", "normal", "echo"}, 10s);
  EXPECT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "fake echo\n");
  EXPECT_EQ(listed("hanging").at("state"), json::value("starting")) << "it is still within its start limit";
}

TEST_F(Sessions, SubscribersHearOfChangesAndABurstOfListChangedGivesOneFetch) {
  home.write_mcp_config(fake("one"));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  ASSERT_TRUE(becomes_running("one"));
  auto sub = hello_client(home.socket());
  ASSERT_TRUE(sub);
  ASSERT_TRUE(sub->write_raw(R"({"jsonrpc":"2.0","id":1,"method":"mcp/subscribe"})"
                             "\n"));
  auto first = sub->read_line(10s);
  ASSERT_TRUE(first);
  EXPECT_EQ(json::parse(*first).at("result").at("connectors").at(0).at("name"), json::value("one"));

  Result burst = oppx({"mcp", "call", "one", "burst"});
  ASSERT_EQ(burst.exit_code, 0) << burst.err;
  EXPECT_TRUE(notified(*sub, "mcp/changed", [](const json::object& e) {
    return e.at("name") == json::value("one") && e.at("tools") == json::value(2) &&
           e.at("tools_changed") == json::value(true);
  })) << "a subscriber hears of the new tool list";
  Result tools = oppx({"mcp", "tools", "one"});
  EXPECT_NE(tools.out.find("one.added: "), std::string::npos) << tools.out;

  home.write_mcp_config("");
  oppx({"mcp", "list"});
  EXPECT_TRUE(notified(*sub, "mcp/changed", [](const json::object& e) {
    return e.at("name") == json::value("one") && e.at("state") == json::value("removed");
  }));
  for (bool was : {true, false}) {
    ASSERT_TRUE(sub->write_raw(R"({"jsonrpc":"2.0","id":2,"method":"mcp/unsubscribe"})"
                               "\n"));
    auto line = sub->read_line(10s);
    ASSERT_TRUE(line);
    EXPECT_EQ(json::parse(*line).at("result").at("was_subscribed"), json::value(was)) << *line;
  }
  // Counted once the daemon is gone, so that no fetch can still be on its way.
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
  EXPECT_EQ(received_of("tools/list").size(), 2u) << "five list_changed in a burst give one fetch";
}

TEST_F(Sessions, TheToolListIsCachedPerDefinitionAcrossRestarts) {
  std::string slow_flag = home.root() + "/slow";
  home.write_mcp_config(fake("slow", {"--hang-init-if=" + slow_flag}));
  ASSERT_TRUE(becomes_running("slow"));
  std::string cache = home.root() + "/state/oppx/mcp-tools-cache.json";
  struct stat st {};
  // Written on the daemon's worker thread, a moment after the connector is running.
  ASSERT_TRUE(when_file_changes(cache, [&] { return ::stat(cache.c_str(), &st) == 0; }));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);

  // Now it is slow to start: the list and its tools come from the cache, at once.
  { std::ofstream(slow_flag) << "hang\n"; }
  json::object e = listed("slow");
  EXPECT_EQ(e.at("state"), json::value("starting"));
  EXPECT_EQ(e.at("cached"), json::value(true));
  EXPECT_EQ(e.at("tools"), json::value(1));
  Result tools = oppx({"mcp", "tools", "slow", "--json"});
  ASSERT_EQ(tools.exit_code, 0) << tools.err;
  json::object t = json::parse(tools.out).as_object();
  EXPECT_EQ(t.at("cached"), json::value(true));
  EXPECT_EQ(t.at("state"), json::value("starting"));
  EXPECT_EQ(t.at("tools").at(0).at("name"), json::value("echo"));

  // A changed definition never shows the old list.
  home.write_mcp_config(fake("slow", {"--hang-init-if=" + slow_flag, "changed"}));
  e = listed("slow");
  EXPECT_EQ(e.at("cached"), json::value(false));
  EXPECT_EQ(e.at("tools"), json::value(0));
}

TEST_F(Sessions, ProgressFromTheServerReachesTheCaller) {
  ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
  home.write_mcp_config(stdio_entry("everything", "node", {kEverything, "stdio"}));
  Result r = oppx({"mcp", "call", "everything", "trigger-long-running-operation", R"({"duration":0.3,"steps":3})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Long running operation completed. Duration: 0.3 seconds, Steps: 3.\n");
  for (const char* step : {"trigger-long-running-operation: 1/3\n", "trigger-long-running-operation: 2/3\n",
                           "trigger-long-running-operation: 3/3\n"}) {
    EXPECT_NE(r.err.find(step), std::string::npos) << r.err;
  }
}

TEST_F(Sessions, ACallerThatGoesAwayCancelsItsCallAndTheLateResultIsDropped) {
  home.write_mcp_config(fake("one"));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  {
    auto caller = hello_client(home.socket());
    ASSERT_TRUE(caller);
    ASSERT_TRUE(
        caller->write_raw(R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"connector":"one","tool":"hang"}})"
                          "\n"));
    ASSERT_TRUE(when_file_changes(received, [&] { return received_of("tools/call").size() == 1; }));
  }  // the caller hangs up mid-call
  json::value id = received_of("tools/call").at(0).at("id");
  ASSERT_TRUE(when_file_changes(received, [&] { return received_of("notifications/cancelled").size() == 1; }))
      << read_file(received);
  EXPECT_EQ(received_of("notifications/cancelled").at(0).at("params").at("requestId"), id);
  // The fake answers the cancelled call anyway; the daemon drops it and keeps nothing waiting.
  auto nothing_waiting = status_until(home.socket(), json::object{{"requests_waiting", 0}});
  EXPECT_TRUE(nothing_waiting) << nothing_waiting.describe();
  EXPECT_EQ(listed("one").at("requests_waiting"), json::value(0));
  Result echo = oppx({"mcp", "call", "one", "echo"});
  EXPECT_EQ(echo.exit_code, 0) << echo.err;
  EXPECT_EQ(echo.out, "fake echo\n");
  EXPECT_EQ(home.read_log().find("internal"), std::string::npos) << home.read_log();
}

// The next line from `c` that is not a notification, parsed.
json::value next_reply(SyncClient& c) {
  for (;;) {
    auto line = c.read_line(10s);
    if (!line) return nullptr;
    json::value v = json::parse(*line);
    if (!v.as_object().contains("method")) return v;
  }
}

TEST_F(Sessions, ACancelRequestCancelsTheCallAndTheSessionStaysOpen) {
  home.write_mcp_config(fake("one"));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  auto c = hello_client(home.socket());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->call("session/open", json::object{{"cwd", home.root()}}, 10s));
  ASSERT_TRUE(
      c->call("permissions/allow", json::object{{"rule", "one.echo"}, {"session", true}, {"cwd", home.root()}}, 10s));
  ASSERT_TRUE(
      c->write_raw(R"({"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"connector":"one","tool":"hang"}})"
                   "\n"));
  ASSERT_TRUE(when_file_changes(received, [&] { return received_of("tools/call").size() == 1; }));
  // An id that is in flight nowhere, then one of another type: ignored, no answer at all.
  ASSERT_TRUE(c->write_raw(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"nothing"}})"
                           "\n"
                           R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":[1]}})"
                           "\n"
                           R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"slow"}})"
                           "\n"));
  json::value cancelled = next_reply(*c);
  ASSERT_TRUE(cancelled.is_object());
  EXPECT_EQ(cancelled.at("id"), json::value("slow")) << cancelled;
  EXPECT_EQ(cancelled.at("error").at("code"), json::value(-32800)) << cancelled;
  EXPECT_EQ(cancelled.at("error").at("data").at("kind"), json::value("cancelled")) << cancelled;
  // The server was told, as when the caller hangs up; its late answer is dropped.
  json::value id = received_of("tools/call").at(0).at("id");
  ASSERT_TRUE(when_file_changes(received, [&] { return received_of("notifications/cancelled").size() == 1; }))
      << read_file(received);
  EXPECT_EQ(received_of("notifications/cancelled").at(0).at("params").at("requestId"), id);
  auto nothing_waiting = status_until(home.socket(), json::object{{"requests_waiting", 0}});
  EXPECT_TRUE(nothing_waiting) << nothing_waiting.describe();
  EXPECT_EQ(listed("one").at("requests_waiting"), json::value(0));

  // The session is still open, with its allow; the id may be used again; nothing else came.
  auto perms = c->call("permissions/list", json::object{{"cwd", home.root()}}, 10s);
  ASSERT_TRUE(perms);
  EXPECT_EQ(perms->at("session_allow"), json::array{"one.echo"}) << *perms;
  ASSERT_TRUE(
      c->write_raw(R"({"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"connector":"one","tool":"echo"}})"
                   "\n"));
  json::value again = next_reply(*c);
  ASSERT_TRUE(again.is_object());
  EXPECT_EQ(again.at("id"), json::value("slow"));
  EXPECT_EQ(again.at("result").at("text"), json::value("fake echo")) << again;
  // A call already answered cannot be cancelled: no second answer comes.
  ASSERT_TRUE(c->write_raw(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"slow"}})"
                           "\n"));
  auto status = c->call("daemon/status", json::object{}, 10s);
  EXPECT_TRUE(status) << "the reply after the cancel must be this call's";
  EXPECT_EQ(home.read_log().find("internal"), std::string::npos) << home.read_log();
}

// A real slow tool (server-everything's long-running operation, 60 s): the cancel answers at once.
TEST_F(Sessions, ACancelledLongRunningCallEndsLongBeforeItsTime) {
  ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
  home.write_mcp_config(stdio_entry("everything", "node", {kEverything, "stdio"}));
  auto c = hello_client(home);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->call("session/open", json::object{{"cwd", home.root()}}, 10s));
  ASSERT_TRUE(c->write_raw(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"connector":"everything",)"
                           R"("tool":"trigger-long-running-operation","arguments":{"duration":60,"steps":60},)"
                           R"("progress_token":"p"}})"
                           "\n"));
  // Its first progress shows that it runs on the server.
  ASSERT_TRUE(notified(*c, "tools/progress", [](const json::object& p) { return p.at("id") == json::value(5); }));
  auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(c->write_raw(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":5}})"
                           "\n"));
  json::value r = next_reply(*c);
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r.at("id"), json::value(5));
  EXPECT_EQ(r.at("error").at("data").at("kind"), json::value("cancelled")) << r;
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 30s);
  auto echo = c->call(
      "tools/call",
      json::object{
          {"connector", "everything"}, {"tool", "echo"}, {"arguments", json::object{{"message", "still here"}}}},
      20s);
  ASSERT_TRUE(echo) << echo.error().message;
  EXPECT_EQ(echo->at("text"), json::value("Echo: still here"));
  EXPECT_TRUE(
      c->call("permissions/list", json::object{{"cwd", home.root()}}, 10s)->as_object().contains("session_allow"));
}

TEST_F(Sessions, TwoClientsShareOneChildAndTheirCallsAreMultiplexed) {
  home.write_mcp_config(fake("one"));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  auto a = hello_client(home.socket());
  auto b = hello_client(home.socket());
  ASSERT_TRUE(a && b);
  // The same request id on both connections, and the fake answers only once both calls are in
  // flight, the second first: each client must still get its own answer.
  auto call = [](const char* who) {
    return std::string(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"connector":"one",)") +
           R"("tool":"rendezvous","arguments":{"message":")" + who + R"("}}})" + "\n";
  };
  ASSERT_TRUE(a->write_raw(call("from a")));
  ASSERT_TRUE(b->write_raw(call("from b")));
  for (auto [client, who] : {std::pair{&*a, "from a"}, std::pair{&*b, "from b"}}) {
    auto line = client->read_line(10s);
    ASSERT_TRUE(line) << who;
    json::value v = json::parse(*line);
    EXPECT_EQ(v.at("id"), json::value(7));
    EXPECT_EQ(v.at("result").at("text"), json::value(std::string("rendezvous ") + who)) << *line;
  }
  EXPECT_EQ(pids_of("one").size(), 1u) << "one child serves every client";
  EXPECT_EQ(received_of("initialize").size(), 1u);
}

TEST_F(Sessions, ManyClientsAtOnceEachGetTheirOwnAnswersAndNothingIsLeftAfterwards) {
  home.write_mcp_config(fake("one"));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  ASSERT_TRUE(becomes_running("one"));
  auto daemon = daemon_pid(home.socket());
  ASSERT_TRUE(daemon);
  auto watch = SyncClient::connect(home.socket());  // counted with the idle fds: the waits ask on it
  ASSERT_TRUE(watch);
  // The worker idle too: the tool-list cache it writes after the start holds a file open meanwhile.
  auto idle = status_until(*watch, json::object{{"clients", 1}, {"worker_jobs", 0}});
  ASSERT_TRUE(idle) << idle.describe();
  int idle_fds = open_fds(static_cast<pid_t>(*daemon));
  std::string idle_targets = fd_targets(static_cast<pid_t>(*daemon));
  constexpr int kClients = 100, kCalls = 10;
  {
    std::vector<SyncClient> clients;
    for (int c = 0; c < kClients; ++c) {
      auto client = hello_client(home.socket());
      ASSERT_TRUE(client);
      clients.push_back(std::move(*client));
    }
    // Every client sends all its calls before reading any answer; ids repeat across clients.
    for (int c = 0; c < kClients; ++c) {
      std::string batch;
      for (int k = 0; k < kCalls; ++k) {
        batch += R"({"jsonrpc":"2.0","id":)" + std::to_string(k) +
                 R"(,"method":"tools/call","params":{"connector":"one","tool":"echo","arguments":{"message":"c)" +
                 std::to_string(c) + "-k" + std::to_string(k) + "\"}}}\n";
      }
      ASSERT_TRUE(clients[c].write_raw(batch));
    }
    for (int c = 0; c < kClients; ++c) {
      for (int k = 0; k < kCalls; ++k) {
        auto line = clients[c].read_line(20s);
        ASSERT_TRUE(line) << "client " << c;
        json::value v = json::parse(*line);
        std::string want = "fake echo c" + std::to_string(c) + "-k" + std::to_string(v.at("id").as_int64());
        ASSERT_EQ(v.at("result").at("text"), json::value(want)) << *line;
      }
    }
  }
  // The clients' sockets are closed before they stop being counted: the fds are back by then.
  auto gone = status_until(*watch, json::object{{"clients", 1}, {"worker_jobs", 0}});
  EXPECT_TRUE(gone) << gone.describe();
  EXPECT_LE(open_fds(static_cast<pid_t>(*daemon)), idle_fds)
      << "idle: " << idle_targets << "\nnow:  " << fd_targets(static_cast<pid_t>(*daemon));
  EXPECT_EQ(listed("one").at("requests_waiting"), json::value(0));
  EXPECT_EQ(pids_of("one").size(), 1u);
}

}  // namespace
}  // namespace oppx::test
