// The short load suite (issue 17): 200 socket clients with 10 calls in flight each, across 20
// connectors (stdio echo servers, two that crash on every call, two that never answer, two over
// streamable HTTP). Every reply reaches its own caller and says what its connector does; after the
// clients leave, the daemon holds the fds it held idle, and a second round of load does not grow
// its memory. Correctness only, never time: speed figures belong in bench/. Each round prints
// its calls' p50/p99 and the daemon's RSS and fds during and after (figures, not checked). The
// soak mode: `OPPX_LOAD_SOAK_SECONDS=3600 build/oppx_tests --gtest_filter='Load.*'` repeats the
// rounds for an hour, with the same checks after each one.
#include "common/proc.h"
#include "proto/daemon_api.h"
#include "tests/support/harness.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace oppx::test {
namespace {

namespace json = boost::json;

constexpr int kClients = 200;
constexpr int kCallsPerClient = 10;
constexpr int kThreads = 8;  // each drives kClients / kThreads clients
constexpr int kHangMs = 1500;

enum class Kind { kEcho, kHttp, kCrash, kHang };

struct Connector {
  std::string name;
  Kind kind;
};

// 14 stdio echo servers, 2 crashing on each call, 2 never answering one, 2 over HTTP.
std::vector<Connector> connectors() {
  std::vector<Connector> out;
  for (int i = 0; i < 14; ++i) out.push_back({"echo" + std::to_string(i), Kind::kEcho});
  for (int i = 0; i < 2; ++i) out.push_back({"crash" + std::to_string(i), Kind::kCrash});
  for (int i = 0; i < 2; ++i) out.push_back({"hang" + std::to_string(i), Kind::kHang});
  for (int i = 0; i < 2; ++i) out.push_back({"http" + std::to_string(i), Kind::kHttp});
  return out;
}

// What is wrong with `reply` to the call carrying `token` on connector `c`; "" when it is right.
std::string check_reply(const json::object& reply, const Connector& c, const std::string& token) {
  const json::object* result = reply.contains("result") ? reply.at("result").if_object() : nullptr;
  const json::object* error = reply.contains("error") ? reply.at("error").if_object() : nullptr;
  switch (c.kind) {
    case Kind::kEcho:
    case Kind::kHttp: {
      std::string want = (c.kind == Kind::kEcho ? "fake echo " : "echo: ") + token;
      if (!result || !result->contains("text") || result->at("text") != json::value(want)) {
        return "expected the text \"" + want + "\"";
      }
      return "";
    }
    case Kind::kCrash:
      return error ? "" : "expected an error from a server that crashes on every call";
    case Kind::kHang: {
      const json::object* data = error && error->contains("data") ? error->at("data").if_object() : nullptr;
      if (!data || !data->contains("kind") || data->at("kind") != json::value("timeout")) return "expected a timeout";
      return "";
    }
  }
  return "unknown kind";
}

struct Round {
  std::vector<std::string> problems;  // empty: every reply right
  std::vector<double> latency_ms;     // each call, from its client's write to its reply
  std::int64_t peak_rss_kib = 0;      // the daemon's, sampled as replies arrive
  int peak_fds = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// One round: every client connects and says hello, all wait for each other, then each writes its
// 10 calls at once and reads 10 replies, matched by id. The first thread samples the daemon's RSS
// and fds every 25 replies it reads (during the load, with no timer).
Round load_round(const std::string& socket, const std::vector<Connector>& conns, int round, pid_t daemon) {
  std::mutex mu;
  Round out;
  auto problem = [&](std::string p) {
    std::lock_guard lock(mu);
    if (out.problems.size() < 20) out.problems.push_back(std::move(p));
  };
  std::latch all_connected(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<SyncClient> clients;
      std::vector<int> ids;
      std::vector<std::chrono::steady_clock::time_point> written;
      for (int i = t; i < kClients; i += kThreads) {
        auto c = SyncClient::connect(socket);
        if (!c) {
          problem("client " + std::to_string(i) + " could not connect: " + c.error().message);
          continue;
        }
        if (auto h = c->call("hello", json::object{{"protocol", proto::kProtocolVersion}}, 60s); !h) {
          problem("client " + std::to_string(i) + " hello: " + h.error().message);
          continue;
        }
        clients.push_back(std::move(*c));
        ids.push_back(i);
      }
      all_connected.arrive_and_wait();
      auto token = [&](int client, int call) {
        return "r" + std::to_string(round) + "-c" + std::to_string(client) + "-" + std::to_string(call);
      };
      auto connector_of = [&](int client, int call) -> const Connector& {
        return conns[static_cast<std::size_t>(client * kCallsPerClient + call) % conns.size()];
      };
      for (std::size_t k = 0; k < clients.size(); ++k) {
        std::string lines;
        for (int j = 0; j < kCallsPerClient; ++j) {
          const Connector& to = connector_of(ids[k], j);
          json::object params{
              {"connector", to.name}, {"tool", "echo"}, {"arguments", json::object{{"message", token(ids[k], j)}}}};
          // Only the calls that never get an answer have a short limit: the others have the
          // default one, so that a slow machine (or a sanitizer build) does not fail them.
          if (to.kind == Kind::kHang) params["timeout_ms"] = kHangMs;
          lines += json::serialize(json::object{
                       {"jsonrpc", "2.0"}, {"id", 100 + j}, {"method", "tools/call"}, {"params", params}}) +
                   "\n";
        }
        written.push_back(std::chrono::steady_clock::now());
        if (!clients[k].write_raw(lines)) problem("client " + std::to_string(ids[k]) + " could not write its calls");
      }
      std::vector<double> latencies;
      int read = 0;
      std::int64_t peak_rss = 0;
      int peak_fds = 0;
      for (std::size_t k = 0; k < clients.size(); ++k) {
        std::vector<bool> seen(kCallsPerClient, false);
        for (int got = 0; got < kCallsPerClient;) {
          auto line = clients[k].read_line(150s);
          if (!line) {
            problem("client " + std::to_string(ids[k]) + " got " + std::to_string(got) + " of its replies");
            break;
          }
          json::object reply = json::parse(*line).as_object();
          if (!reply.contains("id")) continue;  // a notification
          std::int64_t id = reply.at("id").is_int64() ? reply.at("id").as_int64() : -1;
          int j = static_cast<int>(id - 100);
          if (j < 0 || j >= kCallsPerClient || seen[static_cast<std::size_t>(j)]) {
            problem("client " + std::to_string(ids[k]) + " got a reply it did not ask for: " + *line);
            break;
          }
          seen[static_cast<std::size_t>(j)] = true;
          ++got;
          latencies.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - written[k]).count());
          if (t == 0 && ++read % 25 == 0) {
            peak_rss = std::max(peak_rss, static_cast<std::int64_t>(rss_kib(daemon)));
            peak_fds = std::max(peak_fds, open_fds(daemon));
          }
          if (std::string why = check_reply(reply, connector_of(ids[k], j), token(ids[k], j)); !why.empty()) {
            problem("client " + std::to_string(ids[k]) + " call " + std::to_string(j) + " on " +
                    connector_of(ids[k], j).name + ": " + why + "; got " + *line);
          }
        }
      }
      std::lock_guard lock(mu);
      out.latency_ms.insert(out.latency_ms.end(), latencies.begin(), latencies.end());
      out.peak_rss_kib = std::max(out.peak_rss_kib, peak_rss);
      out.peak_fds = std::max(out.peak_fds, peak_fds);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// OPPX_LOAD_SOAK_SECONDS: the soak mode, rounds again and again for that long (the same checks
// after each); without it, two rounds.
std::chrono::seconds soak_time() {
  const char* v = std::getenv("OPPX_LOAD_SOAK_SECONDS");
  return std::chrono::seconds(v ? std::max(0L, std::strtol(v, nullptr, 10)) : 0L);
}

// Every connector started again and running, and `c` the only client left: the daemon's RSS.
std::int64_t settle(SyncClient& c, const std::vector<Connector>& conns) {
  auto list = c.call("mcp/reconnect", json::object{}, 60s);
  EXPECT_TRUE(list) << list.error().message;
  if (list) {
    for (const auto& e : list->at("connectors").as_array()) {
      EXPECT_EQ(e.at("state"), json::value("running")) << json::serialize(e);
    }
    EXPECT_EQ(list->at("connectors").as_array().size(), conns.size());
  }
  // Their sockets are closed before they stop being counted.
  auto alone = status_until(c, json::object{{"clients", 1}}, 30s);
  EXPECT_TRUE(alone) << "the load's clients are still counted: " << alone.describe();
  if (!alone) return 0;
  // The servers the reconnect replaced are reaped (their pipes and pidfds closed by then), and the
  // worker has written the tool-list cache (its file closed): what is left open is what idles.
  // Each stdio server is one child, two in a PID namespace (its init); the reaper is one more.
  std::int64_t stdio =
      std::count_if(conns.begin(), conns.end(), [](const Connector& k) { return k.kind != Kind::kHttp; });
  bool ns = alone.status.at("isolation") == json::value("pid_namespace");
  std::int64_t children = stdio * (ns ? 2 : 1) + (alone.status.at("reaper_pid").to_number<std::int64_t>() > 0 ? 1 : 0);
  auto idle = status_until(c, json::object{{"clients", 1}, {"children", children}, {"worker_jobs", 0}}, 30s);
  EXPECT_TRUE(idle) << "not idle after the reconnect: " << idle.describe();
  return idle ? idle.status.at("rss_kib").to_number<std::int64_t>() : 0;
}

TEST(Load, TwoHundredClientsWithTenCallsInFlightEachGetTheirOwnRepliesAndLeaveNothingBehind) {
  TempHome home;
  std::vector<std::unique_ptr<Process>> http;
  std::string servers;
  const auto conns = connectors();
  for (const auto& c : conns) {
    if (!servers.empty()) servers += ",";
    switch (c.kind) {
      case Kind::kEcho:
        servers += stdio_entry(c.name, FAKE_MCP_SERVER, {"ok"});
        break;
      case Kind::kCrash:
        servers += stdio_entry(c.name, FAKE_MCP_SERVER, {"crash_on_call"});
        break;
      case Kind::kHang:
        servers += stdio_entry(c.name, FAKE_MCP_SERVER, {"hang_call"});
        break;
      case Kind::kHttp: {
        // No fault mode: the fake answers every request as a plain MCP server over HTTP.
        auto& p =
            http.emplace_back(std::make_unique<Process>(std::vector<std::string>{"node", FAKE_HTTP_MCP, "plain"}));
        ASSERT_TRUE(p->wait_for_stdout(" ready\n")) << p->err();
        int port = 0;
        std::sscanf(p->out().c_str(), "ports %d", &port);
        ASSERT_GT(port, 0) << p->out();
        servers += "\"" + c.name + "\":" +
                   json::serialize(
                       json::object{{"type", "http"}, {"url", "http://127.0.0.1:" + std::to_string(port) + "/mcp"}});
        break;
      }
    }
  }
  home.write_mcp_config(servers);
  DaemonProcess daemon(home, kSmallAsanQuarantine);
  ASSERT_GT(daemon.pid(), 0) << daemon.start_result().err;
  const pid_t pid = static_cast<pid_t>(daemon.pid());
  auto c = hello_client(home.socket());
  ASSERT_TRUE(c);

  const std::int64_t idle_rss = settle(*c, conns);
  const int idle_fds = open_fds(pid);
  const std::string idle_targets = fd_targets(pid);
  ASSERT_GT(idle_fds, 0);
  std::int64_t first_rss = 0;
  const auto soak_until = std::chrono::steady_clock::now() + soak_time();
  for (int round = 1; round <= 2 || std::chrono::steady_clock::now() < soak_until; ++round) {
    Round r = load_round(home.socket(), conns, round, pid);
    for (const auto& p : r.problems) ADD_FAILURE() << "round " << round << ": " << p;
    const std::int64_t rss = settle(*c, conns);
    const int fds = open_fds(pid);
    EXPECT_LE(fds, idle_fds) << "round " << round << ": the daemon holds " << fds << " fds, " << idle_fds
                             << " idle\nidle: " << idle_targets << "\nnow:  " << fd_targets(pid);
    if (round == 1) first_rss = rss;
      // The first round grows the allocator's pools to what the load needs; the second must find
      // them big enough. 2000 calls a round: 8 MiB is 4 KiB kept per call. Not under
      // AddressSanitizer: its allocator grows more (+13 to +14 MiB in round 2, even with the
      // small quarantine).
#if defined(__SANITIZE_ADDRESS__)
    constexpr bool kCheckRss = false;
#else
    constexpr bool kCheckRss = true;
#endif
    if (round >= 2 && kCheckRss) {
      EXPECT_LE(rss, first_rss + 8192) << "RSS " << idle_rss << " KiB idle, " << first_rss << " after one round, "
                                       << rss << " after round " << round;
    }
    // Figures, never asserted (speed targets live in bench/): the calls that hang for their
    // timeout on purpose are in the tail.
    std::printf(
        "round %d: %zu calls, p50 %.2f ms, p99 %.1f ms; during: RSS up to %lld KiB, up to %d fds; after: RSS %lld "
        "KiB, %d fds (idle: %lld KiB, %d fds)\n",
        round, r.latency_ms.size(), percentile(r.latency_ms, 0.50), percentile(r.latency_ms, 0.99),
        static_cast<long long>(r.peak_rss_kib), r.peak_fds, static_cast<long long>(rss), fds,
        static_cast<long long>(idle_rss), idle_fds);
    std::fflush(stdout);
    if (HasFailure()) break;  // a soak stops at its first failed round
  }
}

}  // namespace
}  // namespace oppx::test
