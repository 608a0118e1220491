// Server::Impl. Peer credentials are read with SO_PEERCRED right after accept, before a byte is
// read or written: another uid is logged and closed. The socket folder is watched with inotify,
// so a socket deleted under a running daemon comes back at once instead of leaving a daemon that
// holds the lock but cannot be reached.
#include "daemon/server.h"

#include "common/fs.h"
#include "common/log.h"
#include "common/paths.h"
#include "daemon/agent_service.h"
#include "daemon/browser.h"
#include "daemon/connectors.h"
#include "daemon/mcp_http.h"
#include "daemon/permissions.h"
#include "daemon/socket_activation.h"
#include "proto/daemon_api.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstring>
#include <map>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

namespace oppx::daemon {

namespace asio = boost::asio;
using unix_socket = asio::local::stream_protocol;

// Descriptors left for the connectors and files however many clients come (a stdio connector
// takes four: its three pipes and a pidfd).
constexpr int kFdHeadroom = 16;

int soft_fd_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 30)) return 1 << 30;
  return static_cast<int>(rl.rlim_cur);
}

namespace {

// $/cancelRequest cancels one of the client's calls as its disconnecting would, the session
// staying open; the daemon ignores any other notification, and an id that is not in flight.
void client_notification(const Client& client, const proto::Notification& n) {
  if (n.method != proto::kCancelRequest) return log::debug("client {}: ignored notification {}", client.id, n.method);
  const boost::json::value* id = n.params.is_object() ? n.params.as_object().if_contains("id") : nullptr;
  if (!id || !(id->is_string() || id->is_int64() || id->is_uint64()))
    return log::debug("client {}: ignored a {} without a string or integer id", client.id, n.method);
  auto peer = client.peer.lock();
  auto answer = proto::RpcError::make(proto::ErrorCode::kCancelled, proto::kind::kCancelled,
                                      "the request was cancelled by the client ($/cancelRequest)");
  if (peer && peer->cancel_request(*id, answer))
    log::debug("client {}: cancelled request {}", client.id, proto::id_key(*id));
}

}  // namespace

struct Server::Impl {
  Impl(Server& owner, asio::io_context& io, ServerOptions options)
      : owner(owner),
        io(io),
        options(std::move(options)),
        browser_spare(io),
        connectors(io, paths::state_dir()),
        permissions(paths::state_dir() + "/permissions.json", &connectors.worker()),
        acceptor(io),
        signals(io),
        watch(io),
        retry_timer(io) {}

  Server& owner;
  asio::io_context& io;
  ServerOptions options;
  Router router;
  BrowserSpare browser_spare;  // before the clients: their session browsers end first
  Connectors connectors;
  PermissionStore permissions;
  AgentService agents{owner};  // after the connectors: its sessions end first
  unix_socket::acceptor acceptor;
  asio::signal_set signals;
  asio::posix::stream_descriptor watch;
  asio::steady_timer retry_timer;
  std::array<char, 4096> watch_buf{};
  Listener listener;
  std::map<std::uint64_t, std::shared_ptr<JsonRpcPeer>> clients;
  std::uint64_t next_client = 1;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  bool stopping = false;
  int fd_limit = soft_fd_limit();
  int client_fd_ceiling = fd_limit - std::max(kFdHeadroom, fd_limit / 16);
  int spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::unique_ptr<McpHttp> mcp_http;  // last: its sessions' connections end first

  ~Impl() {
    if (spare_fd >= 0) ::close(spare_fd);
  }

  void adopt(BoundSocket s) {
    boost::system::error_code ec;
    acceptor.close(ec);
    acceptor.assign(unix_socket(), s.fd, ec);
    if (ec) log::error("cannot use the listening socket: {}", ec.message());
    listener.socket = s;
  }

  void accept_next() {
    if (stopping) return;
    acceptor.async_accept([this](boost::system::error_code ec, unix_socket::socket sock) {
      if (stopping || ec == asio::error::operation_aborted) return;
      if ((ec == asio::error::no_descriptors || ec.value() == ENFILE) && refuse_at_limit()) return accept_next();
      if (ec) {
        // EMFILE and friends: back off instead of spinning on an error that will repeat.
        log::warn("accept failed: {}; retrying in 100 ms", ec.message());
        retry_timer.expires_after(std::chrono::milliseconds(100));
        retry_timer.async_wait([this](boost::system::error_code e) {
          if (!e) accept_next();
        });
        return;
      }
      on_accept(std::move(sock));
      accept_next();
    });
  }

  void on_accept(unix_socket::socket sock) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(sock.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      log::warn("closed a connection whose credentials could not be read");
      return;
    }
    if (cred.uid != ::geteuid()) {
      log::warn("refused a connection from uid {} (pid {}): only uid {} may use this daemon", cred.uid, cred.pid,
                ::geteuid());
      return;  // the socket closes as it goes out of scope: nothing read, nothing sent
    }
    if (sock.native_handle() >= client_fd_ceiling) return refuse(sock.native_handle());
    boost::system::error_code ec;
    sock.non_blocking(true, ec);
    int fd = sock.release(ec);
    if (ec) return;
    serve(make_ndjson_transport(io, fd, fd, options.limits), cred);
  }

  // One connection (an accepted socket, the daemon's own end of an agent's socketpair, or of an
  // in-memory pair) as a client.
  void serve(std::unique_ptr<Transport> transport, const ucred& cred) {
    auto client = std::make_shared<Client>();
    client->id = next_client++;
    client->pid = cred.pid;
    client->uid = cred.uid;
    std::uint64_t id = client->id;

    JsonRpcPeer::Options po;
    po.name = "client " + std::to_string(id);
    po.on_request = [this, client](proto::Request req, Reply reply) {
      if (stopping) {
        return reply.fail(
            proto::RpcError::make(proto::ErrorCode::kShuttingDown, proto::kind::kShuttingDown,
                                  "the daemon is shutting down; run the command again to start a new one"));
      }
      router.dispatch(req, std::move(reply), *client);
    };
    po.on_notification = [client](proto::Notification n) { client_notification(*client, n); };
    po.on_closed = [this, id](const TransportError& e) {
      if (e.kind != "eof" && e.kind != "closed") log::warn("client {} dropped: {} ({})", id, e.message, e.kind);
      log::debug("client {} disconnected", id);
      agents.client_gone(id);
      // Erased later, not inside the peer's own callback.
      asio::post(io, [this, id] { clients.erase(id); });
    };
    auto peer = JsonRpcPeer::create(std::move(transport), std::move(po));
    client->peer = peer;
    clients.emplace(id, peer);
    log::debug("client {} connected (pid {})", id, cred.pid);
    peer->start();
  }

  // Near the descriptor limit: a new client would take an fd the connectors need (their pipes,
  // HTTP sockets, the files the daemon writes). It gets one error line and is closed; the
  // clients already connected go on. Descriptors are handed out lowest first, so an accepted fd
  // at or over the ceiling means at least that many are open.
  void refuse(int fd) {
    auto error = proto::RpcError::make(
        proto::ErrorCode::kInternal, proto::kind::kTooManyOpenFiles,
        fmt::format("oppxd has too many files and connections open (its limit is {}); close some oppx sessions, or "
                    "raise the limit (ulimit -Hn) and run `oppx daemon restart`",
                    fd_limit));
    std::string line = proto::serialize_error(nullptr, error) + "\n";
    // A fresh socket's buffer takes one short line; if not, the close alone says it.
    (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    log::warn("refused a client: {} descriptors of the limit of {} are in use", fd + 1, fd_limit);
  }

  // Accept at EMFILE/ENFILE: the one fd kept in reserve makes room to take the waiting client
  // and refuse it, instead of leaving it in the backlog with no answer.
  bool refuse_at_limit() {
    if (spare_fd < 0) return false;
    ::close(spare_fd);
    int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      refuse(fd);
      ::close(fd);
    }
    spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd >= 0;
  }

  void watch_folder() {
    int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0)
      return log::warn("cannot watch the socket folder (inotify: {}); a deleted socket will not come back", errno);
    const std::string dir = dirname_of(options.socket_path);
    if (::inotify_add_watch(fd, dir.c_str(), IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF) < 0) {
      ::close(fd);
      return log::warn("cannot watch the socket folder {}", dir);
    }
    watch.assign(fd);
    read_watch();
  }

  void read_watch() {
    watch.async_read_some(asio::buffer(watch_buf), [this](boost::system::error_code ec, std::size_t) {
      if (ec || stopping) return;
      if (!socket_is_ours(options.socket_path, listener.socket)) replace_socket();
      read_watch();
    });
  }

  void replace_socket() {
    if (::access(options.socket_path.c_str(), F_OK) == 0) {
      log::warn("{} was replaced by something else; leaving it alone", options.socket_path);
      return;
    }
    if (auto r = ensure_private_dir(dirname_of(options.socket_path)); !r) return log::error("{}", r.error());
    auto bound = bind_listener(options.socket_path);
    if (!bound) return log::error("the socket was deleted and could not be made again: {}", bound.error());
    log::warn("the socket {} was deleted; made it again", options.socket_path);
    adopt(*bound);
    accept_next();
  }

  void stop(const std::string& reason) {
    if (stopping) return;
    stopping = true;
    log::info("shutting down: {}", reason);
    boost::system::error_code ec;
    signals.cancel(ec);
    watch.close(ec);
    retry_timer.cancel();
    // systemd's socket stays for the next start (socket activation): only one we bound goes.
    if (!listener.socket.passed && socket_is_ours(options.socket_path, listener.socket))
      ::unlink(options.socket_path.c_str());
    acceptor.close(ec);
    if (mcp_http) mcp_http->stop();
    agents.stop();
    for (auto& [id, peer] : clients) peer->close();
    connectors.stop_all();
    browser_spare.stop();
  }
};

Server::Server(asio::io_context& io, ServerOptions options)
    : impl_(std::make_unique<Impl>(*this, io, std::move(options))) {
  register_methods(impl_->router, *this);
}

Server::~Server() {
  if (impl_->listener.lock_fd >= 0) ::close(impl_->listener.lock_fd);
}

boost::system::result<void, StartupError> Server::listen() {
  const ServerOptions& o = impl_->options;
  auto l = o.passed_fd >= 0 ? adopt_passed_socket(o.passed_fd, o.socket_path, o.lock_wait)
                            : acquire_socket(o.socket_path, o.lock_wait);
  if (!l) return l.error();
  if (l->socket.passed) log::info("serving the socket passed by systemd (socket activation)");
  impl_->listener.lock_fd = l->lock_fd;
  impl_->adopt(l->socket);
  return {};
}

void Server::start() {
  // A client that hangs up mid-reply must cost a write error, not the daemon (writes to the
  // socket go through write(2), which raises SIGPIPE).
  std::signal(SIGPIPE, SIG_IGN);
  if (impl_->options.handle_signals) {
    impl_->signals.add(SIGTERM);
    impl_->signals.add(SIGINT);
    impl_->signals.async_wait([this](boost::system::error_code ec, int sig) {
      if (!ec) stop(sig == SIGTERM ? "SIGTERM" : "SIGINT");
    });
  }
  impl_->watch_folder();
  // The same connectors for other MCP clients, as streamable HTTP on a socket beside this one.
  impl_->mcp_http = std::make_unique<McpHttp>(*this);
  std::string mcp = paths::mcp_http_socket(impl_->options.socket_path);
  if (std::string why = impl_->mcp_http->listen(mcp); !why.empty())
    log::warn("MCP over HTTP is off: {}", why);
  else
    log::info("MCP over HTTP on {}", mcp);
  log::info("oppxd {} (build {}) listening on {} (pid {})", OPPX_VERSION, kBuildId, impl_->options.socket_path,
            ::getpid());
  impl_->accept_next();
}

void Server::stop(const std::string& reason) { impl_->stop(reason); }

int Server::connect_self() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    log::warn("socketpair: {}", std::strerror(errno));
    return -1;
  }
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  ucred cred{::getpid(), ::geteuid(), ::getegid()};
  impl_->serve(make_ndjson_transport(impl_->io, fds[0], fds[0], impl_->options.limits), cred);
  return fds[1];
}

int Server::client_fd_ceiling() const { return impl_->client_fd_ceiling; }

std::unique_ptr<Transport> Server::connect_in_memory() {
  auto [ours, theirs] = make_memory_pair(impl_->io);
  impl_->serve(std::move(ours), ucred{::getpid(), ::geteuid(), ::getegid()});
  return std::move(theirs);
}
AgentService& Server::agents() { return impl_->agents; }
Router& Server::router() { return impl_->router; }
Connectors& Server::connectors() { return impl_->connectors; }
PermissionStore& Server::permissions() { return impl_->permissions; }
BrowserSpare& Server::browser_spare() { return impl_->browser_spare; }
asio::io_context& Server::io() { return impl_->io; }
const ServerOptions& Server::options() const { return impl_->options; }
std::int64_t Server::client_count() const {
  return std::count_if(impl_->clients.begin(), impl_->clients.end(), [](auto& c) { return !c.second->closed(); });
}
bool Server::stopping() const { return impl_->stopping; }

double Server::uptime_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - impl_->started).count();
}

}  // namespace oppx::daemon
