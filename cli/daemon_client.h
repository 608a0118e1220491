// Reaching the daemon from the CLI: connect, say hello, and when none answers start one the way
// tmux does (take the start lock, try once more, spawn oppxd, wait for its socket with a
// deadline), so the first command after boot just works.
#pragma once

#include "common/sync_client.h"
#include "proto/daemon_api.h"

#include <boost/system/result.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace oppx::cli {

struct Connection {
  SyncClient client;
  proto::HelloResult hello;
  bool started = false;  // this command started the daemon
};

struct ClientError {
  int exit_code = 0;
  std::string message;
};

enum class Start { kIfNeeded, kNever };

boost::system::result<Connection, ClientError> connect_daemon(const std::string& socket, Start start);

// The warning printed when the daemon is from another build than this oppx; nullopt when same.
std::optional<std::string> build_mismatch_warning(const proto::HelloResult& hello, std::string_view my_build);

// Waits until process `pid` has exited; false at the deadline.
bool wait_for_exit(std::int64_t pid, std::chrono::milliseconds timeout);

inline constexpr std::chrono::milliseconds kCallTimeout{10'000};
inline constexpr std::chrono::milliseconds kStartTimeout{10'000};

}  // namespace oppx::cli
