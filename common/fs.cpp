// check_private_dir / ensure_private_dir: the same test ssh-agent and tmux make of their socket
// folders, because whoever can write the folder can swap the socket under us.
#include "common/fs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <dirent.h>
#include <fcntl.h>
#include <csignal>
#include <sys/file.h>
#include <sys/time.h>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx {

std::string read_and_close(int fd, std::size_t cap) {
  std::string text;
  char buf[65536];
  ssize_t n;
  while (text.size() <= cap && ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))) {
    if (n > 0) text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

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

bool path_under(const std::string& path, const std::string& folder) {
  return path == folder || (path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 &&
                            (folder == "/" || path[folder.size()] == '/'));
}

std::string find_on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    std::string_view dir = dirs.substr(0, dirs.find(':'));
    dirs.remove_prefix(std::min(dirs.size(), dir.size() + 1));
    std::string candidate = std::string(dir) + "/" + program;
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

std::string repository_root(const std::string& folder) {
  if (folder.empty() || folder[0] != '/') return folder;
  std::string dir = folder;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  for (std::string d = dir;;) {
    struct stat st {};
    if (::lstat((d + (d == "/" ? ".git" : "/.git")).c_str(), &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
      return d;
    if (d == "/") break;
    d = dirname_of(d);
  }
  return dir;
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

namespace {

// "<file>.<pid>.tmp" left by a writer that was killed mid-write (kill -9, power loss): removed
// once that pid is gone, so they do not pile up beside the file.
// Gone, or a zombie that nobody has reaped yet: it will write nothing more.
bool writer_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::string stat = read_and_close(::open(fmt::format("/proc/{}/stat", pid).c_str(), O_RDONLY | O_CLOEXEC), 4096);
  auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

void remove_stale_temps(const std::string& path) {
  std::string dir = dirname_of(path);
  std::string prefix = path.substr(path.rfind('/') + 1) + ".";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    std::string_view n(e->d_name);
    if (!n.starts_with(prefix) || !n.ends_with(".tmp")) continue;
    std::string_view digits = n.substr(prefix.size(), n.size() - prefix.size() - 4);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos || digits.size() > 9) {
      continue;
    }
    auto pid = static_cast<pid_t>(std::stol(std::string(digits)));
    if (pid != ::getpid() && writer_gone(pid)) ::unlinkat(::dirfd(d), e->d_name, 0);
  }
  ::closedir(d);
}

// A slow disk on purpose, for the tests that show nobody waits for a write: with
// OPPX_TEST_WRITE_DELAY_MS set, each write holds its temp file that long before its fsync.
void test_write_delay() {
  static const long ms = [] {
    const char* v = std::getenv("OPPX_TEST_WRITE_DELAY_MS");
    return v ? std::strtol(v, nullptr, 10) : 0L;
  }();
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace

boost::system::result<void, std::string> atomic_write(const std::string& path, std::string_view content, int mode) {
  std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return fmt::format("cannot write {}: {}", tmp, std::strerror(errno));
  // Nothing was replaced: the file is as it was, which the message says (the user's next step).
  auto fail = [&](const char* what) {
    int err = errno;
    std::string e =
        err == ENOSPC || err == EDQUOT
            ? fmt::format(
                  "cannot write {}: the disk is full ({}); the file is unchanged: free some "
                  "space there and try again",
                  path, std::strerror(err))
            : fmt::format("cannot write {} ({}: {}); the file is unchanged", path, what, std::strerror(err));
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  };
  for (std::size_t off = 0; off < content.size();) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    off += static_cast<std::size_t>(n);
  }
  test_write_delay();
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0 || ::fsync(fd) != 0) return fail("fsync");
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string e = fmt::format("cannot put {} in place: {}", path, std::strerror(errno));
    ::unlink(tmp.c_str());
    return e;
  }
  remove_stale_temps(path);
  int dir = ::open(dirname_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    int rc = ::fsync(dir);
    ::close(dir);
    if (rc != 0) return fmt::format("cannot sync the folder of {}: {}", path, std::strerror(errno));
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
