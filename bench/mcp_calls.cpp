// bench/mcp_calls: what a tools/call costs through oppxd, beside the floor of the same hops
// without oppxd's logic (client → Unix socket → a byte relay → pipe → the same C echo child) and
// beside the official TypeScript SDK client calling the same servers directly, all in one run:
// warm over stdio one at a time and K in flight (the C echo server), warm over streamable HTTP
// (server-everything), and cold (server-everything over stdio: the SDK client spawning it to its
// first call, beside oppxd's mcp/reconnect of it to its first call), and in process (the SDK
// client and server-everything's server in one node, linked in memory: the SDK's own cost, beside
// oppxd → server-everything over stdio); then `oppx mcp list --json`
// with 5 warm connectors and the daemon's RSS idle and with 20 connectors. Prints figures and the
// ratios to the targets of issue 3 and asserts none of them; a measurement that failed prints its
// error instead of figures, and the run then exits 1.
//   usage: mcp_calls [--calls N] [--inflight K] [--warmup W] [--rounds R] [--list-runs M]
//                    [--connectors C] [--sdk-calls S] [--http-calls H] [--cold-runs U]
//                    [--npm-dir DIR]   (DIR may be relative)
// It runs its own daemon in a temporary HOME with its own socket, so it never touches the user's.
#include "bench/bench_support.h"
#include "bench/relay.h"
#include "bench/sdk_anchors.h"
#include "common/sync_client.h"
#include "proto/daemon_api.h"
#include "proto/mcp_api.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

namespace json = boost::json;
using oppx::SyncClient;
using oppx::bench::Stats;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Options {
  int calls = 2000;
  int inflight = 8;
  int warmup = 200;
  int list_runs = 50;
  int connectors = 20;
  int sdk_calls = -1;    // as many as --calls
  int http_calls = 300;  // over HTTP, per series: a call costs ~10× one over stdio
  int cold_runs = 5;
  int rounds = 10;
  std::string npm_dir = OPPX_NPM_DIR;
};

using MakeRequest = std::function<std::string(std::int64_t id)>;
using CheckReply = std::function<std::string(const json::object& reply)>;  // empty when it is right

// Where calls go: a connected client, the request line it sends, the check of a reply, and whose
// CPU time is counted (oppxd's, or the relay's).
struct Target {
  SyncClient* client = nullptr;
  MakeRequest request;
  CheckReply check;
  pid_t pid = 0;
};

// One series of calls with `inflight` of them outstanding at every moment (1: sequential),
// measured in rounds: the rounds of all series alternate, so that load from elsewhere on the
// machine falls on every series alike instead of on whichever ran at a bad moment.
struct Series {
  Target* target = nullptr;
  int inflight = 1;
  int calls = 0;            // in all its rounds
  int warmup = 0;           // calls before the first round, not timed
  std::vector<double> lat;  // µs, of each call
  double seconds = 0;
  double cpu_ns = 0;
  bool cpu_known = true;
  int errors = 0;
  std::string first_error;

  bool ran() const { return !lat.empty(); }
  bool ok() const { return ran() && errors == 0; }  // only then are its figures shown and compared
  Stats us() const { return oppx::bench::summarize(lat); }
  double calls_per_s() const { return seconds > 0 ? lat.size() / seconds : 0; }
  double cpu_us() const { return cpu_known && ran() ? cpu_ns / 1000.0 / lat.size() : -1; }
};

// The CPU time a process has used, in ns: /proc/<pid>/schedstat is finer than the clock ticks of
// /proc/<pid>/stat. -1 when it cannot be read.
double cpu_ns(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/schedstat", pid));
  double ns = -1;
  return f >> ns ? ns : -1;
}

// Makes `calls` calls; with `record`, adds their latencies, time and CPU time to the series.
void drive(Series& s, int calls, bool record) {
  Target& t = *s.target;
  SyncClient& c = *t.client;
  std::vector<Clock::time_point> sent(static_cast<std::size_t>(calls));
  const std::int64_t base = 1'000'000;  // clear of the ids SyncClient::call uses
  int issued = 0, done = 0;
  auto send_one = [&] {
    sent[static_cast<std::size_t>(issued)] = Clock::now();
    if (!c.write_raw(t.request(base + issued))) return false;
    ++issued;
    return true;
  };
  double cpu_before = t.pid > 0 ? cpu_ns(t.pid) : -1;
  auto t0 = Clock::now();
  while (issued < std::min(s.inflight, calls)) {
    if (!send_one()) break;
  }
  while (done < issued) {
    auto line = c.read_line(30s);
    if (!line) {
      if (s.errors == 0) s.first_error = "no reply within 30 s or the connection closed";
      s.errors += issued - done;
      break;
    }
    auto now = Clock::now();
    boost::system::error_code ec;
    json::value v = json::parse(*line, ec);
    if (ec || !v.is_object()) continue;
    const json::object& o = v.as_object();
    const json::value* id = o.if_contains("id");
    if (!id || !id->is_int64()) continue;  // a notification
    std::int64_t i = id->as_int64() - base;
    if (i < 0 || i >= issued) continue;
    if (record)
      s.lat.push_back(std::chrono::duration<double, std::micro>(now - sent[static_cast<std::size_t>(i)]).count());
    ++done;
    if (std::string why = t.check(o); !why.empty()) {
      if (s.errors++ == 0) s.first_error = why;
    }
    if (issued < calls && !send_one()) {
      if (s.errors == 0) s.first_error = "the connection closed";
      break;
    }
  }
  if (!record) return;
  s.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  double cpu_after = t.pid > 0 ? cpu_ns(t.pid) : -1;
  if (cpu_before < 0 || cpu_after < 0) {
    s.cpu_known = false;
  } else {
    s.cpu_ns += cpu_after - cpu_before;
  }
}

const std::string kMessage = "hello";
const std::string kEchoed = "Echo: " + kMessage;

// oppxd's tools/call reply: {"result":{"text":…,"isError":false,…}}.
std::string check_daemon_reply(const json::object& r) {
  if (const json::value* e = r.if_contains("error")) return "error: " + json::serialize(*e);
  const json::value* res = r.if_contains("result");
  if (!res || !res->is_object() || res->as_object().if_contains("text") == nullptr ||
      res->as_object().at("text") != json::value(kEchoed))
    return "unexpected reply: " + json::serialize(r);
  return "";
}

// A server's own reply: {"result":{"content":[{"type":"text","text":…}]}}.
std::string check_mcp_reply(const json::object& r) {
  try {
    if (r.at("result").at("content").at(0).at("text") == json::value(kEchoed)) return "";
  } catch (const std::exception&) {
  }
  return "unexpected reply: " + json::serialize(r);
}

// mcp/list with wait: returns once no connector is starting; false unless all are running.
bool settle(SyncClient& c, std::size_t expected, std::string* why) {
  auto r = c.call(oppx::proto::kMcpList, json::object{{"wait", true}}, 60s);
  if (!r) {
    *why = r.error().message;
    return false;
  }
  const json::array& list = r->at("connectors").as_array();
  std::size_t running = 0;
  for (auto& e : list) {
    if (e.at("state") == json::value("running")) {
      ++running;
    } else if (why->empty()) {
      *why = fmt::format("{} is {}: {}", std::string(e.at("name").as_string()), std::string(e.at("state").as_string()),
                         e.as_object().contains("reason") ? std::string(e.at("reason").as_string()) : "");
    }
  }
  return running == expected && list.size() == expected;
}

long daemon_rss(SyncClient& c) {
  auto r = c.call(oppx::proto::kDaemonStatus, json::object{}, 5s);
  return r ? static_cast<long>(r->at("rss_kib").to_number<std::int64_t>()) : -1;
}

pid_t daemon_pid(SyncClient& c) {
  auto r = c.call(oppx::proto::kDaemonStatus, json::object{}, 5s);
  return r ? static_cast<pid_t>(r->at("pid").to_number<std::int64_t>()) : 0;
}

std::string daemon_request(const std::string& connector, std::int64_t id) {
  return fmt::format(
      R"({{"jsonrpc":"2.0","id":{},"method":"{}","params":{{"connector":"{}","tool":"echo","arguments":{{"message":"{}"}}}}}})"
      "\n",
      id, oppx::proto::kToolsCall, connector, kMessage);
}

std::string mcp_request(std::int64_t id) {
  return fmt::format(
      R"({{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{}"}}}}}})"
      "\n",
      id, kMessage);
}

// A series with errors shows them and no figures: timings of calls that failed mean nothing.
// Returns whether it was measured without errors.
bool print_series(std::string_view label, const Series& s) {
  if (!s.ran() && s.errors == 0) {
    fmt::print("  {:<48} not measured: {}\n", label, s.first_error);
  } else if (s.errors) {
    fmt::print("  {:<48} FAILED: {} of its calls failed, the first with: {}\n", label, s.errors, s.first_error);
  } else {
    Stats us = s.us();
    fmt::print("  {:<48} {:8.1f} {:9.1f} {:10.0f}", label, us.median, us.p99, s.calls_per_s());
    if (s.cpu_us() >= 0) fmt::print(" {:10.1f}", s.cpu_us());
    fmt::print("\n");
  }
  return s.ok();
}

// The line of a ratio whose series did not both measure: no figure and no verdict.
void print_no_ratio(std::string_view what) {
  fmt::print("  {:<37} not computed: a series it needs failed or was not measured (above)\n", what);
}

const char* verdict(bool met) { return met ? "met" : "NOT met"; }

int parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      fmt::print(
          "usage: mcp_calls [--calls N] [--inflight K] [--warmup W] [--rounds R] [--list-runs M]\n"
          "                 [--connectors C] [--sdk-calls S] [--http-calls H] [--cold-runs U]\n"
          "                 [--npm-dir DIR]\n"
          "Times tools/call echo through a private oppxd against a C echo server and server-everything\n"
          "(stdio and streamable HTTP, warm and cold), beside a raw relay floor and the TypeScript SDK\n"
          "client doing the same; prints figures and ratios. A relative DIR is taken from the current\n"
          "folder. Exits 1 when a measurement failed (its error is shown).\n");
      return 0;
    }
    if (i + 1 >= argc) {
      fmt::print(stderr, "mcp_calls: {} needs a value (see --help)\n", a);
      return 2;
    }
    std::string v = argv[++i];
    auto num = [&v] { return std::max(1, std::atoi(v.c_str())); };
    if (a == "--calls") {
      o.calls = num();
    } else if (a == "--inflight") {
      o.inflight = num();
    } else if (a == "--warmup") {
      o.warmup = num();
    } else if (a == "--list-runs") {
      o.list_runs = num();
    } else if (a == "--connectors") {
      o.connectors = num();
    } else if (a == "--rounds") {
      o.rounds = num();
    } else if (a == "--sdk-calls") {
      o.sdk_calls = num();
    } else if (a == "--http-calls") {
      o.http_calls = num();
    } else if (a == "--cold-runs") {
      o.cold_runs = num();
    } else if (a == "--npm-dir") {
      // Made absolute here: the connectors that load from it run in another folder.
      o.npm_dir = std::filesystem::absolute(v).lexically_normal().string();
    } else {
      fmt::print(stderr, "mcp_calls: unknown option {} (see --help)\n", a);
      return 2;
    }
  }
  if (o.sdk_calls < 0) o.sdk_calls = o.calls;
  o.rounds = std::min(o.rounds, o.calls);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_args(argc, argv, o); rc >= 0) return rc;
  std::signal(SIGPIPE, SIG_IGN);  // a peer that goes away is a failed write, not the end of the run
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const std::string dir = oppx::bench::self_dir();
  const std::string oppx = dir + "/oppx", echo = dir + "/bench_echo_server";
  const std::string everything = o.npm_dir + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  const std::string sdk_script = std::string(OPPX_BENCH_DIR) + "/sdk_client.mjs";

  if (oppx::bench::run_ms({oppx, "daemon", "start"}) < 0) {
    fmt::print(stderr, "mcp_calls: could not start the daemon with {}\n", oppx);
    return 1;
  }
  // However the run ends, its daemon (and so its connectors) ends with it.
  struct StopDaemon {
    std::string oppx;
    ~StopDaemon() { oppx::bench::run_ms({oppx, "daemon", "stop"}); }
  } stop_daemon{oppx};
  auto client = oppx::bench::daemon_client(home.socket(), "mcp_calls");
  if (!client) {
    fmt::print(stderr, "mcp_calls: cannot talk to the daemon on {}\n", home.socket());
    return 1;
  }
  SyncClient& c = *client;
  std::string why;

  // (6) RSS: idle, then with `connectors` C echo connectors running (children are other processes).
  long rss_idle = daemon_rss(c);
  oppx::bench::write_config(home, oppx::bench::echo_servers(o.connectors));
  bool all_up = settle(c, static_cast<std::size_t>(o.connectors), &why);
  long rss_many = daemon_rss(c);
  std::string many_why = why;
  if (!all_up) fmt::print(stderr, "mcp_calls: not all {} connectors started: {}\n", o.connectors, why);

  // (5) oppx mcp list --json with 5 warm connectors (the other ones are stopped by the edit).
  oppx::bench::write_config(home, oppx::bench::echo_servers(5));
  why.clear();
  settle(c, 5, &why);
  oppx::bench::measure({oppx, "mcp", "list", "--json"}, 5);  // page cache
  Stats list = oppx::bench::measure({oppx, "mcp", "list", "--json"}, o.list_runs);
  // What starting the CLI costs before it talks to the daemon: the part of the list time that is
  // not the daemon's.
  Stats start_only = oppx::bench::measure({oppx, "--version"}, o.list_runs);

  // (1), (2): the C echo server and server-everything (over stdio and over streamable HTTP),
  // warm, through oppxd; (3) the floor: the same hops without oppxd, to the same C server.
  // Warm-up first, then the rounds alternate.
  json::object servers = oppx::bench::echo_servers(1);
  bool have_everything = ::access(everything.c_str(), R_OK) == 0;
  const std::string missing = everything + " is missing: run packaging/bootstrap.sh";
  oppx::bench::HttpServer http_server;
  std::string http_error = missing;
  if (have_everything) {
    servers["everything"] = json::object{{"command", "node"}, {"args", json::array{everything, "stdio"}}};
    http_error = http_server.start({"node", everything, "streamableHttp"});
    if (http_error.empty()) servers["everything-http"] = json::object{{"type", "http"}, {"url", http_server.url()}};
  }
  oppx::bench::write_config(home, servers);
  why.clear();
  if (!settle(c, servers.size(), &why)) fmt::print(stderr, "mcp_calls: a connector did not start: {}\n", why);
  auto via = [](std::string name) { return [name](std::int64_t id) { return daemon_request(name, id); }; };
  const pid_t pid = daemon_pid(c);
  Target to_echo{&c, via("echo"), check_daemon_reply, pid};
  Target to_everything{&c, via("everything"), check_daemon_reply, pid};
  Target to_http{&c, via("everything-http"), check_daemon_reply, pid};
  oppx::bench::Relay relay;
  std::optional<SyncClient> floor_client;
  std::string floor_error = relay.start(home.root() + "/run/floor.sock", {echo});
  if (floor_error.empty()) {
    auto fc = SyncClient::connect(home.root() + "/run/floor.sock");
    if (fc) {
      floor_client.emplace(std::move(*fc));
    } else {
      floor_error = fc.error().message;
    }
  }
  Target to_floor{floor_client ? &*floor_client : nullptr, mcp_request, check_mcp_reply, relay.pid()};
  const int http_warmup = std::max(1, o.warmup / 4);
  Series floor_seq{&to_floor, 1, o.calls, o.warmup}, floor_par{&to_floor, o.inflight, o.calls, o.warmup};
  Series echo_seq{&to_echo, 1, o.calls, o.warmup}, echo_par{&to_echo, o.inflight, o.calls, o.warmup};
  Series every_seq{&to_everything, 1, o.calls, o.warmup}, every_par{&to_everything, o.inflight, o.calls, o.warmup};
  Series http_seq{&to_http, 1, o.http_calls, http_warmup};
  std::vector<Series*> all;
  if (floor_client) {
    all.insert(all.end(), {&floor_seq, &floor_par});
  } else {
    floor_seq.first_error = floor_par.first_error = floor_error;
  }
  all.insert(all.end(), {&echo_seq, &echo_par});
  if (have_everything) {
    all.insert(all.end(), {&every_seq, &every_par});
  } else {
    every_seq.first_error = every_par.first_error = missing;
  }
  if (http_error.empty()) {
    all.push_back(&http_seq);
  } else {
    http_seq.first_error = http_error;
  }
  for (Series* s : all) drive(*s, s->warmup, false);
  for (int r = 0; r < o.rounds; ++r) {
    for (Series* s : all) drive(*s, s->calls / o.rounds + (r < s->calls % o.rounds ? 1 : 0), true);
  }
  long rss_after = daemon_rss(c);

  // (4) The official TypeScript SDK client calling the same servers directly, in node: the C
  // server over stdio one call at a time and K in flight, server-everything over HTTP.
  using oppx::bench::run_sdk_client;
  const std::string calls = std::to_string(o.sdk_calls), warmup = std::to_string(o.warmup);
  auto sdk_seq = run_sdk_client(sdk_script, o.npm_dir, {"--calls", calls, "--warmup", warmup, "--", echo});
  auto sdk_par =
      run_sdk_client(sdk_script, o.npm_dir,
                     {"--calls", calls, "--warmup", warmup, "--inflight", std::to_string(o.inflight), "--", echo});
  // In one node process, server-everything's own server linked to the client by the SDK's
  // in-memory transport: what the SDK's protocol code costs with no IPC at all.
  oppx::bench::SdkRun sdk_inproc;
  sdk_inproc.error = have_everything ? "" : missing;
  if (have_everything) {
    std::string module = everything.substr(0, everything.rfind('/')) + "/server/index.js";
    sdk_inproc = run_sdk_client(sdk_script, o.npm_dir, {"--calls", calls, "--warmup", warmup, "--in-process", module});
  }
  oppx::bench::SdkRun sdk_http;
  sdk_http.error = http_error;
  if (http_error.empty()) {
    sdk_http = run_sdk_client(
        sdk_script, o.npm_dir,
        {"--calls", std::to_string(o.http_calls), "--warmup", std::to_string(http_warmup), "--url", http_server.url()});
  }

  // (5) Cold, server-everything over stdio, from nothing to the answer of the first call, the runs
  // of the two alternating. oppxd: mcp/reconnect (the old program told to stop, not waited for;
  // the new one started, initialized, its tools listed), then the first tools/call, timed through
  // the socket by this client. The SDK client, in a node of its own per run (that node's start and
  // its imports not timed): spawn the program, initialize, tools/list, the first tools/call. Its
  // close (which waits for the program to exit) is timed apart and shown, not counted.
  oppx::bench::Stats cold_oppxd, cold_sdk, cold_close;
  std::string cold_oppxd_error = have_everything ? "" : missing, cold_sdk_error = cold_oppxd_error;
  if (have_everything) {
    std::vector<double> daemon_ms, sdk_ms, close_ms;
    for (int r = 0; r < o.cold_runs && cold_oppxd_error.empty() && cold_sdk_error.empty(); ++r) {
      auto d = oppx::bench::cold_through_daemon(c, "everything", kMessage, kEchoed, 1);
      cold_oppxd_error = d.error;
      if (d.error.empty()) daemon_ms.push_back(d.ms.median);
      auto s = run_sdk_client(sdk_script, o.npm_dir, {"--cold", "1", "--", "node", everything, "stdio"});
      cold_sdk_error = s.error;
      if (s.ok()) sdk_ms.push_back(s.us.median / 1000.0);
      if (s.ok()) close_ms.push_back(s.close_us / 1000.0);
    }
    cold_oppxd = oppx::bench::summarize(daemon_ms);
    cold_sdk = oppx::bench::summarize(sdk_ms);
    cold_close = oppx::bench::summarize(close_ms);
  }

  fmt::print(
      "mcp_calls: tools/call echo, {} calls per series ({} over HTTP) in {} alternating rounds after {} warm-up "
      "calls, {} in flight for throughput\n",
      o.calls, o.http_calls, o.rounds, o.warmup, o.inflight);
  fmt::print("  {:<48} {:>8} {:>9} {:>10} {:>10}\n", "", "p50 µs", "p99 µs", "calls/s", "CPU µs");
  fmt::print("  {:<48} {:>8} {:>9} {:>10} {:>10}\n", "", "", "", "", "per call");
  // CPU per call: of the relay process for the floor, of oppxd for the others.
  int failed = 0;
  auto series = [&failed](std::string_view label, const Series& s) {
    if (!print_series(label, s)) ++failed;
  };
  auto sdk_series = [&failed](std::string_view label, const oppx::bench::SdkRun& s) {
    if (!s.ok()) {
      ++failed;
      fmt::print("  {:<48} {}\n", label, s.error);
    } else {
      fmt::print("  {:<48} {:8.1f} {:9.1f} {:10.0f}   ({} calls)\n", label, s.us.median, s.us.p99, s.calls_per_s,
                 s.calls);
    }
  };
  const std::string par = fmt::format(", {} in flight", o.inflight);
  series("floor: socket → relay → pipe → C echo", floor_seq);
  series("floor" + par, floor_par);
  series("oppxd → C echo", echo_seq);
  series("oppxd → C echo" + par, echo_par);
  sdk_series("TypeScript SDK client → C echo (stdio)", sdk_seq);
  sdk_series("TypeScript SDK client → C echo" + par, sdk_par);
  series("oppxd → server-everything", every_seq);
  series("oppxd → server-everything" + par, every_par);
  sdk_series("TypeScript SDK client ↔ everything, in process", sdk_inproc);
  series("oppxd → server-everything (HTTP)", http_seq);
  sdk_series("TypeScript SDK client → server-everything (HTTP)", sdk_http);
  fmt::print("cold: server-everything (stdio) from its start to the first tools/call, runs: {}\n", o.cold_runs);
  fmt::print("  {:<48} {:>8} {:>9}\n", "", "p50 ms", "p90 ms");
  auto cold_line = [&failed](std::string_view label, const oppx::bench::Stats& s, const std::string& error) {
    if (!error.empty()) {
      ++failed;
      fmt::print("  {:<48} FAILED: {}\n", label, error);
    } else {
      fmt::print("  {:<48} {:8.1f} {:9.1f}\n", label, s.median, s.p90);
    }
  };
  cold_line("oppxd: mcp/reconnect, then the first tools/call", cold_oppxd, cold_oppxd_error);
  cold_line("TypeScript SDK client: spawn … first call", cold_sdk, cold_sdk_error);
  if (cold_sdk_error.empty()) cold_line("  (then its close, not counted above)", cold_close, "");

  // The report's rows (bench/run): each series beside the floor of the same kind, the SDK
  // client's beside oppxd doing the same.
  using oppx::bench::report;
  auto row = [&](const std::string& what, const Series& s, const Series* anchor, const std::string& anchor_name) {
    if (!s.ok()) return;
    report({"mcp_calls", what, "µs", s.us(), anchor && anchor->ok() ? anchor_name : "",
            anchor && anchor->ok() ? anchor->us().median : 0, fmt::format("{:.0f} calls/s", s.calls_per_s())});
  };
  auto sdk_row = [&](const std::string& what, const oppx::bench::SdkRun& s, const Series& anchor,
                     const std::string& anchor_name) {
    if (!s.ok() || !anchor.ok()) return;
    report({"mcp_calls", what, "µs", s.us, anchor_name, anchor.us().median,
            fmt::format("{:.0f} calls/s, oppxd {:.0f}", s.calls_per_s, anchor.calls_per_s())});
  };
  row("tools/call echo, oppxd → C echo", echo_seq, &floor_seq, "socket → relay → pipe floor");
  row("tools/call echo, oppxd → C echo" + par, echo_par, &floor_par, "floor" + par);
  row("tools/call echo, oppxd → server-everything", every_seq, &floor_seq, "socket → relay → pipe floor");
  row("tools/call echo, oppxd → server-everything (HTTP)", http_seq, nullptr, "");
  sdk_row("TypeScript SDK client → C echo (stdio)", sdk_seq, echo_seq, "oppxd → C echo");
  sdk_row("TypeScript SDK client → C echo" + par, sdk_par, echo_par, "oppxd → C echo" + par);
  sdk_row("TypeScript SDK client → server-everything (HTTP)", sdk_http, http_seq, "oppxd → server-everything (HTTP)");
  sdk_row("TypeScript SDK client ↔ server-everything, in process (in-memory)", sdk_inproc, every_seq,
          "oppxd → server-everything (stdio)");
  if (cold_oppxd_error.empty() && cold_sdk_error.empty())
    report({"mcp_calls", "cold: TypeScript SDK client spawns server-everything to its first call", "ms", cold_sdk,
            "oppxd: mcp/reconnect to the first call", cold_oppxd.median, ""});
  if (list.failures == 0)
    report({"mcp_calls", "oppx mcp list --json, 5 warm connectors", "ms", list, "oppx --version", start_only.median,
            "target <= 3 ms"});
  if (all_up && rss_many > 0) {
    Stats rss;
    rss.median = rss.min = rss.p90 = rss.p99 = rss_many / 1024.0;
    report({"mcp_calls", fmt::format("daemon RSS with {} connectors", o.connectors), "MiB", rss, "daemon idle",
            rss_idle / 1024.0, "target <= 16 MiB"});
  }

  fmt::print("ratios and targets:\n");
  if (floor_seq.ok() && echo_seq.ok()) {
    double r = echo_seq.us().median / floor_seq.us().median;
    fmt::print("  oppxd p50 / floor p50                 {:6.2f}   (target <= 1.5: {})\n", r, verdict(r <= 1.5));
  } else {
    print_no_ratio("oppxd p50 / floor p50");
  }
  if (floor_par.ok() && echo_par.ok()) {
    double r = echo_par.calls_per_s() / floor_par.calls_per_s();
    fmt::print("  oppxd / floor throughput, {} in flight {:6.2f}   (target >= 0.5: {})\n", o.inflight, r,
               verdict(r >= 0.5));
  } else {
    print_no_ratio(fmt::format("oppxd / floor throughput, {} in flight", o.inflight));
  }
  if (sdk_seq.ok() && echo_seq.ok()) {
    double r = sdk_seq.us.median / echo_seq.us().median;
    fmt::print("  SDK client p50 / oppxd p50            {:6.2f}   (target >= 3: {})\n", r, verdict(r >= 3));
    if (floor_seq.ok()) {
      fmt::print("  (SDK client p50 / floor p50           {:6.2f}: the most any relay through a socket could show)\n",
                 sdk_seq.us.median / floor_seq.us().median);
    }
  } else {
    print_no_ratio("SDK client p50 / oppxd p50");
  }
  if (sdk_par.ok() && echo_par.ok()) {
    fmt::print("  {:<38}{:6.2f}   (p50: SDK client {:.0f} µs, oppxd {:.0f} µs)\n",
               fmt::format("oppxd / SDK throughput, {} in flight", o.inflight),
               echo_par.calls_per_s() / sdk_par.calls_per_s, sdk_par.us.median, echo_par.us().median);
  } else {
    print_no_ratio(fmt::format("oppxd / SDK throughput, {} in flight", o.inflight));
  }
  if (sdk_http.ok() && http_seq.ok()) {
    fmt::print("  SDK client p50 / oppxd p50, HTTP      {:6.2f}\n", sdk_http.us.median / http_seq.us().median);
  } else {
    print_no_ratio("SDK client p50 / oppxd p50, HTTP");
  }
  if (cold_oppxd_error.empty() && cold_sdk_error.empty()) {
    fmt::print("  SDK client cold / oppxd cold          {:6.2f}   (medians, server-everything over stdio)\n",
               cold_sdk.median / cold_oppxd.median);
  } else {
    print_no_ratio("SDK client cold / oppxd cold");
  }
  if (list.failures == 0) {
    fmt::print(
        "  oppx mcp list --json, 5 warm          {:6.2f} ms median, p90 {:.2f} ms, {} runs (target <= 3 ms: {})\n",
        list.median, list.p90, o.list_runs, verdict(list.median <= 3.0));
  } else {
    ++failed;
    fmt::print("  oppx mcp list --json, 5 warm          FAILED: {} of {} runs failed\n", list.failures, o.list_runs);
  }
  if (start_only.failures == 0) {
    fmt::print("  (oppx --version, no daemon: {:.2f} ms median, the cost of starting the CLI)\n", start_only.median);
  } else {
    ++failed;
    fmt::print("  oppx --version                        FAILED: {} of {} runs failed\n", start_only.failures,
               o.list_runs);
  }
  if (all_up && rss_many > 0) {
    fmt::print("  daemon RSS with {} connectors         {:6.1f} MiB   (target <= 16 MiB: {})\n", o.connectors,
               rss_many / 1024.0, verdict(rss_many <= 16 * 1024));
  } else {
    ++failed;
    fmt::print("  daemon RSS with {} connectors         FAILED: {}\n", o.connectors,
               all_up ? "daemon/status gave no RSS" : "not all of them started: " + many_why);
  }
  if (rss_idle > 0 && rss_after > 0) {
    fmt::print("  daemon RSS idle                       {:6.1f} MiB;  after the call series {:.1f} MiB\n",
               rss_idle / 1024.0, rss_after / 1024.0);
  } else {
    ++failed;
    fmt::print("  daemon RSS idle                       FAILED: daemon/status gave no RSS\n");
  }
  if (failed) {
    std::fflush(stdout);  // the figures first, then the line that sums them up
    fmt::print(stderr, "mcp_calls: {} of the measurements failed; their errors are above\n", failed);
    return 1;
  }
  return 0;
}
