// take_passed_socket, check_passed_socket, adopt_passed_socket. The environment is read and
// cleared before anything else runs: a connector that saw LISTEN_PID and LISTEN_FDS could take
// our listening socket's number for one passed to it.
#include "daemon/socket_activation.h"

#include "common/fs.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace oppx::daemon {

namespace {

// A decimal number of the environment, or -1 when it is missing or anything else.
long env_number(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v, &end, 10);
  return errno == 0 && end && *end == '\0' && n >= 0 ? n : -1;
}

std::string name_of(const sockaddr_un& addr, socklen_t len) {
  if (len <= offsetof(sockaddr_un, sun_path)) return "an unnamed socket";
  std::size_t n = len - offsetof(sockaddr_un, sun_path);
  if (addr.sun_path[0] == '\0') return "an abstract socket";
  return std::string(addr.sun_path, strnlen(addr.sun_path, n));
}

}  // namespace

int take_passed_socket() {
  const long pid = env_number("LISTEN_PID");
  const long fds = env_number("LISTEN_FDS");
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  // sd_listen_fds(3): the variables are for the process whose pid they name, not its children.
  if (pid != static_cast<long>(::getpid()) || fds < 1) return -1;
  int flags = ::fcntl(kPassedFd, F_GETFD);
  if (flags >= 0) ::fcntl(kPassedFd, F_SETFD, flags | FD_CLOEXEC);
  return kPassedFd;
}

std::string check_passed_socket(int fd, const std::string& socket_path) {
  int type = 0, listening = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) {
    return fmt::format("descriptor {} is not a socket ({}); check ListenStream= in oppxd.socket", fd,
                       std::strerror(errno));
  }
  sockaddr_un addr{};
  socklen_t addr_len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0 || addr.sun_family != AF_UNIX ||
      type != SOCK_STREAM) {
    return "the socket passed is not a Unix stream socket; oppxd.socket needs ListenStream= with a path";
  }
  len = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) {
    return "the socket passed is not listening; oppxd.socket must not set Accept=yes";
  }
  std::string bound = name_of(addr, addr_len);
  if (bound != socket_path) {
    return fmt::format(
        "the socket passed is bound to {}, but oppxd serves {} (from --socket, $OPPX_SOCKET or "
        "$XDG_RUNTIME_DIR); make ListenStream= in oppxd.socket and that path the same",
        bound, socket_path);
  }
  return {};
}

boost::system::result<Listener, StartupError> adopt_passed_socket(int fd, const std::string& path,
                                                                  std::chrono::milliseconds lock_wait) {
  // The same folder rules as a socket of our own: whoever can write the folder can swap the socket.
  if (auto r = ensure_private_dir(dirname_of(path)); !r)
    return StartupError{kExitUnsafePath, "refusing the socket passed by systemd: " + r.error()};
  if (std::string why = check_passed_socket(fd, path); !why.empty()) return StartupError{kExitUnsafePath, why};
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return StartupError{kExitUnsafePath,
                        fmt::format("the socket passed is bound to {}, but that path is no longer a socket; "
                                    "run `systemctl --user restart oppxd.socket`",
                                    path)};
  }
  // A socket that answers is the one passed to us: only the lock tells another daemon.
  auto lock_fd = take_lock(path, lock_wait, false);
  if (!lock_fd) return lock_fd.error();
  return Listener{BoundSocket{fd, st.st_dev, st.st_ino, true}, *lock_fd};
}

}  // namespace oppx::daemon
