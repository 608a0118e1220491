// daemon/server: the socket API under bad clients, against a real oppxd (uid check, malformed
// and huge input, a client that stops reading, many clients) and in-process with test methods
// (out-of-order answers, notifications, a client leaving mid-request).
#include "daemon/server.h"

#include "proto/daemon_api.h"
#include "tests/support/harness.h"
#include "tests/support/waits.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace oppx::test {
namespace {

namespace json = boost::json;

json::object reply_of(SyncClient& c) {
  auto line = c.read_line(5s);
  EXPECT_TRUE(line) << "no reply";
  if (!line) return {};
  return json::parse(*line).as_object();
}

std::int64_t error_code(const json::object& reply) {
  if (!reply.contains("error")) return 0;
  return reply.at("error").at("code").as_int64();
}

std::string error_kind(const json::object& reply) {
  if (!reply.contains("error")) return "";
  return std::string(reply.at("error").at("data").at("kind").as_string());
}

struct LiveDaemon : ::testing::Test {
  TempHome home;
  std::unique_ptr<DaemonProcess> daemon;
  void SetUp() override {
    daemon = std::make_unique<DaemonProcess>(home);
    ASSERT_GT(daemon->pid(), 0) << daemon->start_result().err;
  }
  SyncClient client() {
    auto c = SyncClient::connect(home.socket());
    EXPECT_TRUE(c);
    return std::move(*c);
  }
  // The daemon still answers a well-behaved client.
  void expect_serving() {
    auto c = client();
    auto r = c.call("daemon/status", json::object{}, 5s);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->as_object().at("pid").as_int64(), daemon->pid());
  }
};

TEST_F(LiveDaemon, AnotherUidIsClosedAtAcceptWithNothingSent) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as nobody";
  // uid nobody, keeping only the right to pass our 0700 folder, so that the daemon's own
  // SO_PEERCRED check is what stops it.
  Result r = run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=+dac_override",
                  "--ambient-caps=+dac_override", OPPX_TEST_PEER, home.socket(),
                  R"({"jsonrpc":"2.0","id":1,"method":"daemon/status"})"});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // 0: the daemon closed the connection
  EXPECT_EQ(r.out, "") << "nothing may be sent to another uid";
  EXPECT_TRUE(when_file_changes(
      home.log(), [&] { return home.read_log().find("refused a connection from uid 65534") != std::string::npos; }));
  expect_serving();
}

TEST_F(LiveDaemon, MalformedMessagesGetErrorsAndTheConnectionGoesOn) {
  auto c = client();
  struct Case {
    std::string line;
    std::int64_t code;
    std::string kind;
  };
  std::vector<Case> cases = {
      {"{not json", -32700, "parse_error"},
      {R"([{"jsonrpc":"2.0","id":1,"method":"daemon/status"}])", -32600, "batch_unsupported"},
      {R"({"jsonrpc":"2.0","id":null,"method":"daemon/status"})", -32600, "invalid_request"},
      {R"({"jsonrpc":"2.0","id":2,"method":"no/such"})", -32601, "method_not_found"},
      {R"({"jsonrpc":"2.0","id":3,"method":"hello","params":{"protocol":"one"}})", -32602, "invalid_params"},
      {R"({"jsonrpc":"2.0","id":4,"method":"daemon/status","params":[1]})", -32602, "invalid_params"},
      {std::string("\x00\x01\xff\xfe junk", 10), -32700, "parse_error"},
  };
  for (auto& k : cases) {
    ASSERT_TRUE(c.write_raw(k.line + "\n"));
    auto reply = reply_of(c);
    EXPECT_EQ(error_code(reply), k.code) << k.line;
    EXPECT_EQ(error_kind(reply), k.kind) << k.line;
  }
  // A notification gets no reply; the next request still does.
  ASSERT_TRUE(c.write_raw(R"({"jsonrpc":"2.0","method":"notifications/whatever"})"
                          "\n"));
  auto r = c.call("daemon/status", json::object{}, 5s);
  EXPECT_TRUE(r);
}

TEST_F(LiveDaemon, BadParamsNameTheField) {
  auto c = client();
  ASSERT_TRUE(c.write_raw(R"({"jsonrpc":"2.0","id":"h","method":"hello","params":{"protocol":1,"client":5}})"
                          "\n"));
  auto reply = reply_of(c);
  EXPECT_EQ(reply.at("id"), json::value("h"));
  EXPECT_EQ(reply.at("error").at("message"), json::value("params.client: expected string"));
  EXPECT_EQ(reply.at("error").at("data").at("field"), json::value("params.client"));
}

TEST_F(LiveDaemon, AProtocolMismatchSaysToRestart) {
  auto c = client();
  auto r = c.call("hello", json::object{{"protocol", 999}, {"client", "test"}}, 5s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, -32001);
  EXPECT_EQ(r.error().kind, "version_mismatch");
  EXPECT_NE(r.error().message.find("restart the daemon with `oppx daemon restart`"), std::string::npos);
  auto ok = c.call("hello", json::object{{"protocol", 1}, {"client", "test"}}, 5s);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->as_object().at("build"), json::value(kBuildId));
}

TEST_F(LiveDaemon, AHugeLineIsRefusedAndMemoryStaysBounded) {
  // The line buffer grows by doubling up to the 16 MiB cap; under AddressSanitizer the smaller
  // buffers it frees would otherwise stay in the RSS (CI once saw 48.8 MiB).
  daemon.reset();
  daemon = std::make_unique<DaemonProcess>(home, kSmallAsanQuarantine);
  ASSERT_GT(daemon->pid(), 0) << daemon->start_result().err;
  auto c = client();
  auto other = client();
  // Measured once the worker has loaded the certificate roots, which it does at start.
  auto settled = status_until(other, json::object{{"worker_jobs", 0}});
  ASSERT_TRUE(settled) << settled.describe();
  long before = rss_kib(static_cast<pid_t>(daemon->pid()));
  // 100 MiB without a newline, written until the daemon hangs up.
  std::string chunk(1 << 20, 'a');
  int sent = 0;
  while (sent < 100 && c.write_raw(chunk)) ++sent;
  EXPECT_LT(sent, 100) << "the daemon should have closed the connection";
  auto reply = reply_of(c);
  EXPECT_EQ(error_code(reply), -32600);
  EXPECT_EQ(error_kind(reply), "too_large");
  EXPECT_FALSE(c.read_line(5s));
  long after = rss_kib(static_cast<pid_t>(daemon->pid()));
  // Measured: 1-2.5 MiB (0.5-2 under ASan). A line buffer kept would add 16 MiB.
  EXPECT_LT(after - before, 12 * 1024) << "RSS grew from " << before << " to " << after << " KiB";
  auto r = other.call("daemon/status", json::object{}, 5s);
  EXPECT_TRUE(r);
  EXPECT_TRUE(when_file_changes(home.log(), [&] { return home.read_log().find("longer than") != std::string::npos; }));
}

TEST_F(LiveDaemon, AClientThatNeverReadsIsDroppedAndOthersAreServed) {
  auto c = client();
  // Requests keep coming, replies are never read: the daemon's queue for this client fills.
  std::string batch;
  for (int i = 0; i < 1000; ++i)
    batch += R"({"jsonrpc":"2.0","id":1,"method":"daemon/status"})"
             "\n";
  bool dropped = false;
  for (int i = 0; i < 2000 && !dropped; ++i) {
    dropped = !c.write_raw(batch);
    if (i % 50 == 0) expect_serving();
  }
  EXPECT_TRUE(dropped) << "a client that never reads must be dropped";
  EXPECT_TRUE(when_file_changes(
      home.log(), [&] { return home.read_log().find("does not read its replies") != std::string::npos; }));
  expect_serving();
}

TEST_F(LiveDaemon, HalfALineThatStallsHoldsUpNobody) {
  auto stalled = client();
  ASSERT_TRUE(stalled.write_raw(R"({"jsonrpc":"2.0","id":1,"method":"daemon/st)"));
  for (int i = 0; i < 3; ++i) expect_serving();
  // The rest of the line arrives: it is one request, answered.
  ASSERT_TRUE(stalled.write_raw(R"(atus"})"
                                "\n"));
  auto reply = reply_of(stalled);
  EXPECT_EQ(reply.at("id"), json::value(1));
  EXPECT_TRUE(reply.contains("result"));
}

TEST_F(LiveDaemon, EveryRequestGetsExactlyOneReply) {
  auto c = client();
  std::string lines;
  int expected = 0;
  for (int i = 0; i < 300; ++i) {
    switch (i % 4) {
      case 0:
        lines += R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"daemon/status"})";
        break;
      case 1:
        lines += R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"nope"})";
        break;
      case 2:
        lines += R"({"jsonrpc":"2.0","id":"s)" + std::to_string(i) + R"(","method":"hello","params":{}})";
        break;
      case 3:
        lines += R"({"jsonrpc":"2.0","method":"a/notification"})";
        --expected;
        break;
    }
    lines += "\n";
    ++expected;
  }
  ASSERT_TRUE(c.write_raw(lines));
  std::map<std::string, int> seen;
  for (int i = 0; i < expected; ++i) {
    auto reply = reply_of(c);
    ASSERT_FALSE(reply.empty());
    ++seen[json::serialize(reply.at("id"))];
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(expected));
  for (auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
  EXPECT_FALSE(c.read_line(200ms)) << "no reply beyond one per request";
}

TEST_F(LiveDaemon, ManyClientsAtOnceAndResourcesReturnToIdle) {
  pid_t pid = static_cast<pid_t>(daemon->pid());
  expect_serving();
  auto watch = client();  // counted with the idle fds: the wait below asks on it
  // The worker idle too: the certificate roots it loads at start hold a file open meanwhile.
  auto idle = status_until(watch, json::object{{"clients", 1}, {"worker_jobs", 0}});
  ASSERT_TRUE(idle) << idle.describe();
  int fds_idle = open_fds(pid);
  std::string idle_targets = fd_targets(pid);
  {
    std::vector<SyncClient> clients;
    for (int i = 0; i < 200; ++i) clients.push_back(client());
    // Every client sends 10 requests with its own ids before reading anything.
    for (std::size_t i = 0; i < clients.size(); ++i) {
      std::string lines;
      for (int k = 0; k < 10; ++k) {
        lines += R"({"jsonrpc":"2.0","id":"c)" + std::to_string(i) + "-" + std::to_string(k) +
                 R"(","method":"daemon/status"})"
                 "\n";
      }
      ASSERT_TRUE(clients[i].write_raw(lines));
    }
    for (std::size_t i = 0; i < clients.size(); ++i) {
      for (int k = 0; k < 10; ++k) {
        auto reply = reply_of(clients[i]);
        ASSERT_EQ(reply.at("id"), json::value("c" + std::to_string(i) + "-" + std::to_string(k)));
      }
    }
    EXPECT_GE(status_of(home.socket()).at("clients").as_int64(), 200);
  }
  // Their sockets are closed before they stop being counted: the fds are back once this answers.
  auto again = status_until(watch, json::object{{"clients", 1}, {"worker_jobs", 0}});
  EXPECT_TRUE(again) << again.describe();
  EXPECT_LE(open_fds(pid), fds_idle) << "idle: " << idle_targets << "\nnow:  " << fd_targets(pid);
}

// daemon/status with `until`: answered when the condition becomes true (here: another client
// left), not before, and after a plain status sent behind it.
TEST_F(LiveDaemon, AStatusWaitIsAnsweredOnceAClientLeaves) {
  auto watch = client();
  auto alone = status_until(watch, json::object{{"clients", 1}});
  ASSERT_TRUE(alone) << alone.describe();
  EXPECT_EQ(alone.status.at("clients"), json::value(1));
  std::optional<SyncClient> other = client();
  ASSERT_TRUE(other->call("daemon/status", json::object{}, 5s));  // accepted and counted
  // The wait, then a plain status on the same connection: the plain one is answered first.
  ASSERT_TRUE(watch.write_raw(R"({"jsonrpc":"2.0","id":"wait","method":"daemon/status",)"
                              R"("params":{"until":{"clients":1},"timeout_ms":20000}})"
                              "\n"
                              R"({"jsonrpc":"2.0","id":"now","method":"daemon/status"})"
                              "\n"));
  auto now = reply_of(watch);
  ASSERT_EQ(now.at("id"), json::value("now")) << json::serialize(now);
  EXPECT_EQ(now.at("result").at("clients"), json::value(2));
  EXPECT_FALSE(now.at("result").as_object().contains("until_met"));
  other.reset();  // hangs up
  auto waited = reply_of(watch);
  ASSERT_EQ(waited.at("id"), json::value("wait")) << json::serialize(waited);
  EXPECT_EQ(waited.at("result").at("until_met"), json::value(true));
  EXPECT_EQ(waited.at("result").at("clients"), json::value(1));
  // The fds are not counted here: once, under heavy load, one more descriptor than before was
  // open at this moment (the socket is closed before its buffers are given back, which is what
  // signals the wait; the extra one was not found). ManyClients… counts them after 200 leave.
}

// At the deadline first: the status as it is, until_met false; the connection goes on.
TEST_F(LiveDaemon, AStatusWaitAnswersAtItsDeadlineWithTheStatusAsItIs) {
  auto c = client();
  auto asked = std::chrono::steady_clock::now();
  auto r = c.call(
      "daemon/status",
      json::object{{"until", json::object{{"clients", 3}, {"spare_state", "running"}}}, {"timeout_ms", 300}}, 10s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_GE(std::chrono::steady_clock::now() - asked, 300ms);
  EXPECT_EQ(r->at("until_met"), json::value(false));
  EXPECT_EQ(r->at("clients"), json::value(1));
  EXPECT_EQ(r->at("spare_state"), json::value("off"));
  EXPECT_EQ(r->at("requests_waiting"), json::value(0));
  // A waiter that hangs up ends its wait: nothing is answered to it, nothing breaks.
  {
    auto gone = client();
    ASSERT_TRUE(gone.write_raw(R"({"jsonrpc":"2.0","id":"w","method":"daemon/status",)"
                               R"("params":{"until":{"clients":5},"timeout_ms":60000}})"
                               "\n"));
    ASSERT_TRUE(gone.call("daemon/status", json::object{}, 5s));  // the wait is open by now
  }
  auto after = status_until(c, json::object{{"clients", 1}});
  EXPECT_TRUE(after) << after.describe();
}

// A field that no signal moves (or none of the status), or a value of the wrong type: rejected,
// naming the field, rather than a wait that would only ever end at its deadline.
TEST_F(LiveDaemon, AStatusWaitOnAFieldItCannotWaitForIsInvalidParams) {
  auto c = client();
  for (auto [until, field] : {std::pair{json::object{{"rss_kib", 0}}, "params.until.rss_kib"},
                              std::pair{json::object{{"nope", 1}}, "params.until.nope"},
                              std::pair{json::object{{"clients", "one"}}, "params.until.clients"},
                              std::pair{json::object{{"spare_state", 1}}, "params.until.spare_state"}}) {
    auto r = c.call("daemon/status", json::object{{"until", until}}, 5s);
    ASSERT_FALSE(r) << json::serialize(until);
    EXPECT_EQ(r.error().kind, "invalid_params") << r.error().message;
    const auto e = r.error();
    EXPECT_EQ(e.data.at("field"), json::value(field)) << e.message;
  }
  auto unknown = c.call("daemon/status", json::object{{"until", json::object{{"nope", 1}}}}, 5s);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("one of clients, buffered_bytes, requests_waiting, spare_state, children, "
                                         "worker_jobs"),
            std::string::npos)
      << unknown.error().message;
  auto r = c.call("daemon/status", json::object{{"until", json::object{{"clients", 1}}}, {"timeout_ms", 0}}, 5s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "invalid_params");
}

// "Max open files" of /proc/<pid>/limits: {soft, hard}.
std::pair<std::string, std::string> fd_limits(pid_t pid) {
  std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/limits"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream words(line.substr(14));
    std::string soft, hard;
    words >> soft >> hard;
    return {soft, hard};
  }
  return {};
}

// oppxd --verbose: a debug line per request with its method, id, outcome and duration, written
// before the reply is sent (so it is in the log once the client has its answer).
TEST(VerboseLog, EachRequestGetsALineWithItsDuration) {
  TempHome home;
  ASSERT_EQ(run({OPPXD_BIN, "--socket", home.socket(), "--verbose"}).exit_code, 0);
  auto c = hello_client(home.socket());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->call("daemon/status", json::object{}, 5s));
  ASSERT_FALSE(c->call("no/such/method", json::object{}, 5s));
  std::string log = home.read_log();
  EXPECT_NE(log.find("DEBUG request hello i:"), std::string::npos) << log;
  auto status = log.find("DEBUG request daemon/status i:");
  ASSERT_NE(status, std::string::npos) << log;
  std::string line = log.substr(status, log.find('\n', status) - status);
  EXPECT_NE(line.find(": answered in "), std::string::npos) << line;
  EXPECT_TRUE(line.ends_with(" ms")) << line;
  EXPECT_NE(log.find("request no/such/method i:"), std::string::npos) << log;
  EXPECT_NE(log.find(": failed (method_not_found) in "), std::string::npos) << log;
}

// Without --verbose, none.
TEST(VerboseLog, IsOffByDefault) {
  TempHome home;
  DaemonProcess daemon(home);
  auto c = hello_client(home.socket());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->call("daemon/status", json::object{}, 5s));
  EXPECT_EQ(home.read_log().find("request daemon/status"), std::string::npos);
}

TEST(DescriptorLimit, NewClientsAreRefusedAndTheOthersGoOn) {
  TempHome home;
  // A low hard limit (the daemon raises its soft limit to the hard one, so only a hard one holds).
  // 42: the MCP socket (oppxd-mcp.sock) holds one descriptor more than the daemon's own.
  DaemonProcess daemon(home, "ulimit -Sn 30 && ulimit -Hn 42 &&");
  ASSERT_GT(daemon.pid(), 0) << daemon.start_result().err;
  auto pid = static_cast<pid_t>(daemon.pid());
  EXPECT_EQ(fd_limits(pid), std::make_pair(std::string("42"), std::string("42")));

  std::vector<SyncClient> served;
  int refused = 0;
  for (int i = 0; i < 60; ++i) {
    auto c = SyncClient::connect(home.socket());
    ASSERT_TRUE(c) << "connection " << i << ": " << c.error().message;
    auto r = c->call("daemon/status", json::object{}, 5s);
    if (r) {
      served.push_back(std::move(*c));
      continue;
    }
    ++refused;
    EXPECT_EQ(r.error().kind, "too_many_open_files") << r.error().message;
    EXPECT_NE(r.error().message.find("ulimit"), std::string::npos) << r.error().message;
  }
  EXPECT_GT(refused, 0);
  EXPECT_GE(served.size(), 10u);
  EXPECT_TRUE(process_alive(pid));
  for (auto& c : served) EXPECT_TRUE(c.call("daemon/status", json::object{}, 5s));
  EXPECT_NE(home.read_log().find("refused a client"), std::string::npos);

  // Once others have gone, a new client is served again.
  served.erase(served.begin() + 2, served.end());
  auto two = status_until(served[0], json::object{{"clients", 2}});  // the others' sockets are closed
  EXPECT_TRUE(two) << two.describe();
  auto c = SyncClient::connect(home.socket());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->call("daemon/status", json::object{}, 5s));
  for (auto& c : served) EXPECT_TRUE(c.call("daemon/status", json::object{}, 5s));
}

// Six clients each send a 3 MiB line, a piece at a time: each is under the 16 MiB cap and fits
// the 8 MiB budget alone, but not all together. The ones that would pass the budget get an error
// that says so; the others' lines are read whole and answered.
TEST(BufferBudget, ClientsOverTheSharedBudgetAreRefusedAndTheOthersGoOn) {
  TempHome home;
  DaemonProcess daemon(home, "OPPX_BUFFER_BUDGET_MIB=8");
  ASSERT_GT(daemon.pid(), 0) << daemon.start_result().err;
  std::vector<SyncClient> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(*SyncClient::connect(home.socket()));
  for (auto& c : clients) ASSERT_TRUE(c.write_raw(R"({"jsonrpc":"2.0","id":1,"method":"nope","params":{"pad":")"));
  std::string piece(256 * 1024, 'a');
  for (int round = 0; round < 12; ++round)
    for (auto& c : clients) (void)c.write_raw(piece);  // fails once the daemon has hung up
  int refused = 0, answered = 0;
  for (auto& c : clients) {
    (void)c.write_raw("\"}}\n");
    auto reply = reply_of(c);
    if (error_kind(reply) == "method_not_found") {
      ++answered;
      continue;
    }
    ++refused;
    EXPECT_EQ(error_kind(reply), "too_large");
    std::string message(reply.at("error").at("message").as_string());
    EXPECT_NE(message.find("buffers for all its clients and servers are full"), std::string::npos) << message;
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(answered, 0);
  auto given_back = status_until(home.socket(), json::object{{"buffered_bytes", 0}});
  EXPECT_TRUE(given_back) << given_back.describe();
}

// --- in-process: the same Server, with test methods registered beside the real ones ---

struct InProcess : ::testing::Test {
  TempHome home;
  boost::asio::io_context io;
  std::unique_ptr<daemon::Server> server;
  std::thread thread;
  std::map<std::string, Reply> held;  // touched only on the io thread
  std::mutex mu;                      // `cancelled`, counted on the io thread, waited for on the test's
  std::condition_variable cancels;
  int cancelled = 0;

  void SetUp() override {
    daemon::ServerOptions o;
    o.socket_path = home.socket();
    o.log_path = home.log();
    o.handle_signals = false;
    server = std::make_unique<daemon::Server>(io, o);
    auto& r = server->router();
    r.add("test/wait", [this](const proto::Request& req, Reply reply, daemon::Client&) {
      reply.on_cancel([this] {
        std::lock_guard lock(mu);
        ++cancelled;
        cancels.notify_all();
      });
      held.emplace(std::string(req.params.at("key").as_string()), std::move(reply));
    });
    r.add("test/release", [this](const proto::Request& req, Reply reply, daemon::Client&) {
      std::string key(req.params.at("key").as_string());
      auto it = held.find(key);
      if (it != held.end()) {
        it->second.ok(json::value(key));
        held.erase(it);
      }
      reply.ok(json::value("released"));
    });
    r.add("test/notify", [](const proto::Request&, Reply reply, daemon::Client& client) {
      if (auto peer = client.peer.lock()) peer->notify("notifications/test", json::object{{"n", 1}});
      reply.ok(json::value(true));
    });
    r.add("test/cancelled", [this](const proto::Request&, Reply reply, daemon::Client&) {
      std::lock_guard lock(mu);
      reply.ok(json::value(cancelled));
    });
    ASSERT_TRUE(server->listen());
    server->start();
    thread = std::thread([this] { io.run(); });
  }
  void TearDown() override {
    boost::asio::post(io, [this] {
      held.clear();
      server->stop("test over");
    });
    thread.join();
  }
  SyncClient client() {
    auto c = SyncClient::connect(home.socket());
    EXPECT_TRUE(c);
    return std::move(*c);
  }
};

TEST_F(InProcess, ConcurrentRequestsAreAnsweredOutOfOrder) {
  auto c = client();
  ASSERT_TRUE(c.write_raw(R"({"jsonrpc":"2.0","id":1,"method":"test/wait","params":{"key":"a"}})"
                          "\n"
                          R"({"jsonrpc":"2.0","id":2,"method":"test/wait","params":{"key":"b"}})"
                          "\n"
                          R"({"jsonrpc":"2.0","id":3,"method":"test/release","params":{"key":"b"}})"
                          "\n"
                          R"({"jsonrpc":"2.0","id":4,"method":"daemon/status"})"
                          "\n"
                          R"({"jsonrpc":"2.0","id":5,"method":"test/release","params":{"key":"a"}})"
                          "\n"));
  std::vector<std::int64_t> order;
  for (int i = 0; i < 5; ++i) order.push_back(reply_of(c).at("id").as_int64());
  EXPECT_EQ(order, (std::vector<std::int64_t>{2, 3, 4, 1, 5}));
}

TEST_F(InProcess, NotificationsReachTheClientBetweenReplies) {
  auto c = client();
  ASSERT_TRUE(c.write_raw(R"({"jsonrpc":"2.0","id":1,"method":"test/notify"})"
                          "\n"));
  auto first = reply_of(c);
  EXPECT_EQ(first.at("method"), json::value("notifications/test"));
  EXPECT_FALSE(first.contains("id"));
  EXPECT_EQ(reply_of(c).at("id"), json::value(1));
  // SyncClient::call skips notifications on its way to the reply.
  auto r = c.call("test/notify", nullptr, 5s);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, json::value(true));
}

TEST_F(InProcess, AClientLeavingMidRequestCancelsItAndOthersGoOn) {
  {
    auto c = client();
    ASSERT_TRUE(c.write_raw(R"({"jsonrpc":"2.0","id":"w","method":"test/wait","params":{"key":"gone"}})"
                            "\n"));
    auto r = c.call("daemon/status", json::object{}, 5s);  // the wait is in flight once this answers
    ASSERT_TRUE(r);
  }
  auto other = client();
  {
    std::unique_lock lock(mu);
    EXPECT_TRUE(cancels.wait_for(lock, 10s, [&] { return cancelled > 0; }));
  }
  auto count = other.call("test/cancelled", nullptr, 5s);
  ASSERT_TRUE(count);
  EXPECT_EQ(*count, json::value(1));
  // The late answer to the departed client goes nowhere, and nothing breaks.
  auto released = other.call("test/release", json::object{{"key", "gone"}}, 5s);
  ASSERT_TRUE(released);
  EXPECT_EQ(*released, json::value("released"));
}

TEST_F(InProcess, ShutdownFlushesTheReplyThenClosesEveryone) {
  auto a = client();
  auto b = client();
  ASSERT_TRUE(b.call("daemon/status", json::object{}, 5s));
  auto r = a.call("daemon/shutdown", json::object{}, 5s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->at("stopping"), json::value(true));
  EXPECT_FALSE(a.read_line(5s));
  EXPECT_FALSE(b.read_line(5s));
  thread.join();  // the loop ran out of work: everything was closed
  thread = std::thread([] {});
  EXPECT_NE(::access(home.socket().c_str(), F_OK), 0);
}

}  // namespace
}  // namespace oppx::test
