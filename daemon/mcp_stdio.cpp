// `oppx mcp serve`'s stdin and stdout, handed over on the MCP socket and served here. See mcp_stdio.h.
#include "daemon/mcp_stdio.h"

#include "common/log.h"
#include "common/mcp_serve.h"
#include "common/ndjson_transport.h"
#include "daemon/server.h"
#include "proto/daemon_api.h"
#include "proto/jsonrpc.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <utility>

namespace oppx::daemon {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// The command's one line: a folder, a timeout, the state and its environment.
constexpr std::size_t kMaxControlLine = 1u << 20;

Message line_of(const json::object& o) {
  Message m;
  m.kind = Message::Kind::kNotification;
  m.text = proto::json_text(o);
  return m;
}

// The NUL byte and the two descriptors sent with it; false (nothing left open) when the byte is
// not a NUL or the descriptors are not exactly two.
bool receive_descriptors(int fd, int& in, int& out) {
  char byte = 1;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  std::vector<int> fds;
  for (cmsghdr* c = n > 0 ? CMSG_FIRSTHDR(&msg) : nullptr; c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int f;
      std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
      fds.push_back(f);
    }
  }
  if (n == 1 && byte == 0 && fds.size() == 2 && !(msg.msg_flags & MSG_CTRUNC)) {
    in = fds[0];
    out = fds[1];
    return true;
  }
  for (int f : fds) ::close(f);
  return false;
}

// A description of its own for a received pipe or terminal, opened again non-blocking, so that no
// other holder of the one passed (a terminal's shell) can make the daemon's reads or writes block
// by clearing O_NONBLOCK; a socket is kept as it is (only the command holds its description).
// -1 for anything else (a file, /dev/null: nothing to wait for). Closes `fd` unless kept.
int own_description(int fd, int access) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return -1;
  }
  if (S_ISSOCK(st.st_mode)) return fd;
  int own = -1;
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))
    own = ::open(fmt::format("/proc/self/fd/{}", fd).c_str(), access | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  ::close(fd);
  return own;
}

// Answers the command at once and closes: no session was made.
void refuse_now(int fd, std::string_view why) {
  log::warn("MCP socket: refused `oppx mcp serve`: {}", why);
  std::string line = proto::json_text(json::object{{"error", why}}) + "\n";
  (void)::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

}  // namespace

ServeOptions in_daemon_serve_options(Server& server, const std::string& cwd, std::string client, proto::StringMap env) {
  ServeOptions o;
  o.cwd = cwd;
  o.hello = proto::HelloParams{proto::kProtocolVersion, std::move(client), kBuildId, std::move(env), cwd};
  o.connect = [&server](std::string&) { return server.connect_in_memory(); };
  return o;
}

// One handed-over client: the command's connection (control) and the server on its descriptors.
struct StdioSession {
  std::unique_ptr<Transport> control;
  std::shared_ptr<McpServe> serve;
  std::string cwd;
  bool ended = false;
};

struct McpStdio::Impl : std::enable_shared_from_this<Impl> {
  explicit Impl(Server& server) : server(server), io(server.io()) {}
  Server& server;
  asio::io_context& io;
  std::set<std::shared_ptr<StdioSession>> sessions;

  void take(int fd) {
    int in = -1;
    int out = -1;
    if (!receive_descriptors(fd, in, out))
      return refuse_now(fd, "a connection began with a NUL byte but did not pass stdin and stdout");
    in = own_description(in, O_RDONLY);
    out = own_description(out, O_WRONLY);
    int ceiling = server.client_fd_ceiling();
    if (in < 0 || out < 0 || fd >= ceiling || in >= ceiling || out >= ceiling) {
      for (int f : {in, out})
        if (f >= 0) ::close(f);
      return refuse_now(fd, in < 0 || out < 0 ? "its stdin and stdout must be pipes, sockets or a terminal"
                                              : "the daemon has too many files and connections open");
    }
    NdjsonLimits limits;
    limits.max_line = kMaxControlLine;
    limits.stall_timeout = std::chrono::seconds(10);
    auto session = std::make_shared<StdioSession>();
    session->control = make_ndjson_transport(io, fd, fd, limits);
    sessions.insert(session);
    Transport::Handlers h;
    // The descriptors are the session's from here: closed when no server took them.
    auto fds = std::make_shared<std::pair<int, int>>(in, out);
    h.on_line = [w = weak_from_this(), session, fds](std::string line) {
      auto self = w.lock();
      if (!self || session->serve || session->ended) return;
      auto [in, out] = std::exchange(*fds, {-1, -1});  // begin() owns them now, served or closed
      self->begin(session, line, in, out);
    };
    h.on_closed = [w = weak_from_this(), session, fds](const TransportError&) {
      for (int f : {fds->first, fds->second})
        if (f >= 0) ::close(f);
      fds->first = fds->second = -1;
      auto self = w.lock();
      if (!self) return;
      self->end(session, false, "`oppx mcp serve` went away");
      // Let go after this turn: the transport is in its last callback, and the server's handlers
      // hold the session.
      asio::post(self->io, [w, session] {
        if (auto self = w.lock()) self->sessions.erase(session);
        session->serve.reset();
      });
    };
    session->control->start(std::move(h));
  }

  void refuse(const std::shared_ptr<StdioSession>& session, std::string why) {
    log::warn("MCP socket: refused `oppx mcp serve`: {}", why);
    session->control->send(line_of({{"error", std::move(why)}}));
    session->control->close();
  }

  void begin(const std::shared_ptr<StdioSession>& session, const std::string& line, int in, int out) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec) v = json::array{};  // not JSON: read as a value that is not an object
    proto::FieldReader r(v, "the first line");
    std::string cwd = r.absolute_path("cwd");
    std::int64_t timeout_ms = r.integer("timeout_ms", false).value_or(0);
    proto::StringMap env = r.string_map("env");  // the command's, as a hello gives it: ${VAR}
    struct stat st {};
    if (!r.ok() || cwd.empty() || ::stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      ::close(in);
      ::close(out);
      return refuse(session, !r.ok()       ? r.error()
                             : cwd.empty() ? std::string("the first line names no folder (cwd)")
                                           : "no folder " + cwd);
    }
    ServeOptions options = in_daemon_serve_options(server, cwd, "oppx mcp serve", std::move(env));
    if (timeout_ms > 0) options.call_timeout = std::chrono::milliseconds(timeout_ms);
    if (const json::value* s = r.object()->if_contains("state"); s && s->is_object())
      options.resume = serve_state_of(*s);
    std::weak_ptr<StdioSession> ws = session;
    options.on_state = [ws](const ServeState& state) {
      if (auto s = ws.lock(); s && !s->ended) s->control->send(line_of({{"state", to_json(state)}}));
    };
    options.on_client_gone = [w = weak_from_this(), ws] {
      auto self = w.lock();
      auto s = ws.lock();
      if (self && s) self->end(s, true, "the client closed its end");
    };
    session->cwd = cwd;
    session->control->send(line_of({{"serving", true}}));
    session->serve = serve_mcp(io, make_ndjson_transport(io, in, out), std::move(options));
    log::info("MCP over stdio: `oppx mcp serve` handed over its client for {}", cwd);
  }

  // `done`: the client closed its end, and the command is told so; else the command went away or
  // the daemon stops, and the command, if still there, hands over again. The session is let go
  // when its connection has closed.
  void end(const std::shared_ptr<StdioSession>& session, bool done, std::string_view why) {
    if (session->ended) return;
    session->ended = true;
    if (session->serve) log::info("MCP over stdio: a session for {} ended: {}", session->cwd, why);
    if (done) session->control->send(line_of({{"done", true}}));
    session->control->close();
    if (session->serve) end_serving(*session->serve);
  }
};

McpStdio::McpStdio(Server& server) : impl_(std::make_shared<Impl>(server)) {}
McpStdio::~McpStdio() { stop(); }

void McpStdio::take(int fd) { impl_->take(fd); }

void McpStdio::stop() {
  auto sessions = impl_->sessions;
  for (const auto& s : sessions) impl_->end(s, false, "the daemon stops");
}

}  // namespace oppx::daemon
