// Streamable HTTP connectors when the server or the network fails: kept-alive connections the
// server closes, a server gone with a call in hand, servers that accept and say nothing, TLS to a
// plain port, a lost login mid-session, an unreachable server tried again, a server's error that
// claims one of our kinds, flooding streams against the buffer budget, and TLS verification.
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

TEST_F(HttpConnectors, SequentialCallsReuseAKeptAliveConnection) {
  Fake f = fake({"count"});
  home.write_mcp_config(http_entry("reuse", f.url()));
  for (int i = 1; i <= 6; ++i) {
    Result call = oppx({"mcp", "call", "reuse", "echo", R"({"message":")" + std::to_string(i) + R"("})"});
    EXPECT_EQ(call.out, "echo: " + std::to_string(i) + "\n") << call.err;
  }
  ASSERT_TRUE(f.proc->wait_for_stdout("tools/call #6 on connection #")) << f.proc->out();
  const std::string& out = f.proc->out();
  EXPECT_EQ(out.find("connection #4\n"), std::string::npos) << out;
  auto first = out.find("tools/call #1 on connection #");
  ASSERT_NE(first, std::string::npos) << out;
  std::string on = out.substr(first + 13, out.find('\n', first) - first - 13);  // " on connection #N"
  for (int i = 2; i <= 6; ++i)
    EXPECT_NE(out.find("tools/call #" + std::to_string(i) + on + "\n"), std::string::npos) << on << "\n" << out;
}

// The server closes the kept-alive connection after each call; the next call finds it dead
// when it reuses it, and goes through on a fresh connection.
TEST_F(HttpConnectors, AKeptAliveConnectionTheServerClosedIsReplaced) {
  Fake f = fake({"close-idle"});
  home.write_mcp_config(http_entry("closes", f.url()));
  for (int i = 1; i <= 3; ++i) {
    Result call = oppx({"mcp", "call", "closes", "echo", R"({"message":")" + std::to_string(i) + R"("})"});
    EXPECT_EQ(call.exit_code, 0) << call.err;
    EXPECT_EQ(call.out, "echo: " + std::to_string(i) + "\n") << call.err;
    ASSERT_TRUE(f.proc->wait_for_stdout(" after call #" + std::to_string(i) + "\n")) << f.proc->out();
  }
  EXPECT_TRUE(f.proc->wait_for_stdout("connection #3\n")) << "each call after the first needed a new one\n"
                                                          << f.proc->out();
  EXPECT_EQ(entry("closes").at("state"), json::value("running"));
}

// SPEC §3: a write never runs twice. The server reads a tools/call whole and closes the kept-alive
// connection without answering: the call fails saying it may or may not have run, and it reaches
// the server once (not again on a new connection, nor from the connector). A read-only tool's
// call is sent again on a new connection and answered.
TEST_F(HttpConnectors, ACallTheServerClosedOnUnansweredIsSentAgainOnlyWhenReadOnly) {
  Fake f = fake({"drop-call"});
  home.write_mcp_config(http_entry("drops", f.url()));
  ASSERT_EQ(entry("drops").at("state"), json::value("running"));
  auto c = hello_client(home);
  ASSERT_TRUE(c);
  auto r = c->call("tools/call", json::object{{"connector", "drops"}, {"tool", "echo"}}, 20s);
  ASSERT_FALSE(r) << "the call was sent twice and the second answered:\n" << f.proc->out();
  EXPECT_NE(r.error().message.find("closed the connection without answering"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("may or may not have run"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("not sent again"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("the call to echo had been sent"), std::string::npos) << r.error().message;
  // An HTTP connector has no log of its own: the daemon's has the failure.
  EXPECT_NE(home.read_log().find("connector drops: the call to echo failed: "), std::string::npos) << home.read_log();
  // The next call is the barrier: a resend would have reached the server before the error came.
  Result next = oppx({"mcp", "call", "drops", "echo", R"({"message":"next"})"});
  EXPECT_EQ(next.out, "echo: next\n") << next.err;
  ASSERT_TRUE(f.proc->wait_for_stdout("tools/call #2 of echo\n")) << f.proc->out();
  EXPECT_EQ(f.proc->out().find("tools/call #3 of echo"), std::string::npos) << f.proc->out();
  EXPECT_EQ(entry("drops").at("state"), json::value("running"));

  Result peek = oppx({"mcp", "call", "drops", "peek", R"({"message":"read"})"});
  EXPECT_EQ(peek.exit_code, 0) << peek.err;
  EXPECT_EQ(peek.out, "echo: read\n") << peek.err;
  EXPECT_TRUE(f.proc->wait_for_stdout("tools/call #2 of peek\n")) << f.proc->out();
}

// The server dies with a call in hand: its port refuses the new connection. The error must not
// read as if the call never arrived: it was sent, and may or may not have run.
TEST_F(HttpConnectors, AServerGoneWithACallInHandSaysTheCallMayHaveRun) {
  for (const char* tool : {"echo", "peek"}) {
    Fake f = fake({"drop-call", "exit"});
    home.write_mcp_config(http_entry("dies", f.url()));
    oppx({"mcp", "reconnect", "dies"});
    ASSERT_EQ(entry("dies").at("state"), json::value("running")) << tool;
    auto c = hello_client(home);
    ASSERT_TRUE(c);
    auto r = c->call("tools/call", json::object{{"connector", "dies"}, {"tool", tool}}, 20s);
    ASSERT_FALSE(r) << tool;
    EXPECT_NE(r.error().message.find("may or may not have run"), std::string::npos)
        << tool << ": " << r.error().message;
    EXPECT_TRUE(f.proc->wait_for_stdout(std::string("tools/call #1 of ") + tool)) << f.proc->out();
  }
}

// A server that accepts and never writes a byte: the headers limit ends the start, counted from
// the request sent (not from a first byte that never comes), long before the 30 s start limit.
TEST_F(HttpConnectors, AServerThatAcceptsAndSaysNothingFailsWithinTheHeadersLimit) {
  Fake f = fake({"silent"});
  ::setenv("OPPX_HTTP_TIMEOUTS", "connect=1000,headers=700,idle=3000,total=20000", 1);
  home.write_mcp_config(http_entry("silent", f.url()));
  auto started = std::chrono::steady_clock::now();
  auto e = entry("silent");
  auto took = std::chrono::steady_clock::now() - started;
  ::unsetenv("OPPX_HTTP_TIMEOUTS");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_NE(reason(e).find("took over 0.7 s to send the headers"), std::string::npos) << reason(e);
  EXPECT_TRUE(f.proc->wait_for_stdout("silent: POST read, never answered")) << f.proc->out();
  // The headers limit ended it, not the total nor the start limit (a loaded machine is given slack).
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), 15'000);
}

// https:// to a port that speaks plain HTTP is a wrong URL, not a certificate problem.
TEST_F(HttpConnectors, HttpsToAPlainHttpPortSaysTheServerDoesNotSpeakTls) {
  Fake f = fake({"record"});
  home.write_mcp_config(http_entry("plain", f.url("https")));
  auto e = entry("plain");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_EQ(e.at("reason_kind"), json::value("unreachable"));
  EXPECT_NE(reason(e).find(f.url("https").substr(0, f.url("https").rfind('/')) + " does not speak TLS ("),
            std::string::npos)
      << reason(e);
  EXPECT_NE(reason(e).find("should start with http://"), std::string::npos) << reason(e);
  EXPECT_EQ(reason(e).find("certificate"), std::string::npos) << reason(e);
}

// A listening socket whose accept queue is full (backlog 0, one connection waiting in it): Linux
// drops further SYNs, so a connect to it hangs until the connect limit ends it.
TEST_F(HttpConnectors, AServerThatAcceptsNoConnectionFailsWithinTheConnectLimit) {
  sockaddr_in a;
  int listener = loopback_listener(0, a);
  ASSERT_GE(listener, 0);
  int filler = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(filler, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << "the one the queue holds";
  ::setenv("OPPX_HTTP_TIMEOUTS", "connect=700", 1);
  home.write_mcp_config(http_entry("silent", "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/mcp"));
  auto started = std::chrono::steady_clock::now();
  auto e = entry("silent");
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_EQ(e.at("reason_kind"), json::value("unreachable"));
  EXPECT_NE(reason(e).find("did not accept a connection within 0.7 s"), std::string::npos) << reason(e);
  ASSERT_TRUE(e.contains("steps"));
  EXPECT_FALSE(e.at("steps").as_array().empty());
  // The connect limit ended it, not the 30 s limit on a start (a loaded machine is given slack).
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), 15'000);
  ::unsetenv("OPPX_HTTP_TIMEOUTS");
  ::close(filler);
  ::close(listener);
}

// The session started, then a call is refused with 401: the login is lost. The connector goes
// down with kind login, the call says so with the steps back, and the token shows nowhere.
TEST_F(HttpConnectors, ALoginLostInTheMiddleOfASessionTakesTheConnectorDown) {
  Fake f = fake({"login-lost"});
  const std::string secret = "tok-mid-session-secret-5150";
  ::setenv("OPPX_TEST_HTTP_TOKEN", secret.c_str(), 1);
  json::object headers{{"Authorization", "Bearer ${OPPX_TEST_HTTP_TOKEN}"}};
  home.write_mcp_config(http_entry("expires", f.url(), headers));
  EXPECT_EQ(entry("expires").at("state"), json::value("running"));
  auto c = hello_client(home);
  ASSERT_TRUE(c);
  auto r = c->call("tools/call", json::object{{"connector", "expires"}, {"tool", "echo"}}, 20s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "connector_down") << r.error().message;
  EXPECT_EQ(r.error().data.at("reason_kind"), json::value("login")) << json::serialize(r.error().data);
  EXPECT_NE(r.error().message.find("HTTP 401"), std::string::npos) << r.error().message;
  ASSERT_TRUE(r.error().data.contains("steps"));
  EXPECT_FALSE(r.error().data.at("steps").as_array().empty());
  Result call = oppx({"mcp", "call", "expires", "echo"});
  EXPECT_EQ(call.exit_code, 1);
  auto e = entry("expires");
  EXPECT_EQ(e.at("state"), json::value("failed"));
  EXPECT_EQ(e.at("reason_kind"), json::value("login"));
  Result list = oppx({"mcp", "list"});
  for (const std::string& out : {r.error().message, json::serialize(r.error().data), call.out, call.err, list.out,
                                 list.err, json::serialize(e), home.read_log(), f.proc->out()})
    EXPECT_EQ(out.find(secret), std::string::npos) << "the token leaked into:\n" << out;
  ::unsetenv("OPPX_TEST_HTTP_TOKEN");
}

// A server that goes away after the start: the next call finds nothing listening, which takes
// the connector down (it is `failed`, with the reason and the steps back), and the call says so.
TEST_F(HttpConnectors, AServerGoneAfterTheStartTakesTheConnectorDownAsUnreachable) {
  Fake f = fake({"record"});
  home.write_mcp_config(http_entry("gone", f.url()));
  ASSERT_EQ(entry("gone").at("state"), json::value("running"));
  f.proc.reset();  // SIGKILLed and reaped: nothing listens on its port any more
  auto c = hello_client(home);
  ASSERT_TRUE(c);
  auto r = c->call("tools/call", json::object{{"connector", "gone"}, {"tool", "echo"}}, 20s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "connector_down") << r.error().message;
  EXPECT_EQ(r.error().data.at("reason_kind"), json::value("unreachable")) << json::serialize(r.error().data);
  EXPECT_FALSE(r.error().data.at("steps").as_array().empty());
  Result list = oppx({"mcp", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto listed = json::parse(list.out).at("connectors").at(0).as_object();
  EXPECT_EQ(listed.at("state"), json::value("failed"));
  EXPECT_EQ(listed.at("reason_kind"), json::value("unreachable"));
  Result human = oppx({"mcp", "list"});
  EXPECT_NE(human.out.find("    1. Check that " + f.url()), std::string::npos) << human.out;
}

// A server back on its port is tried again by the next call (at most every 2 s; 0 here), without
// a reconnect: the calls made while it was down never reached it, so nothing runs twice.
TEST_F(HttpConnectors, AServerBackOnItsPortIsTriedAgainByTheNextCall) {
  Fake again = gone_then_back("back", "0");
  Result up = oppx({"mcp", "call", "back", "echo", R"({"message":"back again"})"});
  EXPECT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(up.out, "echo: back again\n");
  EXPECT_EQ(entry("back").at("state"), json::value("running"));
}

// Within the limit (an hour here) a call does not try the server again, even one back on its
// port: it fails at once as unreachable, as the call before it did.
TEST_F(HttpConnectors, AnUnreachableServerIsNotTriedAgainWithinTheLimit) {
  Fake again = gone_then_back("later", "3600000");
  Result still = oppx({"mcp", "call", "later", "echo", R"({"message":"too soon"})"});
  EXPECT_EQ(still.exit_code, 1) << still.out;
  EXPECT_NE(still.err.find("unreachable"), std::string::npos) << still.err;
  EXPECT_EQ(entry("later").at("state"), json::value("failed"));
}

// RELIABILITY: a server's own text never grants itself authority. Over HTTP the transport's own
// failures (login, unreachable, timeout) take the connector down; a tool's JSON-RPC error that
// names one of those kinds is only the server's: the call fails with its words, nothing more.
TEST_F(HttpConnectors, AServersErrorClaimingOneOfOurKindsIsOnlyItsOwn) {
  Fake f = fake({"claims-kind"});
  home.write_mcp_config(http_entry("claims", f.url()));
  ASSERT_EQ(entry("claims").at("state"), json::value("running"));
  auto c = hello_client(home);
  ASSERT_TRUE(c);
  for (const std::string kind : {"login", "unreachable", "disconnected", "timeout", "connector_down"}) {
    auto r = c->call("tools/call",
                     json::object{{"connector", "claims"}, {"tool", "echo"}, {"arguments", {{"kind", kind}}}}, 20s);
    ASSERT_FALSE(r) << kind;
    EXPECT_EQ(r.error().message, "the tool claims " + kind);
    EXPECT_EQ(r.error().kind, "") << "not ours: " << kind;
    const auto e = r.error();  // result::error() returns a copy: keep it alive
    const json::value* server_kind = e.data.if_contains("server_kind");
    EXPECT_TRUE(server_kind && *server_kind == json::value(kind)) << json::serialize(e.data);
    EXPECT_FALSE(r.error().data.contains("steps")) << kind;
    EXPECT_EQ(entry("claims").at("state"), json::value("running")) << kind;
  }
  EXPECT_EQ(f.proc->out().find("initialize #2"), std::string::npos) << "never started again:\n" << f.proc->out();
}

// The peak resident memory of `pid` (VmHWM) in KiB, or -1.
long peak_kib(pid_t pid) {
  std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

// 16 calls whose answers each stream 100 MiB without a blank line: each is under the 16 MiB
// event cap for a while, so only the budget they share bounds the daemon (8 MiB here).
TEST_F(HttpConnectors, ManyFloodingStreamsShareOneBoundedBudget) {
  DaemonProcess daemon(home, kSmallAsanQuarantine + "OPPX_BUFFER_BUDGET_MIB=8");
  ASSERT_GT(daemon.pid(), 0) << daemon.start_result().err;
  auto pid = static_cast<pid_t>(daemon.pid());
  Fake f = fake({"flood"});
  home.write_mcp_config(http_entry("flood", f.url()));
  ASSERT_EQ(entry("flood").at("state"), json::value("running"));
  long before = peak_kib(pid);
  auto c = hello_client(home);
  ASSERT_TRUE(c);
  std::string calls;
  for (int i = 0; i < 16; ++i)
    calls += R"({"jsonrpc":"2.0","id":)" + std::to_string(i) +
             R"(,"method":"tools/call","params":{"connector":"flood","tool":"echo","arguments":{}}})"
             "\n";
  ASSERT_TRUE(c->write_raw(calls));
  for (int i = 0; i < 16; ++i) {
    auto line = c->read_line(60s);
    ASSERT_TRUE(line) << "reply " << i;
    auto reply = json::parse(*line).as_object();
    ASSERT_TRUE(reply.contains("error")) << *line;
    std::string message(reply.at("error").at("message").as_string());
    EXPECT_NE(message.find("buffers for all its clients and servers are full"), std::string::npos) << message;
    EXPECT_NE(message.find("of 8 MiB in use"), std::string::npos) << message;
  }
  long after = peak_kib(pid);
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer keeps shadow memory for what the daemon touches (several bytes for each of
  // its own) and a deferred allocator: its peak counts those too.
  constexpr long kGrowthKib = 160 * 1024;
#else
  constexpr long kGrowthKib = 40 * 1024;
#endif
  EXPECT_LT(after - before, kGrowthKib) << "the peak grew from " << before << " to " << after << " KiB";
  // What was buffered is given back, and the status shows the figures.
  auto given_back = status_until(home.socket(), json::object{{"buffered_bytes", 0}});
  EXPECT_TRUE(given_back) << given_back.describe();
  EXPECT_EQ(status_of(home.socket()).at("buffer_budget").as_int64(), 8 << 20);
  Result status = oppx({"daemon", "status"});
  EXPECT_NE(status.out.find("buffers     0.0 of 8 MiB"), std::string::npos) << status.out;
  // The connector goes on.
  EXPECT_EQ(entry("flood").at("state"), json::value("running"));
}

TEST_F(HttpConnectors, TlsVerificationFailsClosedAndPassesWithTheTrustedCa) {
  LocalhostCert made = localhost_cert(home.root());
  ASSERT_EQ(made.made.exit_code, 0) << made.made.err;
  const std::string &cert = made.cert, &key = made.key;
  Fake tls = fake({"tls", cert, key});
  Fake to_http = fake({"redirect-to-http", cert, key});
  std::string config = http_entry("tls", tls.url("https", "localhost")) + "," +
                       http_entry("by-ip", tls.url("https", "127.0.0.1")) + "," +
                       http_entry("downgrade", to_http.url("https", "localhost"));
  home.write_mcp_config(config);
  auto untrusted = entry("tls");
  EXPECT_EQ(untrusted.at("state"), json::value("failed"));
  EXPECT_EQ(untrusted.at("reason_kind"), json::value("unreachable"));
  EXPECT_NE(reason(untrusted).find("certificate"), std::string::npos) << reason(untrusted);

  // Trusting the test's CA (OpenSSL reads SSL_CERT_FILE) in a new daemon: the name must still match.
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
  ::setenv("SSL_CERT_FILE", cert.c_str(), 1);
  auto trusted = entry("tls");
  EXPECT_EQ(trusted.at("state"), json::value("running")) << reason(trusted);
  Result call = oppx({"mcp", "call", "tls", "echo", R"({"message":"over tls"})"});
  EXPECT_EQ(call.out, "echo: over tls\n") << call.err;
  auto by_ip = entry("by-ip");
  EXPECT_EQ(by_ip.at("state"), json::value("failed")) << "the certificate names localhost, not 127.0.0.1";
  auto downgrade = entry("downgrade");
  EXPECT_EQ(downgrade.at("state"), json::value("failed"));
  EXPECT_NE(reason(downgrade).find("from https to http"), std::string::npos) << reason(downgrade);
  EXPECT_EQ(to_http.proc->out().find("second origin"), std::string::npos) << "nothing reached the http origin";
  ::unsetenv("SSL_CERT_FILE");
}

}  // namespace
}  // namespace oppx::test
