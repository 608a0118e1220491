// oppx as a streamable-HTTP MCP server on a second Unix socket, `oppxd-mcp.sock` beside the daemon's
// own (the same 0700 folder; every connection's uid checked): the server of common/mcp_serve.h,
// one per MCP session (Mcp-Session-Id), each with a daemon connection of its own made inside the
// daemon (Server::connect_in_memory). VS Code reaches it with a `unix://` URL. A POST of a request is
// answered with an event stream that carries its progress and ends with its response (a question
// asked while a call runs goes to the newest such stream); a GET opens the session's stream for
// the rest (list_changed); DELETE ends the session; at the cap of 64 sessions the one unused the
// longest with no stream open ends, and one unused for 30 minutes with no stream open ends too.
// `?cwd=/abs/folder` on the URL picks whose connectors and rules apply (default: HOME). A
// connection whose first byte is a NUL is instead `oppx mcp serve` handing over its stdin and
// stdout (daemon/mcp_stdio.h).
#pragma once

#include <memory>
#include <string>

namespace oppx::daemon {

class Server;

class McpHttp {
 public:
  explicit McpHttp(Server& server);
  ~McpHttp();
  McpHttp(const McpHttp&) = delete;
  McpHttp& operator=(const McpHttp&) = delete;

  // Binds `path` (a stale socket file there is replaced) and starts accepting; "" or why not.
  std::string listen(const std::string& path);
  // Stops accepting, ends every session and removes the socket file.
  void stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace oppx::daemon
