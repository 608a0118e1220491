// The floor of bench/mcp_calls: the hops of a call through oppxd without oppxd's logic. A thread
// accepts one client on a Unix socket and copies bytes as they come between it and a child's
// pipes (no framing, no JSON), after the child's MCP handshake.
#pragma once

#include <atomic>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace oppx::bench {

class Relay {
 public:
  Relay() = default;
  ~Relay();  // ends the thread and the child
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Starts `argv` on pipes, says initialize to it, and listens on `socket_path`; empty when all
  // went well, else what failed.
  std::string start(const std::string& socket_path, const std::vector<std::string>& argv);
  // The relay thread's id (0 until it runs), to read its CPU time beside oppxd's.
  pid_t tid() const { return tid_.load(); }

 private:
  void pump();
  int listen_fd_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  int stop_pipe_[2] = {-1, -1};
  pid_t child_ = -1;
  std::atomic<pid_t> tid_{0};
  std::thread thread_;
};

}  // namespace oppx::bench
