// `oppx mcp serve`: hands its stdin and stdout to the daemon, which serves the client itself
// (daemon/mcp_stdio.h), so that no process stands between the client and oppxd; this process
// stays as the session's lifeline, and hands over again when the daemon restarted. Where the MCP
// socket cannot be reached, it serves the client itself (common/mcp_serve.h), relaying to a daemon
// connection made as every command makes one (connect_daemon: started when none answers).
#include "cli/agent_setup.h"
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "common/mcp_serve.h"
#include "common/ndjson_transport.h"
#include "common/paths.h"
#include "common/text.h"

#include <boost/asio/io_context.hpp>

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace oppx::cli {

namespace {

namespace json = boost::json;

enum class Handover {
  kDone,         // the client closed its end
  kDaemonGone,   // the daemon stopped while serving: hand over again at the client's next message
  kUnavailable,  // no daemon took the descriptors: serve the client here
};

// The MCP socket beside `socket`, connected; -1 when it cannot be.
int connect_mcp_socket(const std::string& socket) {
  std::string path = paths::mcp_http_socket(socket);
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return -1;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// The NUL byte with stdin and stdout attached, then the line that says the session.
bool send_descriptors(int fd, const std::string& line) {
  char nul = 0;
  iovec iov{&nul, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 2)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * 2);
  int fds[2] = {STDIN_FILENO, STDOUT_FILENO};
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t n;
  do n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == 1 && send_all(fd, line + "\n");
}

// One handover: returns how it ended; `state` is kept up to date for the next one.
Handover hand_over(const std::string& socket, const ServeOptions& options, std::optional<ServeState>& state) {
  {
    auto conn = connect_daemon(socket, Start::kIfNeeded);  // started, and of this build
    if (!conn) return Handover::kUnavailable;
  }
  int fd = connect_mcp_socket(socket);
  if (fd < 0) return Handover::kUnavailable;
  // The environment, as every command's hello gives it: the daemon expands ${VAR} from it.
  json::object first{
      {"cwd", options.cwd}, {"timeout_ms", options.call_timeout.count()}, {"env", json::value_from(environment())}};
  if (state) first["state"] = to_json(*state);
  bool serving = false;
  Handover how = Handover::kUnavailable;
  if (send_descriptors(fd, json::serialize(first))) {
    std::string buffer;
    char chunk[4096];
    for (;;) {
      std::size_t nl;
      while ((nl = buffer.find('\n')) != std::string::npos) {
        boost::system::error_code ec;
        json::value v = json::parse(std::string_view(buffer).substr(0, nl), ec);
        buffer.erase(0, nl + 1);
        const json::object* o = ec ? nullptr : v.if_object();
        if (!o) continue;
        if (o->contains("serving")) serving = true;
        if (const json::value* s = o->if_contains("state")) state = serve_state_of(*s);
        if (o->contains("done")) {
          ::close(fd);
          return Handover::kDone;
        }
        if (const json::value* e = o->if_contains("error"); e && e->is_string())
          fmt::print(stderr, "oppx: the daemon refused to serve this client: {}\n", escape_controls(e->as_string()));
      }
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
    how = serving ? Handover::kDaemonGone : Handover::kUnavailable;
  }
  ::close(fd);
  return how;
}

// How long after the daemon stopped a new one is looked for (a restart), before only the client's
// next message brings one.
constexpr std::chrono::seconds kRestartWatch{10};

// After the daemon stopped: true once a daemon answers again (restarted: the client, even an idle
// one, is handed to it and told its list may have changed), or the client sends its next message
// (which starts one); false when the client has gone instead.
bool daemon_back_or_client_speaks(const std::string& socket) {
  auto deadline = std::chrono::steady_clock::now() + kRestartWatch;
  std::chrono::milliseconds step{50};
  pollfd p{STDIN_FILENO, POLLIN, 0};
  for (;;) {
    bool watching = std::chrono::steady_clock::now() < deadline;
    int n = ::poll(&p, 1, watching ? static_cast<int>(step.count()) : -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 1) return (p.revents & POLLIN) != 0;
    // A daemon holds the socket's lock: only then is it greeted (connecting to a socket systemd
    // holds would start one, which only the client's next message should do).
    if (lock_holder(socket) > 0 && connect_daemon(socket, Start::kNever)) return true;
    step = std::min(step * 2, std::chrono::milliseconds(1000));
  }
}

// Serves the client in this process, relaying to a daemon connection (no MCP socket to hand over on).
int relay(const std::string& socket, ServeOptions options, std::optional<ServeState> state) {
  boost::asio::io_context io;
  options.resume = state;
  options.on_client_gone = [&io] { io.stop(); };
  options.connect = [&io, socket](std::string& why) -> std::unique_ptr<Transport> {
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
  std::optional<ServeState> state;
  int unavailable = 0;
  for (;;) {
    switch (hand_over(ctx.socket, options, state)) {
      case Handover::kDone:
        return kExitOk;
      case Handover::kDaemonGone:
        unavailable = 0;
        if (!daemon_back_or_client_speaks(ctx.socket)) return kExitOk;
        continue;
      case Handover::kUnavailable:
        // Tried twice (the daemon may have stopped between the two connections), then a relay.
        if (++unavailable < 2) continue;
        return relay(ctx.socket, std::move(options), state);
    }
  }
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
