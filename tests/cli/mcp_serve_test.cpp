// `oppx mcp serve` with the official TypeScript SDK client as its peer (support/serve_peer.mjs),
// over the real daemon and server-everything: the list and its names, calls with their text,
// structured content and progress, a cancel, list_changed, the permission question asked by
// elicitation (yes and no) or declined with the line that allows it, and a deny rule's tool left
// out. The tool names' form is tested on its own below.
#include "common/serve_names.h"
#include "tests/support/harness.h"
#include "tests/support/waits.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

// kModern: over stdio, the official 2.x client pinned to MCP 2026-07-28.
enum class Over { kStdio, kHttp, kModern };

// Runs the peer with a scenario, over stdio (spawning `oppx mcp serve`) or the daemon's HTTP
// socket; its output's lines by step.
// `env`: VAR=value pairs the client (and so `oppx mcp serve`) has and the daemon does not.
std::map<std::string, json::object> peer(Over over, const TempHome& home, const std::vector<std::string>& extra,
                                         std::string* raw = nullptr, const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv{"env", std::string("OPPX_BIN=") + OPPX_BIN};
  argv.insert(argv.end(), env.begin(), env.end());
  for (std::string a : {std::string("node"), std::string(OPPX_TEST_SUPPORT) + "/serve_peer.mjs",
                        std::string("--npm-dir"), std::string(OPPX_NPM_DIR)})
    argv.push_back(a);
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (over == Over::kHttp) {
    argv.push_back("--unix");
    argv.push_back(home.root() + "/run/oppx/oppxd-mcp.sock");
    // The folder whose rules apply, as `oppx mcp serve` takes the current one (the URL's ?cwd=).
    char here[4096];
    argv.push_back("--cwd");
    argv.push_back(::getcwd(here, sizeof here) ? here : "/");
  } else {
    if (over == Over::kModern) argv.push_back("--modern");
    for (std::string a : {std::string("--"), std::string(OPPX_BIN), std::string("mcp"), std::string("serve")})
      argv.push_back(a);
  }
  Result r = run(argv, std::chrono::seconds(120));
  if (raw) *raw = r.out + r.err;
  std::map<std::string, json::object> steps;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (!ec && v.is_object() && v.as_object().contains("step"))
      steps[std::string(v.as_object().at("step").as_string())] = v.as_object();
  }
  return steps;
}

std::string result_text(const json::value& result) {
  const json::value& content = result.at("content");
  return content.as_array().empty() ? "" : std::string(content.at(0).at("text").as_string());
}

std::string first_text(const json::object& step) { return result_text(step.at("result")); }

bool has_name(const json::object& step, std::string_view name) {
  for (const json::value& n : step.at("names").as_array())
    if (n.as_string() == name) return true;
  return false;
}

struct McpServe : ::testing::TestWithParam<Over> {
  TempHome home;
  std::map<std::string, json::object> peer(const std::vector<std::string>& extra, std::string* raw = nullptr) {
    return test::peer(GetParam(), home, extra, raw);
  }
  void SetUp() override {
    ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
    home.write_mcp_config(stdio_entry("everything", "node", {kEverything, "stdio"}));
    Result up = oppx({"mcp", "list"});  // starts the daemon, which starts the connector
    ASSERT_EQ(up.exit_code, 0) << up.err;
  }
  void TearDown() override { oppx({"daemon", "stop"}); }
};

TEST_P(McpServe, TheSdkClientListsAndCallsTheWarmConnectorsToolsWithProgress) {
  std::string raw;
  auto steps = peer({"--scenario", "basic"}, &raw);
  ASSERT_TRUE(steps.count("progress")) << raw;
  // The 2.x client pinned to 2026-07-28 got it (it fails rather than fall back) and oppx's name
  // from the discovery's _meta.
  if (GetParam() == Over::kModern) EXPECT_EQ(steps["initialized"].at("protocol"), json::value("2026-07-28")) << raw;
  EXPECT_EQ(steps["initialized"].at("server").at("name"), json::value("oppx"));
  EXPECT_EQ(steps["initialized"].at("capabilities").at("tools").at("listChanged"), json::value(true));
  EXPECT_TRUE(has_name(steps["list"], "everything__echo")) << raw;
  EXPECT_TRUE(has_name(steps["list"], "everything__trigger-long-running-operation")) << raw;
  const json::object& echo = steps["list"].at("echo").as_object();
  EXPECT_EQ(echo.at("title"), json::value("everything: Echo Tool"));
  EXPECT_TRUE(echo.at("inputSchema").at("properties").as_object().contains("message"));
  EXPECT_EQ(echo.at("annotations").at("readOnlyHint"), json::value(true));

  EXPECT_EQ(first_text(steps["echo"]), "Echo: through oppx");
  EXPECT_EQ(steps["echo"].at("result").at("isError"), json::value(false));
  EXPECT_TRUE(steps["structured"].at("result").as_object().contains("structuredContent")) << raw;
  EXPECT_GE(steps["progress"].at("progress").as_array().size(), 2u) << raw;
  EXPECT_NE(first_text(steps["progress"]).find("completed"), std::string::npos) << raw;
  EXPECT_NE(std::string(steps["unknown"].at("error").as_string()).find("Unknown tool: nobody__nothing"),
            std::string::npos)
      << raw;
  // Every request was answered or withdrawn by its client (a closed list-change stream is not
  // answered), none dropped.
  std::string log = home.read_log();
  EXPECT_EQ(log.find("dropped without a reply"), std::string::npos) << log;
}

TEST_P(McpServe, ACancelFromTheClientEndsTheCallAndTheConnectionGoesOn) {
  std::string raw;
  auto steps = peer({"--scenario", "cancel"}, &raw);
  ASSERT_TRUE(steps.count("after")) << raw;
  EXPECT_FALSE(steps["cancel"].at("error").is_null()) << raw;
  EXPECT_FALSE(steps["cancel"].at("first").is_null()) << raw;
  EXPECT_LT(steps["cancel"].at("ms").to_number<double>(), 30'000) << raw;
  EXPECT_EQ(first_text(steps["after"]), "Echo: after");
  // The daemon passed the cancel on: no call stays open on the connector while the client is here.
  EXPECT_EQ(steps["after"].at("requests_waiting"), json::value(0)) << raw;
}

TEST_P(McpServe, AnAddedConnectorIsAnnouncedWithListChanged) {
  std::string add = std::string(OPPX_BIN) + " mcp add second -- node " + kEverything + " stdio";
  std::string raw;
  auto steps = peer({"--scenario", "changed", "--add", add}, &raw);
  ASSERT_TRUE(steps.count("relisted")) << raw;
  EXPECT_FALSE(has_name(steps["list"], "second__echo")) << raw;
  EXPECT_TRUE(has_name(steps["relisted"], "second__echo")) << raw;
  EXPECT_GE(steps["relisted"].at("changes").to_number<int>(), 1);
}

TEST_P(McpServe, ACallTheRulesAskAboutIsAskedByElicitationOrDeclinedWithTheLineThatAllowsIt) {
  std::string raw;
  auto yes = peer({"--scenario", "ask", "--answer", "yes"}, &raw);
  ASSERT_TRUE(yes.count("ask")) << raw;
  EXPECT_EQ(yes["ask"].at("result").at("isError"), json::value(false)) << raw;
  ASSERT_EQ(yes["ask"].at("questions").as_array().size(), 1u) << raw;
  EXPECT_NE(std::string(yes["ask"].at("questions").at(0).as_string()).find("everything.toggle-simulated-logging"),
            std::string::npos);

  auto no = peer({"--scenario", "ask", "--answer", "no"}, &raw);
  ASSERT_TRUE(no.count("ask")) << raw;
  EXPECT_EQ(no["ask"].at("result").at("isError"), json::value(true)) << raw;
  EXPECT_NE(first_text(no["ask"]).find("said no"), std::string::npos) << raw;

  auto cannot = peer({"--scenario", "ask", "--answer", "none"}, &raw);
  ASSERT_TRUE(cannot.count("ask")) << raw;
  EXPECT_EQ(cannot["ask"].at("result").at("isError"), json::value(true)) << raw;
  EXPECT_NE(first_text(cannot["ask"]).find("oppx permissions allow everything.toggle-simulated-logging"),
            std::string::npos)
      << raw;

  // Once allowed by a rule, it runs without a question.
  ASSERT_EQ(oppx({"permissions", "allow", "everything.toggle-simulated-logging"}).exit_code, 0);
  auto allowed = peer({"--scenario", "ask", "--answer", "none"}, &raw);
  EXPECT_EQ(allowed["ask"].at("result").at("isError"), json::value(false)) << raw;
}

TEST_P(McpServe, ADeniedToolIsNotOffered) {
  ASSERT_EQ(oppx({"permissions", "deny", "everything.get-sum"}).exit_code, 0);
  std::string raw;
  auto steps = peer({"--scenario", "basic"}, &raw);
  ASSERT_TRUE(steps.count("list")) << raw;
  EXPECT_FALSE(has_name(steps["list"], "everything__get-sum")) << raw;
  EXPECT_TRUE(has_name(steps["list"], "everything__echo")) << raw;
}

INSTANTIATE_TEST_SUITE_P(Over, McpServe, ::testing::Values(Over::kStdio, Over::kHttp, Over::kModern),
                         [](const auto& info) {
                           return info.param == Over::kStdio ? "Stdio" : info.param == Over::kHttp ? "Http" : "Modern";
                         });

// A 2026-07-28 client's answer to a permission question comes back as a new call with the
// question's requestState: one naming another tool is taken as no, and the same state again, or
// one never handed out, is refused.
using McpServeModernClient = McpServe;

TEST_F(McpServeModernClient, AnAnswerInAnotherCallOrAgainOrForgedIsNotTakenAsYes) {
  std::string raw;
  auto steps = test::peer(Over::kModern, home, {"--scenario", "twisted", "--answer", "yes"}, &raw);
  ASSERT_TRUE(steps.count("twisted")) << raw;
  const json::object& t = steps["twisted"];
  EXPECT_EQ(t.at("asked").at("resultType"), json::value("input_required")) << raw;
  EXPECT_EQ(t.at("asked").at("inputRequests").at("oppx_permission").at("method"), json::value("elicitation/create"));
  EXPECT_NE(std::string(t.at("other").at("error").as_string()).find("oppx took it as no"), std::string::npos) << raw;
  for (const char* k : {"replayed", "forged"})
    EXPECT_NE(std::string(t.at(k).at("error").as_string()).find("no longer holds"), std::string::npos) << k << raw;
}

// The HTTP socket speaks MCP 2025-11-25: the 2.x client in its "auto" mode falls back to it there
// and is asked by elicitation.
TEST_F(McpServeModernClient, OverTheHttpSocketItFallsBackTo20251125AndIsAsked) {
  std::string raw;
  auto steps = test::peer(Over::kHttp, home, {"--modern", "--scenario", "ask", "--answer", "yes"}, &raw);
  ASSERT_TRUE(steps.count("ask")) << raw;
  EXPECT_EQ(steps["initialized"].at("protocol"), json::value("2025-11-25")) << raw;
  EXPECT_EQ(steps["ask"].at("result").at("isError"), json::value(false)) << raw;
  EXPECT_EQ(steps["ask"].at("questions").as_array().size(), 1u) << raw;
}

// `oppx mcp serve` hands its stdin and stdout to the daemon, which serves the client itself.
using McpServeStdio = McpServe;

TEST_F(McpServeStdio, TheDaemonServesTheHandedOverClientAndTheCommandStaysAsItsLifeline) {
  std::string raw;
  auto steps = test::peer(Over::kStdio, home, {"--scenario", "kill"}, &raw);
  ASSERT_TRUE(steps.count("kill")) << raw;
  std::string log = home.read_log();
  EXPECT_NE(log.find("`oppx mcp serve` handed over its client"), std::string::npos) << log;
  // Killed while its client kept the pipes open: the daemon ended the session and let them go.
  EXPECT_EQ(steps["kill"].at("ended_before"), json::value(false)) << raw;
  EXPECT_EQ(steps["kill"].at("ended"), json::value(true)) << raw << log;
}

// A 2026-07-28 client hears of changes on the stream it opened (subscriptions/listen): the
// daemon that takes it over after a restart goes on naming that stream.
TEST_F(McpServeModernClient, AfterADaemonRestartItsListChangeStreamGoesOn) {
  std::string add = std::string(OPPX_BIN) + " mcp add second -- node " + kEverything + " stdio";
  std::string raw;
  auto steps =
      test::peer(Over::kModern, home,
                 {"--scenario", "restart", "--add", std::string(OPPX_BIN) + " daemon restart", "--then", add}, &raw);
  ASSERT_TRUE(steps.count("relisted")) << raw << home.read_log();
  EXPECT_EQ(result_text(steps["restart"].at("after")), "Echo: after") << raw;
  EXPECT_TRUE(has_name(steps["relisted"], "second__echo")) << raw;
}

TEST_F(McpServeStdio, AfterADaemonRestartTheNewDaemonTakesTheIdleClientTellsItTheListChangedAndServesItsCalls) {
  auto before = daemon_pid(home.socket());
  ASSERT_TRUE(before);
  std::string raw;
  auto steps = test::peer(Over::kStdio, home,
                          {"--scenario", "restart", "--add", std::string(OPPX_BIN) + " daemon restart"}, &raw);
  ASSERT_TRUE(steps.count("restart")) << raw << home.read_log();
  EXPECT_EQ(result_text(steps["restart"].at("before")), "Echo: before") << raw;
  EXPECT_EQ(result_text(steps["restart"].at("after")), "Echo: after") << raw;
  EXPECT_GE(steps["restart"].at("changes").to_number<int>(), 1) << raw;
  auto after = daemon_pid(home.socket());
  ASSERT_TRUE(after);
  EXPECT_NE(*before, *after);
  // The second daemon took the same client over (not a relay in the command): the log (both
  // daemons') says so twice.
  std::string log = home.read_log();
  std::size_t first = log.find("handed over its client");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_NE(log.find("handed over its client", first + 1), std::string::npos) << log;
}

// A call the daemon's stop cuts short is answered (it may or may not have run), not left waiting:
// the next daemon would not know it.
TEST_F(McpServeStdio, ACallInFlightWhenTheDaemonStopsIsAnswered) {
  std::string raw;
  auto steps =
      test::peer(Over::kStdio, home, {"--scenario", "stopped", "--add", std::string(OPPX_BIN) + " daemon stop"}, &raw);
  ASSERT_TRUE(steps.count("stopped")) << raw << home.read_log();
  EXPECT_EQ(steps["stopped"].at("result").at("isError"), json::value(true)) << raw;
  EXPECT_NE(first_text(steps["stopped"]).find("oppxd went away during the call"), std::string::npos) << raw;
}

// ${VAR} in a definition is expanded from the client's environment, as for any command: a lazy
// connector started by a call through `oppx mcp serve` gets a variable only the client has.
TEST_F(McpServeStdio, AConnectorStartedForTheClientGetsTheClientsEnvironment) {
  std::string lazy = stdio_entry("lazyenv", "node", {kEverything, "stdio"}, {{"GREETING", "${OPPX_TEST_GREETING}"}});
  lazy.insert(lazy.size() - 1, R"(,"lazy":true)");
  home.write_mcp_config(stdio_entry("everything", "node", {kEverything, "stdio"}) + "," + lazy);
  ASSERT_EQ(oppx({"permissions", "allow", "lazyenv.get-env"}).exit_code, 0);
  std::string raw;
  auto steps =
      test::peer(Over::kStdio, home, {"--scenario", "env"}, &raw, {"OPPX_TEST_GREETING=hello-from-the-client"});
  ASSERT_TRUE(steps.count("env")) << raw;
  // Set (and hidden in the result, as a value the daemon put in is).
  EXPECT_EQ(steps["env"].at("result").at("isError"), json::value(false)) << raw;
  EXPECT_NE(first_text(steps["env"]).find(R"("GREETING": "***")"), std::string::npos) << raw;
}

TEST_F(McpServeStdio, WithoutTheMcpSocketTheCommandServesTheClientItself) {
  ASSERT_EQ(::unlink((home.root() + "/run/oppx/oppxd-mcp.sock").c_str()), 0);
  std::string raw;
  auto steps = test::peer(Over::kStdio, home, {"--scenario", "basic"}, &raw);
  ASSERT_TRUE(steps.count("echo")) << raw;
  EXPECT_EQ(first_text(steps["echo"]), "Echo: through oppx");
  EXPECT_EQ(home.read_log().find("handed over its client"), std::string::npos);
}

TEST_F(McpServeStdio, WhenTheClientClosesItsEndTheCommandExits) {
  std::string init = R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                     R"("capabilities":{},"clientInfo":{"name":"sh","version":"1"}}})";
  Result r =
      run({"sh", "-c", "printf '%s\n' \"$1\" | \"$2\" mcp serve", "sh", init, OPPX_BIN}, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("serverInfo":{"name":"oppx")"), std::string::npos) << r.out << r.err;
  EXPECT_NE(home.read_log().find("ended: the client closed its end"), std::string::npos) << home.read_log();
}

// A connection to the daemon's MCP socket, or -1.
int connect_mcp_socket(const TempHome& home) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", (home.root() + "/run/oppx/oppxd-mcp.sock").c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  ::close(fd);
  return -1;
}

// A client that keeps its connection open without a request (HTTP keep-alive) does not keep the
// daemon from stopping.
TEST(McpServeHttp, AnIdleConnectionDoesNotHoldTheDaemon) {
  TempHome home;
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  int fd = connect_mcp_socket(home);
  ASSERT_GE(fd, 0);
  std::string ping = "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n";  // answered 404, connection kept
  ASSERT_EQ(::write(fd, ping.data(), ping.size()), static_cast<ssize_t>(ping.size()));
  char buf[512];
  ASSERT_GT(::read(fd, buf, sizeof buf), 0);
  EXPECT_EQ(std::string(buf, 12), "HTTP/1.1 404");
  Result stop = oppx({"daemon", "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(stop.err.find("did not stop"), std::string::npos) << stop.err;
  ::close(fd);
}

// One HTTP/1.1 request on a new connection to the MCP socket; the whole answer (our side is shut
// for writing after the request, so the daemon closes after its answer).
std::string http_exchange(const TempHome& home, const std::string& head, const std::string& body) {
  int fd = connect_mcp_socket(home);
  if (fd < 0) return "";
  std::string req = head + "Host: x\r\nConnection: close\r\nContent-Type: application/json\r\n" +
                    "Accept: application/json, text/event-stream\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\n\r\n" + body;
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return "";
  }
  ::shutdown(fd, SHUT_WR);  // the request is all: the daemon closes after its answer
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

// A handover whose line is not what `oppx mcp serve` sends is refused with why, and the daemon
// goes on (a same-uid process may send anything).
TEST(McpServeHandover, ABadFirstLineIsRefusedAndTheDaemonGoesOn) {
  TempHome home;
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  for (std::string line : {"not json", "null", R"({"cwd":"relative"})", R"({"cwd":"/no/such/folder"})", "{}"}) {
    int fd = connect_mcp_socket(home);
    ASSERT_GE(fd, 0);
    int pipes[2];
    ASSERT_EQ(::pipe(pipes), 0);
    char nul = 0;
    iovec iov{&nul, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof pipes)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof pipes);
    std::memcpy(CMSG_DATA(c), pipes, sizeof pipes);
    ASSERT_EQ(::sendmsg(fd, &msg, 0), 1);
    line += "\n";
    ASSERT_EQ(::write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    std::string answer;
    char buf[512];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    ::close(pipes[0]);
    ::close(pipes[1]);
    EXPECT_NE(answer.find(R"({"error":)"), std::string::npos) << line << answer;
    EXPECT_EQ(answer.find("serving"), std::string::npos) << line << answer;
  }
  Result status = oppx({"daemon", "status", "--no-start"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
}

// A session nobody uses ends after the idle limit (30 minutes; 300 ms here), and its client is
// answered 404, which tells an MCP client to open a new one.
TEST(McpServeHttp, ASessionUnusedPastTheLimitEndsAndItsClientIsToldToStartAnother) {
  TempHome home;
  ::setenv("OPPX_TEST_MCP_SESSION_IDLE_MS", "300", 1);
  Result up = oppx({"daemon", "start"});
  ::unsetenv("OPPX_TEST_MCP_SESSION_IDLE_MS");
  ASSERT_EQ(up.exit_code, 0) << up.err;
  std::string init =
      http_exchange(home, "POST /mcp?cwd=/ HTTP/1.1\r\n",
                    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                    R"("capabilities":{},"clientInfo":{"name":"raw","version":"1"}}})");
  std::size_t at = init.find("Mcp-Session-Id: ");
  ASSERT_NE(at, std::string::npos) << init;
  std::string sid = init.substr(at + 16, init.find("\r\n", at) - at - 16);
  ASSERT_TRUE(when_file_changes(
      home.log(), [&] { return home.read_log().find("ended: unused for") != std::string::npos; }, 15s))
      << home.read_log();
  std::string later = http_exchange(home, "POST /mcp HTTP/1.1\r\nMcp-Session-Id: " + sid + "\r\n",
                                    R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}})");
  EXPECT_EQ(later.substr(0, 12), "HTTP/1.1 404") << later;
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
}

TEST(McpServeHttp, ItsSocketIsTheUsersAloneBesideTheDaemons) {
  TempHome home;
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  struct stat st {};
  std::string path = home.root() + "/run/oppx/oppxd-mcp.sock";
  ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
  EXPECT_NE(::stat(path.c_str(), &st), 0) << "the socket stays after the daemon stopped";
}

// oppx's own client speaks MCP 2026-07-28 first: a second daemon (its own HOME) with `oppx mcp
// serve` of the first as a connector discovers it as such and calls through it.
TEST(McpServeModern, AnotherDaemonSpeaks20260728ToItAndCallsThroughIt) {
  TempHome home;
  ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
  home.write_mcp_config(stdio_entry("everything", "node", {kEverything, "stdio"}));
  ASSERT_EQ(oppx({"mcp", "list"}).exit_code, 0);
  const std::string b = home.root() + "/second";
  for (std::string d : {"", "/config", "/config/oppx", "/state", "/cache", "/data", "/run"})
    ASSERT_EQ(::mkdir((b + d).c_str(), 0700), 0) << b + d;
  json::object upstream{
      {"command", OPPX_BIN},
      {"args", json::array{"mcp", "serve"}},
      // The first daemon reads the user's mcp.json where the client's environment says.
      {"env", json::object{{"OPPX_SOCKET", home.socket()}, {"XDG_CONFIG_HOME", home.root() + "/config"}}}};
  {
    std::ofstream f(b + "/config/oppx/mcp.json");
    f << json::serialize(json::object{{"mcpServers", json::object{{"upstream", upstream}}}});
  }
  ::chmod((b + "/config/oppx/mcp.json").c_str(), 0600);
  auto in_b = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{"env",
                                  "HOME=" + b,
                                  "XDG_CONFIG_HOME=" + b + "/config",
                                  "XDG_STATE_HOME=" + b + "/state",
                                  "XDG_CACHE_HOME=" + b + "/cache",
                                  "XDG_DATA_HOME=" + b + "/data",
                                  "XDG_RUNTIME_DIR=" + b + "/run",
                                  OPPX_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, std::chrono::seconds(60));
  };
  Result call = in_b({"mcp", "call", "upstream", "everything__echo", R"({"message":"two daemons"})"});
  EXPECT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "Echo: two daemons\n");
  Result list = in_b({"mcp", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  json::value listed = json::parse(list.out);
  const json::object& c = listed.at("connectors").at(0).as_object();
  EXPECT_EQ(c.at("protocol"), json::value("2026-07-28")) << list.out;
  EXPECT_GT(c.at("tools").to_number<int>(), 10)
      << list.out << read_file(b + "/state/oppx/mcp-upstream.log") << read_file(b + "/state/oppx/oppxd.log");
  in_b({"daemon", "stop"});
}

TEST(ServedNames, KeepPlainNamesAndHashTheOnesThatHadToChange) {
  EXPECT_EQ(served_name("everything", "echo"), "everything__echo");
  EXPECT_EQ(served_name("gh-2", "list_issues"), "gh-2__list_issues");
  std::string dotted = served_name("my.server", "do it");
  EXPECT_EQ(dotted.substr(0, 17), "my_server__do_it_") << dotted;
  EXPECT_EQ(dotted.size(), 17u + 8u) << dotted;
  std::string longer = served_name(std::string(40, 'a'), std::string(40, 'b'));
  EXPECT_EQ(longer.size(), kMaxToolName);
  // Same pair, same name; another pair, another name.
  EXPECT_EQ(served_name("my.server", "do it"), dotted);
  EXPECT_NE(served_name("my.server", "do_it"), dotted);
  for (char c : longer + dotted) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  // Two tools that would share a name both get the hashed form, whatever their order.
  ServedNames a({{"a__b", "c"}, {"a", "b__c"}});
  ServedNames b({{"a", "b__c"}, {"a__b", "c"}});
  EXPECT_NE(a.name_of(0), a.name_of(1));
  EXPECT_EQ(a.name_of(0), b.name_of(1));
  EXPECT_EQ(a.find(a.name_of(1))->tool, "b__c");
  EXPECT_FALSE(a.find("a__b__c").has_value());
  // A plain name that is another tool's hashed name: the two still get two names.
  std::string h = served_name("my.server", "do it");
  ServedNames c({{"my.server", "do it"}, {"my_server", h.substr(std::string("my_server__").size())}});
  EXPECT_NE(c.name_of(0), c.name_of(1));
  EXPECT_EQ(c.find(c.name_of(0))->tool, "do it");
  EXPECT_EQ(c.find(c.name_of(1))->connector, "my_server");
}

}  // namespace
}  // namespace oppx::test
