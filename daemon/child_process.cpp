// spawn_child: fork + exec rather than posix_spawn, because the child must set
// PR_SET_PDEATHSIG(SIGKILL) before exec (posix_spawn has no way to). That ends the child when
// the daemon dies, even by kill -9, but not its grandchildren (`npx` → `node`, `sh -c` → …): for
// those a small reaper process, forked once, holds the read end of a pipe on which the daemon
// writes the process group of each child it starts (+pgid) and reaps (-pgid). When the daemon
// dies the pipe ends, and the reaper SIGKILLs every group it still knows, then exits.
// Between fork and exec only async-signal-safe calls are made: the daemon may have other threads
// (Asio's resolver), and the child of a fork has only the one that forked.
#include "daemon/child_process.h"

#include "common/log.h"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oppx::daemon {

namespace {

bool executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// In a forked child: every signal back to its default and none blocked (exec keeps ignored
// signals ignored and the mask as it is; the daemon ignores SIGPIPE and its handlers are Asio's).
void reset_signals() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Blocks every signal in the daemon around a fork, so no handler of the daemon runs in the child
// before reset_signals (Asio's would write into the daemon's signal pipe).
struct BlockSignals {
  sigset_t old;
  BlockSignals() {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
  }
  ~BlockSignals() { ::pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

constexpr int kReaperSlots = 4096;

// The reaper's whole life, in the forked process: no allocation, only system calls.
[[noreturn]] void reaper_main(int fd) {
  static pid_t groups[kReaperSlots];
  int count = 0;
  char buf[4 * 256];
  std::size_t have = 0;
  while (true) {
    ssize_t n = ::read(fd, buf + have, sizeof buf - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the daemon is gone (or the pipe broke): end what it left
    have += static_cast<std::size_t>(n);
    std::size_t used = 0;
    for (; used + sizeof(std::int32_t) <= have; used += sizeof(std::int32_t)) {
      std::int32_t v;
      std::memcpy(&v, buf + used, sizeof v);
      if (v > 0) {
        if (count < kReaperSlots) groups[count++] = v;
      } else {
        for (int i = 0; i < count; ++i) {
          if (groups[i] == -v) {
            groups[i] = groups[--count];
            break;
          }
        }
      }
    }
    std::memmove(buf, buf + used, have - used);
    have -= used;
  }
  for (int i = 0; i < count; ++i) ::kill(-groups[i], SIGKILL);
  ::_exit(0);
}

int reaper_fd = -1;  // the daemon's write end; -1 until the first child

void tell_reaper(std::int32_t v) {
  if (reaper_fd < 0) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return log::warn("no group reaper (pipe: {})", std::strerror(errno));
    pid_t pid;
    {
      BlockSignals blocked;
      pid = ::fork();
      if (pid == 0) {
        reset_signals();
        ::setsid();  // no terminal's signals, and outside the daemon's group
        ::dup2(p[0], 3);
        ::close_range(4, ~0U, 0);
        ::close(0), ::close(1), ::close(2);
        reaper_main(3);
      }
    }
    ::close(p[0]);
    if (pid < 0) {
      ::close(p[1]);
      return log::warn("no group reaper (fork: {})", std::strerror(errno));
    }
    reaper_fd = p[1];
    log::debug("group reaper is pid {}", pid);
  }
  // 4 bytes into a pipe are written whole; the reaper reads as fast as children start.
  if (::write(reaper_fd, &v, sizeof v) != sizeof v) log::warn("group reaper: {}", std::strerror(errno));
}

// Moves fd above 2 so that dup2 onto 0–2 always makes a fresh descriptor without CLOEXEC.
int above_stdio(int fd) {
  if (fd > 2) return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

}  // namespace

std::string find_program(const std::string& program, const std::vector<std::string>& env, const std::string& cwd) {
  auto in_cwd = [&cwd](const std::string& p) { return p.starts_with('/') || cwd.empty() ? p : cwd + "/" + p; };
  if (program.find('/') != std::string::npos) return executable(in_cwd(program)) ? in_cwd(program) : "";
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  }
  std::string_view p(path);
  while (true) {
    auto colon = p.find(':');
    std::string dir(p.substr(0, colon));
    std::string candidate = in_cwd((dir.empty() ? "." : dir) + "/" + program);
    if (executable(candidate)) return candidate;
    if (colon == std::string_view::npos) return "";
    p.remove_prefix(colon + 1);
  }
}

boost::system::result<Child, SpawnError> spawn_child(const SpawnSpec& spec) {
  std::string program = find_program(spec.program, spec.env, spec.cwd);
  if (program.empty()) {
    return SpawnError{true, fmt::format("{} is not installed (not found on PATH, or not executable)", spec.program)};
  }
  int fds[8];  // in, out, err, exec status: read/write ends
  for (int i = 0; i < 8; i += 2) {
    if (::pipe2(fds + i, O_CLOEXEC) != 0) {
      int e = errno;
      for (int j = 0; j < i; ++j) ::close(fds[j]);
      return SpawnError{false, std::string("pipe: ") + std::strerror(e)};
    }
    fds[i] = above_stdio(fds[i]);
    fds[i + 1] = above_stdio(fds[i + 1]);
    if (fds[i] < 0 || fds[i + 1] < 0) {  // moving it above 0-2 needed one more fd, at the limit
      int e = errno;
      for (int j = 0; j < i + 2; ++j)
        if (fds[j] >= 0) ::close(fds[j]);
      return SpawnError{false, std::string("pipe: ") + std::strerror(e)};
    }
  }
  int in_r = fds[0], in_w = fds[1], out_r = fds[2], out_w = fds[3], err_r = fds[4], err_w = fds[5];
  int status_r = fds[6], status_w = fds[7];

  std::vector<char*> argv{program.data()};
  std::vector<std::string> args = spec.args;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = spec.env;
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t parent = ::getpid();
  pid_t pid;
  {
    BlockSignals blocked;
    pid = ::fork();
    if (pid == 0) {
      reset_signals();
      ::setsid();
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the daemon died before the prctl took hold
      ::dup2(in_r, 0);
      ::dup2(out_w, 1);
      ::dup2(err_w, 2);
      ::dup2(status_w, 3);
      ::fcntl(3, F_SETFD, FD_CLOEXEC);  // closed by a successful exec: the daemon reads EOF
      ::close_range(4, ~0U, 0);
      if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) {
        int e = -errno;  // negative: the folder, not the program
        (void)!::write(3, &e, sizeof e);
        ::_exit(127);
      }
      ::execve(program.c_str(), argv.data(), envp.data());
      int e = errno;
      (void)!::write(3, &e, sizeof e);
      ::_exit(127);
    }
  }
  int spawn_errno = pid < 0 ? errno : 0;
  ::close(in_r), ::close(out_w), ::close(err_w), ::close(status_w);
  if (pid > 0) {
    // Returns at the exec (EOF) or with its errno: within the time of one exec, like posix_spawn.
    int e = 0;
    ssize_t n;
    do {
      n = ::read(status_r, &e, sizeof e);
    } while (n < 0 && errno == EINTR);
    if (n == sizeof e) {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }  // it exits right after that write: a wait of microseconds
      spawn_errno = e;
      pid = -1;
    }
  }
  ::close(status_r);
  if (pid < 0) {
    ::close(in_w), ::close(out_r), ::close(err_r);
    if (spawn_errno < 0)
      return SpawnError{false, fmt::format("cannot start it in {}: {}", spec.cwd, std::strerror(-spawn_errno))};
    return SpawnError{spawn_errno == ENOENT || spawn_errno == EACCES,
                      fmt::format("cannot run {}: {}", program, std::strerror(spawn_errno))};
  }
  tell_reaper(static_cast<std::int32_t>(pid));
  return Child{pid, in_w, out_r, err_r};
}

boost::system::result<std::optional<ExitStatus>, std::string> try_reap(pid_t pid, int pidfd) {
  siginfo_t info{};  // si_pid stays 0 when no child has exited
  int rc;
  do {
    rc = pidfd >= 0 ? ::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED | WNOHANG)
                    : ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return fmt::format("cannot reap pid {}: {}", pid, std::strerror(errno));
  if (info.si_pid == 0) return std::optional<ExitStatus>();
  return std::optional<ExitStatus>(ExitStatus{info.si_code != CLD_EXITED, info.si_status});
}

void signal_group(pid_t pgid, int sig) {
  if (pgid > 0) ::kill(-pgid, sig);
}

void release_group(pid_t pgid) {
  if (pgid <= 0) return;
  ::kill(-pgid, SIGKILL);
  tell_reaper(-static_cast<std::int32_t>(pgid));
}

}  // namespace oppx::daemon
