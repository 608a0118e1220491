// oppx demo: a short tour that needs no model. It starts the daemon (or finds it), shows the
// handshake and the status, times a few round trips, and says what to try next.
#include "cli/commands.h"
#include "cli/daemon_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace oppx::cli {

namespace json = boost::json;

namespace {

int demo(Context& ctx) {
  if (!ctx.args.empty()) return usage_error(*find_command("", "demo"), "unexpected argument " + ctx.args[0]);
  fmt::print("oppx demo: the daemon, its socket and the CLI\n\n");

  auto t0 = std::chrono::steady_clock::now();
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  auto connect_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("1. oppxd {} (build {}, pid {}) {} in {:.1f} ms on\n   {}\n\n", conn->hello.version, conn->hello.build,
             conn->hello.pid, conn->started ? "started" : "was already running; reached", connect_ms, ctx.socket);

  std::vector<double> times;
  json::value last;
  for (int i = 0; i < 20; ++i) {
    auto s = std::chrono::steady_clock::now();
    auto r = conn->client.call("daemon/status", json::object{}, kCallTimeout);
    if (!r) {
      fmt::print(stderr, "oppx: daemon/status failed: {}\n", r.error().message);
      return kExitFailed;
    }
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
    last = *r;
  }
  std::sort(times.begin(), times.end());
  auto st = proto::decode_status_result(last);
  if (!st) {
    fmt::print(stderr, "oppx: malformed status: {}\n", st.error());
    return kExitFailed;
  }
  fmt::print("2. daemon/status over the socket: median {:.0f} µs over {} calls\n", times[times.size() / 2],
             times.size());
  fmt::print("   uptime {:.1f} s, {} client(s) connected, {} connector(s) configured\n", st->uptime_ms / 1000.0,
             st->clients, st->connectors);
  fmt::print("   log: {}\n\n", st->log);
  fmt::print(
      "3. What exists so far: the daemon (one per user and socket, reachable only by your uid),\n"
      "   its JSON-RPC socket API (docs/protocol.md) and `oppx daemon …`. Connectors and the\n"
      "   headless browser come next.\n\n"
      "The CLI is ready. Try:\n"
      "  {0} daemon status\n"
      "  {0} daemon logs -n 5\n"
      "  {0} help\n",
      ctx.self);
  return kExitOk;
}

}  // namespace

std::vector<Command> demo_commands() {
  return {{"", "demo", "", "A short tour: start the daemon, talk to it, show what it reports.", "", demo}};
}

}  // namespace oppx::cli
