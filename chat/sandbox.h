// The agent's commands in a sandbox (Debian's bubblewrap), and the one way oppx runs a command for
// the agent: run_contained. The policy is data (SandboxPolicy: a mode as Codex names them, and the
// network); the mechanism is bwrap's namespaces. Every run ends its whole process tree at the time
// limit, on RunControl::cancel() and when it exits (bwrap's own PID namespace), and reads its
// output without blocking, bounded. run_contained blocks its caller until then.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::chat {

// read-only: the whole filesystem read-only. workspace-write (the default): read-only except the
// workspace and a private /tmp. off: no sandbox (the process tree is still contained).
enum class SandboxMode { kReadOnly, kWorkspaceWrite, kOff };

std::optional<SandboxMode> sandbox_mode_from(std::string_view name);  // "read-only", "workspace-write", "off"
const char* sandbox_mode_name(SandboxMode mode);

struct SandboxPolicy {
  SandboxMode mode = SandboxMode::kWorkspaceWrite;
  bool network = false;   // else the command has its own empty network namespace
  std::string workspace;  // writable in workspace-write (absolute)
  // Where a command's environment comes from: the client's (hello's env), since the agent in oppxd
  // runs commands for a client whose PATH, LANG and TERM are not the daemon's; none: this process's.
  std::optional<std::map<std::string, std::string>> client_env;
};

// The policy config.json sets ("sandbox": a mode's name, "sandbox_network": true or false) for a
// session in `cwd` (its workspace: the repository root, else `cwd`); `problem` gets why a setting was not taken (the
// default, workspace-write without network, stands then).
SandboxPolicy sandbox_policy_from_config(const std::string& cwd, std::string& problem);
// "workspace-write, no network" and the like, for the welcome box and /sandbox.
std::string describe_sandbox(const SandboxPolicy& policy);

// Whether bubblewrap can run here, found out once by running it (it needs a user namespace unless
// oppx runs as root). When it cannot, `reason` says why in words and what to do.
struct SandboxSupport {
  bool available = false;
  std::string bwrap;   // its path
  std::string reason;  // when not available
};
// Runs `bwrap` (a path or a name on PATH) once with the options a run uses.
SandboxSupport probe_sandbox(const std::string& bwrap);
// probe_sandbox("bwrap"), once per process ($OPPX_BWRAP names another program, for tests).
const SandboxSupport& sandbox_support();

// The environment variables a command keeps (every other one, API keys and tokens included, is
// dropped): these names, and every LC_*.
const std::vector<std::string>& sandbox_env_names();
// `NAME=value` for each allowed variable of the client's environment (policy.client_env), else of
// this process's; PWD is `cwd`.
std::vector<std::string> sandbox_environment(const std::string& cwd, const SandboxPolicy& policy);
// What a command under `policy` does not see, folders and files that exist (symlinks resolved):
// the secret_paths of $HOME, oppx's own folders, $XDG_RUNTIME_DIR and the agent sockets.
std::vector<std::string> sandbox_hidden_paths();
// bwrap's options for `policy` in `cwd`, up to and including "--" (argv[0] not included).
std::vector<std::string> sandbox_options(const SandboxPolicy& policy, const std::string& cwd);

// A cancel handle for one run at a time, usable from another thread: cancel() ends the run in
// progress (and the next one, until reset()).
class RunControl {
 public:
  RunControl();
  ~RunControl();
  RunControl(const RunControl&) = delete;
  RunControl& operator=(const RunControl&) = delete;
  void cancel();  // async-signal-safe
  void reset();
  bool cancelled() const { return cancelled_; }
  int fd() const { return fd_; }  // readable once cancelled

 private:
  int fd_ = -1;
  std::atomic<bool> cancelled_{false};
};

struct RunSpec {
  std::vector<std::string> argv;  // argv[0] a path or a name on PATH
  std::string cwd;
  std::chrono::milliseconds limit{120'000};
  std::size_t cap = 64 * 1024;  // bytes of output kept; the rest is read and dropped
  SandboxPolicy policy;
  const RunControl* control = nullptr;
  bool use_bwrap = true;  // false: a plain child in its own session (the group is killed)
};

struct RunOutcome {
  enum class End { kExited, kTimedOut, kCancelled, kFailed } end = End::kFailed;
  int status = 0;          // from waitpid, when kExited
  std::string output;      // stdout and stderr together, at most `cap` bytes
  std::size_t total = 0;   // bytes the command wrote
  std::string error;       // kFailed: why it could not start
  bool sandboxed = false;  // ran in bwrap with the policy's confinement (mode off: false)
};

// Runs spec.argv with stdin from /dev/null, under bwrap when the sandbox is available (mode off
// included, for the PID namespace), else as a plain child in its own session. Returns when the
// command and everything it started are gone, or at the limit, or on cancel (then they are
// killed first).
RunOutcome run_contained(const RunSpec& spec);

}  // namespace oppx::chat
