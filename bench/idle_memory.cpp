// bench/idle_memory: the daemon's resident memory before, while and after many idle socket clients
// (default 10,000), each of which said hello as a front end does (its environment and folder) and
// then nothing: what an idle connection costs, and whether the daemon gives that memory back once
// they have all gone (target: within 2 MiB of before, the baseline measured in the same run).
// Waits are the daemon's own (daemon/status `until`), never sleeps.
//   usage: idle_memory [--connections N] [--rounds R]
#include "bench/bench_support.h"

#include "common/sync_client.h"
#include "proto/daemon_api.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <sys/resource.h>

namespace {

using Clock = std::chrono::steady_clock;
using oppx::SyncClient;
using oppx::bench::Stats;

constexpr long kTargetKib = 2 * 1024;

std::optional<oppx::proto::StatusResult> status(SyncClient& c, const boost::json::object& params = {}) {
  auto r = c.call(oppx::proto::kDaemonStatus, params, std::chrono::seconds(60));
  if (!r) return std::nullopt;
  auto s = oppx::proto::decode<oppx::proto::StatusResult>(*r);
  if (!s) return std::nullopt;
  return *s;
}

// The daemon's "Max open files" soft limit (it raises its own to the hard one at start).
long fd_limit_of(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    return std::atol(line.c_str() + 14 + line.substr(14).find_first_not_of(' '));
  }
  return -1;
}

// Each client costs the bench one descriptor: ours goes to the hard limit, which the daemon
// (started by our child, so inheriting it) raises its own to as well.
rlim_t raise_own_fd_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  rl.rlim_cur = rl.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &rl);
  ::getrlimit(RLIMIT_NOFILE, &rl);
  return rl.rlim_cur;
}

// The daemon's anonymous resident memory (its heap and stacks), from /proc: RSS less the pages
// of its program and libraries, which the first use of a code path brings in and that are not
// memory it keeps. -1 when it cannot be read.
long rss_anon_kib(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("RssAnon:", 0) == 0) return std::atol(line.c_str() + 8);
  return -1;
}

Stats one(double v) {
  Stats s;
  s.median = s.min = s.p90 = s.p99 = v;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int connections = 10'000;
  int rounds = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has = i + 1 < argc;
    if (a == "--connections" && has) {
      connections = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--rounds" && has) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      fmt::print(stderr,
                 "usage: idle_memory [--connections N] [--rounds R]\n"
                 "Opens N idle clients of one oppxd (default {}), each saying hello, closes them all, R times\n"
                 "(default {}); prints the daemon's RSS before, with them open and after, and the difference.\n",
                 connections, rounds);
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  std::signal(SIGPIPE, SIG_IGN);
  rlim_t own_limit = raise_own_fd_limit();
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const std::string oppx = oppx::bench::self_dir() + "/oppx";
  struct StopDaemon {
    std::string oppx;
    ~StopDaemon() { oppx::bench::run_ms({oppx, "daemon", "stop"}); }
  } stop{oppx};
  if (oppx::bench::run_ms({oppx, "daemon", "start"}) < 0) {
    fmt::print(stderr, "idle_memory: could not start the daemon with {}\n", oppx);
    return 1;
  }
  auto control = oppx::bench::daemon_client(home.socket(), "idle_memory");
  // The baseline is the daemon at rest: the worker loads the TLS roots as the daemon starts
  // (about 1 MiB of them, kept), which a reading taken before would charge to the clients.
  auto before = control ? status(*control, {{"until", {{"worker_jobs", 0}}}, {"timeout_ms", 60'000}}) : std::nullopt;
  if (!before) {
    fmt::print(stderr, "idle_memory: the daemon did not answer daemon/status\n");
    return 1;
  }
  const long before_anon = rss_anon_kib(before->pid);
  // The daemon refuses clients past its limit less a sixteenth (server.cpp, kFdHeadroom).
  long daemon_limit = fd_limit_of(before->pid);
  long room = std::min<long>(static_cast<long>(own_limit) - 64, daemon_limit - daemon_limit / 16 - 64);
  if (room < connections) {
    fmt::print(
        "idle_memory: the descriptor limits (this process {}, the daemon {}) allow {} clients, not {};\n"
        "  raise the hard limit (ulimit -Hn) for the full count\n",
        own_limit, daemon_limit, std::max(room, 0L), connections);
    connections = static_cast<int>(std::max(room, 1L));
  }

  fmt::print("idle_memory: {} idle clients of one oppxd (each said hello), opened and closed {} time{}\n", connections,
             rounds, rounds == 1 ? "" : "s");
  fmt::print("  {:>5} {:>11} {:>11} {:>12} {:>10} {:>13} {:>18}\n", "round", "before MiB", "with N MiB", "per client",
             "after MiB", "after-before", "heap after-before");
  long with_kib = 0, after_kib = 0;  // of the round that kept the most
  double open_s = 0, close_s = 0;
  for (int round = 1; round <= rounds; ++round) {
    std::vector<SyncClient> clients;
    clients.reserve(static_cast<std::size_t>(connections));
    auto t0 = Clock::now();
    for (int i = 0; i < connections; ++i) {
      auto c = oppx::bench::daemon_client(home.socket(), "idle_memory");
      if (!c) break;
      clients.push_back(std::move(*c));
    }
    open_s = std::chrono::duration<double>(Clock::now() - t0).count();
    auto open = status(*control);
    if (!open || static_cast<int>(clients.size()) != connections || open->clients != before->clients + connections) {
      fmt::print("  {:>5} FAILED: {} of {} clients connected and said hello (the daemon counts {})\n", round,
                 clients.size(), connections, open ? open->clients - before->clients : -1);
      return 1;
    }
    t0 = Clock::now();
    clients.clear();
    // Answered once the daemon has closed every one of them (or at the timeout, until_met false),
    // as the last is counted out, before its memory is freed; the next request is read after.
    auto gone = status(*control, {{"until", {{"clients", before->clients}}}, {"timeout_ms", 60'000}});
    close_s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!gone || !gone->until_met.value_or(false)) {
      fmt::print("  {:>5} FAILED: the daemon still counted {} clients 60 s after they closed\n", round,
                 gone ? gone->clients : -1);
      return 1;
    }
    auto after = status(*control);
    long after_anon = rss_anon_kib(before->pid);
    if (!after) {
      fmt::print("  {:>5} FAILED: the daemon did not answer daemon/status\n", round);
      return 1;
    }
    with_kib = std::max(with_kib, open->rss_kib);
    after_kib = std::max(after_kib, after->rss_kib);
    fmt::print("  {:>5} {:11.1f} {:11.1f} {:>8.1f} KiB {:10.1f} {:>+9.1f} MiB {:>+14.1f} MiB\n", round,
               before->rss_kib / 1024.0, open->rss_kib / 1024.0, double(open->rss_kib - before->rss_kib) / connections,
               after->rss_kib / 1024.0, (after->rss_kib - before->rss_kib) / 1024.0,
               (after_anon - before_anon) / 1024.0);
  }
  bool met = after_kib - before->rss_kib <= kTargetKib;
  fmt::print("  opening them took {:.2f} s, the daemon closed them {:.2f} s after the last hung up\n", open_s, close_s);
  fmt::print("  (heap: the daemon's anonymous memory, RssAnon; the rest of RSS is its program's pages)\n");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizers hold freed memory back (ASan's quarantine): the figures say nothing then.
  const bool checked = false;
  fmt::print("  target: after within 2 MiB of before: not checked in a sanitizer build\n");
#else
  const bool checked = true;
  fmt::print("  target: after within 2 MiB of before (the worst round): {}\n", met ? "met" : "NOT met");
#endif

  oppx::bench::report({"idle_memory", fmt::format("daemon RSS with {} idle clients", connections), "MiB",
                       one(with_kib / 1024.0), "daemon idle, before", before->rss_kib / 1024.0,
                       fmt::format("{:.1f} KiB a client", double(with_kib - before->rss_kib) / connections)});
  oppx::bench::report({"idle_memory",
                       fmt::format("daemon RSS after {} clients came and went ({} rounds)", connections, rounds), "MiB",
                       one(after_kib / 1024.0), "daemon idle, before", before->rss_kib / 1024.0,
                       fmt::format("{:+.1f} MiB; target within 2 MiB: {}", (after_kib - before->rss_kib) / 1024.0,
                                   met ? "met" : "NOT met")});
  return met || !checked ? 0 : 1;
}
