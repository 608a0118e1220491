// spawn_child: fork + exec rather than posix_spawn, because the child must set
// PR_SET_PDEATHSIG(SIGKILL) and make its PID namespace before exec (posix_spawn has no way to).
// PR_SET_PDEATHSIG ends the child when the daemon dies, even by kill -9, but not its
// grandchildren (`npx` → `node`, `sh -c` → …, and one that left the group with setsid). For
// those, each connector runs in a PID namespace of its own: the forked child calls
// unshare(CLONE_NEWPID) (with CLONE_NEWUSER and its own uid and gid mapped to themselves when it
// is not root), which puts the processes it makes next in a new namespace (not itself: and a
// process whose children go elsewhere cannot make threads, so the connector must be inside).
// It makes two, both children of the daemon (CLONE_PARENT), so the daemon waits for the
// connector and signals its group as before: first the namespace's init, a small process of ours
// that execs nothing and reaps what is left to it, then the connector; it tells the daemon both
// pids and ends. Both die with the daemon by PR_SET_PDEATHSIG, and when the connector ends the
// daemon kills its init. When a namespace's init dies the kernel kills every process in it, so
// no user-space process has to survive for the tree to end. The connector sees the same uid,
// network and files; only its pids are the namespace's (it is pid 2, `ps` still lists every
// process, as /proc stays the daemon's).
// Where namespaces are refused (a container without the capability, user namespaces turned off)
// or turned off (OPPX_NO_PID_NAMESPACES), the fallback is the process group: a small reaper
// process holds the read end of a pipe on which the daemon writes the process group of each
// such child it starts (+pgid) and reaps (-pgid). When the daemon dies the pipe ends, and the
// reaper SIGKILLs every group it still knows, then exits. When the reaper dies, the daemon
// notices (on its pidfd), logs it and starts another, told every group.
// Between fork and exec only async-signal-safe calls are made: the daemon has other threads
// (its worker, Asio's resolver), and the child of a fork has only the one that forked.
#include "daemon/child_process.h"

#include "common/changes.h"
#include "common/log.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <functional>
#include <map>
#include <memory>
#include <poll.h>
#include <sched.h>
#include <set>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oppx::daemon {

namespace {

namespace asio = boost::asio;

bool executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// The daemon's children it knows of and has not reaped (children_unreaped()). Those made with
// CLONE_PARENT count from when their pids come on the status pipe.
std::set<pid_t> unreaped;
void born(pid_t pid) {
  if (pid > 0 && unreaped.insert(pid).second) changes::changed();
}
void reaped(pid_t pid) {
  if (unreaped.erase(pid)) changes::changed();
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

void set_sigchld(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  ::sigaction(SIGCHLD, &sa, nullptr);
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

// ---- The PID namespace of a connector ----

// The first word the forked child writes on its status pipe, and what follows it:
// - kInNamespace, the connector's pid, its init's pid: both are children of the daemon, made in
//   a new PID namespace, and the forked child has ended; the connector's exec status follows.
// - a positive errno: the namespace was refused (or turned off) and nothing changed: the forked
//   child goes on to be the connector, in its process group; its exec status follows.
// - a negative errno, then the init's pid or 0: it failed half-way (the init is killed); the
//   daemon starts it again without.
constexpr int kInNamespace = 0;
constexpr int kUntold = INT_MIN;  // it died before it could tell

// "ID ID 1\n" for the uid and gid maps, made before the fork.
struct IdMaps {
  std::string uid = fmt::format("{0} {0} 1\n", ::geteuid());
  std::string gid = fmt::format("{0} {0} 1\n", ::getegid());
};

bool write_proc(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool whole = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int e = errno;
  ::close(fd);
  errno = whole ? 0 : (e ? e : EIO);
  return whole;
}

// The processes this one makes from now on go into a new PID namespace (it stays where it is).
// Returns kInNamespace, or an errno as above.
int enter_pid_namespace(const IdMaps& maps) {
  if (::unshare(CLONE_NEWPID) == 0) return kInNamespace;
  if (errno != EPERM || ::geteuid() == 0) return errno;
  // Not root: a user namespace of its own grants it, with the same ids inside as outside (files,
  // sockets and `id` look the same).
  if (::unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0) return errno;
  if (!write_proc("/proc/self/setgroups", "deny") && errno != ENOENT) return -errno;
  if (!write_proc("/proc/self/uid_map", maps.uid)) return -errno;
  if (!write_proc("/proc/self/gid_map", maps.gid)) return -errno;
  return kInNamespace;
}

// fork, but the new process is a child of our parent (the daemon), not of us.
pid_t fork_for_parent() {
  return static_cast<pid_t>(::syscall(SYS_clone, CLONE_PARENT | SIGCHLD, nullptr, nullptr, nullptr, 0));
}

// In a child of the daemon made by fork_for_parent: it ends when the daemon does (`daemon`, a
// pidfd, tells whether that already happened).
void die_with_daemon(int daemon) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  pollfd p{daemon, POLLIN, 0};
  if (::poll(&p, 1, 0) != 0) ::_exit(127);  // the daemon died before the prctl took hold
  ::close(daemon);
}

// pid 1 of a connector's namespace: made with SIGCHLD ignored, so the kernel reaps what is left
// to it. It dies with the daemon, or is killed by it once the connector has ended, and the
// kernel then kills every process left in the namespace. As a namespace's init with no signal
// handlers, it ignores every signal but SIGKILL from outside.
[[noreturn]] void namespace_init(int daemon) {
  die_with_daemon(daemon);
  ::close_range(0, ~0U, 0);
  if (::chdir("/") != 0) {
    // it would keep the connector's folder busy, nothing worse
  }
  ::prctl(PR_SET_NAME, "oppxd-pidns");
  while (true) ::pause();
}

// A slow exec on purpose, for the test that shows nobody waits for a spawn: with
// OPPX_TEST_SPAWN_DELAY_MS set in the daemon's environment (read before the fork), each
// connector waits that long before its exec.
long test_spawn_delay_ms = 0;

// The end of a connector's start, with its status pipe on fd 3: its folder, then its program.
[[noreturn]] void exec_program(const char* cwd, const char* program, char* const* argv, char* const* envp) {
  if (test_spawn_delay_ms > 0) {
    timespec t{test_spawn_delay_ms / 1000, (test_spawn_delay_ms % 1000) * 1000000};
    while (::nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
  }
  if (*cwd && ::chdir(cwd) != 0) {
    int e = -errno;  // negative: the folder, not the program
    (void)!::write(3, &e, sizeof e);
    ::_exit(127);
  }
  ::execve(program, argv, envp);
  int e = errno;
  (void)!::write(3, &e, sizeof e);
  ::_exit(127);
}

[[noreturn]] void half_way(int e, pid_t init) {
  int words[2] = {-e, init};
  (void)!::write(3, words, sizeof words);
  ::_exit(127);
}

// In the forked child, once in its namespace: makes the namespace's init, then the connector
// (which waits until this one has told the daemon both pids), and ends.
[[noreturn]] void start_in_namespace(pid_t parent, const char* cwd, const char* program, char* const* argv,
                                     char* const* envp) {
  int daemon = pidfd_open(parent);
  if (daemon < 0) half_way(errno, 0);
  set_sigchld(SIG_IGN);
  pid_t init = fork_for_parent();
  if (init == 0) namespace_init(daemon);
  int e = errno;
  set_sigchld(SIG_DFL);
  if (init < 0) half_way(e, 0);
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) {
    e = errno;
    ::kill(init, SIGKILL);
    half_way(e, init);
  }
  pid_t connector = fork_for_parent();
  if (connector == 0) {
    ::close(gate[1]);
    char c;
    while (::read(gate[0], &c, 1) < 0 && errno == EINTR) {
    }
    ::close(gate[0]);
    ::setsid();
    die_with_daemon(daemon);
    exec_program(cwd, program, argv, envp);
  }
  if (connector < 0) {
    e = errno;
    ::kill(init, SIGKILL);
    half_way(e, init);
  }
  int words[3] = {kInNamespace, connector, init};
  (void)!::write(3, words, sizeof words);
  ::_exit(0);  // closes the gate: the connector goes on
}

Isolation last_isolation;

void note_isolation(Isolation now) {
  if (now.kind == last_isolation.kind && now.reason == last_isolation.reason) return;
  if (now.kind == "pid_namespace") {
    log::info("connectors' processes: in a PID namespace per connector");
  } else {
    log::warn("connectors' processes: in process groups and a reaper, since {}", now.reason);
  }
  last_isolation = std::move(now);
}

std::string refused(int e) {
  if (e == ENOSPC)
    return "the limit of namespaces is reached (sysctl user.max_pid_namespaces, user.max_user_namespaces)";
  if (::geteuid() != 0 && (e == EPERM || e == EACCES || e == EINVAL)) {
    return fmt::format(
        "PID namespaces are refused here ({}): unprivileged user namespaces are turned off "
        "(sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, or an AppArmor policy)",
        std::strerror(e));
  }
  return fmt::format("PID namespaces are refused here ({})", std::strerror(e));
}

// ---- The group reaper (the fallback) ----

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

asio::io_context* loop = nullptr;  // the daemon's, once watch_reaper_on was called

std::string how_it_ended(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED) return fmt::format("exit status {}", info.si_status);
  return fmt::format("signal {}", info.si_status);
}

using Ended = std::function<void(const std::string& how)>;

void wait_on(const std::shared_ptr<asio::posix::stream_descriptor>& pidfd, Ended then) {
  pidfd->async_wait(asio::posix::stream_descriptor::wait_read,
                    [pidfd, then = std::move(then)](boost::system::error_code ec) mutable {
                      if (ec) return;  // the loop is ending
                      siginfo_t info{};
                      if (::waitid(P_PIDFD, static_cast<id_t>(pidfd->native_handle()), &info, WEXITED | WNOHANG) != 0)
                        return then(fmt::format("waitid: {}", std::strerror(errno)));
                      if (info.si_pid == 0) return wait_on(pidfd, std::move(then));  // not yet reapable
                      reaped(info.si_pid);
                      then(how_it_ended(info));
                    });
}

// Reaps the child `pid` on `io` once it has ended, then calls `then`; never blocks.
void when_ended(asio::io_context* io, pid_t pid, Ended then) {
  int fd = pidfd_open(pid);
  if (fd < 0 || !io) {
    if (fd >= 0) ::close(fd);
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return reaped(pid);
    log::warn("cannot watch process {} (no loop or pidfd)", pid);
    return;
  }
  wait_on(std::make_shared<asio::posix::stream_descriptor>(*io, fd), std::move(then));
}

// A child that ended, or is about to, with nothing to report: reaped when it has.
void reap_later(asio::io_context& io, pid_t pid) {
  when_ended(&io, pid, [](const std::string&) {});
}

// The connector (by pid) → the init of its namespace, both the daemon's children.
std::map<pid_t, pid_t> inits;

struct Reaper {
  pid_t pid = 0;  // 0: none runs
  int fd = -1;    // the daemon's write end
  std::set<pid_t> groups;
};
Reaper reaper;

bool start_reaper();

// The reaper `pid` is gone: another takes its place.
void reaper_gone(pid_t pid, const std::string& how) {
  if (pid != reaper.pid) return;
  ::close(reaper.fd);
  reaper.fd = -1;
  reaper.pid = 0;
  if (start_reaper())
    log::warn("the group reaper (pid {}) ended ({}); started it again as pid {}", pid, how, reaper.pid);
}

void watch_reaper() {
  if (!loop || reaper.pid <= 0) return;
  pid_t pid = reaper.pid;
  when_ended(loop, pid, [pid](const std::string& how) { reaper_gone(pid, how); });
}

// Forks the reaper and tells it every group it has to know.
bool start_reaper() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    log::warn("no group reaper (pipe: {})", std::strerror(errno));
    return false;
  }
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
      ::prctl(PR_SET_NAME, "oppxd-reaper");
      reaper_main(3);
    }
  }
  ::close(p[0]);
  if (pid < 0) {
    ::close(p[1]);
    log::warn("no group reaper (fork: {})", std::strerror(errno));
    return false;
  }
  born(pid);
  reaper.pid = pid;
  reaper.fd = p[1];
  log::debug("group reaper is pid {}", pid);
  // At most kReaperSlots of 4 bytes: within the pipe's buffer, written whole.
  std::vector<std::int32_t> all(reaper.groups.begin(), reaper.groups.end());
  if (!all.empty()) {
    auto bytes = static_cast<ssize_t>(all.size() * sizeof(std::int32_t));
    if (::write(reaper.fd, all.data(), static_cast<std::size_t>(bytes)) != bytes)
      log::warn("group reaper: {}", std::strerror(errno));
  }
  watch_reaper();
  return true;
}

void tell_reaper(std::int32_t v) {
  if (v > 0) {
    if (reaper.groups.size() >= kReaperSlots) return log::warn("group reaper: more than {} groups", kReaperSlots);
    reaper.groups.insert(v);
  } else if (reaper.groups.erase(-v) == 0) {
    return;  // a group it never knew (a child in a PID namespace)
  }
  if (reaper.pid <= 0) {
    start_reaper();  // tells it every group, this one too
    return;
  }
  // 4 bytes into a pipe are written whole; the reaper reads as fast as children start.
  if (::write(reaper.fd, &v, sizeof v) == sizeof v) return;
  pid_t gone = reaper.pid;
  std::string why = std::strerror(errno);
  ::close(reaper.fd);
  reaper.fd = -1;
  reaper.pid = 0;
  if (start_reaper())
    log::warn("the group reaper (pid {}) is gone ({}); started it again as pid {}", gone, why, reaper.pid);
}

// Moves fd above 2 so that dup2 onto 0–2 always makes a fresh descriptor without CLOEXEC.
int above_stdio(int fd) {
  if (fd > 2) return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

// The words a forked child wrote on its status pipe, in order.
struct Words {
  std::string bytes;
  std::size_t at = 0;
  bool next(int& word) {
    if (bytes.size() - at < sizeof word) return false;
    std::memcpy(&word, bytes.data() + at, sizeof word);
    at += sizeof word;
    return true;
  }
};

// A child forked, whose exec status is still to come on `status`.
struct Forked {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
  int status = -1;  // the read end of its status pipe
};

// One fork: the child goes on to its exec (see kInNamespace). `namespaced`: whether it tries a
// PID namespace for its children.
boost::system::result<Forked, SpawnError> fork_once(const SpawnSpec& spec, const std::string& program,
                                                    bool namespaced) {
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

  std::string program_copy = program;
  std::vector<char*> argv{program_copy.data()};
  std::vector<std::string> args = spec.args;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = spec.env;
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  IdMaps maps;

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
      int isolated = namespaced ? enter_pid_namespace(maps) : ENOSYS;
      if (isolated == kInNamespace)
        start_in_namespace(parent, spec.cwd.c_str(), program.c_str(), argv.data(), envp.data());
      if (isolated < 0) half_way(-isolated, 0);
      (void)!::write(3, &isolated, sizeof isolated);
      exec_program(spec.cwd.c_str(), program.c_str(), argv.data(), envp.data());
    }
  }
  int spawn_errno = errno;
  ::close(in_r), ::close(out_w), ::close(err_w), ::close(status_w);
  if (pid < 0) {
    ::close(in_w), ::close(out_r), ::close(err_r), ::close(status_r);
    return SpawnError{false, fmt::format("cannot run {}: {}", program, std::strerror(spawn_errno))};
  }
  born(pid);
  return Forked{pid, in_w, out_r, err_r, status_r};
}

// Reads the status pipe on the loop until it ends (at the exec, or when the child gave up), then
// calls `then` with all it held: a few words, so never more than 64 bytes are kept.
struct StatusPipe {
  asio::posix::stream_descriptor pipe;
  std::array<char, 64> buf{};
  Words words;
};
void read_status(const std::shared_ptr<StatusPipe>& s, std::function<void(Words)> then) {
  s->pipe.async_read_some(asio::buffer(s->buf),
                          [s, then = std::move(then)](boost::system::error_code ec, std::size_t n) mutable {
                            s->words.bytes.append(s->buf.data(), n);
                            if (!ec && s->words.bytes.size() < s->buf.size()) return read_status(s, std::move(then));
                            then(std::move(s->words));  // the end (or an error: what came is all there is)
                          });
}

// What the status pipe said, as the child: `word` gets its first word (see kInNamespace), or
// kUntold. The processes that ended on the way are reaped on the loop.
boost::system::result<Child, SpawnError> exec_status(asio::io_context& io, const SpawnSpec& spec,
                                                     const std::string& program, const Forked& f, Words in, int& word) {
  pid_t pid = f.pid;
  int spawn_errno = 0;
  pid_t init = 0;
  if (!in.next(word)) {
    word = kUntold;  // it died first (the daemon's death, in a race): its exit says the rest
  } else if (word == kInNamespace) {
    int connector = 0, its_init = 0;
    bool told = in.next(connector) && in.next(its_init);
    reap_later(io, pid);  // the forked child, ended once it told
    pid = told ? connector : -1;
    init = told ? its_init : 0;
    born(pid);
    born(init);
    if (!told) spawn_errno = ECHILD;
  } else if (word < 0) {
    int its_init = 0;
    if (in.next(its_init) && its_init > 0) {  // killed, alone
      born(its_init);
      reap_later(io, its_init);
    }
    reap_later(io, pid);
    pid = -1;
  }
  int e = 0;
  if (pid > 0 && word != kUntold && in.next(e)) {
    reap_later(io, pid);
    if (init > 0) {  // its namespace has no other process now: the init ends at once
      ::kill(init, SIGKILL);
      reap_later(io, init);
    }
    spawn_errno = e;
    pid = -1;
  }
  if (pid < 0) {
    ::close(f.in), ::close(f.out), ::close(f.err);
    if (word != kUntold && word < 0) return SpawnError{false, std::strerror(-word)};
    if (spawn_errno < 0)
      return SpawnError{false, fmt::format("cannot start it in {}: {}", spec.cwd, std::strerror(-spawn_errno))};
    return SpawnError{spawn_errno == ENOENT || spawn_errno == EACCES,
                      fmt::format("cannot run {}: {}", program, std::strerror(spawn_errno))};
  }
  if (init > 0) inits[pid] = init;
  return Child{pid, f.in, f.out, f.err};
}

// One start: a fork, then its exec status read on the loop. `why_not`: why not in a PID
// namespace, when not `namespaced`. A namespace that failed half-way is tried once more without.
void start_child(asio::io_context& io, const std::shared_ptr<const SpawnSpec>& spec, const std::string& program,
                 bool namespaced, std::string why_not, Spawned done) {
  auto forked = fork_once(*spec, program, namespaced);
  if (!forked) {
    return asio::post(io, [done = std::move(done), e = forked.error()] { done(e); });
  }
  auto pipe = std::make_shared<StatusPipe>(StatusPipe{asio::posix::stream_descriptor(io, forked->status)});
  read_status(pipe, [&io, spec, program, namespaced, why_not, done = std::move(done), f = *forked](Words in) mutable {
    int word = kUntold;
    auto child = exec_status(io, *spec, program, f, std::move(in), word);
    if (namespaced && !child && word != kUntold && word < 0) {
      // Its namespace failed half-way (the child ended): once more, in a process group.
      return start_child(io, spec, program, false, fmt::format("setting one up failed ({})", child.error().message),
                         std::move(done));
    }
    if (namespaced && word > 0) why_not = refused(word);
    if (child) {
      if (word == kInNamespace) {
        note_isolation({"pid_namespace", ""});
      } else {
        if (!why_not.empty()) note_isolation({"process_group", why_not});
        tell_reaper(static_cast<std::int32_t>(child->pid));
      }
    }
    done(std::move(child));
  });
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

// The exec is waited for on the loop (its status pipe read asynchronously), not in this call: an
// exec can be slow (a program on a slow or network disk, a large binary paged in, the test hook
// below), and the loop serves every client meanwhile. The fork stays on the loop's thread, so the
// child's PR_SET_PDEATHSIG follows the thread that lives as long as the daemon, and the reaper's
// and the namespaces' bookkeeping stays on the one thread that touches it.
void spawn_child(asio::io_context& io, const SpawnSpec& spec, Spawned done) {
  std::string program = find_program(spec.program, spec.env, spec.cwd);
  if (program.empty()) {
    SpawnError e{true, fmt::format("{} is not installed (not found on PATH, or not executable)", spec.program)};
    return asio::post(io, [done = std::move(done), e = std::move(e)] { done(e); });
  }
  static const long delay = [] {
    const char* v = std::getenv("OPPX_TEST_SPAWN_DELAY_MS");
    return v ? std::strtol(v, nullptr, 10) : 0L;
  }();
  test_spawn_delay_ms = delay;
  const char* off = std::getenv("OPPX_NO_PID_NAMESPACES");
  bool namespaced = !off || !*off || std::string_view(off) == "0";
  start_child(io, std::make_shared<const SpawnSpec>(spec), program, namespaced,
              namespaced ? "" : "OPPX_NO_PID_NAMESPACES turns them off", std::move(done));
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
  reaped(info.si_pid);
  return std::optional<ExitStatus>(ExitStatus{info.si_code != CLD_EXITED, info.si_status});
}

void signal_group(pid_t pgid, int sig) {
  if (pgid > 0) ::kill(-pgid, sig);
}

void release_group(pid_t pgid) {
  if (pgid <= 0) return;
  ::kill(-pgid, SIGKILL);
  if (auto it = inits.find(pgid); it != inits.end()) {
    // The kernel kills what is left in its namespace (a process that left the group too); the
    // init ends once they have, and the connector was reaped.
    ::kill(it->second, SIGKILL);
    when_ended(loop, it->second, [](const std::string&) {});
    inits.erase(it);
  }
  tell_reaper(-static_cast<std::int32_t>(pgid));
}

const Isolation& connector_isolation() { return last_isolation; }

pid_t reaper_pid() { return reaper.pid; }

std::size_t children_unreaped() { return unreaped.size(); }

void watch_reaper_on(asio::io_context& io) {
  loop = &io;
  watch_reaper();
}

}  // namespace oppx::daemon
