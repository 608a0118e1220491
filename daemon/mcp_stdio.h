// `oppx mcp serve` served inside the daemon, so that no process stands between the MCP client and
// oppxd. The command connects to the MCP socket (daemon/mcp_http.h) and sends one NUL byte with
// its stdin and stdout attached (SCM_RIGHTS), then one line:
//   {"cwd": "/abs", "timeout_ms": 120000, "env": {...}, "state": {...}}
// (env: the command's environment, for ${VAR} as in hello; state: only when taking over again).
// Its stdin and stdout must be pipes, sockets or a terminal; pipes and terminals are opened again
// by the daemon (a description of its own, non-blocking), and at the daemon's descriptor ceiling
// the handover is refused, so that the command relays instead.
// The daemon runs common/mcp_serve.h's server on those two descriptors and answers on the same
// connection, one line each:
//   {"serving": true}          the session runs
//   {"state": {...}}           what a daemon taking over later must know (mcp_serve.h's ServeState)
//   {"done": true}             the client closed its end: the command exits
//   {"error": "why"}           refused (the connection then closes)
// The connection is the session's lifeline: when the command exits (killed, say) the daemon ends
// the session and lets go of the descriptors. When the daemon stops instead, the connection
// closes without "done", and the command hands the same descriptors over again as soon as a
// daemon answers (a restart; looked for during 10 s), else at the client's next message, which
// starts one (cli/cmd_mcp_serve.cpp).
#pragma once

#include "proto/decode.h"

#include <memory>
#include <string>

namespace oppx {
struct ServeOptions;
}

namespace oppx::daemon {

class Server;

// A server inside the daemon for `cwd`: its daemon connection is made by Server::connect_in_memory,
// with hello said first.
ServeOptions in_daemon_serve_options(Server& server, const std::string& cwd, std::string client,
                                     proto::StringMap env = {});

class McpStdio {
 public:
  explicit McpStdio(Server& server);
  ~McpStdio();
  McpStdio(const McpStdio&) = delete;
  McpStdio& operator=(const McpStdio&) = delete;

  // Takes the connection `fd` (its peer's uid checked, its NUL byte ready to read); owns it.
  void take(int fd);
  // Ends every session without "done" (the daemon stops): their commands hand over again later.
  void stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace oppx::daemon
