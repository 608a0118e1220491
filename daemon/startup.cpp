// acquire_socket and friends. The order matters: the lock first, so that two daemons started at
// once never both decide the socket is stale; the connect test second, so that even a daemon
// that holds no lock (another build) is never displaced.
#include "daemon/startup.h"

#include "common/fs.h"
#include "common/paths.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace oppx::daemon {

namespace {

bool fill_addr(const std::string& path, sockaddr_un& addr) {
  addr = {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return true;
}

std::string lock_holder(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

bool socket_answers(const std::string& path) {
  sockaddr_un addr;
  if (!fill_addr(path, addr)) return false;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

bool socket_is_ours(const std::string& path, const BoundSocket& s) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == s.dev && st.st_ino == s.ino;
}

boost::system::result<BoundSocket, std::string> bind_listener(const std::string& path) {
  std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  sockaddr_un addr;
  if (!fill_addr(tmp, addr)) {
    return fmt::format(
        "the socket path {} is too long for a Unix socket ({} bytes; at most {} here); set OPPX_SOCKET to a shorter "
        "path",
        path, path.size(), sizeof addr.sun_path - 1 - (tmp.size() - path.size()));
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return fmt::format("socket: {}", std::strerror(errno));
  ::unlink(tmp.c_str());
  mode_t old_mask = ::umask(0177);  // the socket is born 0600
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old_mask);
  if (rc != 0 || ::listen(fd, 128) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return fmt::format("cannot listen on {}: {}", path, why);
  }
  struct stat st {};
  ::lstat(tmp.c_str(), &st);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return fmt::format("cannot put the socket in place at {}: {}", path, why);
  }
  return BoundSocket{fd, st.st_dev, st.st_ino};
}

boost::system::result<int, StartupError> take_lock(const std::string& path, std::chrono::milliseconds lock_wait,
                                                   bool answering_means_taken) {
  const std::string lock = paths::lock_path(path);
  int lock_fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd < 0)
    return StartupError{kExitUnsafePath, fmt::format("cannot open the lock file {}: {}", lock, std::strerror(errno))};

  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    std::string holder = lock_holder(lock_fd);
    if ((answering_means_taken && socket_answers(path)) || !lock_within(lock_fd, lock_wait)) {
      ::close(lock_fd);
      return StartupError{
          kExitAlreadyRunning,
          fmt::format("another oppxd (pid {}) already serves {}; stop it with `oppx daemon stop`", holder, path)};
    }
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd, 0) != 0 || ::pwrite(lock_fd, pid.data(), pid.size(), 0) < 0) {
    // The pid in the lock file only improves messages; the lock itself is what counts.
  }
  return {boost::system::in_place_value, lock_fd};
}

boost::system::result<Listener, StartupError> acquire_socket(const std::string& path,
                                                             std::chrono::milliseconds lock_wait) {
  const std::string dir = dirname_of(path);
  if (auto r = ensure_private_dir(dir); !r) return StartupError{kExitUnsafePath, r.error()};

  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
    return StartupError{
        kExitUnsafePath,
        fmt::format("refusing {}: it exists and is not a socket; move it away or set OPPX_SOCKET elsewhere", path)};
  }

  auto lock_fd = take_lock(path, lock_wait, true);
  if (!lock_fd) return lock_fd.error();
  // We hold the lock: no oppxd of ours serves this path. Something else answering is still left alone.
  if (::lstat(path.c_str(), &st) == 0 && socket_answers(path)) {
    ::close(*lock_fd);
    return StartupError{kExitAlreadyRunning,
                        fmt::format("something already answers on {} without holding {}; it is left alone. "
                                    "Stop it, or set OPPX_SOCKET to another path",
                                    path, paths::lock_path(path))};
  }

  auto bound = bind_listener(path);  // the rename replaces a stale socket in one step
  if (!bound) {
    ::close(*lock_fd);
    return StartupError{kExitFailed, bound.error()};
  }
  return Listener{*bound, *lock_fd};
}

}  // namespace oppx::daemon
