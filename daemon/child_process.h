// Child processes for stdio connectors: each in its own session and process group (so Ctrl-C in
// a terminal never reaches it and `npx` → `node` ends together), with fds 0–2 only, SIGPIPE and
// the signal mask reset, in a PID namespace of its own, and no orphans even when the daemon is
// killed: see child_process.cpp.
// The only file that creates processes is child_process.cpp; its only caller is Subprocess
// (daemon/subprocess.h), which owns each running child.
#pragma once

#include <boost/system/result.hpp>

#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

struct SpawnSpec {
  std::string program;            // a path, or a name looked up on the PATH in `env`
  std::vector<std::string> args;  // without argv[0]
  std::vector<std::string> env;   // "KEY=VALUE", the whole environment of the child
  std::string cwd;                // the folder it starts in (absolute); empty: the daemon's
};

struct Child {
  pid_t pid = -1;  // also its process group and session id (as the daemon sees them)
  int in = -1;     // its stdin (we write)
  int out = -1;    // its stdout (we read)
  int err = -1;    // its stderr (we read)
};

struct SpawnError {
  bool not_installed = false;  // the program is not on PATH or not executable
  std::string message;
};

// Finds `program` on the PATH given in `env` (or takes it as a path). A relative path, and a
// relative folder on the PATH, are taken from `cwd` (the child's folder), as the child's exec
// would. Empty when not found.
std::string find_program(const std::string& program, const std::vector<std::string>& env, const std::string& cwd = {});

// Starts the child with PR_SET_PDEATHSIG(SIGKILL) in a PID namespace of its own (or, where that
// is refused, with its group told to the group reaper). `done` runs on `io` once its program was
// exec'd or could not be (never within this call): a slow exec holds up no one. Called on the
// loop's thread only.
using Spawned = std::function<void(boost::system::result<Child, SpawnError>)>;
void spawn_child(boost::asio::io_context& io, const SpawnSpec& spec, Spawned done);

struct ExitStatus {
  bool signaled = false;  // killed by signal `code`; else it exited with status `code`
  int code = 0;
};

// Reaps the child if it has exited, never waiting: waitid(WEXITED | WNOHANG), on its pidfd when
// `pidfd` >= 0. nullopt while it runs; the error when it cannot be asked (ECHILD: not ours, or
// already reaped).
boost::system::result<std::optional<ExitStatus>, std::string> try_reap(pid_t pid, int pidfd);

// Signals the child's whole process group.
void signal_group(pid_t pgid, int sig);

// After the child was reaped: SIGKILL to what is left of its group (grandchildren) and to its
// namespace's init (the kernel then ends the rest of the namespace), and the reaper forgets the
// group, so that a later process group with the same number is never hit.
void release_group(pid_t pgid);

// How the last child started is kept from outliving its connector and the daemon.
struct Isolation {
  std::string kind;    // "pid_namespace", "process_group", or "" before the first child
  std::string reason;  // for "process_group": why not a PID namespace
};
const Isolation& connector_isolation();
pid_t reaper_pid();  // the group reaper's pid; 0 when none runs

// The daemon's children not reaped yet (servers, their namespaces' inits, the group reaper), as
// daemon/status "children"; each reap signals common/changes.h, so a status wait can name it.
std::size_t children_unreaped();

// Watches the group reaper on `io`: when it dies, that is logged and another is started, told
// every group the last one knew.
void watch_reaper_on(boost::asio::io_context& io);

}  // namespace oppx::daemon
