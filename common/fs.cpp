// check_private_dir / ensure_private_dir: the same test ssh-agent and tmux make of their socket
// folders, because whoever can write the folder can swap the socket under us.
#include "common/fs.h"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <sys/file.h>
#include <sys/time.h>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx {

std::string dirname_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string basename_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

namespace {
void on_alarm(int) {}
}  // namespace

// SIGALRM interrupts the blocking flock (the handler is installed without SA_RESTART).
bool lock_within(int fd, std::chrono::milliseconds wait) {
  if (wait.count() <= 0) return ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  struct sigaction sa {
  }, old{};
  sa.sa_handler = on_alarm;
  ::sigaction(SIGALRM, &sa, &old);
  itimerval t{};
  t.it_value.tv_sec = static_cast<time_t>(wait.count() / 1000);
  t.it_value.tv_usec = static_cast<suseconds_t>((wait.count() % 1000) * 1000);
  ::setitimer(ITIMER_REAL, &t, nullptr);
  int rc = ::flock(fd, LOCK_EX);
  itimerval off{};
  ::setitimer(ITIMER_REAL, &off, nullptr);
  ::sigaction(SIGALRM, &old, nullptr);
  return rc == 0;
}

boost::system::result<void, std::string> check_private_dir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return fmt::format("cannot use folder {}: {}", dir, std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) {
    return fmt::format("refusing folder {}: it is a symbolic link; remove it or point OPPX_SOCKET at a real folder",
                       dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    return fmt::format("refusing folder {}: it is not a folder; remove it or set OPPX_SOCKET elsewhere", dir);
  }
  if (st.st_uid != ::geteuid()) {
    return fmt::format(
        "refusing folder {}: it belongs to uid {}, not to you (uid {}); remove it or set OPPX_SOCKET elsewhere", dir,
        st.st_uid, ::geteuid());
  }
  if (st.st_mode & 077) {
    return fmt::format(
        "refusing folder {}: others can reach it (mode {:04o}); run `chmod 700 {}` or set OPPX_SOCKET elsewhere", dir,
        st.st_mode & 07777, dir);
  }
  return {};
}

boost::system::result<void, std::string> ensure_private_dir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return fmt::format("cannot use folder {}: {}", dir, std::strerror(errno));
    std::string parent = dirname_of(dir);
    if (parent != dir && ::access(parent.c_str(), F_OK) != 0) {
      if (auto r = ensure_private_dir(parent); !r) return r;
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return fmt::format("cannot create folder {}: {}", dir, std::strerror(errno));
    }
  }
  return check_private_dir(dir);
}

}  // namespace oppx
