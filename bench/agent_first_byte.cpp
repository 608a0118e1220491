// bench/agent_first_byte: how soon `oppx -p` reaches the model server, with 5 warm connectors,
// and the peak RSS of the `oppx -p` process. A small OpenAI-compatible server runs on a thread of
// this program, so the time from the spawn to the first byte of each request is read on one
// clock. Beside it, `node -e 0` in the same run, and the ratio. Prints figures; asserts nothing.
//   usage: agent_first_byte [--runs N] [--node-runs M]
// It runs its own daemon in a temporary HOME, so it never touches the user's.
#include "bench/bench_support.h"
#include "bench/model_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Run {
  double first_byte = -1, first_completion = -1, total = -1;
  long max_rss_kib = -1;
};

using oppx::bench::ModelServer;

Run run_print(const std::string& oppx) {
  std::vector<std::string> args{oppx, "-p", "hi"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  Run r;
  auto t0 = Clock::now();
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return r;
  int status = 0;
  rusage ru{};
  if (::wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return r;
  r.total = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  r.max_rss_kib = ru.ru_maxrss;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 30, node_runs = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--node-runs") node_runs = std::max(1, std::atoi(argv[i + 1]));
  }
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const std::string dir = oppx::bench::self_dir();
  const std::string oppx = dir + "/oppx";
  oppx::bench::write_config(home, oppx::bench::echo_servers(5));  // five warm connectors
  ModelServer model;
  if (!model.port()) {
    fmt::print(stderr, "agent_first_byte: could not listen on 127.0.0.1\n");
    return 1;
  }
  ::setenv("OPPX_SERVER", fmt::format("http://127.0.0.1:{}/v1", model.port()).c_str(), 1);
  ::setenv("OPPX_MODEL", "m1", 1);
  ::chdir(home.root().c_str());
  if (int running = oppx::bench::running_connectors(oppx, home.socket()); running != 5) {
    fmt::print(stderr, "agent_first_byte: {} of the 5 connectors started\n", running);
    return 1;
  }
  std::vector<double> first, completion, total, rss;
  int failures = 0;
  for (int i = 0; i < runs + 3; ++i) {
    model.take();
    auto t0 = Clock::now();
    Run r = run_print(oppx);
    auto hits = model.take();
    if (r.total < 0 || hits.empty()) {
      ++failures;
      continue;
    }
    if (i < 3) continue;  // warm-up
    first.push_back(std::chrono::duration<double, std::milli>(hits.front().at - t0).count());
    for (const auto& h : hits) {
      if (h.completion) {
        completion.push_back(std::chrono::duration<double, std::milli>(h.at - t0).count());
        break;
      }
    }
    total.push_back(r.total);
    rss.push_back(static_cast<double>(r.max_rss_kib));
  }
  oppx::bench::Stats node = oppx::bench::measure({"node", "-e", "0"}, node_runs);
  oppx::bench::run_ms({oppx, "daemon", "stop"});
  if (first.empty() || completion.empty()) {
    fmt::print("agent_first_byte: not measured: every run of oppx -p failed ({} failures)\n", failures);
    return 1;
  }
  auto f = oppx::bench::summarize(first), c = oppx::bench::summarize(completion), t = oppx::bench::summarize(total),
       m = oppx::bench::summarize(rss);
  fmt::print("agent_first_byte: oppx -p \"hi\" with 5 warm connectors ({} runs, {} failures)\n", first.size(),
             failures);
  fmt::print("  first byte to the model server      median {:7.2f} ms   p90 {:7.2f} ms   min {:7.2f} ms\n", f.median,
             f.p90, f.min);
  fmt::print("  first byte of the chat completion   median {:7.2f} ms   p90 {:7.2f} ms   min {:7.2f} ms\n", c.median,
             c.p90, c.min);
  fmt::print("  whole turn (a one-step reply)       median {:7.2f} ms   p90 {:7.2f} ms\n", t.median, t.p90);
  fmt::print("  peak RSS of oppx -p                 median {:7.0f} KiB  max {:7.0f} KiB ({:.1f} MiB)\n", m.median,
             m.p99, m.p99 / 1024.0);
  if (node.failures == node_runs) {
    fmt::print("  node -e 0                           not available\n");
  } else {
    fmt::print("  node -e 0 ({} runs)                 median {:7.2f} ms\n", node_runs, node.median);
    fmt::print("  ratio completion byte / node -e 0   {:.3f}\n", c.median / node.median);
  }
  fmt::print("  target: the chat completion's first byte within 20 ms: {}\n", c.median <= 20.0 ? "met" : "NOT met");
  double node_ms = node.failures == node_runs ? 0 : node.median;
  oppx::bench::report({"agent_first_byte", "oppx -p: first byte of the chat completion", "ms", c, "node -e 0", node_ms,
                       "target <= 20 ms"});
  oppx::bench::report({"agent_first_byte", "oppx -p: a whole one-step turn", "ms", t, "node -e 0", node_ms, ""});
  oppx::bench::report({"agent_first_byte", "oppx -p: peak RSS", "KiB", m, "", 0, ""});
  return 0;
}
