// oppxd: the per-user daemon. By default it detaches and returns once its socket is ready (or
// prints why it could not start, with an exit code from startup.h); --foreground stays attached
// and logs to stderr too, for debugging. Under systemd (Type=forking) it may be handed its socket
// (socket_activation.h).
#include "common/fs.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/retention.h"
#include "common/roff.h"
#include "daemon/child_process.h"
#include "daemon/connectors.h"
#include "daemon/server.h"
#include "daemon/socket_activation.h"
#include "proto/daemon_api.h"

#include <boost/asio/io_context.hpp>

#include <fmt/format.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <malloc.h>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

using namespace oppx;

constexpr const char* kUsage =
    "usage: oppxd [--socket PATH] [--foreground] [--verbose]\n"
    "\n"
    "The oppx daemon: owns the connectors and answers oppx and editor plugins on a Unix socket.\n"
    "You rarely start it yourself: every oppx command that needs it starts it.\n"
    "\n"
    "  --socket PATH   serve on PATH (default: $OPPX_SOCKET, else $XDG_RUNTIME_DIR/oppx/oppxd.sock,\n"
    "                  else /tmp/oppx-$UID/oppxd.sock)\n"
    "  --foreground    stay attached to the terminal and log to stderr as well\n"
    "  --verbose       log every connection and rejected message too\n"
    "  --version       print the version and build id\n"
    "  --help          this text\n"
    "\n"
    "Under systemd, oppxd.socket can hand it the socket (socket activation; `oppx daemon install-service`).\n"
    "Exit codes: 0 started, 1 failed, 2 usage, 3 unsafe socket path, 4 another oppxd already serves it.\n"
    "Log: $XDG_STATE_HOME/oppx/oppxd.log (default ~/.local/state/oppx/oppxd.log).\n";

// Start-up result, told to the waiting parent through a pipe: "0\n" or "<code> <message>".
void report(int fd, int code, const std::string& message) {
  std::string line = std::to_string(code) + " " + message + "\n";
  if (fd >= 0) {
    (void)!::write(fd, line.data(), line.size());
  } else if (code != 0) {
    fmt::print(stderr, "oppxd: {}\n", message);
  }
}

// Parent side of the detach: wait for the child's verdict.
int wait_for_child(int fd, pid_t child) {
  std::string got;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  if (got.empty()) {
    int st = 0;
    ::waitpid(child, &st, 0);
    fmt::print(stderr, "oppxd: the daemon exited while starting; see {}\n", paths::daemon_log());
    return daemon::kExitFailed;
  }
  int code = std::atoi(got.c_str());
  auto space = got.find(' ');
  std::string message = space == std::string::npos ? "" : got.substr(space + 1);
  while (!message.empty() && message.back() == '\n') message.pop_back();
  if (code != 0) fmt::print(stderr, "oppxd: {}\n", message);
  return code;
}

// A daemon that serves every session needs more descriptors than a shell's default soft limit
// (each client one, each connector four); the hard limit is what the user allows.
void raise_fd_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rl.rlim_cur = rl.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &rl);
}

void detach_stdio() {
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) return;
  ::dup2(null, STDIN_FILENO);
  ::dup2(null, STDOUT_FILENO);
  ::dup2(null, STDERR_FILENO);
  if (null > STDERR_FILENO) ::close(null);
}

#if defined(__SANITIZE_ADDRESS__)
// AddressSanitizer builds only: the test of the test harness (tests/support/sanitizer_reports_test)
// plants a leak with this variable to prove that a detached daemon's leaks at exit reach it.
[[gnu::noinline]] void plant_leak_for_the_harness_test() {
  if (!std::getenv("OPPXD_TEST_PLANT_LEAK")) return;
  char* volatile leaked = new char[48];
  leaked[0] = 'x';
  leaked = nullptr;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::string socket_arg;
  bool foreground = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--socket" && i + 1 < argc) {
      socket_arg = argv[++i];
    } else if (a.rfind("--socket=", 0) == 0) {
      socket_arg = a.substr(9);
    } else if (a == "--foreground") {
      foreground = true;
    } else if (a == "--verbose") {
      log::set_level(log::Level::kDebug);
    } else if (a == "--help" || a == "-h") {
      fmt::print("{}", kUsage);
      return 0;
    } else if (a == "--version") {
      fmt::print("oppxd {} (build {})\n", OPPX_VERSION, kBuildId);
      return 0;
    } else if (a == "--man") {  // `man oppxd`, from the text above (the build writes it: docs_generated)
      fmt::print("{}", roff::page_from_usage(kUsage, OPPX_VERSION,
                                             "the oppx daemon: MCP connectors, sessions and the agent", "oppx(1)"));
      return 0;
    } else {
      fmt::print(stderr, "oppxd: unknown argument {}\n{}", a, kUsage);
      return daemon::kExitUsage;
    }
  }

  // systemd's socket first (socket activation): its variables are cleared for every child, and its
  // descriptor is kept from the close below.
  const int passed_fd = daemon::take_passed_socket();
  // Whatever started us may have leaked descriptors; a daemon that keeps them holds pipes open.
  ::close_range(passed_fd >= 0 ? passed_fd + 1 : 3, ~0U, 0);
  raise_fd_limit();
  // Buffers of 1 MiB and more (a long line, a big answer) are mapped and go back to the system
  // when freed. By default glibc raises that threshold to the largest buffer freed so far and then
  // keeps up to twice as much in its heap: one 16 MiB line left the daemon 32 MiB bigger.
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  std::signal(SIGPIPE, SIG_IGN);
  const std::string socket_path = paths::socket_path(socket_arg);
  const std::string log_path = paths::daemon_log();

  int report_fd = -1;
  if (!foreground) {
    int pfd[2];
    if (::pipe2(pfd, O_CLOEXEC) != 0) {
      fmt::print(stderr, "oppxd: pipe: {}\n", std::strerror(errno));
      return daemon::kExitFailed;
    }
    pid_t pid = ::fork();
    if (pid < 0) {
      fmt::print(stderr, "oppxd: fork: {}\n", std::strerror(errno));
      return daemon::kExitFailed;
    }
    if (pid > 0) {
      ::close(pfd[1]);
      return wait_for_child(pfd[0], pid);
    }
    ::close(pfd[0]);
    report_fd = pfd[1];
    ::setsid();
    if (::chdir("/") != 0) {
      // Staying in the start folder only keeps it busy; not a reason to fail.
    }
  }

  if (auto r = ensure_private_dir(paths::state_dir()); !r) {
    report(report_fd, daemon::kExitUnsafePath, r.error());
    return daemon::kExitUnsafePath;
  }
  if (std::string err = log::open(log_path, foreground); !err.empty()) {
    report(report_fd, daemon::kExitFailed, err);
    return daemon::kExitFailed;
  }

  boost::asio::io_context io(1);
  daemon::watch_reaper_on(io);
  daemon::ServerOptions options{socket_path, log_path};
  options.passed_fd = passed_fd;
  daemon::Server server(io, std::move(options));
  if (auto r = server.listen(); !r) {
    log::write(r.error().exit_code == daemon::kExitAlreadyRunning ? log::Level::kInfo : log::Level::kError,
               r.error().message);
    report(report_fd, r.error().exit_code, r.error().message);
    return r.error().exit_code;
  }
  server.start();
  if (report_fd >= 0) {
    report(report_fd, 0, "ready");
    ::close(report_fd);
    detach_stdio();
  } else {
    fmt::print(stderr, "oppxd: ready on {} (pid {})\n", socket_path, ::getpid());
  }
  // The user's connectors start now, not at the first request, with this process's environment:
  // it is fresh at this moment (the oppx command that started the daemon passed its own). Later
  // requests bring their client's environment; see Connectors::refresh for when that restarts one.
  daemon::EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (auto eq = kv.find('='); eq != std::string_view::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  server.connectors().refresh(env, "", daemon::Connectors::Restart::kMay);
  // What old sessions' browsers left (snapshots of the pages read, logs), past config.json's
  // "retention_days". No session is open yet: none of it is in use.
  if (int n = prune_older_than(paths::cache_dir() + "/browser", retention()); n > 0)
    log::info("removed {} browser folders and logs older than the retention", n);
  if (int n = prune_older_than(paths::results_dir(), retention()); n > 0)
    log::info("removed {} cut tool results older than the retention", n);
#if defined(__SANITIZE_ADDRESS__)
  plant_leak_for_the_harness_test();  // here: in the daemon, not in the parent that waited for it
#endif
  io.run();
  log::info("stopped");
  return 0;
}
