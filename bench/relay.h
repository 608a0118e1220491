// The floor of bench/mcp_calls: the hops of a call through oppxd without oppxd's logic. A process
// of its own (as oppxd is one: a switch to it costs what a switch to oppxd costs) accepts one
// client on a Unix socket and copies bytes as they come between it and a child's pipes (no
// framing, no JSON), after the child's MCP handshake.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace oppx::bench {

class Relay {
 public:
  Relay() = default;
  ~Relay();  // ends the relay process and the child
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Starts `argv` on pipes, says initialize to it, and listens on `socket_path`; empty when all
  // went well, else what failed.
  std::string start(const std::string& socket_path, const std::vector<std::string>& argv);
  // The relay process, to read its CPU time beside oppxd's.
  pid_t pid() const { return relay_; }

 private:
  void pump();
  int listen_fd_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  int stop_pipe_[2] = {-1, -1};
  pid_t child_ = -1;
  pid_t relay_ = -1;
};

}  // namespace oppx::bench
