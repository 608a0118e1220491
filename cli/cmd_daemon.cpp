// oppx daemon status|start|stop|restart|logs (install-service: cmd_daemon_service.cpp).
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/daemon_service.h"
#include "cli/output.h"
#include "common/paths.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::cli {

namespace json = boost::json;

namespace {

int fail(const ClientError& e) {
  fmt::print(stderr, "oppx: {}\n", e.message);
  return e.exit_code;
}

std::string format_uptime(double s) {
  auto t = static_cast<long long>(s);
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m {}s", t / 60, t % 60);
  if (t < 86400) return fmt::format("{}h {}m", t / 3600, (t % 3600) / 60);
  return fmt::format("{}d {}h", t / 86400, (t % 86400) / 3600);
}

// How the daemon keeps connectors' processes from outliving them, for `oppx daemon status`.
std::string isolation_text(const proto::StatusResult& s) {
  if (s.isolation == "pid_namespace") return "a PID namespace per connector: all it starts ends with it";
  if (s.isolation == "process_group") {
    return fmt::format(
        "process groups and a reaper{}, since {}: a process that leaves its group can outlive its connector",
        s.reaper_pid > 0 ? fmt::format(" (pid {})", s.reaper_pid) : "", s.isolation_reason);
  }
  return "not known until a connector starts";
}

int status(Context& ctx) {
  const Command& self = *find_command("daemon", "status");
  bool as_json = take_flag(ctx.args, "--json");
  bool no_start = take_flag(ctx.args, "--no-start");
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);
  auto conn = connect_daemon(ctx.socket, no_start ? Start::kNever : Start::kIfNeeded);
  if (!conn) return fail(conn.error());
  if (conn->started) fmt::print(stderr, "oppx: started oppxd (pid {})\n", conn->hello.pid);
  auto r = conn->client.call(proto::kDaemonStatus, json::object{}, kCallTimeout);
  if (!r) return fail({kExitFailed, r.error().message});
  if (as_json) {
    fmt::print("{}", json_line(*r));
    return kExitOk;
  }
  auto s = proto::decode<proto::StatusResult>(*r);
  if (!s) return fail({kExitFailed, "the daemon's status reply is malformed (" + s.error() + ")"});
  fmt::print(
      "oppxd {} is running\n"
      "  pid         {}\n"
      "  build       {}\n"
      "  uptime      {}\n"
      "  clients     {}\n"
      "  connectors  {}\n"
      "  isolation   {}\n"
      "  memory      {:.1f} MiB\n"
      "  buffers     {:.1f} of {} MiB (what clients and servers are sending or not yet reading)\n"
      "  requests    {} sent to connectors and not answered yet\n"
      "  processes   {} started by the daemon and not ended yet\n"
      "  browser     the spare is {}\n"
      "  socket      {}\n"
      "  log         {}\n",
      s->version, s->pid, s->build, format_uptime(s->uptime_ms / 1000.0), s->clients, s->connectors, isolation_text(*s),
      s->rss_kib / 1024.0, s->buffered_bytes / 1048576.0, s->buffer_budget >> 20, s->requests_waiting, s->children,
      s->spare_state, s->socket, s->log);
  return kExitOk;
}

int start(Context& ctx) {
  if (!ctx.args.empty()) return usage_error(*find_command("daemon", "start"), "unexpected argument " + ctx.args[0]);
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) return fail(conn.error());
  fmt::print("{} oppxd (pid {}) on {}\n", conn->started ? "started" : "already running:", conn->hello.pid, ctx.socket);
  return kExitOk;
}

// How long `stop` gives a daemon to answer hello (the user asked for it to end: one that does not
// answer by then gets SIGTERM), and a frozen one to end after SIGTERM before SIGKILL.
constexpr std::chrono::milliseconds kStopHelloTimeout{3'000};
constexpr std::chrono::milliseconds kFrozenGrace{5'000};

// Ends an oppxd that holds its lock but does not answer: SIGTERM (with SIGCONT, so that one
// stopped by a signal acts on it), then SIGKILL after kFrozenGrace; returns once it is gone.
int end_frozen(std::int64_t pid) {
  auto p = static_cast<pid_t>(pid);
  auto signal = [p](int sig) { return ::kill(p, sig) == 0 || errno == ESRCH; };  // ESRCH: already gone
  auto cannot = [pid] {
    return fail({kExitFailed, fmt::format("cannot signal oppxd (pid {}): {}", pid, std::strerror(errno))});
  };
  if (!signal(SIGTERM) || !signal(SIGCONT)) return cannot();
  if (!wait_for_exit(pid, kFrozenGrace)) {
    fmt::print(stderr, "oppx: oppxd (pid {}) did not end within {} s of SIGTERM; sending SIGKILL\n", pid,
               kFrozenGrace.count() / 1000);
    if (!signal(SIGKILL)) return cannot();
    if (!wait_for_exit(pid, kStartTimeout)) {
      return fail({kExitFailed, fmt::format("oppxd (pid {}) is still there {} s after SIGKILL (a process stuck in "
                                            "the kernel); see `ps -o pid,stat,wchan -p {}`",
                                            pid, kStartTimeout.count() / 1000, pid)});
    }
  }
  fmt::print("stopped oppxd (pid {})\n", pid);
  return kExitOk;
}

}  // namespace

// Asks the daemon to stop and waits until its process is gone; one that is frozen (it holds the
// socket's lock but does not answer) is ended by signals. Returns an exit code.
int stop_daemon(const std::string& socket, bool quiet_if_absent) {
  auto conn = connect_daemon(socket, Start::kNever, kStopHelloTimeout);
  if (!conn && conn.error().exit_code == kExitNoDaemon) {
    std::int64_t holder = conn.error().frozen_pid > 0 ? conn.error().frozen_pid : lock_holder(socket);
    if (holder > 0) {
      fmt::print(stderr, "oppx: oppxd (pid {}) is frozen: it holds the lock of {} but does not answer; ending it\n",
                 holder, socket);
      return end_frozen(holder);
    }
    if (holder < 0) {
      return fail({kExitFailed, fmt::format("an oppxd holds the lock of {} but oppx cannot tell its pid (one that "
                                            "is starting has not written it yet); try again in a moment",
                                            socket)});
    }
    if (quiet_if_absent) return kExitOk;
    fmt::print("oppxd is not running on {}\n", socket);
    return kExitOk;
  }
  // A daemon of another protocol still stops: daemon/shutdown needs no hello.
  if (!conn && conn.error().exit_code != kExitMismatch) return fail(conn.error());
  std::int64_t pid = conn ? conn->hello.pid : std::max<std::int64_t>(lock_holder(socket), 0);
  auto client =
      conn ? boost::system::result<SyncClient, ConnectError>(std::move(conn->client)) : SyncClient::connect(socket);
  if (!client) return fail({kExitNoDaemon, client.error().message});
  auto r = client->call(proto::kDaemonShutdown, json::object{}, kCallTimeout);
  if (!r && r.error().kind == proto::kind::kTimeout && pid > 0) {
    fmt::print(stderr, "oppx: oppxd (pid {}) is frozen: it did not answer daemon/shutdown; ending it\n", pid);
    return end_frozen(pid);
  }
  if (!r) return fail({kExitFailed, "the daemon did not accept daemon/shutdown: " + r.error().message});
  if (pid > 0 && !wait_for_exit(pid, kStartTimeout)) {
    fmt::print(stderr, "oppx: oppxd (pid {}) accepted daemon/shutdown but did not stop within {} s; ending it\n", pid,
               kStartTimeout.count() / 1000);
    return end_frozen(pid);
  }
  fmt::print("stopped oppxd (pid {})\n", pid);
  return kExitOk;
}

namespace {

int stop(Context& ctx) {
  if (!ctx.args.empty()) return usage_error(*find_command("daemon", "stop"), "unexpected argument " + ctx.args[0]);
  return stop_daemon(ctx.socket, false);
}

int restart(Context& ctx) {
  if (!ctx.args.empty()) return usage_error(*find_command("daemon", "restart"), "unexpected argument " + ctx.args[0]);
  if (int rc = stop_daemon(ctx.socket, true); rc != kExitOk) return rc;
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) return fail(conn.error());
  fmt::print("started oppxd (pid {}) on {}\n", conn->hello.pid, ctx.socket);
  return kExitOk;
}

// The last `n` lines of the open file, read backwards from its end; leaves the offset at the end.
std::string tail(int fd, std::size_t n) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {};
  ::lseek(fd, st.st_size, SEEK_SET);
  if (n == 0) return {};
  std::string data;
  for (off_t pos = st.st_size; pos > 0 && static_cast<std::size_t>(std::count(data.begin(), data.end(), '\n')) <= n;) {
    off_t step = std::min<off_t>(pos, 65536);
    pos -= step;
    std::string chunk(static_cast<std::size_t>(step), '\0');
    if (::pread(fd, chunk.data(), chunk.size(), pos) != step) break;
    data.insert(0, chunk);
  }
  std::size_t i = data.size();
  if (i > 0 && data[i - 1] == '\n') --i;  // the final newline ends the last line
  for (std::size_t seen = 0; i > 0; --i) {
    if (data[i - 1] == '\n' && ++seen == n) break;
  }
  return data.substr(i);
}

int logs(Context& ctx) {
  const Command& self = *find_command("daemon", "logs");
  bool follow = take_flag(ctx.args, "--follow") || take_flag(ctx.args, "-f");
  std::size_t n = 50;
  for (std::size_t i = 0; i < ctx.args.size(); ++i) {
    if ((ctx.args[i] == "-n" || ctx.args[i] == "--lines") && i + 1 < ctx.args.size()) {
      char* end = nullptr;
      long v = std::strtol(ctx.args[i + 1].c_str(), &end, 10);
      if (!end || *end || v < 0) return usage_error(self, "-n takes a number of lines, not " + ctx.args[i + 1]);
      n = static_cast<std::size_t>(v);
      ctx.args.erase(ctx.args.begin() + static_cast<long>(i), ctx.args.begin() + static_cast<long>(i) + 2);
      --i;
    }
  }
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);
  const std::string path = paths::daemon_log();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fmt::print(stderr, "oppx: no daemon log at {} ({}); it appears once oppxd has run\n", path, std::strerror(errno));
    return kExitFailed;
  }
  std::string text = tail(fd, n);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (!follow) {
    ::close(fd);
    return kExitOk;
  }
  int in = ::inotify_init1(IN_CLOEXEC);
  ::inotify_add_watch(in, path.c_str(), IN_MODIFY);
  char buf[65536];
  for (;;) {
    ssize_t got;
    while ((got = ::read(fd, buf, sizeof buf)) > 0) std::fwrite(buf, 1, static_cast<std::size_t>(got), stdout);
    std::fflush(stdout);
    char ev[4096];
    if (::read(in, ev, sizeof ev) <= 0) break;  // Ctrl-C ends it
  }
  return kExitOk;
}

}  // namespace

std::vector<Command> daemon_commands() {
  std::vector<Command> table{
      {"daemon", "status", "[--json] [--no-start]", "Show the daemon's pid, build, uptime, clients and connectors.",
       "Starts the daemon when none answers, unless --no-start (then exit status 3 when it is not running).\n"
       "  --json       print the daemon/status reply as JSON\n"
       "  --no-start   only look; do not start a daemon",
       status},
      {"daemon", "start", "", "Start the daemon (nothing happens when it is already running).", "", start},
      {"daemon", "stop", "", "Stop the daemon and wait until it has exited.",
       "The daemon closes its clients after their last replies and removes its socket. A frozen daemon (it\n"
       "holds its lock but does not answer within 3 s) is named with its pid and ended: SIGTERM, then\n"
       "SIGKILL after 5 s.",
       stop},
      {"daemon", "restart", "", "Stop the daemon, then start a new one (after an update, or a version mismatch).",
       "A frozen daemon is ended as `oppx daemon stop` does.", restart},
      {"daemon", "logs", "[-n N] [-f]", "Print the end of the daemon's log.",
       "  -n, --lines N   how many lines (default 50)\n"
       "  -f, --follow    keep printing what is appended, until Ctrl-C\n"
       "The log is $XDG_STATE_HOME/oppx/oppxd.log (default ~/.local/state/oppx/oppxd.log).",
       logs},
  };
  return table;
}

}  // namespace oppx::cli
