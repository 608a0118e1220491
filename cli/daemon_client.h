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

inline constexpr std::chrono::milliseconds kCallTimeout{10'000};
inline constexpr std::chrono::milliseconds kStartTimeout{10'000};

struct Connection {
  SyncClient client;
  proto::HelloResult hello;
  bool started = false;  // this command started the daemon
};

struct ClientError {
  int exit_code = 0;
  std::string message;
  std::int64_t frozen_pid = 0;  // an oppxd that holds the socket's lock but did not answer hello
};

enum class Start { kIfNeeded, kNever };

// `hello_timeout`: how long the daemon has to answer hello; one that holds the lock and does not
// answer by then is frozen (ClientError::frozen_pid).
boost::system::result<Connection, ClientError> connect_daemon(const std::string& socket, Start start,
                                                              std::chrono::milliseconds hello_timeout = kCallTimeout);

// The process that holds the socket's lock (the one oppxd of that socket): its pid, read from the
// lock file and checked to have that file open; 0 when no process holds the lock, -1 when one does
// that cannot be told (an oppxd between taking the lock and writing its pid).
std::int64_t lock_holder(const std::string& socket);

// The warning printed when the daemon is from another build than this oppx; nullopt when same.
std::optional<std::string> build_mismatch_warning(const proto::HelloResult& hello, std::string_view my_build);

// Waits until process `pid` has exited; false at the deadline.
bool wait_for_exit(std::int64_t pid, std::chrono::milliseconds timeout);

// A reply this oppx cannot decode (`why` names the field; a daemon of another build answered):
// says so on stderr with the way out, and returns the exit status of a failed command.
int unreadable_answer(const std::string& why);

}  // namespace oppx::cli
