// The daemon's socket server: accepts on the Unix socket, checks each peer's uid, gives every
// client a JsonRpcPeer wired to the Router, keeps its socket in place (re-creating it if it is
// deleted), and shuts down cleanly on SIGTERM/SIGINT or daemon/shutdown. One io_context, one
// thread, no mutexes; nothing here blocks.
#pragma once

#include "common/ndjson_transport.h"
#include "daemon/router.h"
#include "daemon/startup.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

class PermissionStore;
class AgentService;
class BrowserSpare;

class Connectors;

struct ServerOptions {
  std::string socket_path;
  std::string log_path;
  NdjsonLimits limits;
  std::chrono::milliseconds lock_wait{3000};
  bool handle_signals = true;  // in-process tests leave the signals alone
  int passed_fd = -1;          // a listening socket from systemd (socket_activation.h), or -1
};

class Server {
 public:
  Server(boost::asio::io_context& io, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Takes the lock and the socket (startup.h); call before run().
  boost::system::result<void, StartupError> listen();
  // Starts accepting; returns at once (the io_context does the work).
  void start();
  // Stops accepting, removes our socket (only ours), closes clients after their queued replies.
  void stop(const std::string& reason);

  // A connection to this daemon from inside it (the agent's, daemon/agent_service.h): the server
  // serves one end of a socketpair as a client of this uid; the other end is returned (or -1).
  int connect_self();
  // The same without a socket: a connection in memory, for a server that lives in the daemon
  // (daemon/mcp_stdio.h, daemon/mcp_http.h): no system call between it and the daemon.
  std::unique_ptr<Transport> connect_in_memory();
  // A descriptor at or over this is a client too many: the connectors need the rest (see refuse()).
  int client_fd_ceiling() const;
  AgentService& agents();
  Router& router();
  Connectors& connectors();
  PermissionStore& permissions();
  BrowserSpare& browser_spare();  // the Playwright server kept for the next session (daemon/browser.h)
  boost::asio::io_context& io();
  const ServerOptions& options() const;
  std::int64_t client_count() const;
  double uptime_seconds() const;
  bool stopping() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The method table: every method of the socket API, one line each (methods.cpp).
void register_methods(Router& router, Server& server);

}  // namespace oppx::daemon
