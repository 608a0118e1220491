// Test support: a private temp HOME with XDG folders per test, real child processes with their
// output captured, and a daemon that the test starts and always ends. Every wait has a deadline.
#pragma once

#include "tests/support/waits.h"

#include "common/proc.h"
#include "common/sync_client.h"

#include <boost/json/value.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <sys/types.h>
#include <vector>

namespace oppx::test {

using namespace std::chrono_literals;

// A temp folder standing in for HOME, with run/ (0700, the XDG_RUNTIME_DIR), state/, config/.
// The constructor points this process's HOME and XDG_* at it, so in-process code and every child
// see only it, and the sanitizer reports of every child at sanitizer/. The destructor stops a
// daemon still answering on socket() with daemon/shutdown (so that its leaks are reported), fails
// the test on any sanitizer report, and removes the folder.
class TempHome {
 public:
  TempHome();
  ~TempHome();
  const std::string& root() const { return root_; }
  std::string socket() const { return root_ + "/run/oppx/oppxd.sock"; }
  std::string log() const { return root_ + "/state/oppx/oppxd.log"; }
  std::string sanitizer_dir() const { return root_ + "/sanitizer"; }
  std::string read_log() const;
  // Ends the daemon answering on socket(), if any, with daemon/shutdown, and waits for its exit:
  // a normal exit, after which LeakSanitizer has written its report.
  void stop_daemon() const;
  // Writes $XDG_CONFIG_HOME/oppx/mcp.json as {"mcpServers":{<servers>}}, atomically (rename).
  void write_mcp_config(const std::string& servers) const;

 private:
  std::string root_;
};

// server-everything, the MCP reference server, as the bootstrap installed it (build/npm).
inline const std::string kEverything =
    std::string(OPPX_NPM_DIR) + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";

// A port nobody listens on right now: bound to port 0, read, released. The server started on it
// next may race with another process for it, which the OS makes very unlikely right after.
int free_port();

// One stdio entry of mcp.json: "name":{"command":…,"args":[…]} (and "env" when given).
std::string stdio_entry(const std::string& name, const std::string& command, const std::vector<std::string>& args,
                        const std::vector<std::pair<std::string, std::string>>& env = {});

struct Result {
  int exit_code = -1;  // 128+signal when killed; -1 when it did not end in time
  std::string out;
  std::string err;
};

class Process {
 public:
  // argv[0] is a path or a name on PATH. stdout and stderr are captured.
  explicit Process(std::vector<std::string> argv);
  Process(Process&&) noexcept;
  ~Process();  // kills (SIGKILL) and reaps a child still running
  pid_t pid() const { return pid_; }
  // Waits for the exit, reading the output meanwhile.
  Result wait(std::chrono::milliseconds timeout = 20s);
  // Reads stderr until it contains `text`; false at the deadline or at the end of the stream.
  bool wait_for_stderr(const std::string& text, std::chrono::milliseconds timeout = 10s);
  bool wait_for_stdout(const std::string& text, std::chrono::milliseconds timeout = 10s);
  // The same, for `text` printed after the first `from` bytes of stdout.
  bool wait_for_stdout_after(std::size_t from, const std::string& text, std::chrono::milliseconds timeout);
  const std::string& err() const { return err_; }
  const std::string& out() const { return out_; }

 private:
  void pump(int timeout_ms);
  bool wait_for(const std::string& stream, const int& fd, const std::string& text, std::chrono::milliseconds timeout,
                std::size_t from = 0);
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_, err_;
  bool reaped_ = false;
  int status_ = 0;
};

Result run(std::vector<std::string> argv, std::chrono::milliseconds timeout = 20s);
Result oppx(std::vector<std::string> args, std::chrono::milliseconds timeout = 20s);  // build/oppx

// Connects to the socket, says hello, and calls; fails the test on a connection error.
boost::json::value status_of(const std::string& socket);
std::optional<std::int64_t> daemon_pid(const std::string& socket);  // nullopt when none answers

// kill -9 of the daemon `pid` in the middle of its file writes: `write(client, i)` is called over
// and over on another thread with `client` (one that said hello) and, once more than `writes` of
// them succeeded, the daemon is killed while they go on. Returns "" or why the writes stopped first.
using WriteCall = std::function<std::string(SyncClient& client, int i)>;  // "" or the error
std::string kill_daemon_mid_writes(SyncClient client, pid_t pid, int writes, const WriteCall& write);

// A client on the socket that said hello with this process's environment and `extra` over it;
// fails the test when none answers.
using EnvPairs = std::vector<std::pair<std::string, std::string>>;
std::optional<SyncClient> hello_client(const std::string& socket, const EnvPairs& extra = {});
// The same for the test's daemon, started first when none answers, as the CLI does.
std::optional<SyncClient> hello_client(const TempHome& home, const EnvPairs& extra = {});
// Starts the daemon when none runs and returns once none of the connectors that apply in `cwd`
// is still starting (mcp/list with wait). A session starts with what runs and never waits for
// one still starting: the chat's and the agent's tests wait for theirs first, as a user's daemon
// has them warm.
void connectors_settled(const TempHome& home, const std::string& cwd);
std::string read_file(const std::string& path);  // empty when missing

bool process_alive(pid_t pid);
bool process_stopped(pid_t pid);  // stopped by a signal (kill -STOP)
int open_fds(pid_t pid);
// Its descriptors and what each names ("3 socket:[123], 4 /dev/null, …"), for a failure message.
std::string fd_targets(pid_t pid);

// A self-signed certificate for localhost (DNS name, not 127.0.0.1) made by openssl in `dir`:
// cert.pem and key.pem; `made` is openssl's result.
struct LocalhostCert {
  std::string cert, key;
  Result made;
};
LocalhostCert localhost_cert(const std::string& dir);

// A repository (a folder with .git) in `home`, the current folder while it lives, so that every
// oppx command of the test runs inside it; the folder before comes back at the end.
class InRepository {
 public:
  explicit InRepository(const TempHome& home);
  ~InRepository();
  const std::string& root() const { return root_; }

 private:
  std::string root_, before_;
};

// For a DaemonProcess whose memory a test bounds. Under AddressSanitizer freed memory waits in a
// quarantine (256 MiB by default) that the daemon's RSS would count; this keeps it at 1 MiB, so
// that the figure is the daemon's own. Elsewhere the variable is unread.
inline const std::string kSmallAsanQuarantine = "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1 ";

// A daemon started with `oppxd --socket …` (detached); the destructor stops it, by signal if
// it has to, and waits for it to exit. `shell_prefix`, when given, is run by sh just before the
// daemon (e.g. "ulimit -Hn 41;" to start it under a limit).
class DaemonProcess {
 public:
  explicit DaemonProcess(const TempHome& home, const std::string& shell_prefix = "");
  ~DaemonProcess();
  std::int64_t pid() const { return pid_; }
  const Result& start_result() const { return start_; }

 private:
  const TempHome& home_;
  Result start_;
  std::int64_t pid_ = 0;
};

// `oppxd --foreground --socket …` as this test's own child, for what only a parent is told (that
// it stopped: wait_for_stop). Its stdout and stderr go to output() (a file: a pipe nobody reads
// would block its log). The constructor returns once it listens (its "ready on" line). The
// destructor ends one still running (SIGCONT, then SIGTERM, SIGKILL after 10 s) and reaps it.
class ForegroundDaemon {
 public:
  explicit ForegroundDaemon(const TempHome& home);
  ~ForegroundDaemon();
  ForegroundDaemon(const ForegroundDaemon&) = delete;
  ForegroundDaemon& operator=(const ForegroundDaemon&) = delete;
  pid_t pid() const { return pid_; }  // -1 when it could not be started
  bool ready() const { return ready_; }
  std::string output() const { return output_; }

 private:
  std::string output_;
  pid_t pid_ = -1;
  bool ready_ = false;
};

}  // namespace oppx::test
