// Streamable HTTP connectors through `oppx mcp …`, as a user runs them: the real server-everything
// in its streamableHttp mode, and tests/support/fake_http_mcp.js for the faults (401, a forgotten
// session, redirects, a dropped stream, torture SSE, bad session ids, wrong answers, timeouts,
// TLS that must fail closed). No secret header value may appear in any output or log.
#include "tests/daemon/http_fixture.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <sstream>
#include <thread>

namespace oppx::test {
namespace {

namespace json = boost::json;

// The common scenario is everything_test.cpp's; here what only HTTP has: the session id.
TEST_F(HttpConnectors, ServerEverythingRestartedGetsANewSessionAndAReconnectEndsTheOld) {
  ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
  int port = free_port();
  auto server = std::make_unique<Process>(
      std::vector<std::string>{"env", "PORT=" + std::to_string(port), "node", kEverything, "streamableHttp"});
  ASSERT_TRUE(server->wait_for_stderr("listening on port")) << server->err();
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  home.write_mcp_config(http_entry("everything", url));
  Result echo = oppx({"mcp", "call", "everything", "echo", R"({"message":"hello over http"})"});
  ASSERT_EQ(echo.exit_code, 0) << echo.err;
  EXPECT_EQ(echo.out, "Echo: hello over http\n");

  // The server restarts and forgets every session: it answers the old id with HTTP 400 (not the
  // 404 the spec asks for). oppx starts a new session once and the call goes through.
  server.reset();
  server = std::make_unique<Process>(
      std::vector<std::string>{"env", "PORT=" + std::to_string(port), "node", kEverything, "streamableHttp"});
  ASSERT_TRUE(server->wait_for_stderr("listening on port")) << server->err();
  Result again = oppx({"mcp", "call", "everything", "echo", R"({"message":"after a restart"})"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "Echo: after a restart\n");
  EXPECT_TRUE(server->wait_for_stdout("Session initialized with ID")) << server->out();

  // Reconnecting ends the session with DELETE before the new one starts.
  ASSERT_EQ(oppx({"mcp", "reconnect", "everything"}).exit_code, 0);
  EXPECT_TRUE(server->wait_for_stdout("Received session termination request")) << server->out();
  EXPECT_EQ(entry("everything").at("state"), json::value("running"));
}

// oppx mcp add --url: the probe runs against the real server, the file keeps the ${VAR}
// reference as written, and the token it expands to is never shown or written anywhere.
TEST_F(HttpConnectors, AddedWithAUrlItIsProbedAndTheTokenStaysAReference) {
  ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
  int port = free_port();
  Process server({"env", "PORT=" + std::to_string(port), "node", kEverything, "streamableHttp"});
  ASSERT_TRUE(server.wait_for_stderr("listening on port")) << server.err();
  const std::string secret = "tok-4f1c9e-http-add-secret";
  ::setenv("OPPX_TEST_HTTP_TOKEN", secret.c_str(), 1);
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";

  Result add = oppx({"mcp", "add", "web", "--url", url, "-H", "Authorization: Bearer ${OPPX_TEST_HTTP_TOKEN}"});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_NE(add.out.find("web.echo: Echoes back the input string\n"), std::string::npos) << add.out;
  EXPECT_NE(add.out.find("tokens a request"), std::string::npos) << add.out;
  std::string file = read_file(home.root() + "/config/oppx/mcp.json");
  EXPECT_NE(file.find(R"("Authorization": "Bearer ${OPPX_TEST_HTTP_TOKEN}")"), std::string::npos) << file;

  Result get = oppx({"mcp", "get", "web"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_NE(get.out.find("url:      " + url), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("Authorization: Bearer ${OPPX_TEST_HTTP_TOKEN}"), std::string::npos) << get.out;
  Result call = oppx({"mcp", "call", "web", "echo", R"({"message":"added"})"});
  ASSERT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "Echo: added\n");
  Result list = oppx({"mcp", "list", "--json"});
  for (const Result* r : {&add, &get, &call, &list}) {
    EXPECT_EQ((r->out + r->err).find(secret), std::string::npos) << r->out << r->err;
  }
  EXPECT_EQ(file.find(secret), std::string::npos);
  EXPECT_EQ(home.read_log().find(secret), std::string::npos);

  ASSERT_EQ(oppx({"mcp", "remove", "web"}).exit_code, 0);
  EXPECT_TRUE(server.wait_for_stdout("Received session termination request")) << server.out();
  ::unsetenv("OPPX_TEST_HTTP_TOKEN");
}

TEST_F(HttpConnectors, JsonAndEventStreamAnswersAndTheHeadersSent) {
  Fake rec = fake({"record"});
  Fake sse = fake({"sse"});
  home.write_mcp_config(http_entry("rec", rec.url()) + "," + http_entry("sse", sse.url()));
  for (const char* name : {"rec", "sse"}) {
    Result call = oppx({"mcp", "call", name, "echo", R"({"message":"hi"})"});
    EXPECT_EQ(call.exit_code, 0) << name << ": " << call.err;
    EXPECT_EQ(call.out, "echo: hi\n") << name;
  }
  // Every request says what it accepts; after initialize it carries the negotiated version and
  // the session id (initialize itself carries neither).
  EXPECT_TRUE(rec.proc->wait_for_stdout("initialize accept=application/json, text/event-stream version=- session=-"))
      << rec.proc->out();
  EXPECT_TRUE(
      rec.proc->wait_for_stdout("notifications/initialized accept=application/json, text/event-stream "
                                "version=2025-11-25 session=sess-1"))
      << rec.proc->out();
  EXPECT_TRUE(rec.proc->wait_for_stdout(
      "tools/call accept=application/json, text/event-stream version=2025-11-25 session=sess-1"))
      << rec.proc->out();

  // Removing the connector ends its session with DELETE.
  home.write_mcp_config(http_entry("sse", sse.url()));
  oppx({"mcp", "list"});
  EXPECT_TRUE(rec.proc->wait_for_stdout("DELETE session sess-1")) << rec.proc->out();
}

// MCP-Protocol-Version came with 2025-06-18: after a 2025-03-26 initialize no request carries it
// (POST, the server-stream GET, the DELETE); after a later one every request carries that version.
TEST_F(HttpConnectors, TheVersionHeaderFollowsTheNegotiatedVersion) {
  Fake v0326 = fake({"record", "--version=2025-03-26"});
  Fake v0618 = fake({"record", "--version=2025-06-18"});
  Fake v1125 = fake({"record"});
  home.write_mcp_config(http_entry("v0326", v0326.url()) + "," + http_entry("v0618", v0618.url()) + "," +
                        http_entry("v1125", v1125.url()));
  struct Case {
    const char* name;
    Fake* f;
    const char* version;
  };
  for (const Case& c :
       {Case{"v0326", &v0326, "-"}, Case{"v0618", &v0618, "2025-06-18"}, Case{"v1125", &v1125, "2025-11-25"}}) {
    Result call = oppx({"mcp", "call", c.name, "echo", R"({"message":"v"})"});
    EXPECT_EQ(call.exit_code, 0) << c.name << ": " << call.err;
    EXPECT_EQ(call.out, "echo: v\n") << c.name;
    std::string v = std::string("version=") + c.version + " session=sess-1";
    for (const std::string& line : {"notifications/initialized accept=application/json, text/event-stream " + v,
                                    "tools/call accept=application/json, text/event-stream " + v, "GET " + v}) {
      EXPECT_TRUE(c.f->proc->wait_for_stdout(line)) << c.name << ": " << line << "\n" << c.f->proc->out();
    }
  }
  home.write_mcp_config(http_entry("v0618", v0618.url()) + "," + http_entry("v1125", v1125.url()));
  oppx({"mcp", "list"});
  EXPECT_TRUE(v0326.proc->wait_for_stdout("DELETE version=- session=sess-1")) << v0326.proc->out();
  EXPECT_EQ(v0326.proc->out().find("version=2025"), std::string::npos) << v0326.proc->out();
}

TEST_F(HttpConnectors, TheServersOwnStreamBringsListChanged) {
  Fake f = fake({"notify"});
  home.write_mcp_config(http_entry("notify", f.url()));
  EXPECT_EQ(entry("notify").at("tools").as_array().size(), 2u);
  ASSERT_TRUE(f.proc->wait_for_stdout("server stream opened")) << f.proc->out();
  Result call = oppx({"mcp", "call", "notify", "echo", R"({"message":"x"})"});
  EXPECT_EQ(call.out, "echo: x\n") << call.err;
  EXPECT_TRUE(when_connectors_change(home.socket(), [&] {
    return entry("notify").at("tools").as_array().size() == 3u;
  })) << "list_changed on the GET stream makes the connector fetch its tools again";
}

// A server may send its own stream's headers only with the first event: the GET waits for them
// past the headers limit, rather than failing and being dropped after a few tries. The limit
// (1 s) also covers the handshake's requests, so it leaves room for a loaded machine.
TEST_F(HttpConnectors, TheServersOwnStreamMayStartWithItsFirstEvent) {
  Fake f = fake({"notify", "late-headers"});
  ::setenv("OPPX_HTTP_TIMEOUTS", "headers=1000", 1);
  home.write_mcp_config(http_entry("late", f.url()));
  EXPECT_EQ(entry("late").at("tools").as_array().size(), 2u);
  ASSERT_TRUE(f.proc->wait_for_stdout("server stream opened")) << f.proc->out();
  // The event that must not come: a GET given up on at the headers limit would be opened again
  // after the first retry (1 s), well within 3.5 s.
  std::size_t opened = f.proc->out().find("server stream opened") + 1;
  EXPECT_FALSE(f.proc->wait_for_stdout_after(opened, "server stream opened", 3500ms))
      << "the GET was given up and opened again\n"
      << f.proc->out();
  Result call = oppx({"mcp", "call", "late", "echo", R"({"message":"x"})"});
  EXPECT_EQ(call.out, "echo: x\n") << call.err;
  EXPECT_TRUE(when_connectors_change(home.socket(), [&] { return entry("late").at("tools").as_array().size() == 3u; }))
      << f.proc->out();
  ::unsetenv("OPPX_HTTP_TIMEOUTS");
}

// A server whose tool list changes while it handles notifications/initialized (server-everything
// registers tools there) says so on its own stream, or nowhere when none is open yet: the GET
// goes out once initialized is accepted and before any other request, so the first tools/list
// already has the tool. The fake takes 300 ms over initialized: a tools/list sent beside it
// would be answered first, every time.
TEST_F(HttpConnectors, TheServersOwnStreamOpensBeforeTheFirstToolsList) {
  Fake f = fake({"announce"});
  home.write_mcp_config(http_entry("announce", f.url()));
  json::array tools = entry("announce").at("tools").as_array();
  EXPECT_EQ(tools.size(), 3u) << json::serialize(tools) << "\n" << f.proc->out();
  ASSERT_TRUE(f.proc->wait_for_stdout("POST tools/list")) << f.proc->out();
  std::string out = f.proc->out();
  EXPECT_LT(out.find("server stream opened"), out.find("POST tools/list")) << out;
}

// A server stream that opens only after requests went ahead without it (here: once the first
// tools/list was answered, after the list changed with nobody to hear it) makes the connector
// fetch its tools once more.
TEST_F(HttpConnectors, AServerStreamThatOpensLateFetchesTheToolsAgain) {
  Fake f = fake({"announce", "late-stream"});
  home.write_mcp_config(http_entry("late", f.url()));
  EXPECT_GE(entry("late").at("tools").as_array().size(), 2u);
  ASSERT_TRUE(f.proc->wait_for_stdout("server stream opened")) << f.proc->out();
  EXPECT_TRUE(when_connectors_change(home.socket(), [&] { return entry("late").at("tools").as_array().size() == 3u; }))
      << f.proc->out();
}

// A 2025-11-25 server may end its own stream cleanly after an event id and expect the client to
// poll it: that is no failure, so the stream is polled on past the limit of drops in a row (5).
TEST_F(HttpConnectors, TheServersOwnStreamIsPolledWhenItEndsItCleanly) {
  Fake f = fake({"notify-poll"});
  home.write_mcp_config(http_entry("polled", f.url()));
  EXPECT_EQ(entry("polled").at("tools").as_array().size(), 2u);
  ASSERT_TRUE(f.proc->wait_for_stdout("server stream poll #8\n")) << f.proc->out();
  Result call = oppx({"mcp", "call", "polled", "echo", R"({"message":"x"})"});
  EXPECT_EQ(call.out, "echo: x\n") << call.err;
  EXPECT_TRUE(
      when_connectors_change(home.socket(), [&] { return entry("polled").at("tools").as_array().size() == 3u; }))
      << "list_changed came on a later poll\n"
      << f.proc->out();
}

TEST_F(HttpConnectors, ALoginRefusedIsDiagnosedAndTheTokenIsNeverShown) {
  const std::string token = "tok-s3cr3t-value-0123456789";
  Fake f = fake({"auth", token});
  ::setenv("OPPX_TEST_HTTP_TOKEN", "wrong-token-also-secret-98765", 1);
  json::object headers{{"Authorization", "Bearer ${OPPX_TEST_HTTP_TOKEN}"}, {"X-Literal", "literal-secret-4242"}};
  home.write_mcp_config(http_entry("guarded", f.url(), headers));
  auto e = entry("guarded");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_EQ(e.at("reason_kind"), json::value("login"));
  EXPECT_NE(reason(e).find("HTTP 401"), std::string::npos) << reason(e);
  EXPECT_NE(reason(e).find("http://127.0.0.1:" + std::to_string(f.port)), std::string::npos) << reason(e);
  Result call = oppx({"mcp", "call", "guarded", "echo"});
  EXPECT_EQ(call.exit_code, 1);
  Result list = oppx({"mcp", "list"});
  Result list_json = oppx({"mcp", "list", "--json"});
  Result get = oppx({"mcp", "get", "guarded", "--json"});

  ::setenv("OPPX_TEST_HTTP_TOKEN", token.c_str(), 1);
  ASSERT_EQ(oppx({"mcp", "reconnect", "guarded"}).exit_code, 0);
  EXPECT_EQ(entry("guarded").at("state"), json::value("running"));
  Result ok = oppx({"mcp", "call", "guarded", "echo", R"({"message":"in"})"});
  EXPECT_EQ(ok.out, "echo: in\n") << ok.err;
  // A result that says a header's value back (here the echo of what it was sent) has it hidden.
  Result echoed = oppx(
      {"mcp", "call", "guarded", "echo", R"({"message":"Bearer )" + token + R"( literal-secret-4242"})", "--json"});
  // (Its "arguments" are the caller's own, given back as they were sent: only what the server said is masked.)
  std::string echo_text =
      echoed.exit_code == 0 ? std::string(json::parse(echoed.out).at("text").as_string()) : echoed.err;
  EXPECT_EQ(echo_text, "echo: *** ***") << echoed.out << echoed.err;
  for (const std::string& out : {call.out, call.err, list.out, list.err, list_json.out, get.out, ok.out, ok.err,
                                 echo_text, json::serialize(e), home.read_log(), f.proc->out()}) {
    for (const char* secret : {"tok-s3cr3t-value", "wrong-token-also-secret", "literal-secret-4242"})
      EXPECT_EQ(out.find(secret), std::string::npos) << secret << " leaked into:\n" << out;
  }
}

TEST_F(HttpConnectors, AForgottenSessionIsStartedAgainOnceAndTheCallRetriedOnce) {
  Fake forgets = fake({"session404", "2"});
  Fake always = fake({"session404-always"});
  home.write_mcp_config(http_entry("forgets", forgets.url()) + "," + http_entry("always", always.url()));
  Result call = oppx({"mcp", "call", "forgets", "echo", R"({"message":"again"})"});
  EXPECT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "echo: again\n");
  EXPECT_TRUE(forgets.proc->wait_for_stdout("initialize #2\n")) << forgets.proc->out();

  Result never = oppx({"mcp", "call", "always", "echo"});
  EXPECT_EQ(never.exit_code, 1);
  EXPECT_NE(never.err.find("HTTP 404"), std::string::npos) << never.err;
  EXPECT_TRUE(always.proc->wait_for_stdout("initialize #2\n"));
  EXPECT_EQ(always.proc->out().find("initialize #3"), std::string::npos) << "never loops\n" << always.proc->out();
  EXPECT_EQ(entry("always").at("state"), json::value("running")) << "one failed call does not take it down";
}

TEST_F(HttpConnectors, RedirectsKeepTheTokenOnItsOriginAndLoopsAreCapped) {
  Fake same = fake({"redirect-same"});
  Fake cross = fake({"redirect-cross"});
  Fake loop = fake({"redirect-loop"});
  ::setenv("OPPX_TEST_HTTP_TOKEN", "redirect-secret-1234", 1);
  json::object headers{{"Authorization", "Bearer ${OPPX_TEST_HTTP_TOKEN}"}, {"X-Secret", "also-secret"}};
  home.write_mcp_config(http_entry("same", same.url(), headers) + "," + http_entry("cross", cross.url(), headers) +
                        "," + http_entry("loop", "http://127.0.0.1:" + std::to_string(loop.port) + "/a"));
  Result s = oppx({"mcp", "call", "same", "echo", R"({"message":"s"})"});
  EXPECT_EQ(s.out, "echo: s\n") << s.err;
  EXPECT_TRUE(same.proc->wait_for_stdout("POST /real/mcp authorization=yes x-secret=yes"))
      << "the same origin keeps the headers\n"
      << same.proc->out();
  Result c = oppx({"mcp", "call", "cross", "echo", R"({"message":"c"})"});
  EXPECT_EQ(c.out, "echo: c\n") << c.err;
  EXPECT_TRUE(cross.proc->wait_for_stdout("second origin: POST authorization=no x-secret=no")) << cross.proc->out();
  const std::string& seen = cross.proc->out();
  std::istringstream lines(seen);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("second origin", 0) == 0) {
      EXPECT_EQ(line.find("=yes"), std::string::npos) << line;
    }
  }
  auto l = entry("loop");
  EXPECT_EQ(l.at("state"), json::value("failed"));
  EXPECT_NE(reason(l).find("redirected more than 5 times"), std::string::npos) << reason(l);
}

TEST_F(HttpConnectors, ADroppedStreamIsResumedWithLastEventIdOrTheCallFails) {
  Fake drop = fake({"drop-stream", "50"});
  Fake noid = fake({"drop-stream-noid"});
  home.write_mcp_config(http_entry("drop", drop.url()) + "," + http_entry("noid", noid.url()));
  Result call = oppx({"mcp", "call", "drop", "echo", R"({"message":"resumed"})"});
  EXPECT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "echo: resumed\n");
  EXPECT_TRUE(drop.proc->wait_for_stdout("resumed after event")) << drop.proc->out();
  Result lost = oppx({"mcp", "call", "noid", "echo"});
  EXPECT_EQ(lost.exit_code, 1);
  EXPECT_NE(lost.err.find("cannot be resumed"), std::string::npos) << lost.err;
  EXPECT_EQ(entry("noid").at("state"), json::value("running"));
}

// MCP 2026-07-28 has no resumption: a stream dropped before the response fails the call at once,
// saying so, and no GET is sent for it.
TEST_F(HttpConnectors, AModernServersDroppedStreamIsNotResumed) {
  Fake drop = fake({"drop-stream", "50", "--modern"});
  home.write_mcp_config(http_entry("drop", drop.url()));
  Result call = oppx({"mcp", "call", "drop", "echo", R"({"message":"lost"})"});
  EXPECT_EQ(call.exit_code, 1) << call.out;
  EXPECT_NE(call.err.find("MCP 2026-07-28 has no resumption of a stream"), std::string::npos) << call.err;
  EXPECT_EQ(drop.proc->out().find("resumed after event"), std::string::npos) << drop.proc->out();
  EXPECT_EQ(entry("drop").at("state"), json::value("running"));
}

// A server that sends an event (not the response) and drops, on every resumption: the events
// are no progress toward the response, so the resumptions are counted over the whole request.
TEST_F(HttpConnectors, AStreamThatKeepsDroppingIsResumedABoundedNumberOfTimes) {
  Fake f = fake({"drop-forever"});
  home.write_mcp_config(http_entry("flaky", f.url()));
  Result call = oppx({"mcp", "call", "flaky", "echo"});
  EXPECT_EQ(call.exit_code, 1);
  EXPECT_NE(call.err.find("ended the event stream before the response"), std::string::npos) << call.err;
  EXPECT_NE(call.err.find("resumed 5 times already"), std::string::npos) << call.err;
  EXPECT_TRUE(f.proc->wait_for_stdout("resume #5 ")) << f.proc->out();
  EXPECT_EQ(f.proc->out().find("resume #6 "), std::string::npos) << f.proc->out();
  EXPECT_EQ(entry("flaky").at("state"), json::value("running")) << "one failed call does not take it down";
}

// MCP 2025-11-25 lets a server end a stream cleanly after an event id and the client poll; 2025-06-18
// says it should not, so there the same ends are drops, with the drop budget.
TEST_F(HttpConnectors, PollingFollowsTheNegotiatedVersion) {
  Fake v1125 = fake({"poll", "7"});
  Fake v0618 = fake({"poll", "7", "--version=2025-06-18"});
  home.write_mcp_config(http_entry("v1125", v1125.url()) + "," + http_entry("v0618", v0618.url()));
  Result polled = oppx({"mcp", "call", "v1125", "echo", R"({"message":"polled"})"});
  EXPECT_EQ(polled.exit_code, 0) << polled.err;
  EXPECT_EQ(polled.out, "echo: polled\n");
  EXPECT_TRUE(v1125.proc->wait_for_stdout("poll #7 ")) << v1125.proc->out();
  Result dropped = oppx({"mcp", "call", "v0618", "echo"});
  EXPECT_EQ(dropped.exit_code, 1);
  EXPECT_NE(dropped.err.find("resumed 5 times already"), std::string::npos) << dropped.err;
  EXPECT_EQ(v0618.proc->out().find("poll #6 "), std::string::npos) << v0618.proc->out();
}

// The server's `retry` (2.5 s here, inside the clamp of 100 ms to 60 s) is waited before the
// resumption, not the 1 s used when a stream gives none.
TEST_F(HttpConnectors, TheServersRetryIsWaitedBeforeResuming) {
  Fake f = fake({"drop-stream", "2500"});
  home.write_mcp_config(http_entry("slow-retry", f.url()));
  Result call = oppx({"mcp", "call", "slow-retry", "echo", R"({"message":"later"})"});
  EXPECT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "echo: later\n");
  ASSERT_TRUE(f.proc->wait_for_stdout(" ms after the drop\n")) << f.proc->out();
  const std::string& out = f.proc->out();
  auto at = out.find(", ", out.find("resumed after event"));
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_GE(std::stol(out.substr(at + 2)), 2000) << out;
}

TEST_F(HttpConnectors, TortureEventStreamsAreParsed) {
  Fake t = fake({"torture"});
  home.write_mcp_config(http_entry("torture", t.url()));
  Result call = oppx({"mcp", "call", "torture", "echo", R"({"message":"tortured"})"});
  EXPECT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "echo: tortured\n");
}

TEST_F(HttpConnectors, AnUnusableSessionIdIsRefusedAndNeverEchoed) {
  std::string config;
  std::vector<Fake> fakes;
  for (const char* kind : {"space", "nonascii", "ctl", "cr"}) {
    fakes.push_back(fake({"bad-session", kind}));
    config += (config.empty() ? "" : ",") + http_entry(std::string("bad-") + kind, fakes.back().url());
  }
  home.write_mcp_config(config);
  for (const char* kind : {"space", "nonascii", "ctl", "cr"}) {
    auto e = entry(std::string("bad-") + kind);
    EXPECT_EQ(e.at("state"), json::value("failed")) << kind;
    std::string why = reason(e);
    EXPECT_TRUE(why.find("Mcp-Session-Id") != std::string::npos || why.find("malformed") != std::string::npos)
        << kind << ": " << why;
    EXPECT_EQ(why.find("abc"), std::string::npos) << why;
  }
  for (auto& f : fakes) EXPECT_EQ(f.proc->out().find("unknown session"), std::string::npos) << f.proc->out();
  EXPECT_EQ(home.read_log().find("X-Injected"), std::string::npos);
}

TEST_F(HttpConnectors, WrongAnswersToARequestAreClearPerCallErrors) {
  struct Case {
    const char* mode;
    const char* says;
  };
  std::vector<Case> cases{{"html", "HTTP 502"},
                          {"html200", "an HTML page"},
                          {"wrongtype", "Content-Type text/plain"},
                          {"badjson", "not valid JSON"},
                          {"accepted", "HTTP 202"}};
  std::vector<Fake> fakes;
  std::string config;
  for (auto& c : cases) {
    fakes.push_back(fake({c.mode}));
    config += (config.empty() ? "" : ",") + http_entry(c.mode, fakes.back().url());
  }
  home.write_mcp_config(config);
  for (auto& c : cases) {
    Result call = oppx({"mcp", "call", c.mode, "echo"});
    EXPECT_EQ(call.exit_code, 1) << c.mode;
    EXPECT_NE(call.err.find(c.says), std::string::npos) << c.mode << ": " << call.err;
    EXPECT_EQ(entry(c.mode).at("state"), json::value("running")) << c.mode;
  }
}

TEST_F(HttpConnectors, HeaderIdleAndTotalTimeoutsFire) {
  Fake trickle = fake({"trickle"});
  Fake idle = fake({"idle"});
  Fake ping = fake({"ping"});
  // The limits also cover each connector's handshake: they leave room for a loaded machine.
  ::setenv("OPPX_HTTP_TIMEOUTS", "headers=1000,idle=1500,total=3000", 1);
  home.write_mcp_config(http_entry("trickle", trickle.url()) + "," + http_entry("idle", idle.url()) + "," +
                        http_entry("ping", ping.url()));
  struct Case {
    const char* name;
    const char* says;
  };
  for (auto c : {Case{"trickle", "took over 1 s to send the headers"}, Case{"idle", "sent nothing for 1.5 s"},
                 Case{"ping", "did not finish answering within 3 s"}}) {
    Result call = oppx({"mcp", "call", c.name, "echo"});
    EXPECT_EQ(call.exit_code, 1) << c.name;
    EXPECT_NE(call.err.find(c.says), std::string::npos) << c.name << ": " << call.err;
    EXPECT_EQ(entry(c.name).at("state"), json::value("running")) << "a slow call does not take " << c.name << " down";
  }
  ::unsetenv("OPPX_HTTP_TIMEOUTS");
}

TEST_F(HttpConnectors, ACallerTimeoutCancelsTheExchangeAndTheConnectorStays) {
  Fake f = fake({"ping"});
  home.write_mcp_config(http_entry("slow", f.url()));
  // Running first: the 500 ms limit would otherwise also cover its handshake.
  ASSERT_EQ(entry("slow").at("state"), json::value("running"));
  auto c = hello_client(home);
  ASSERT_TRUE(c);
  auto r = c->call("tools/call", json::object{{"connector", "slow"}, {"tool", "echo"}, {"timeout_ms", 500}}, 10s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "timeout");
  EXPECT_TRUE(f.proc->wait_for_stdout("the client closed the stream of tools/call"))
      << "no connection stays held for a call nobody waits for\n"
      << f.proc->out();
  EXPECT_TRUE(f.proc->wait_for_stdout("notifications/cancelled")) << f.proc->out();
  EXPECT_EQ(entry("slow").at("state"), json::value("running"));
}

TEST_F(HttpConnectors, NothingListeningIsUnreachable) {
  home.write_mcp_config(http_entry("gone", "http://127.0.0.1:" + std::to_string(free_port()) + "/mcp"));
  auto e = entry("gone");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_EQ(e.at("reason_kind"), json::value("unreachable"));
  EXPECT_NE(reason(e).find("refused"), std::string::npos) << reason(e);
}

// A URL with no MCP endpoint behind it (HTTP 404 or 405 to initialize, at the start) is the user's
// definition, not a server that stopped: kind config, and the step is the add line with the right
// URL (its headers kept as written), with no log of its own named: an HTTP connector has none.
TEST_F(HttpConnectors, AUrlThatIsNotTheEndpointIsConfigWithTheStepToCorrectIt) {
  Fake nf = fake({"status", "404"});
  Fake na = fake({"status", "405"});
  json::object headers{{"X-Org", "${OPPX_TEST_ORG}"}};
  ::setenv("OPPX_TEST_ORG", "acme", 1);
  home.write_mcp_config(http_entry("nf", "http://127.0.0.1:" + std::to_string(nf.port) + "/wrong", headers) + "," +
                        http_entry("na", na.url()));
  for (const char* name : {"nf", "na"}) {
    auto e = entry(name);
    EXPECT_EQ(e.at("state"), json::value("failed")) << name;
    EXPECT_EQ(e.at("reason_kind"), json::value("config")) << name << ": " << reason(e);
    EXPECT_NE(reason(e).find(std::string("answered HTTP ") + (name == std::string("nf") ? "404" : "405")),
              std::string::npos)
        << reason(e);
    EXPECT_FALSE(e.contains("log")) << json::serialize(e);
  }
  auto steps = entry("nf").at("steps").as_array();
  ASSERT_EQ(steps.size(), 1u) << json::serialize(steps);
  EXPECT_NE(std::string(steps[0].as_string())
                .find("`oppx mcp add nf --url '<right url>' -H 'X-Org: ${OPPX_TEST_ORG}' "
                      "--force`"),
            std::string::npos)
      << steps[0];
  Result get = oppx({"mcp", "get", "nf"});
  EXPECT_EQ(get.out.find(".log"), std::string::npos) << get.out;
  EXPECT_EQ(get.out.find("log:"), std::string::npos) << get.out;
  EXPECT_NE(home.read_log().find("connector nf: its URL is not the server's MCP endpoint"), std::string::npos)
      << home.read_log();
  // Added with that URL: saved, and the closing line does not ask for a reconnect the add line makes.
  Result add = oppx({"mcp", "add", "nf2", "--url", "http://127.0.0.1:" + std::to_string(nf.port) + "/wrong"});
  EXPECT_EQ(add.exit_code, 0) << add.err;
  EXPECT_NE(add.out.find("`oppx mcp add nf2 --url '<right url>' --force`.\nIt is saved anyway.\n"), std::string::npos)
      << add.out;
  ::unsetenv("OPPX_TEST_ORG");
}

// An HTTP connector that fails otherwise (here a redirect loop) points at the daemon's log, which
// has the failure, never at a per-connector log that does not exist.
TEST_F(HttpConnectors, AnHttpConnectorsStepsNameTheDaemonsLog) {
  Fake loop = fake({"redirect-loop"});
  home.write_mcp_config(http_entry("loop", "http://127.0.0.1:" + std::to_string(loop.port) + "/a"));
  auto e = entry("loop");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_FALSE(e.contains("log")) << json::serialize(e);
  std::string all = json::serialize(e.at("steps")) + reason(e);
  EXPECT_EQ(all.find("mcp-loop"), std::string::npos) << all;
  EXPECT_NE(all.find("daemon's log"), std::string::npos) << all;
  EXPECT_NE(all.find(home.log()), std::string::npos) << all;
  EXPECT_NE(home.read_log().find("connector loop: "), std::string::npos) << home.read_log();
  Result list = oppx({"mcp", "list"});
  EXPECT_EQ(list.out.find("mcp-loop"), std::string::npos) << list.out;
}

// A server that takes the connection and never answers initialize: the start limit ends it, and
// the steps are about the server and its URL, not npx or uvx downloading a program.
TEST_F(HttpConnectors, AStartThatTimesOutGetsStepsForAServer) {
  sockaddr_in a;
  int listener = loopback_listener(8, a);  // the kernel completes the handshake; nobody reads
  ASSERT_GE(listener, 0);
  ::setenv("OPPX_MCP_START_TIMEOUT_MS", "1000", 1);
  home.write_mcp_config(http_entry("mute", "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/mcp"));
  auto e = entry("mute");
  ::unsetenv("OPPX_MCP_START_TIMEOUT_MS");
  ::close(listener);
  EXPECT_EQ(e.at("reason_kind"), json::value("timeout")) << reason(e);
  std::string all = json::serialize(e.at("steps")) + reason(e);
  EXPECT_EQ(all.find("npx"), std::string::npos) << all;
  EXPECT_EQ(all.find(".log"), std::string::npos) << all;
  EXPECT_NE(all.find("Check that the server is up"), std::string::npos) << all;
  EXPECT_NE(std::string(e.at("steps").as_array().back().as_string()).find("`oppx mcp reconnect mute`"),
            std::string::npos)
      << all;
}

// Sequential calls share one keep-alive connection; the startup (initialize, then initialized,
// tools/list and the server-stream GET at once) may use three at most.
}  // namespace
}  // namespace oppx::test
