// bench/cli_latency: how long `oppx daemon status` takes against a warm daemon, beside `node -e 0`
// (what a Node-based CLI costs before it does anything) and `true` (the cost of a process), all
// measured in this run; and the daemon's idle RSS. Prints figures; asserts nothing.
//   usage: cli_latency [--runs N] [--node-runs M]
// It runs its own daemon in a temporary HOME, so it never touches the user's.
#include "common/proc.h"
#include "common/sync_client.h"
#include "proto/daemon_api.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <spawn.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string s(buf);
  return s.substr(0, s.find_last_of('/'));
}

// Runs argv with stdout and stderr to /dev/null; returns the wall time in ms, or -1 on failure.
double run_ms(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  auto start = Clock::now();
  pid_t pid;
  int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int st = 0;
  ::waitpid(pid, &st, 0);
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? ms : -1;
}

struct Stats {
  double median = 0, p90 = 0, min = 0;
  int failures = 0;
};

Stats measure(const std::vector<std::string>& args, int runs) {
  std::vector<double> t;
  Stats s;
  for (int i = 0; i < runs; ++i) {
    double ms = run_ms(args);
    if (ms < 0) {
      ++s.failures;
    } else {
      t.push_back(ms);
    }
  }
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  s.median = t[t.size() / 2];
  s.p90 = t[std::min(t.size() - 1, t.size() * 9 / 10)];
  s.min = t.front();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 100, node_runs = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--node-runs") node_runs = std::max(1, std::atoi(argv[i + 1]));
  }
  char tmpl[] = "/tmp/oppx-bench-XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  std::string home = tmpl;
  ::setenv("HOME", home.c_str(), 1);
  ::setenv("XDG_RUNTIME_DIR", (home + "/run").c_str(), 1);
  ::setenv("XDG_STATE_HOME", (home + "/state").c_str(), 1);
  ::setenv("XDG_CONFIG_HOME", (home + "/config").c_str(), 1);
  ::unsetenv("OPPX_SOCKET");
  ::mkdir((home + "/run").c_str(), 0700);
  const std::string oppx = self_dir() + "/oppx";
  const std::string socket = home + "/run/oppx/oppxd.sock";

  if (run_ms({oppx, "daemon", "start"}) < 0) {
    fmt::print(stderr, "cli_latency: could not start the daemon with {}\n", oppx);
    return 1;
  }
  auto client = oppx::SyncClient::connect(socket);
  long pid = 0;
  if (client) {
    if (auto r = client->call("daemon/status", boost::json::object{}, std::chrono::seconds(5))) {
      pid = static_cast<long>(oppx::proto::decode_status_result(*r)->pid);
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

  run_ms({oppx, "daemon", "stop"});
  std::string rm = "rm -rf '" + home + "'";
  (void)!std::system(rm.c_str());
  return 0;
}
