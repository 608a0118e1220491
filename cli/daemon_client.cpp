// connect_daemon and the start protocol. Waiting is on events, each bounded by the deadline:
// inotify on the socket folder (the daemon renames its socket into place once it listens) and a
// pidfd on the oppxd we spawned (its launcher exits once the daemon is ready, or with the reason).
#include "cli/daemon_client.h"

#include "cli/commands.h"
#include "common/fs.h"
#include "common/paths.h"

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace oppx::cli {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

std::string find_oppxd() {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string next_to_us = dirname_of(self) + "/oppxd";
    if (::access(next_to_us.c_str(), X_OK) == 0) return next_to_us;
  }
  if (const char* path = std::getenv("PATH")) {
    std::string_view p(path);
    while (!p.empty()) {
      auto colon = p.find(':');
      std::string dir(p.substr(0, colon));
      std::string candidate = (dir.empty() ? "." : dir) + "/oppxd";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      if (colon == std::string_view::npos) break;
      p.remove_prefix(colon + 1);
    }
  }
  return {};
}

// `closed`, when given, is set when the connection ended during hello (the daemon went away).
boost::system::result<Connection, ClientError> greet(SyncClient client, const std::string& socket,
                                                     std::chrono::milliseconds timeout, std::string* closed = nullptr) {
  // The daemon expands ${VAR} in connector definitions from this environment, never its own.
  proto::HelloParams hp{proto::kProtocolVersion, "oppx " OPPX_VERSION, kBuildId, {}};
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (auto eq = kv.find('='); eq != std::string_view::npos) hp.env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  // Where this command runs: the daemon reads that repository's .mcp.json.
  if (char cwd[PATH_MAX]; ::getcwd(cwd, sizeof cwd)) hp.cwd = cwd;
  json::value params = json::value_from(hp);
  auto r = client.call(proto::kHello, params, timeout);
  if (!r) {
    if (r.error().kind == proto::kind::kVersionMismatch) return ClientError{kExitMismatch, r.error().message};
    if (closed && r.error().kind == proto::kind::kDisconnected) *closed = r.error().message;
    if (std::int64_t pid = r.error().kind == proto::kind::kTimeout ? lock_holder(socket) : 0; pid > 0) {
      return ClientError{kExitNoDaemon,
                         fmt::format("oppxd (pid {}) is frozen: it holds the lock of {} but did not answer within {} "
                                     "s; `oppx daemon restart` ends it and starts a new one",
                                     pid, socket, (timeout.count() + 999) / 1000),
                         pid};
    }
    return ClientError{kExitNoDaemon, "the daemon did not answer hello: " + r.error().message};
  }
  auto hello = proto::decode<proto::HelloResult>(*r);
  if (!hello) return ClientError{kExitNoDaemon, "the daemon's hello reply is malformed (" + hello.error() + ")"};
  if (auto w = build_mismatch_warning(*hello, kBuildId)) fmt::print(stderr, "oppx: warning: {}\n", *w);
  return Connection{std::move(client), *hello, false};
}

// Waits for the daemon's socket to accept, or for the launcher to report failure.
boost::system::result<SyncClient, ClientError> wait_for_daemon(const std::string& socket, pid_t launcher,
                                                               int watch_fd) {
  auto deadline = Clock::now() + kStartTimeout;
  int pidfd = pidfd_open(launcher);
  bool launcher_done = false;
  ClientError failure{kExitNoDaemon, ""};
  for (;;) {
    if (auto c = SyncClient::connect(socket)) {
      if (pidfd >= 0) ::close(pidfd);
      if (!launcher_done) ::waitpid(launcher, nullptr, WNOHANG);
      return std::move(*c);
    }
    if (!launcher_done) {
      int st = 0;
      pid_t w = ::waitpid(launcher, &st, WNOHANG);
      if (w == launcher) {
        launcher_done = true;
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        // 4: another oppxd holds the socket (starting, or stopping): keep waiting for it. 0: it is
        // ready, the connect above will see it on the next turn.
        if (code != 0 && code != 4) {
          failure.message = fmt::format("oppxd could not start (exit status {}; its reason is above); see {}", code,
                                        paths::daemon_log());
          break;
        }
        if (pidfd >= 0) ::close(pidfd);
        pidfd = -1;
        if (code == 0) continue;
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      failure.message = fmt::format("no daemon answered on {} within {} s; see {}", socket,
                                    kStartTimeout.count() / 1000, paths::daemon_log());
      break;
    }
    pollfd fds[2] = {{watch_fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int nfds = pidfd >= 0 ? 2 : 1;
    if (::poll(fds, static_cast<nfds_t>(nfds), static_cast<int>(left)) > 0 && (fds[0].revents & POLLIN)) {
      char buf[4096];
      while (::read(watch_fd, buf, sizeof buf) > 0) {
      }
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  return failure;
}

boost::system::result<SyncClient, ClientError> start_daemon(const std::string& socket) {
  const std::string dir = dirname_of(socket);
  if (auto r = ensure_private_dir(dir); !r) return ClientError{kExitNoDaemon, r.error()};

  // One CLI at a time starts a daemon; the others wait here, then find it running.
  const std::string lock = paths::start_lock_path(socket);
  int lock_fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd < 0) return ClientError{kExitNoDaemon, fmt::format("cannot open {}: {}", lock, std::strerror(errno))};
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock_fd};
  if (!lock_within(lock_fd, kStartTimeout)) {
    return ClientError{kExitNoDaemon, fmt::format("another oppx has been starting the daemon for {} s; see {}",
                                                  kStartTimeout.count() / 1000, paths::daemon_log())};
  }
  if (auto c = SyncClient::connect(socket)) return std::move(*c);

  std::string oppxd = find_oppxd();
  if (oppxd.empty()) {
    return ClientError{kExitNoDaemon,
                       "cannot find oppxd next to oppx or on PATH; reinstall oppx (packaging/bootstrap.sh)"};
  }
  int watch_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (watch_fd >= 0) ::inotify_add_watch(watch_fd, dir.c_str(), IN_MOVED_TO | IN_CREATE);
  struct CloseWatch {
    int fd;
    ~CloseWatch() {
      if (fd >= 0) ::close(fd);
    }
  } close_watch{watch_fd};

  std::string socket_arg = "--socket=" + socket;
  char* argv[] = {oppxd.data(), socket_arg.data(), nullptr};
  pid_t pid = 0;
  if (int rc = ::posix_spawn(&pid, oppxd.c_str(), nullptr, nullptr, argv, environ); rc != 0) {
    return ClientError{kExitNoDaemon, fmt::format("cannot run {}: {}", oppxd, std::strerror(rc))};
  }
  return wait_for_daemon(socket, pid, watch_fd);
}

}  // namespace

std::optional<std::string> build_mismatch_warning(const proto::HelloResult& hello, std::string_view my_build) {
  if (hello.build == my_build) return std::nullopt;
  return fmt::format(
      "oppxd (pid {}) is from another build ({}; this oppx is {}); restart the daemon with `oppx daemon restart`",
      hello.pid, hello.build.empty() ? "unknown" : hello.build, my_build);
}

boost::system::result<Connection, ClientError> connect_daemon(const std::string& socket, Start start,
                                                              std::chrono::milliseconds hello_timeout) {
  // Whoever can write the folder could have put their own daemon there: refuse before talking.
  if (struct stat st{}; ::lstat(dirname_of(socket).c_str(), &st) == 0) {
    if (auto r = check_private_dir(dirname_of(socket)); !r) return ClientError{kExitNoDaemon, r.error()};
  }
  auto c = SyncClient::connect(socket);
  for (int again = 0; c && again < 2; ++again) {
    // A daemon dying as we connect (a crash, kill -9) can have its socket take the connection and
    // then close it: once its socket refuses, one is started below.
    std::string was_closed;
    auto conn = greet(std::move(*c), socket, hello_timeout, &was_closed);
    if (conn || was_closed.empty() || start == Start::kNever) return conn;
    c = SyncClient::connect(socket);
    if (c && again == 1) return ClientError{kExitNoDaemon, "the daemon did not answer hello: " + was_closed};
  }
  const ConnectError& e = c.error();
  if (e.kind != ConnectError::Kind::kNoDaemon) {
    std::string hint = e.kind == ConnectError::Kind::kPermission
                           ? "; the socket is not yours, so set OPPX_SOCKET to a path in a folder of your own"
                           : "";
    return ClientError{kExitNoDaemon, e.message + hint};
  }
  if (start == Start::kNever) {
    return ClientError{kExitNoDaemon,
                       fmt::format("oppxd is not running on {}; start it with `oppx daemon start`", socket)};
  }
  auto started = start_daemon(socket);
  if (!started) return started.error();
  auto conn = greet(std::move(*started), socket, hello_timeout);
  if (conn) conn->started = true;
  return conn;
}

std::int64_t lock_holder(const std::string& socket) {
  int fd = ::open(paths::lock_path(socket).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;  // no lock file: no oppxd ever served this socket
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_it{fd};
  // A shared lock is refused only while an oppxd holds it; when taken, it goes at the close.
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0) return 0;
  if (errno != EWOULDBLOCK) return -1;
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  long long pid = n > 0 ? std::atoll(buf) : 0;
  struct stat lock {};
  if (pid <= 0 || pid > INT_MAX || ::fstat(fd, &lock) != 0) return -1;
  // The pid in the file is the holder's only when that process has the file open.
  std::string fds = fmt::format("/proc/{}/fd", pid);
  DIR* d = ::opendir(fds.c_str());
  if (!d) return -1;
  bool holds = false;
  while (dirent* e = ::readdir(d)) {
    struct stat st {};
    if (::stat((fds + "/" + e->d_name).c_str(), &st) == 0 && st.st_dev == lock.st_dev && st.st_ino == lock.st_ino) {
      holds = true;
      break;
    }
  }
  ::closedir(d);
  return holds ? pid : -1;
}

bool wait_for_exit(std::int64_t pid, std::chrono::milliseconds timeout) {
  int fd = pidfd_open(static_cast<pid_t>(pid));
  if (fd < 0) return errno == ESRCH;
  pollfd p{fd, POLLIN, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  ::close(fd);
  return rc > 0;
}

int unreadable_answer(const std::string& why) {
  fmt::print(stderr, "oppx: {}\n", proto::unreadable_reply(why));
  return kExitFailed;
}

}  // namespace oppx::cli
