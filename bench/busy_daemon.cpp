// bench/busy_daemon: does one client's agent turn slow down another client's tools/call? The
// latency of tools/call echo (the C echo server) from one client, first on an idle oppxd (the
// baseline, in the same run), then while another client's agent turn runs in the same daemon:
// the scripted model server on a thread of this program streams its answers slowly, piece by
// piece, and the turn greps a tree of 20,000 files. The ratio of the two (target: within 1.2x).
// Prints figures; asserts nothing.
//   usage: busy_daemon [--calls N] [--turns T] [--files F] [--gap-us G] [--stream-gap-ms S]
// It runs its own daemon in a temporary HOME, so it never touches the user's.
#include "bench/bench_support.h"
#include "bench/model_server.h"

#include "common/sync_client.h"
#include "proto/agent_api.h"
#include "proto/mcp_api.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>

namespace {

using Clock = std::chrono::steady_clock;
using oppx::SyncClient;
using oppx::bench::ModelServer;
using oppx::bench::Stats;

constexpr double kTarget = 1.2;
constexpr const char* kPattern = "needle [0-9]+";

// What the agent's turn is doing when a call starts, as the model server sees it.
enum class Phase { kQuiet, kStreaming, kGrep };

// `count` text files of 16 lines in folders of 100 under `root`; one in 1,000 holds a needle.
bool make_tree(const std::string& root, int count) {
  if (::mkdir(root.c_str(), 0700) != 0) return false;
  for (int f = 0; f < count; ++f) {
    std::string dir = fmt::format("{}/d{:03}", root, f / 100);
    if (f % 100 == 0 && ::mkdir(dir.c_str(), 0700) != 0) return false;
    std::ofstream out(fmt::format("{}/f{:05}.txt", dir, f));
    for (int i = 0; i < 16; ++i) {
      out << fmt::format("line {} of file {}: lorem ipsum dolor sit amet, consectetur adipiscing elit\n", i, f);
    }
    if (f % 1000 == 999) out << fmt::format("needle {}\n", f);
    if (!out) return false;
  }
  return true;
}

// The model's answer as pieces of about `size` characters, as a server streams it.
std::vector<std::string> pieces_of(const std::string& content, std::size_t size) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < content.size(); at += size) out.push_back(content.substr(at, size));
  return out;
}

// The model's two answers to every turn: a grep action, then (once the grep's result is in the
// conversation) a reply of 200 words; both streamed one small piece every `gap`.
struct ScriptedTurns {
  std::chrono::milliseconds gap;
  std::atomic<Phase> phase{Phase::kQuiet};
  std::mutex m;
  Clock::time_point grep_from;
  std::vector<double> grep_ms;  // from the grep action's last piece to the next request

  ModelServer::Answer answer(const std::string& request) {
    bool after_grep = request.find("Result of grep") != std::string::npos ||
                      request.find("Failed: grep") != std::string::npos ||
                      request.find("grep was not done") != std::string::npos;
    phase = Phase::kStreaming;
    ModelServer::Answer a;
    a.gap = gap;
    if (!after_grep) {
      boost::json::object action{{"action", "grep"}, {"pattern", kPattern}, {"path", "."}};
      a.pieces = pieces_of(boost::json::serialize(action), 2);
      a.done = [this] {
        std::lock_guard<std::mutex> l(m);
        grep_from = Clock::now();
        phase = Phase::kGrep;
      };
      return a;
    }
    {
      std::lock_guard<std::mutex> l(m);
      grep_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - grep_from).count());
    }
    std::string text;
    for (int i = 0; i < 200; ++i) text += fmt::format("word{} ", i);
    boost::json::object reply{{"action", "reply"}, {"text", text}};
    a.pieces = pieces_of(boost::json::serialize(reply), 8);
    a.done = [this] { phase = Phase::kQuiet; };
    return a;
  }
};

// The client whose agent turns keep the daemon busy, on a thread of its own.
struct BusyClient {
  SyncClient client;
  boost::json::object open_params;
  std::atomic<bool> stop{false}, exited{false};
  std::atomic<int> turns{0}, text_events{0};
  std::mutex m;
  std::string problem;  // why the turns stopped before they were told to

  void fail(std::string why) {
    std::lock_guard<std::mutex> l(m);
    if (problem.empty()) problem = std::move(why);
  }
  // A new agent for every turn, so that each turn is the same (no conversation grows).
  void run() {
    client.on_notification([this](const std::string& method, const boost::json::value& params) {
      if (method == oppx::proto::kAgentEvent && params.is_object() && params.as_object().contains("kind") &&
          params.at("kind") == "text")
        ++text_events;
    });
    while (!stop) {
      auto opened = client.call(oppx::proto::kAgentOpen, open_params, std::chrono::seconds(30));
      if (!opened) {
        if (!stop) fail("agent/open: " + opened.error().message);
        break;
      }
      auto r = client.call(oppx::proto::kAgentTurn, boost::json::object{{"message", "find the needles"}},
                           std::chrono::seconds(120));
      if (stop) break;
      auto turn = oppx::proto::decode_reply<oppx::proto::AgentTurnResult>(r);
      if (!turn) {
        fail("agent/turn: " + turn.error());
        break;
      }
      if (turn->error) {
        fail("agent/turn: the model server failed: " + turn->error->message);
        break;
      }
      bool grep_ran = false;
      for (const auto& a : turn->actions) grep_ran = grep_ran || (a.name == "grep" && a.status == "ran");
      if (!grep_ran) {
        std::string seen;
        for (const auto& a : turn->actions) seen += fmt::format(" {} {} ({})", a.name, a.status, a.text.substr(0, 200));
        fail("the turn's grep did not run:" + (seen.empty() ? std::string(" no action") : seen));
        break;
      }
      ++turns;
    }
    exited = true;
  }
};

// One tools/call echo; its time in µs, or -1 when it failed.
double call_us(SyncClient& c) {
  static const boost::json::object params{
      {"connector", "echo"}, {"tool", "echo"}, {"arguments", boost::json::object{{"message", "hi"}}}};
  auto t0 = Clock::now();
  auto r = c.call(oppx::proto::kToolsCall, params, std::chrono::seconds(10));
  double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  if (!r || !r->is_object()) return -1;
  const auto* err = r->as_object().if_contains("isError");
  return err && err->is_bool() && err->as_bool() ? -1 : us;
}

void print_line(const char* what, const Stats& s, std::size_t n) {
  fmt::print("  {:<30} median {:8.1f} µs   p90 {:8.1f} µs   p99 {:8.1f} µs   ({} calls, failures {})\n", what, s.median,
             s.p90, s.p99, n, s.failures);
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 2000, min_turns = 2, files = 20'000, gap_us = 1000, stream_gap_ms = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--calls") calls = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--turns") min_turns = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--files") files = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--gap-us") gap_us = std::max(0, std::atoi(argv[i + 1]));
    if (a == "--stream-gap-ms") stream_gap_ms = std::max(0, std::atoi(argv[i + 1]));
  }
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const std::string oppx = oppx::bench::self_dir() + "/oppx";
  const std::string tree = home.root() + "/tree";
  if (!make_tree(tree, files)) {
    fmt::print(stderr, "busy_daemon: could not write {} files under {}\n", files, tree);
    return 1;
  }
  oppx::bench::write_config(home, oppx::bench::echo_servers(1));
  ScriptedTurns script{std::chrono::milliseconds(stream_gap_ms)};  // outlives the server's thread
  ModelServer model;
  if (!model.port()) {
    fmt::print(stderr, "busy_daemon: could not listen on 127.0.0.1\n");
    return 1;
  }
  model.script([&script](const std::string& request) { return script.answer(request); });
  ::setenv("OPPX_SERVER", fmt::format("http://127.0.0.1:{}/v1", model.port()).c_str(), 1);
  ::setenv("OPPX_MODEL", "m1", 1);
  if (::chdir(home.root().c_str()) != 0) return 1;
  if (int running = oppx::bench::running_connectors(oppx, home.socket()); running != 1) {
    fmt::print(stderr, "busy_daemon: the echo connector did not start\n");
    return 1;
  }
  auto caller = oppx::bench::daemon_client(home.socket(), "busy_daemon calls");
  auto busy_conn = oppx::bench::daemon_client(home.socket(), "busy_daemon agent");
  if (!caller || !busy_conn) {
    fmt::print(stderr, "busy_daemon: the daemon did not answer\n");
    return 1;
  }
  const auto gap = std::chrono::microseconds(gap_us);

  // (a) The idle daemon, after a warm-up.
  for (int i = 0; i < 200; ++i) call_us(*caller);
  std::vector<double> idle;
  int idle_failures = 0;
  for (int i = 0; i < calls; ++i) {
    if (double us = call_us(*caller); us < 0) {
      ++idle_failures;
    } else {
      idle.push_back(us);
    }
    std::this_thread::sleep_for(gap);
  }

  // (b) The same calls while the other client's turns run, until `calls` calls and `min_turns`
  // whole turns (each a slow stream, a grep over the tree and a slow stream again).
  BusyClient busy{std::move(*busy_conn), boost::json::object{{"cwd", tree}}};
  std::thread busy_thread([&busy] { busy.run(); });
  std::vector<double> during, streaming, grepping;
  int busy_failures = 0;
  auto until = Clock::now() + std::chrono::seconds(60);
  while (script.phase == Phase::kQuiet && !busy.exited && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto started = Clock::now();
  until = started + std::chrono::minutes(10);
  int text_before = busy.text_events;
  while (!busy.exited && Clock::now() < until && (static_cast<int>(during.size()) < calls || busy.turns < min_turns)) {
    Phase at = script.phase;
    double us = call_us(*caller);
    if (us < 0) {
      ++busy_failures;
    } else {
      during.push_back(us);
      if (at == Phase::kStreaming) streaming.push_back(us);
      if (at == Phase::kGrep) grepping.push_back(us);
    }
    std::this_thread::sleep_for(gap);
  }
  double busy_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  int turns = busy.turns, text_events = busy.text_events - text_before;
  busy.stop = true;
  while (!busy.exited) {
    busy.client.cancel_in_flight();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  busy_thread.join();
  oppx::bench::run_ms({oppx, "daemon", "stop"});

  fmt::print(
      "busy_daemon: tools/call echo from one client, one call every {} µs: on an idle oppxd, then while another "
      "client's agent turns stream slowly from the model ({} ms a piece) and grep {} files\n",
      gap_us, stream_gap_ms, files);
  auto a = oppx::bench::summarize(idle, idle_failures);
  print_line("idle daemon", a, idle.size());
  std::vector<double> grep_ms;
  {
    std::lock_guard<std::mutex> l(script.m);
    grep_ms = script.grep_ms;
  }
  if (during.empty() || turns == 0) {
    fmt::print("  during the agent's turns: not measured: {}\n", !busy.problem.empty() ? busy.problem
                                                                 : during.empty()
                                                                     ? std::string("no call was answered")
                                                                     : std::string("no turn ended in time"));
    return 1;
  }
  auto b = oppx::bench::summarize(during, busy_failures);
  print_line("during the agent's turns", b, during.size());
  if (!streaming.empty()) print_line("  while the model streams", oppx::bench::summarize(streaming), streaming.size());
  if (!grepping.empty()) print_line("  while the grep runs", oppx::bench::summarize(grepping), grepping.size());
  double ratio = b.median / a.median, ratio_p90 = b.p90 / a.p90;
  fmt::print("  ratio busy / idle              median {:.3f}   p90 {:.3f}\n", ratio, ratio_p90);
  fmt::print(
      "  the turns: {} in {:.1f} s, {} text events streamed; from the grep action to the next model request (the "
      "grep of {} files) median {:.0f} ms\n",
      turns, busy_seconds, text_events, files, oppx::bench::summarize(grep_ms).median);
  if (!busy.problem.empty()) fmt::print("  note: the turns stopped early: {}\n", busy.problem);
  fmt::print("  target: the median within {:.1f}x of the idle daemon's: {}\n", kTarget,
             ratio <= kTarget ? "met" : "NOT met");
  oppx::bench::report({"busy_daemon", "tools/call echo, idle daemon", "µs", a, "", 0, ""});
  oppx::bench::report({"busy_daemon",
                       fmt::format("tools/call echo while an agent turn streams and greps {} files", files), "µs", b,
                       "the idle daemon", a.median, fmt::format("target <= {:.1f}x", kTarget)});
  return 0;
}
