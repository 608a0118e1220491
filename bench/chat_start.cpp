// bench/chat_start: how soon the terminal chat is ready, with 5 warm connectors: the time from
// starting `oppx` in a pseudo-terminal to its prompt, and from a key written to the terminal to
// its echo at the prompt. Then the start again with a sixth connector whose start hangs (a
// program that never answers initialize, added with `oppx mcp add`): the prompt must not wait
// for it. Beside them, `node -e 0` in the same run, and the ratios. A small model server runs on
// a thread of this program. Prints figures; asserts nothing.
//   usage: chat_start [--runs N] [--keys K] [--node-runs M]
// It runs its own daemon in a temporary HOME, so it never touches the user's.
#include "bench/bench_support.h"
#include "bench/model_server.h"
#include "proto/mcp_api.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

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

// `runs` starts of the chat after 2 of warm-up: the prompt's times and the keys' echoes.
struct Series {
  std::vector<double> prompt, echo;
  int failures = 0;
};

Series run_series(const std::string& oppx, int runs, int keys) {
  Series s;
  for (int i = 0; i < runs + 2; ++i) {
    Run r = run_chat(oppx, i < 2 ? 1 : keys);
    if (r.prompt_ms < 0) {
      ++s.failures;
      continue;
    }
    if (i < 2) continue;  // warm-up
    s.prompt.push_back(r.prompt_ms);
    s.echo.insert(s.echo.end(), r.echo_ms.begin(), r.echo_ms.end());
  }
  return s;
}

// The state the daemon gives connector `name` now ("" when it lists none of that name).
std::string connector_state(oppx::SyncClient& c, const std::string& name) {
  auto r = c.call(oppx::proto::kMcpList, boost::json::object{}, std::chrono::seconds(5));
  if (!r || !r->is_object() || !r->as_object().contains("connectors")) return "";
  for (const auto& conn : r->at("connectors").as_array()) {
    const auto* n = conn.as_object().if_contains("name");
    const auto* state = conn.as_object().if_contains("state");
    if (n && state && n->is_string() && state->is_string() && n->as_string() == name) {
      return std::string(state->as_string());
    }
  }
  return "";
}

// `oppx mcp add hang -- sleep 3600`, left running: its answer waits until the start ends, which
// OPPX_MCP_START_TIMEOUT_MS (in the environment it sends) puts an hour away. Its pid, or -1.
pid_t add_hanging(const std::string& oppx) {
  ::setenv("OPPX_MCP_START_TIMEOUT_MS", "3600000", 1);
  std::vector<std::string> args{oppx, "mcp", "add", "hang", "--", "sleep", "3600"};
  std::vector<char*> argv = oppx::bench::c_argv(args);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
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
  Series warm = run_series(oppx, runs, keys);

  // The sixth connector, whose start hangs through the whole second series.
  Series hung;
  std::string hang_before, hang_after;
  pid_t adder = add_hanging(oppx);
  auto watch = oppx::bench::daemon_client(home.socket(), "chat_start");
  if (adder > 0 && watch) {
    for (auto until = Clock::now() + std::chrono::seconds(10);
         (hang_before = connector_state(*watch, "hang")) != "starting" && Clock::now() < until;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (hang_before == "starting") {
      hung = run_series(oppx, runs, 1);
      hang_after = connector_state(*watch, "hang");
    }
  }
  if (adder > 0) {
    ::kill(adder, SIGTERM);
    ::waitpid(adder, nullptr, 0);
  }

  oppx::bench::Stats node = oppx::bench::measure({"node", "-e", "0"}, node_runs);
  oppx::bench::run_ms({oppx, "daemon", "stop"});
  if (warm.prompt.empty()) {
    fmt::print("chat_start: not measured: the chat never showed its prompt ({} failures)\n", warm.failures);
    return 1;
  }
  auto p = oppx::bench::summarize(warm.prompt), e = oppx::bench::summarize(warm.echo);
  fmt::print("chat_start: oppx (the chat) in a pseudo-terminal with 5 warm connectors ({} runs, {} failures)\n",
             warm.prompt.size(), warm.failures);
  fmt::print("  start to the prompt        median {:7.2f} ms   p90 {:7.2f} ms   min {:7.2f} ms\n", p.median, p.p90,
             p.min);
  fmt::print("  key to its echo (idle)     median {:7.3f} ms   p90 {:7.3f} ms   ({} keys)\n", e.median, e.p90,
             warm.echo.size());
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

  fmt::print("chat_start: the same with a 6th connector whose start hangs (it never answers initialize)\n");
  if (hung.prompt.empty()) {
    fmt::print("  not measured: {}\n",
               adder <= 0 || !watch ? "oppx mcp add could not be run"
               : hang_before != "starting"
                   ? fmt::format("the connector was not starting (its state: \"{}\")", hang_before)
                   : fmt::format("the chat never showed its prompt ({} failures)", hung.failures));
    return 1;
  }
  auto h = oppx::bench::summarize(hung.prompt, hung.failures);
  double ratio = h.median / p.median;
  fmt::print(
      "  start to the prompt        median {:7.2f} ms   p90 {:7.2f} ms   min {:7.2f} ms   ({} runs, failures {})\n",
      h.median, h.p90, h.min, hung.prompt.size(), hung.failures);
  fmt::print("  without it (above)         median {:7.2f} ms\n", p.median);
  fmt::print("  ratio with / without       {:.3f}\n", ratio);
  if (hang_after != "starting") {
    fmt::print("  note: the connector was \"{}\" by the end of the series, not starting\n", hang_after);
  }
  // "The same, within noise": a start that waited for the connector would wait for its start
  // timeout (here an hour), not for a tenth of the prompt's time.
  fmt::print("  target: the same as without it (within 10 %): {}\n", ratio <= 1.10 ? "met" : "NOT met");
  oppx::bench::report({"chat_start", "the chat: start to the prompt, 5 warm connectors and 1 whose start hangs", "ms",
                       h, "the same without it", p.median, "target: the same, within noise"});
  return 0;
}
