// bench/browser_start: the session browser through oppxd, from browser/start to the first snapshot
// (a navigate to a page this benchmark serves on 127.0.0.1: Chromium starts then) and a click's
// round trip, beside the same steps made by the official TypeScript SDK client on a Playwright MCP
// server it starts itself (bench/browser_sdk.mjs, the same flags); and the peak memory (the sum
// of RSS) of the browser's process tree; then the same start with the daemon's spare server taken.
// Needs packaging/bootstrap.sh's build/playwright and a Chrome or Chromium.
//   usage: browser_start [--runs N] [--npm-dir DIR]
#include "bench/bench_support.h"

#include "common/proc.h"
#include "proto/browser_api.h"
#include "proto/daemon_api.h"
#include "proto/mcp_api.h"
#include "proto/session_api.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// The page: a counter button, served by node on a port of its choosing (printed as "port N").
constexpr const char* kPageServer = R"(
const http = require('http');
const page = '<!doctype html><title>Counter</title><h1>Counter</h1><button id="add">Add</button>' +
  '<p id="count">clicks: 0</p><script>let n=0;document.getElementById("add").onclick=()=>{n++;' +
  'document.getElementById("count").textContent="clicks: "+n;};</script>';
http.createServer((q, r) => { r.writeHead(200, {'content-type': 'text/html'}); r.end(page); })
  .listen(0, '127.0.0.1', function () { console.log('port ' + this.address().port); });
)";

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The RSS sum of `root` and every process below it, in KiB.
long tree_rss_kib(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      if (pid <= 0) continue;
      std::ifstream f(fmt::format("/proc/{}/stat", pid));
      std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      auto close = stat.rfind(')');
      int ppid = 0;
      char state = 0;
      if (close != std::string::npos && std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2)
        children.emplace(ppid, pid);
    }
    ::closedir(d);
  }
  long sum = 0;
  std::vector<pid_t> todo{root};
  std::set<pid_t> seen;
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    if (!seen.insert(p).second) continue;
    sum += std::max(0L, oppx::rss_kib(p));
    auto [b, e] = children.equal_range(p);
    for (auto it = b; it != e; ++it) todo.push_back(it->second);
  }
  return sum;
}

struct Through {
  std::vector<double> start, snapshot, click;
  long peak_kib = 0;
  int failures = 0;
  std::string first_error;
};

void fail(Through& t, const std::string& why) {
  if (t.failures++ == 0) t.first_error = why;
}

// Whether the daemon's spare server runs, waited for up to a minute (the daemon answers when it
// does: daemon/status with `until`).
bool spare_running(oppx::SyncClient& c) {
  auto s = c.call(oppx::proto::kDaemonStatus,
                  json::object{{"until", json::object{{"spare_state", "running"}}}, {"timeout_ms", 60000}}, 70s);
  return s && s->at("until_met") == json::value(true);
}

// One session: browser/start, navigate (the first snapshot), click. `warm`: the daemon's spare
// server is waited for first, so that this session takes it.
void through_oppxd(const std::string& socket, const std::string& cwd, const std::string& url, Through& t, bool warm) {
  auto c = oppx::bench::daemon_client(socket, "browser_start");
  if (!c) return fail(t, "no daemon");
  if (!c->call(oppx::proto::kSessionOpen, json::object{{"cwd", cwd}, {"mode", "chat"}}, 10s))
    return fail(t, "session/open");
  if (warm && !spare_running(*c)) return fail(t, "the spare server did not start");
  auto t0 = Clock::now();
  auto started = c->call(oppx::proto::kBrowserStart, json::object{{"cwd", cwd}}, 60s);
  if (!started) return fail(t, "browser/start: " + started.error().message);
  double start_ms = ms_since(t0);
  auto call = [&](const char* tool, json::object args) {
    return c->call(oppx::proto::kToolsCall,
                   json::object{{"connector", "playwright"}, {"tool", tool}, {"arguments", args}, {"cwd", cwd}}, 60s);
  };
  auto nav = call("browser_navigate", {{"url", url}});
  double snapshot_ms = ms_since(t0);
  if (!nav || json::serialize(*nav).find("Counter") == std::string::npos)
    return fail(t, "navigate: " + (nav ? json::serialize(*nav) : nav.error().message));
  auto t1 = Clock::now();
  auto click = call("browser_click", {{"element", "Add"}, {"target", "#add"}});
  double click_ms = ms_since(t1);
  if (!click) return fail(t, "click: " + click.error().message);
  if (auto s = c->call(oppx::proto::kBrowserStatus, json::object{}, 10s)) {
    const json::value* pid = s->as_object().contains("session") && s->at("session").is_object()
                                 ? s->at("session").as_object().if_contains("pid")
                                 : nullptr;
    if (pid) t.peak_kib = std::max(t.peak_kib, tree_rss_kib(static_cast<pid_t>(pid->to_number<std::int64_t>())));
  }
  t.start.push_back(start_ms);
  t.snapshot.push_back(snapshot_ms);
  t.click.push_back(click_ms);
  c->call(oppx::proto::kBrowserStop, json::object{}, 30s);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  std::string npm_dir = "build/npm";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--npm-dir") npm_dir = argv[i + 1];
  }
  if (!npm_dir.empty() && npm_dir[0] != '/') {
    char buf[4096];
    if (::getcwd(buf, sizeof buf)) npm_dir = std::string(buf) + "/" + npm_dir;
  }
  std::signal(SIGPIPE, SIG_IGN);
  const std::string dir = oppx::bench::self_dir();
  const std::string engine = dir + "/playwright";
  if (::access((engine + "/node_modules/@playwright/mcp/cli.js").c_str(), R_OK) != 0) {
    fmt::print(stderr, "browser_start: {} has no @playwright/mcp: run packaging/bootstrap.sh\n", engine);
    return 1;
  }
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  ::setenv("XDG_DATA_HOME", (home.root() + "/data").c_str(), 1);  // the engine folder: data/oppx/playwright
  ::mkdir((home.root() + "/data").c_str(), 0700);
  ::mkdir((home.root() + "/data/oppx").c_str(), 0700);
  if (::symlink(engine.c_str(), (home.root() + "/data/oppx/playwright").c_str()) != 0) return 1;

  // The page: node prints its port on a pipe, read as it comes.
  int out[2];
  if (::pipe(out) != 0) return 1;
  pid_t page = ::fork();
  if (page == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::close(out[1]);
    ::execlp("node", "node", "-e", kPageServer, nullptr);
    ::_exit(127);
  }
  ::close(out[1]);
  struct Stop {
    pid_t page;
    std::string oppx;
    ~Stop() {
      if (page > 0) ::kill(page, SIGTERM);
      oppx::bench::run_ms({oppx, "daemon", "stop"});
    }
  } stop{page, dir + "/oppx"};
  std::string url;
  if (FILE* f = ::fdopen(out[0], "r")) {
    int port = 0;
    if (std::fscanf(f, "port %d", &port) == 1 && port > 0) url = fmt::format("http://127.0.0.1:{}/", port);
  }
  if (url.empty()) {
    fmt::print(stderr, "browser_start: the page server did not start\n");
    return 1;
  }
  if (oppx::bench::run_ms({dir + "/oppx", "daemon", "start"}) < 0) return 1;

  // Cold: no spare (OPPX_BROWSER_SPARE_IDLE_MS=0 in the clients' environment), so every session
  // starts its own server. Then warm: each session takes the spare the one before it left.
  Through via, warm;
  ::setenv("OPPX_BROWSER_SPARE_IDLE_MS", "0", 1);
  through_oppxd(home.socket(), home.root(), url, via, false);  // warm-up: the page cache, npm's files
  via = Through{};
  for (int i = 0; i < runs; ++i) through_oppxd(home.socket(), home.root(), url, via, false);
  ::unsetenv("OPPX_BROWSER_SPARE_IDLE_MS");
  through_oppxd(home.socket(), home.root(), url, warm, false);  // its first call leaves the first spare
  warm = Through{};
  for (int i = 0; i < runs; ++i) through_oppxd(home.socket(), home.root(), url, warm, true);

  // The SDK client on a server it starts itself, with the flags oppxd uses; from the bench's HOME,
  // where that server writes its files (it has no session folder to write into).
  if (::chdir(home.root().c_str()) != 0) return 1;
  std::string chromium = oppx::bench::capture({"sh", "-c", "command -v chromium || command -v google-chrome"});
  while (!chromium.empty() && chromium.back() == '\n') chromium.pop_back();
  std::vector<double> sdk_connect, sdk_snapshot, sdk_click;
  int sdk_failures = 0;
  for (int i = 0; i < runs + 1; ++i) {
    std::vector<std::string> args{"node",
                                  std::string(OPPX_BENCH_DIR) + "/browser_sdk.mjs",
                                  "--npm-dir",
                                  npm_dir,
                                  "--url",
                                  url,
                                  "--",
                                  "node",
                                  engine + "/node_modules/@playwright/mcp/cli.js",
                                  "--headless",
                                  "--isolated",
                                  "--image-responses",
                                  "omit",
                                  "--codegen",
                                  "none",
                                  "--console-level",
                                  "warning",
                                  "--executable-path",
                                  chromium};
    if (::geteuid() == 0) args.emplace_back("--no-sandbox");
    std::string out = oppx::bench::capture(args);
    boost::system::error_code ec;
    json::value v = json::parse(out, ec);
    if (ec || !v.is_object() || v.at("ok") != json::value(true)) {
      ++sdk_failures;
      continue;
    }
    if (i == 0) continue;  // warm-up
    sdk_connect.push_back(v.at("connect_ms").to_number<double>());
    sdk_snapshot.push_back(v.at("first_snapshot_ms").to_number<double>());
    sdk_click.push_back(v.at("click_ms").to_number<double>());
  }

  fmt::print("browser_start: the session browser through oppxd, {} runs ({} failed), beside the SDK client\n", runs,
             via.failures);
  if (via.snapshot.empty()) {
    fmt::print("  not measured: {}\n", via.first_error);
    return 1;
  }
  auto s = oppx::bench::summarize(via.start), f = oppx::bench::summarize(via.snapshot),
       k = oppx::bench::summarize(via.click);
  fmt::print("  oppxd: browser/start (the server ready)   median {:8.1f} ms   p90 {:8.1f} ms\n", s.median, s.p90);
  fmt::print("  oppxd: start to the first snapshot        median {:8.1f} ms   p90 {:8.1f} ms\n", f.median, f.p90);
  fmt::print("  oppxd: a click's round trip              median {:8.1f} ms   p90 {:8.1f} ms\n", k.median, k.p90);
  fmt::print("  browser tree, RSS summed (shared pages in each)  {:8.1f} MiB\n", via.peak_kib / 1024.0);
  oppx::bench::Stats ws, wf;
  if (!warm.snapshot.empty()) {
    ws = oppx::bench::summarize(warm.start);
    wf = oppx::bench::summarize(warm.snapshot);
    fmt::print("  with the spare: browser/start             median {:8.1f} ms   p90 {:8.1f} ms\n", ws.median, ws.p90);
    fmt::print("  with the spare: start to the first snapshot median {:6.1f} ms   p90 {:8.1f} ms   ({} failed)\n",
               wf.median, wf.p90, warm.failures);
    fmt::print("  ratio spare / no spare, first snapshot    {:.2f}\n", wf.median / f.median);
  } else {
    fmt::print("  with the spare: not measured: {}\n", warm.first_error);
  }
  oppx::bench::Stats sf, sk;
  if (!sdk_snapshot.empty()) {
    auto sc = oppx::bench::summarize(sdk_connect);
    sf = oppx::bench::summarize(sdk_snapshot);
    sk = oppx::bench::summarize(sdk_click);
    fmt::print("  SDK client: connect                       median {:8.1f} ms\n", sc.median);
    fmt::print("  SDK client: start to the first snapshot   median {:8.1f} ms   ({} failed)\n", sf.median,
               sdk_failures);
    fmt::print("  SDK client: a click's round trip          median {:8.1f} ms\n", sk.median);
    fmt::print("  ratio oppxd / SDK, first snapshot         {:.2f}\n", f.median / sf.median);
    fmt::print("  ratio oppxd / SDK, click                  {:.2f}\n", k.median / sk.median);
  } else {
    fmt::print("  SDK client: not measured ({} runs failed)\n", sdk_failures);
  }
  oppx::bench::report({"browser_start", "browser/start to the first snapshot (Chromium starting)", "ms", f,
                       sf.median > 0 ? "SDK client, same steps" : "", sf.median, ""});
  if (wf.median > 0)
    oppx::bench::report({"browser_start", "browser/start to the first snapshot, the spare server taken", "ms", wf,
                         "no spare, same steps", f.median, ""});
  oppx::bench::report(
      {"browser_start", "a click's round trip", "ms", k, sk.median > 0 ? "SDK client, same steps" : "", sk.median, ""});
  oppx::bench::Stats mem;
  mem.median = mem.min = mem.p90 = mem.p99 = via.peak_kib / 1024.0;
  oppx::bench::report(
      {"browser_start", "the browser tree after a click, RSS summed over its processes", "MiB", mem, "", 0, ""});
  return 0;
}
