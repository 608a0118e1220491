// bench/cli_latency: how long `oppx daemon status` takes against a warm daemon, beside `node -e 0`
// (what a Node-based CLI costs before it does anything) and `true` (the cost of a process), all
// measured in this run; and the daemon's idle RSS. Prints figures; asserts nothing.
//   usage: cli_latency [--runs N] [--node-runs M]
// It runs its own daemon in a temporary HOME, so it never touches the user's.
#include "bench/bench_support.h"
#include "common/proc.h"
#include "common/sync_client.h"
#include "proto/daemon_api.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

using oppx::bench::measure;
using oppx::bench::run_ms;
using oppx::bench::Stats;

int main(int argc, char** argv) {
  int runs = 100, node_runs = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--node-runs") node_runs = std::max(1, std::atoi(argv[i + 1]));
  }
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const std::string oppx = oppx::bench::self_dir() + "/oppx";
  const std::string socket = home.socket();

  if (run_ms({oppx, "daemon", "start"}) < 0) {
    fmt::print(stderr, "cli_latency: could not start the daemon with {}\n", oppx);
    return 1;
  }
  auto client = oppx::SyncClient::connect(socket);
  long pid = 0;
  if (client) {
    if (auto r = client->call(oppx::proto::kDaemonStatus, boost::json::object{}, std::chrono::seconds(5))) {
      pid = static_cast<long>(oppx::proto::decode<oppx::proto::StatusResult>(*r)->pid);
    }
  }
  measure({oppx, "daemon", "status"}, 5);  // warm the page cache
  Stats cli = measure({oppx, "daemon", "status"}, runs);
  Stats truth = measure({"true"}, runs);
  Stats node = measure({"node", "-e", "0"}, node_runs);
  long rss = pid ? oppx::rss_kib(static_cast<pid_t>(pid)) : -1;

  fmt::print("cli_latency: oppx daemon status against a warm daemon ({} runs)\n", runs);
  fmt::print("  oppx daemon status   median {:7.2f} ms   p90 {:7.2f} ms   min {:7.2f} ms   failures {}\n", cli.median,
             cli.p90, cli.min, cli.failures);
  fmt::print("  true (a bare process) median {:6.2f} ms   p90 {:7.2f} ms\n", truth.median, truth.p90);
  if (node.failures == node_runs) {
    fmt::print("  node -e 0            not available\n");
  } else {
    fmt::print("  node -e 0 ({} runs)   median {:7.2f} ms   p90 {:7.2f} ms\n", node_runs, node.median, node.p90);
    fmt::print("  ratio oppx / node    {:.3f} (1/{:.0f}; target under 1/20)\n", cli.median / node.median,
               node.median / cli.median);
  }
  fmt::print("  target median <= 3 ms: {}\n", cli.median <= 3.0 ? "met" : "NOT met");
  fmt::print("  daemon idle RSS      {} KiB ({:.1f} MiB; target <= 8 MiB: {})\n", rss, rss / 1024.0,
             rss >= 0 && rss <= 8 * 1024 ? "met" : "NOT met");

  oppx::bench::report({"cli_latency", "oppx daemon status, warm daemon", "ms", cli, "node -e 0",
                       node.failures == node_runs ? 0 : node.median, "target median <= 3 ms"});
  oppx::bench::report({"cli_latency", "true (a bare process)", "ms", truth, "", 0, ""});
  run_ms({oppx, "daemon", "stop"});
  return 0;
}
