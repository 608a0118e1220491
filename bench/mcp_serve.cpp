// bench/mcp_serve: another MCP client (the official TypeScript SDK client, bench/sdk_client.mjs)
// using server-everything through `oppx mcp serve` against the same client spawning the server
// itself. Warm: echo calls one after the other on one connection. Cold: from spawning the server
// command (`oppx mcp serve`, whose daemon already runs the connector, or `node … stdio`) to the
// answer of the first call, tools/list included. Targets (issue 30): warm ≤ 1.2×, cold ≥ 10×
// faster. Warm, the same client also calls through bench_stdio_relay (a process that only copies
// bytes): the floor of any process between the two ends, so that oppx's own share shows.
// Prints figures; exits 1 only when something could not be measured.
//   usage: mcp_serve [--calls N] [--warmup W] [--cold-runs R] [--npm-dir DIR]
#include "bench/bench_support.h"
#include "bench/sdk_anchors.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include <unistd.h>

namespace {

using oppx::bench::SdkRun;

struct Options {
  int calls = 2000;
  int warmup = 200;
  int cold_runs = 10;
  std::string npm_dir = OPPX_NPM_DIR;
};

void line(std::string_view label, const SdkRun& r, std::string_view unit) {
  if (!r.ok()) return fmt::print("  {:<52} not measured: {}\n", label, r.error);
  double scale = unit == "ms" ? 1000.0 : 1.0;
  fmt::print("  {:<52} median {:>9.1f} {}  p90 {:>9.1f}  p99 {:>9.1f}  ({} {})\n", label, r.us.median / scale, unit,
             r.us.p90 / scale, r.us.p99 / scale, r.calls, unit == "ms" ? "runs" : "calls");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto num = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (a == "--calls")
      o.calls = num();
    else if (a == "--warmup")
      o.warmup = num();
    else if (a == "--cold-runs")
      o.cold_runs = num();
    else if (a == "--npm-dir" && i + 1 < argc)
      o.npm_dir = argv[++i];
    else {
      fmt::print(stderr, "usage: mcp_serve [--calls N] [--warmup W] [--cold-runs R] [--npm-dir DIR]\n");
      return 2;
    }
  }
  if (o.calls < 1 || o.cold_runs < 1) {
    fmt::print(stderr, "mcp_serve: --calls and --cold-runs take at least 1\n");
    return 2;
  }
  const std::string everything = o.npm_dir + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  if (::access(everything.c_str(), R_OK) != 0) {
    fmt::print(stderr, "mcp_serve: {} is missing: run packaging/bootstrap.sh\n", everything);
    return 1;
  }
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const std::string oppx = oppx::bench::self_dir() + "/oppx";
  const std::string script = std::string(OPPX_BENCH_DIR) + "/sdk_client.mjs";
  oppx::bench::write_config(
      home, boost::json::object{{"everything", {{"command", "node"}, {"args", {everything, "stdio"}}}}});
  if (oppx::bench::running_connectors(oppx, home.socket()) != 1) {
    fmt::print(stderr, "mcp_serve: the daemon did not run server-everything\n");
    return 1;
  }
  const std::string calls = std::to_string(o.calls), warmup = std::to_string(o.warmup);
  const std::string runs = std::to_string(o.cold_runs);
  const std::vector<std::string> direct{"--", "node", everything, "stdio"};
  const std::vector<std::string> served{"--", oppx, "mcp", "serve"};
  const std::vector<std::string> relayed{"--", oppx::bench::self_dir() + "/bench_stdio_relay", "node", everything,
                                         "stdio"};
  auto with = [](std::vector<std::string> head, const std::vector<std::string>& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };

  SdkRun warm_direct =
      oppx::bench::run_sdk_client(script, o.npm_dir, with({"--calls", calls, "--warmup", warmup}, direct));
  SdkRun warm_relayed =
      oppx::bench::run_sdk_client(script, o.npm_dir, with({"--calls", calls, "--warmup", warmup}, relayed));
  SdkRun warm_served = oppx::bench::run_sdk_client(
      script, o.npm_dir, with({"--calls", calls, "--warmup", warmup, "--tool", "everything__echo"}, served));
  SdkRun cold_direct = oppx::bench::run_sdk_client(script, o.npm_dir, with({"--cold", runs}, direct));
  SdkRun cold_served =
      oppx::bench::run_sdk_client(script, o.npm_dir, with({"--cold", runs, "--tool", "everything__echo"}, served));
  oppx::bench::run_ms({oppx, "--socket", home.socket(), "daemon", "stop"});

  fmt::print("warm: the TypeScript SDK client calling echo on one connection, one call at a time\n");
  line("straight to server-everything (stdio)", warm_direct, "us");
  line("through a process that only copies bytes (the floor)", warm_relayed, "us");
  line("through oppx mcp serve and oppxd", warm_served, "us");
  fmt::print("cold: spawn the server command, initialize, tools/list, the first call\n");
  line("spawning server-everything (stdio)", cold_direct, "ms");
  line("spawning oppx mcp serve (the daemon runs it warm)", cold_served, "ms");

  bool measured = warm_direct.ok() && warm_relayed.ok() && warm_served.ok() && cold_direct.ok() && cold_served.ok();
  if (!measured) return 1;
  double warm_ratio = warm_served.us.median / warm_direct.us.median;
  double cold_ratio = cold_direct.us.median / cold_served.us.median;
  fmt::print("warm: through oppx / straight = {:.2f}x (target at most 1.2x: {})\n", warm_ratio,
             warm_ratio <= 1.2 ? "met" : "missed");
  double floor_ratio = warm_relayed.us.median / warm_direct.us.median;
  fmt::print("warm: through the byte relay / straight = {:.2f}x (any process between the two ends costs this)\n",
             floor_ratio);
  fmt::print("cold: straight / through oppx = {:.1f}x faster (target at least 10x: {})\n", cold_ratio,
             cold_ratio >= 10 ? "met" : "missed");
  oppx::bench::report(
      {"mcp_serve", "warm: SDK client → oppx mcp serve → oppxd → server-everything, echo", "us", warm_served.us,
       "the same client straight to server-everything", warm_direct.us.median,
       fmt::format("{:.2f}x; target ≤ 1.2x; the floor of a byte relay: {:.2f}x", warm_ratio, floor_ratio)});
  oppx::bench::report({"mcp_serve", "warm: the same through a process that only copies bytes (floor)", "us",
                       warm_relayed.us, "the same client straight to server-everything", warm_direct.us.median,
                       fmt::format("{:.2f}x: what any process between the two ends costs", floor_ratio)});
  auto ms = [](oppx::bench::Stats s) {
    for (double* v : {&s.median, &s.p90, &s.p99, &s.min}) *v /= 1000.0;
    return s;
  };
  oppx::bench::report({"mcp_serve", "cold: spawn oppx mcp serve to the first call's answer", "ms", ms(cold_served.us),
                       "spawning server-everything to its first call's answer", cold_direct.us.median / 1000.0,
                       fmt::format("{:.1f}x faster; target ≥ 10x", cold_ratio)});
  return 0;
}
