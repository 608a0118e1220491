// `oppx mcp serve`: the command around common/mcp_serve.h, on stdin and stdout, its daemon
// connection made as every command makes one (connect_daemon: started when none answers).
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "common/mcp_serve.h"
#include "common/ndjson_transport.h"

#include <boost/asio/io_context.hpp>

#include <fmt/format.h>

#include <climits>
#include <cstdlib>
#include <unistd.h>

namespace oppx::cli {

namespace {

int serve(Context& ctx) {
  const Command& self = *find_command("mcp", "serve");
  ServeOptions options;
  for (std::size_t i = 0; i < ctx.args.size(); ++i) {
    const std::string& a = ctx.args[i];
    if ((a == "--timeout" || a == "--cwd") && i + 1 >= ctx.args.size()) return usage_error(self, a + " needs a value");
    if (a == "--timeout") {
      char* end = nullptr;
      long seconds = std::strtol(ctx.args[++i].c_str(), &end, 10);
      if (!end || *end || seconds < 1 || seconds > 3600)
        return usage_error(self, "--timeout takes whole seconds, 1 to 3600");
      options.call_timeout = std::chrono::seconds(seconds);
    } else if (a == "--cwd") {
      options.cwd = ctx.args[++i];
    } else {
      return usage_error(self, "unknown argument " + a);
    }
  }
  if (options.cwd.empty()) {
    char buf[PATH_MAX];
    if (!::getcwd(buf, sizeof buf)) return usage_error(self, "the current folder cannot be read; give --cwd");
    options.cwd = buf;
  } else if (char buf[PATH_MAX]; ::realpath(options.cwd.c_str(), buf)) {
    options.cwd = buf;
  } else {
    fmt::print(stderr, "oppx: no folder {}\n", options.cwd);
    return kExitUsage;
  }
  boost::asio::io_context io;
  options.on_client_gone = [&io] { io.stop(); };
  options.connect = [&io, socket = ctx.socket](std::string& why) -> std::unique_ptr<Transport> {
    auto conn = connect_daemon(socket, Start::kIfNeeded);
    if (!conn) {
      why = conn.error().message;
      return nullptr;
    }
    int fd = ::dup(conn->client.fd());  // the connection said hello; the SyncClient closes its own
    if (fd < 0) {
      why = "no file descriptor left for the daemon's connection";
      return nullptr;
    }
    return make_ndjson_transport(io, fd, fd);
  };
  // stdin and stdout are the client's: nothing else may be written to stdout.
  auto server = serve_mcp(io, make_ndjson_transport(io, STDIN_FILENO, STDOUT_FILENO), options);
  io.run();
  return kExitOk;
}

}  // namespace

std::vector<Command> mcp_serve_commands() {
  return {{"mcp", "serve", "[--timeout SECONDS] [--cwd DIR]",
           "Be an MCP server on stdin/stdout that offers your connectors' tools to another client.",
           "For another MCP client (Claude Code: `claude mcp add oppx -- oppx mcp serve`): it lists the\n"
           "tools of the connectors this folder sees (yours, and this repository's once approved),\n"
           "kept warm by oppxd, named <connector>__<tool> (characters other than letters, digits, `_`\n"
           "and `-` become `_`; a name changed that way, over 64 characters or shared ends in `_` and\n"
           "8 hex digits). Calls run through oppxd under your permission rules: a call they would ask\n"
           "about is asked in the client when it supports MCP elicitation, else declined with the\n"
           "`oppx permissions allow` line. --timeout bounds each call (default 120 s); --cwd names the\n"
           "folder whose connectors and rules apply (default: the current one).",
           serve}};
}

}  // namespace oppx::cli
