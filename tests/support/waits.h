// Waiting in tests without spinning and without sleeping: a condition is checked, then checked
// again only when something that could change it happened (a file in a folder changed, a process
// exited or stopped, the daemon said a connector changed, a terminal pane printed), until a
// deadline. The daemon's own figures (clients, buffers, children, …) are waited for by the daemon
// itself: status_until. There is no wait on a timer here, on purpose: a condition nothing
// announces needs an announcement (see the tests' own comments for how each got one).
#pragma once

#include <boost/json/object.hpp>

#include <chrono>
#include <functional>
#include <set>
#include <string>

#include <sys/types.h>

namespace oppx {
class SyncClient;
}

namespace oppx::test {

using namespace std::chrono_literals;

// `pred` first, then after each change to a file in `dir` (created, written, renamed, removed).
bool when_files_change(const std::string& dir, const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = 10s);
// The same for the folder that holds `file`.
bool when_file_changes(const std::string& file, const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = 10s);

// `pred` first, then after each mcp/changed notification of the daemon on `socket` (a connector's
// state, reason or tool list changed): for conditions on what mcp/list and mcp/tools report.
bool when_connectors_change(const std::string& socket, const std::function<bool()>& pred,
                            std::chrono::milliseconds timeout = 10s);

// Until every one of `pids` has exited (pidfd: no polling of /proc), or the deadline.
bool wait_for_exits(const std::set<pid_t>& pids, std::chrono::milliseconds timeout = 10s);
inline bool wait_for_exit(pid_t pid, std::chrono::milliseconds timeout = 10s) { return wait_for_exits({pid}, timeout); }

// Until `child` is stopped by a signal (kill -STOP): true then, false when it exited or at the
// deadline. Only a parent is told of a stop, so `child` must be this process's own child (e.g. a
// ForegroundDaemon); it stays waitable. At the deadline it is SIGKILLed: the wait (waitid on a
// thread of its own) has no timeout, and a child that does not stop when told is a failure.
bool wait_for_stop(pid_t child, std::chrono::milliseconds timeout = 10s);

// daemon/status with `until` (docs/protocol.md): the daemon answers once every named field has its
// value (clients, buffered_bytes, requests_waiting, spare_state, children, worker_jobs), or at the deadline. The
// connection asking counts in "clients": {"clients": 1} is "every other client has gone", and
// then their sockets are closed already. True only when the daemon said until_met.
struct StatusWait {
  bool met = false;
  boost::json::object status;  // as the daemon answered (empty without an answer)
  std::string error;           // why there is no answer
  explicit operator bool() const { return met; }
  std::string describe() const;  // for a failure's message
};
StatusWait status_until(SyncClient& c, boost::json::object until, std::chrono::milliseconds timeout = 10s);
StatusWait status_until(const std::string& socket, boost::json::object until, std::chrono::milliseconds timeout = 10s);

}  // namespace oppx::test
