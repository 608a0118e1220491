// bench/lazy_start: the first turn of a fresh daemon with 10 connectors (server-everything, the
// reference server, each a Node process of its own), all started with the daemon against all lazy
// (config.json "lazy_connectors"), in alternating rounds: the time from `oppx -p` (which starts
// the daemon) to the model server's first chat completion, how many connector tools that first
// request offers, and how many processes the daemon had started by then. The tool lists are cached
// by a first run. Prints figures; exits 1 only when something could not be measured.
//   usage: lazy_start [--rounds N] [--npm-dir DIR]
#include "bench/bench_support.h"
#include "bench/model_server.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace json = boost::json;
using oppx::bench::Clock;
using oppx::bench::ModelServer;

constexpr int kConnectors = 10;

struct FirstTurn {
  double first_completion_ms = -1;
  std::int64_t tools = 0;     // connector tools in the first request's action enum
  std::int64_t children = 0;  // processes the daemon had started once the turn ended (daemon/status children)
};

struct Seen {
  std::mutex m;
  std::vector<std::pair<Clock::time_point, json::object>> completions;
};

std::int64_t connector_tools(const json::object& body) {
  const json::value* e = body.if_contains("response_format");
  if (!e) return 0;
  std::int64_t n = 0;
  for (const auto& a : e->at("json_schema").at("schema").at("properties").at("action").at("enum").as_array())
    n += a.as_string().find('.') != json::string::npos;
  return n;
}

FirstTurn first_turn(Seen& seen, const oppx::bench::BenchHome& home, const std::string& oppx, bool lazy) {
  // Every tool listed, so that the action enum counts what the first turn offers.
  std::ofstream(home.root() + "/config/oppx/config.json")
      << (lazy ? R"({"lazy_connectors": true, "tool_search": "never"})" : R"({"tool_search": "never"})");
  {
    std::lock_guard<std::mutex> l(seen.m);
    seen.completions.clear();
  }
  FirstTurn t;
  auto t0 = Clock::now();
  if (oppx::bench::run_ms({oppx, "-p", "hi"}) < 0) return t;
  if (auto c = oppx::bench::daemon_client(home.socket(), "lazy_start")) {
    if (auto s = c->call("daemon/status", json::object{}, std::chrono::seconds(5)))
      t.children = s->at("children").as_int64();
  }
  oppx::bench::run_ms({oppx, "daemon", "stop"});
  std::lock_guard<std::mutex> l(seen.m);
  if (seen.completions.empty()) return t;
  t.first_completion_ms = std::chrono::duration<double, std::milli>(seen.completions.front().first - t0).count();
  t.tools = connector_tools(seen.completions.front().second);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 10;
  std::string npm_dir = std::string(OPPX_NPM_DIR);
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--npm-dir") npm_dir = argv[i + 1];
  }
  if (!npm_dir.empty() && npm_dir[0] != '/') npm_dir = std::string(::getcwd(nullptr, 0)) + "/" + npm_dir;
  const std::string everything = npm_dir + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  if (::access(everything.c_str(), R_OK) != 0) {
    fmt::print("lazy_start: not measured: {} is missing (packaging/bootstrap.sh installs it)\n", everything);
    return 1;
  }
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const std::string oppx = oppx::bench::self_dir() + "/oppx";
  json::object servers;
  for (int i = 1; i <= kConnectors; ++i)
    servers["everything" + std::to_string(i)] = json::object{{"command", "node"}, {"args", {everything, "stdio"}}};
  oppx::bench::write_config(home, servers);
  Seen seen;
  ModelServer model;
  if (!model.port()) return 1;
  model.script([&seen](const std::string& request) {
    auto at = request.find("\r\n\r\n");
    boost::system::error_code ec;
    json::value body = json::parse(request.substr(at == std::string::npos ? 0 : at + 4), ec);
    std::lock_guard<std::mutex> l(seen.m);
    seen.completions.emplace_back(Clock::now(), ec || !body.is_object() ? json::object{} : body.as_object());
    return ModelServer::Answer{{R"({"action":"reply","text":"ok"})"}, {}, {}};
  });
  ::setenv("OPPX_SERVER", fmt::format("http://127.0.0.1:{}/v1", model.port()).c_str(), 1);
  ::setenv("OPPX_MODEL", "m1", 1);
  ::chdir(home.root().c_str());
  // The first run caches every connector's tools.
  int running = oppx::bench::running_connectors(oppx, home.socket());
  oppx::bench::run_ms({oppx, "daemon", "stop"});
  if (running != kConnectors) {
    fmt::print("lazy_start: not measured: {} of the {} connectors started\n", running, kConnectors);
    return 1;
  }
  std::vector<double> eager_ms, lazy_ms;
  std::vector<double> eager_tools, lazy_tools, eager_children, lazy_children;
  int failures = 0;
  for (int r = 0; r < rounds; ++r) {
    for (bool lazy : {false, true}) {
      FirstTurn t = first_turn(seen, home, oppx, lazy);
      if (t.first_completion_ms < 0) {
        ++failures;
        continue;
      }
      (lazy ? lazy_ms : eager_ms).push_back(t.first_completion_ms);
      (lazy ? lazy_tools : eager_tools).push_back(static_cast<double>(t.tools));
      (lazy ? lazy_children : eager_children).push_back(static_cast<double>(t.children));
    }
  }
  if (eager_ms.empty() || lazy_ms.empty()) {
    fmt::print("lazy_start: not measured ({} failures)\n", failures);
    return 1;
  }
  auto e = oppx::bench::summarize(eager_ms), l = oppx::bench::summarize(lazy_ms);
  auto et = oppx::bench::summarize(eager_tools), lt = oppx::bench::summarize(lazy_tools);
  auto ec = oppx::bench::summarize(eager_children), lc = oppx::bench::summarize(lazy_children);
  fmt::print("lazy_start: a fresh daemon's first turn with {} server-everything connectors ({} rounds, {} failures)\n",
             kConnectors, rounds, failures);
  fmt::print(
      "  all started:  first completion median {:7.1f} ms  p90 {:7.1f} ms   tools offered {:4.0f}   processes "
      "{:3.0f}\n",
      e.median, e.p90, et.median, ec.median);
  fmt::print(
      "  all lazy:     first completion median {:7.1f} ms  p90 {:7.1f} ms   tools offered {:4.0f}   processes "
      "{:3.0f}\n",
      l.median, l.p90, lt.median, lc.median);
  fmt::print("  ratio lazy / started: {:.2f}\n", l.median / e.median);
  oppx::bench::report({"lazy_start", "first turn, 10 connectors, all lazy", "ms", l, "all started", e.median,
                       fmt::format("tools offered {:.0f} vs {:.0f}", lt.median, et.median)});
  return 0;
}
