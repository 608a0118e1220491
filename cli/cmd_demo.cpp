// oppx demo: a short tour that needs no model. It starts the daemon (or finds it), shows the
// handshake and the status, times a few round trips, and says what to try next.
#include "cli/commands.h"
#include "cli/daemon_client.h"

#include <fmt/format.h>

#include "common/fs.h"
#include "common/paths.h"

#include <boost/json.hpp>

#include <algorithm>
#include <climits>
#include <fstream>
#include <sstream>
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

// Adds the `everything` connector to the user's mcp.json unless it is there; keeps the rest.
bool add_everything(const std::string& server, std::string& note) {
  const std::string path = paths::user_mcp_config();
  json::object root;
  if (std::ifstream in(path); in) {
    std::stringstream ss;
    ss << in.rdbuf();
    boost::system::error_code ec;
    json::value v = json::parse(ss.str(), ec);
    if (ec || !v.is_object()) {
      note = path + " is not valid JSON; fix it (or move it away) and run the demo again";
      return false;
    }
    root = v.as_object();
  }
  json::value& servers = root["mcpServers"];
  if (!servers.is_object()) servers = json::object{};
  if (servers.as_object().contains("everything")) {
    note = "`everything` is already in " + path;
    return true;
  }
  servers.as_object()["everything"] =
      json::object{{"command", "node"}, {"args", json::array{json::value(server), "stdio"}}};
  if (auto r = ensure_private_dir(dirname_of(path)); !r) {
    note = r.error();
    return false;
  }
  if (auto r = atomic_write(path, json::serialize(root) + "\n", 0600); !r) {
    note = r.error();
    return false;
  }
  note = "added the connector `everything` to " + path + " (delete its entry there to remove it)";
  return true;
}

void connector_tour(Connection& conn) {
  fmt::print("4. A real connector: server-everything, the MCP reference server, over stdio\n");
  std::string server = everything_path();
  if (server.empty()) {
    fmt::print("   not installed next to this oppx; run packaging/bootstrap.sh, then the demo again\n\n");
    return;
  }
  std::string note;
  bool ok = add_everything(server, note);
  fmt::print("   {}\n", note);
  if (!ok) return;
  auto list = conn.client.call("mcp/tools", json::object{{"name", "everything"}}, std::chrono::seconds(40));
  if (!list) {
    fmt::print("   mcp/tools failed: {}\n\n", list.error().message);
    return;
  }
  const json::object& e = list->as_object();
  if (e.at("state") != json::value("running")) {
    fmt::print("   it is {}: {}\n\n", std::string(e.at("state").as_string()),
               e.contains("reason") ? std::string(e.at("reason").as_string()) : "");
    return;
  }
  const json::array& tools = e.at("tools").as_array();
  fmt::print("   running, {} tools, for example:\n", tools.size());
  for (std::size_t i = 0; i < tools.size() && i < 3; ++i) {
    const json::object& t = tools[i].as_object();
    std::string d = t.contains("description") ? std::string(t.at("description").as_string()) : "";
    fmt::print("     everything.{}: {}\n", std::string(t.at("name").as_string()),
               d.substr(0, d.find(". ")).substr(0, 100));
  }
  json::object args{{"message", "hello from the oppx demo"}};
  auto t0 = std::chrono::steady_clock::now();
  auto r = conn.client.call(
      "tools/call", json::object{{"connector", "everything"}, {"tool", "echo"}, {"arguments", args}}, kCallTimeout);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!r) {
    fmt::print("   echo failed: {}\n\n", r.error().message);
    return;
  }
  fmt::print("   everything.echo {} → {} ({:.1f} ms)\n\n", json::serialize(args),
             std::string(r->as_object().at("text").as_string()), ms);
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
      "3. The daemon is one per user and socket, reachable only by your uid, and speaks the\n"
      "   JSON-RPC socket API of docs/protocol.md.\n\n");
  connector_tour(*conn);
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
