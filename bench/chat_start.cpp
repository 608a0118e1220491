// bench/chat_start: how soon the terminal chat is ready, with 5 warm connectors: the time from
// starting `oppx` in a pseudo-terminal to its prompt, and from a key written to the terminal to
// its echo at the prompt. Beside it, `node -e 0` in the same run, and the ratio. A small model
// server runs on a thread of this program. Prints figures; asserts nothing.
//   usage: chat_start [--runs N] [--keys K] [--node-runs M]
// It runs its own daemon in a temporary HOME, so it never touches the user's.
#include "bench/bench_support.h"
#include "bench/model_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

// Reads the terminal until `text` has appeared since `from`; false at the deadline.
bool read_until(int master, std::string& seen, const std::string& text, std::size_t from, Clock::time_point deadline) {
  char buf[4096];
  while (seen.find(text, from) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) return false;
    seen.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

struct Run {
  double prompt_ms = -1;
  std::vector<double> echo_ms;
};

Run run_chat(const std::string& oppx, int keys) {
  Run r;
  int master = -1;
  winsize ws{40, 120, 0, 0};
  auto t0 = Clock::now();
  pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  if (pid < 0) return r;
  if (pid == 0) {
    ::execl(oppx.c_str(), oppx.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string seen;
  auto deadline = t0 + std::chrono::seconds(20);
  if (read_until(master, seen, "\xe2\x80\xba ", 0, deadline)) {  // "› "
    r.prompt_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    for (int i = 0; i < keys; ++i) {
      std::size_t from = seen.size();
      auto k0 = Clock::now();
      (void)!::write(master, "x", 1);
      if (!read_until(master, seen, "x", from, Clock::now() + std::chrono::seconds(5))) break;
      r.echo_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - k0).count());
    }
  }
  (void)!::write(master, "\x15\x04", 2);  // clear the line, then Ctrl-D
  auto end = Clock::now() + std::chrono::seconds(5);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    std::string rest;
    if (!read_until(master, rest, "\x01never", 0, std::min(end, Clock::now() + std::chrono::milliseconds(50))) &&
        Clock::now() >= end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
  }
  ::close(master);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 20, keys = 20, node_runs = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--keys") keys = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--node-runs") node_runs = std::max(1, std::atoi(argv[i + 1]));
  }
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const std::string dir = oppx::bench::self_dir();
  const std::string oppx = dir + "/oppx";
  oppx::bench::write_config(home, oppx::bench::echo_servers(5));  // five warm connectors
  oppx::bench::ModelServer model;
  if (!model.port()) {
    fmt::print(stderr, "chat_start: could not listen on 127.0.0.1\n");
    return 1;
  }
  ::setenv("OPPX_SERVER", fmt::format("http://127.0.0.1:{}/v1", model.port()).c_str(), 1);
  ::setenv("OPPX_MODEL", "m1", 1);
  if (::chdir(home.root().c_str()) != 0) return 1;
  if (int running = oppx::bench::running_connectors(oppx, home.socket()); running != 5) {
    fmt::print(stderr, "chat_start: {} of the 5 connectors started\n", running);
    return 1;
  }
  std::vector<double> prompt, echo;
  int failures = 0;
  for (int i = 0; i < runs + 2; ++i) {
    Run r = run_chat(oppx, i < 2 ? 1 : keys);
    if (r.prompt_ms < 0) {
      ++failures;
      continue;
    }
    if (i < 2) continue;  // warm-up
    prompt.push_back(r.prompt_ms);
    echo.insert(echo.end(), r.echo_ms.begin(), r.echo_ms.end());
  }
  oppx::bench::Stats node = oppx::bench::measure({"node", "-e", "0"}, node_runs);
  oppx::bench::run_ms({oppx, "daemon", "stop"});
  if (prompt.empty()) {
    fmt::print("chat_start: not measured: the chat never showed its prompt ({} failures)\n", failures);
    return 1;
  }
  auto p = oppx::bench::summarize(prompt), e = oppx::bench::summarize(echo);
  fmt::print("chat_start: oppx (the chat) in a pseudo-terminal with 5 warm connectors ({} runs, {} failures)\n",
             prompt.size(), failures);
  fmt::print("  start to the prompt        median {:7.2f} ms   p90 {:7.2f} ms   min {:7.2f} ms\n", p.median, p.p90,
             p.min);
  fmt::print("  key to its echo (idle)     median {:7.3f} ms   p90 {:7.3f} ms   ({} keys)\n", e.median, e.p90,
             echo.size());
  if (node.failures == node_runs) {
    fmt::print("  node -e 0                  not available\n");
  } else {
    fmt::print("  node -e 0 ({} runs)        median {:7.2f} ms\n", node_runs, node.median);
    fmt::print("  ratio prompt / node -e 0   {:.3f}\n", p.median / node.median);
  }
  fmt::print("  target: the prompt within 50 ms: {}\n", p.median <= 50.0 ? "met" : "NOT met");
  oppx::bench::report({"chat_start", "the chat: start to the prompt, 5 warm connectors", "ms", p, "node -e 0",
                       node.failures == node_runs ? 0 : node.median, "target <= 50 ms"});
  oppx::bench::report({"chat_start", "the chat: a key to its echo at the prompt", "ms", e, "", 0, ""});
  return 0;
}
