// oppx demo: a short tour that needs no model. It starts the daemon (or finds it), shows the
// handshake and the status, times a few round trips, a real connector, a repository's waiting
// one, the headless browser on a small local page, and says what to try next.
#include "cli/browser.h"
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/probe.h"
#include "proto/jsonrpc.h"

#include <fmt/format.h>

#include "common/fs.h"
#include "common/paths.h"
#include "common/playwright.h"
#include "common/text.h"
#include "proto/browser_api.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"
#include "proto/session_api.h"

#include <boost/json.hpp>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <vector>

namespace oppx::cli {

namespace json = boost::json;

namespace {

// server-everything as bootstrap installs it beside this binary (build/npm).
std::string everything_path() {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  self[n] = '\0';
  std::string p = dirname_of(self) + "/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  return ::access(p.c_str(), R_OK) == 0 ? p : "";
}

// Adds `everything` through mcp/add (the daemon writes mcp.json) and prints the probe.
bool add_everything(Connection& conn, const std::string& server) {
  json::object def{{"command", "node"}, {"args", json::array{json::value(server), "stdio"}}};
  auto r =
      conn.client.call(proto::kMcpAdd, json::value_from(proto::McpAddParams{.name = "everything", .definition = def}),
                       std::chrono::seconds(40));
  if (!r && r.error().kind == proto::kind::kExists) {
    fmt::print("   `everything` is already in your mcp.json\n");
    return true;
  }
  if (!r) {
    fmt::print("   mcp/add failed: {}\n\n", r.error().message);
    return false;
  }
  fmt::print("   $ oppx mcp add everything -- node {} stdio\n", server);
  std::fflush(stdout);
  print_added(*r);
  std::fflush(stdout);
  fmt::print("   (remove it with `oppx mcp remove everything`)\n");
  return true;
}

// How to run this oppx from another folder: a relative path (`build/oppx`) made absolute; a
// name found on PATH (`oppx`) as it is.
std::string runnable_from_anywhere(const std::string& self) {
  if (self.empty() || self[0] == '/' || self.find('/') == std::string::npos) return self;
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof cwd)) return self;
  std::string rel = self.starts_with("./") ? self.substr(2) : self;
  return std::string(cwd) + "/" + rel;
}

// A repository as a fresh clone would have it: a .mcp.json the user never saw. It waits.
void repository_tour(Connection& conn, const std::string& server, const std::string& self) {
  fmt::print("5. A repository's connector waits for your consent\n");
  std::string repo = paths::cache_dir() + "/demo-repo";
  if (auto r = ensure_private_dir(repo + "/.git"); !r) {
    fmt::print("   cannot make the demo repository: {}\n\n", r.error());
    return;
  }
  json::object servers{
      {"demo-notes", json::object{{"command", "node"}, {"args", json::array{json::value(server), "stdio"}}}}};
  if (auto r = atomic_write(repo + "/.mcp.json", proto::json_text(json::object{{"mcpServers", servers}}) + "\n", 0600);
      !r) {
    fmt::print("   cannot write the demo repository's .mcp.json: {}\n\n", r.error());
    return;
  }
  auto r = conn.client.call(proto::kMcpGet, json::value_from(proto::McpGetParams{"demo-notes", repo}), kCallTimeout);
  auto e = proto::decode_reply<proto::ConnectorEntry>(r);
  if (!e) {
    fmt::print("   mcp/get failed: {}\n\n", e.error());
    return;
  }
  fmt::print("   {} has a .mcp.json with `demo-notes`; oppx mcp list there shows it {}:\n", repo, e->state);
  if (!e->reason.empty()) fmt::print("     {}\n", e->reason);
  // After the `cd`, a relative `build/oppx` would no longer be found.
  fmt::print("   Nothing from it ran. To allow it:  cd {} && {} mcp approve demo-notes\n\n", repo,
             runnable_from_anywhere(self));
}

void connector_tour(Connection& conn, const std::string& self) {
  fmt::print("4. A real connector: server-everything, the MCP reference server, over stdio\n");
  std::string server = everything_path();
  if (server.empty()) {
    fmt::print("   not installed next to this oppx; run packaging/bootstrap.sh, then the demo again\n\n");
    return;
  }
  if (!add_everything(conn, server)) return;
  auto list = conn.client.call(proto::kMcpTools, json::value_from(proto::McpToolsParams{"everything"}),
                               std::chrono::seconds(40));
  auto e = proto::decode_reply<proto::ConnectorEntry>(list);
  if (!e) {
    fmt::print("   mcp/tools failed: {}\n\n", e.error());
    return;
  }
  if (e->state != "running") {
    fmt::print("   it is {}: {}\n\n", e->state, e->reason);
    return;
  }
  json::object args{{"message", "hello from the oppx demo"}};
  auto t0 = std::chrono::steady_clock::now();
  auto r = conn.client.call(
      proto::kToolsCall,
      json::value_from(proto::ToolsCallParams{.connector = "everything", .tool = "echo", .arguments = args}),
      kCallTimeout);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto echoed = proto::decode_reply<proto::ToolsCallResult>(r);
  if (!echoed) {
    fmt::print("   echo failed: {}\n\n", echoed.error());
    return;
  }
  fmt::print("   everything.echo {} → {} ({:.1f} ms)\n\n", proto::json_text(args), echoed->text, ms);
  repository_tour(conn, server, self);
}

// A small page, served by node on 127.0.0.1 with a port of its choosing, printed as "port N".
constexpr const char* kDemoPage = R"(
const page = '<!doctype html><title>oppx demo</title><h1>Hello from oppx</h1>' +
  '<p>This page is served on 127.0.0.1 for the demo.</p><button>Try me</button>' +
  '<script>console.warn("a warning the browser tools can read")</script>';
require('http').createServer((q, r) => { r.writeHead(200, {'content-type': 'text/html'}); r.end(page); })
  .listen(0, '127.0.0.1', function () { console.log('port ' + this.address().port); });
)";

// The page server for as long as it lives; `url` is empty when it did not start.
struct DemoPage {
  pid_t pid = -1;
  std::string url;
  DemoPage() {
    int out[2];
    if (::pipe(out) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::close(out[1]);
      ::execlp("node", "node", "-e", kDemoPage, nullptr);
      ::_exit(127);
    }
    ::close(out[1]);
    if (FILE* f = ::fdopen(out[0], "r")) {
      int port = 0;
      if (std::fscanf(f, "port %d", &port) == 1 && port > 0) url = fmt::format("http://127.0.0.1:{}/", port);
      std::fclose(f);
    }
  }
  ~DemoPage() {
    if (pid <= 0) return;
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
  }
};

// The browser: installed when it is not (npm's progress shown), started for this connection's
// session, a local page opened, and what its snapshot shows.
void browser_tour(Connection& conn) {
  fmt::print("6. The headless browser (Playwright's MCP server on Chrome or Chromium)\n");
  if (playwright::installed_version() != playwright::kMcpVersion) {
    std::fflush(stdout);
    if (std::string why = prepare_browser(); !why.empty()) {
      fmt::print("   not installed: {}\n\n", why);
      return;
    }
  }
  DemoPage page;
  if (page.url.empty()) {
    fmt::print("   the demo page did not start (node on PATH is needed)\n\n");
    return;
  }
  char cwd[PATH_MAX];
  std::string here = ::getcwd(cwd, sizeof cwd) ? cwd : "/";
  if (auto s =
          conn.client.call(proto::kSessionOpen, json::value_from(proto::SessionOpenParams{here, "chat"}), kCallTimeout);
      !s) {
    fmt::print("   session/open failed: {}\n\n", s.error().message);
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto started = conn.client.call(proto::kBrowserStart, json::object{}, std::chrono::seconds(60));
  if (!started) {
    fmt::print("   it did not start: {}\n\n", started.error().message);
    return;
  }
  auto browser = proto::decode<proto::BrowserStartResult>(*started);
  if (!browser) {
    fmt::print("   the daemon's browser/start reply: {}\n\n", browser.error());
    return;
  }
  fmt::print("   started for this session: server pid {}, {} tools offered, its tools allowed as {}\n",
             browser->pid.value_or(0), browser->tools, escape_controls(browser->session_allow));
  json::object args{{"url", page.url}};
  auto r = conn.client.call(proto::kToolsCall,
                            json::value_from(proto::ToolsCallParams{
                                .connector = "playwright", .tool = "browser_navigate", .arguments = args}),
                            std::chrono::seconds(60));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto navigated = proto::decode_reply<proto::ToolsCallResult>(r);
  if (!navigated) {
    fmt::print("   browser_navigate failed: {}\n\n", navigated.error());
    return;
  }
  const std::string& text = navigated->text;
  fmt::print("   playwright.browser_navigate {} ({:.1f} s, Chromium starting); the page as the model reads it:\n",
             proto::json_text(args), s);
  auto at = text.find("- heading");
  std::string shown = text.substr(at == std::string::npos ? 0 : at);
  int lines = 0;
  for (std::size_t b = 0; b < shown.size() && lines < 8; ++lines) {
    auto e = shown.find('\n', b);
    std::string line = shown.substr(b, e == std::string::npos ? std::string::npos : e - b);
    if (line.rfind("```", 0) != 0) fmt::print("     {}\n", escape_controls(line));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  conn.client.call(proto::kBrowserStop, json::object{}, kCallTimeout);
  fmt::print("   (in the chat, the agent asks once before it starts one: `oppx browser status`)\n\n");
}

int demo(Context& ctx) {
  if (!ctx.args.empty()) return usage_error(*find_command("", "demo"), "unexpected argument " + ctx.args[0]);
  fmt::print("oppx demo: the daemon, its socket, a real connector and the CLI\n\n");

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
    auto r = conn->client.call(proto::kDaemonStatus, json::object{}, kCallTimeout);
    if (!r) {
      fmt::print(stderr, "oppx: daemon/status failed: {}\n", r.error().message);
      return kExitFailed;
    }
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
    last = *r;
  }
  std::sort(times.begin(), times.end());
  auto st = proto::decode<proto::StatusResult>(last);
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
      "3. The daemon is one per user and socket, reachable only by your uid, and speaks the\n"
      "   JSON-RPC socket API of docs/protocol.md.\n\n");
  connector_tour(*conn, ctx.self);
  browser_tour(*conn);
  fmt::print(
      "The CLI is ready. Try:\n"
      "  {0} mcp list\n"
      "  {0} mcp call everything get-sum '{{\"a\":2,\"b\":40}}'\n"
      "  {0} daemon status\n"
      "  {0} help\n",
      ctx.self);
  return kExitOk;
}

}  // namespace

std::vector<Command> demo_commands() {
  return {{"", "demo", "", "A short tour: start the daemon, talk to it, show what it reports.", "", demo}};
}

}  // namespace oppx::cli
