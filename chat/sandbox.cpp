// bubblewrap options for a policy, the allowed environment, and run_contained: one child (bwrap,
// or the command itself where bwrap cannot run) watched with poll() on its output, its pidfd, the
// cancel eventfd and a deadline. Nothing here waits without a deadline but waitpid on a child
// already sent SIGKILL.
#include "chat/sandbox.h"

#include "common/fs.h"
#include "common/user_config.h"

#include "common/paths.h"
#include "common/secret_paths.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace oppx::chat {

namespace {

using Clock = std::chrono::steady_clock;

// The namespace's first process is gone: everything in it has been killed and reaped (the kernel
// does that before it reports the exit). A bound for a machine under load.
constexpr std::chrono::milliseconds kNamespaceGone{5'000};
// A plain child (no bwrap) has exited: its group's leftovers were killed; what still holds the
// output (a `setsid` child) is not waited for longer than this.
constexpr std::chrono::milliseconds kDrainAfterExit{1'000};

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
void pidfd_kill(int fd) { ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0); }

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) : line;
}

}  // namespace

std::optional<SandboxMode> sandbox_mode_from(std::string_view name) {
  if (name == "read-only") return SandboxMode::kReadOnly;
  if (name == "workspace-write") return SandboxMode::kWorkspaceWrite;
  if (name == "off") return SandboxMode::kOff;
  return std::nullopt;
}

const char* sandbox_mode_name(SandboxMode mode) {
  switch (mode) {
    case SandboxMode::kReadOnly:
      return "read-only";
    case SandboxMode::kWorkspaceWrite:
      return "workspace-write";
    case SandboxMode::kOff:
      return "off";
  }
  return "off";
}

const std::vector<std::string>& sandbox_env_names() {
  static const std::vector<std::string> names = {"PATH", "HOME",     "USER", "LOGNAME",   "SHELL",
                                                 "LANG", "LANGUAGE", "TERM", "COLORTERM", "NO_COLOR",
                                                 "TZ",   "TMPDIR",   "PWD"};
  return names;
}

std::vector<std::string> sandbox_environment(const std::string& cwd, const SandboxPolicy& policy) {
  std::map<std::string, std::string> from;
  if (policy.client_env) {
    from = *policy.client_env;
  } else {
    for (char** e = environ; e && *e; ++e) {
      std::string_view kv(*e);
      auto eq = kv.find('=');
      if (eq != std::string_view::npos) from.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  std::vector<std::string> out;
  for (const auto& [name, value] : from) {
    if (name == "PWD" || name == "TMPDIR") continue;
    bool allowed = name.starts_with("LC_") ||
                   std::find(sandbox_env_names().begin(), sandbox_env_names().end(), name) != sandbox_env_names().end();
    if (allowed) out.push_back(name + "=" + value);
  }
  out.push_back("PWD=" + cwd);
  // The private /tmp is the one place besides the workspace a command may write.
  if (policy.mode == SandboxMode::kWorkspaceWrite) {
    out.push_back("TMPDIR=/tmp");
  } else if (auto t = from.find("TMPDIR"); t != from.end() && !t->second.empty()) {
    out.push_back("TMPDIR=" + t->second);
  }
  return out;
}

std::vector<std::string> sandbox_hidden_paths() {
  std::vector<std::string> wanted = secret_paths(paths::home());
  for (auto& p : oppx_private_paths()) wanted.push_back(std::move(p));
  // Sockets that act for the user: the session bus, ssh-agent and gpg-agent (in the runtime
  // folder or named by SSH_AUTH_SOCK), and docker's, which is root on the machine.
  for (const char* var : {"XDG_RUNTIME_DIR", "SSH_AUTH_SOCK"}) {
    if (const char* v = std::getenv(var); v && v[0] == '/') wanted.emplace_back(v);
  }
  wanted.emplace_back("/run/docker.sock");
  wanted.emplace_back("/var/run/docker.sock");
  std::vector<std::string> found;
  for (const auto& p : wanted) {
    char real[PATH_MAX];
    if (!::realpath(p.c_str(), real)) continue;  // missing: nothing to hide
    if (std::string(real) == "/") continue;
    found.emplace_back(real);
  }
  // A folder hides what is under it; a second mount inside it could not be made (it is read-only).
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& p : found) {
    if (!out.empty() && path_under(p, out.back())) continue;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::string> sandbox_options(const SandboxPolicy& policy, const std::string& cwd) {
  std::vector<std::string> o;
  if (policy.mode == SandboxMode::kOff) {
    // No confinement, only the PID namespace: the whole tree ends with the command.
    o = {"--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--die-with-parent", "--new-session"};
  } else {
    o = {"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"};
    if (policy.mode == SandboxMode::kWorkspaceWrite) {
      o.insert(o.end(), {"--tmpfs", "/tmp"});
      if (!policy.workspace.empty()) o.insert(o.end(), {"--bind", policy.workspace, policy.workspace});
    }
    for (const auto& p : sandbox_hidden_paths()) {
      struct stat st {};
      if (::stat(p.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        o.insert(o.end(), {"--tmpfs", p, "--remount-ro", p});
      } else {
        o.insert(o.end(), {"--ro-bind", "/dev/null", p});
      }
    }
    // Root keeps every capability in bwrap unless told: it could remount / read-write.
    o.insert(o.end(), {"--unshare-pid", "--die-with-parent", "--new-session", "--cap-drop", "ALL"});
    if (!policy.network) o.push_back("--unshare-net");
  }
  o.insert(o.end(), {"--chdir", cwd, "--"});
  return o;
}

RunControl::RunControl() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
RunControl::~RunControl() {
  if (fd_ >= 0) ::close(fd_);
}
void RunControl::cancel() {
  cancelled_ = true;
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
}
void RunControl::reset() {
  cancelled_ = false;
  std::uint64_t v;
  [[maybe_unused]] auto n = ::read(fd_, &v, sizeof v);
}

RunOutcome run_contained(const RunSpec& spec) {
  RunOutcome out;
  if (spec.argv.empty()) {
    out.error = "nothing to run";
    return out;
  }
  if (spec.control && spec.control->cancelled()) {
    out.end = RunOutcome::End::kCancelled;
    return out;
  }
  std::vector<std::string> argv;
  bool bwrap = false;
  if (spec.use_bwrap) {
    if (const SandboxSupport& s = sandbox_support(); s.available) {
      bwrap = true;
      argv.push_back(s.bwrap);
      auto opts = sandbox_options(spec.policy, spec.cwd);
      opts.insert(opts.end() - 1, {"--json-status-fd", "3"});
      argv.insert(argv.end(), opts.begin(), opts.end());
    }
  }
  out.sandboxed = bwrap && spec.policy.mode != SandboxMode::kOff;
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  std::vector<std::string> env = sandbox_environment(spec.cwd, spec.policy);

  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int pipe_out[2], pipe_status[2] = {-1, -1};
  if (::pipe2(pipe_out, O_CLOEXEC) != 0 || (bwrap && ::pipe2(pipe_status, O_CLOEXEC) != 0)) {
    out.error = std::string("cannot make a pipe: ") + std::strerror(errno);
    return out;
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    out.error = std::string("cannot start a process: ") + std::strerror(errno);
    for (int fd : {pipe_out[0], pipe_out[1], pipe_status[0], pipe_status[1]})
      if (fd >= 0) ::close(fd);
    return out;
  }
  if (pid == 0) {
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(pipe_out[1], 1);
    ::dup2(pipe_out[1], 2);
    if (bwrap) {
      if (pipe_status[1] == 3)
        ::fcntl(3, F_SETFD, 0);
      else
        ::dup2(pipe_status[1], 3);
    }
    ::close_range(bwrap ? 4 : 3, ~0U, CLOSE_RANGE_CLOEXEC);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (::chdir(spec.cwd.c_str()) != 0) _exit(126);
    ::execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(pipe_out[1]);
  if (pipe_status[1] >= 0) ::close(pipe_status[1]);
  int fd_out = pipe_out[0], fd_status = pipe_status[0];
  ::fcntl(fd_out, F_SETFL, O_NONBLOCK);
  if (fd_status >= 0) ::fcntl(fd_status, F_SETFL, O_NONBLOCK);
  int fd_pid = pidfd_open(pid);
  int fd_ns = -1;  // the namespace's first process (bwrap's child), from --json-status-fd
  std::string status_text;
  bool exited = false;
  int status = 0;
  auto deadline = Clock::now() + spec.limit;
  char buf[65536];
  for (;;) {
    if (exited && fd_out < 0) {
      out.end = RunOutcome::End::kExited;
      break;
    }
    if (spec.control && spec.control->cancelled()) {
      out.end = RunOutcome::End::kCancelled;
      break;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      out.end = exited ? RunOutcome::End::kExited : RunOutcome::End::kTimedOut;
      break;
    }
    pollfd p[4];
    int n = 0;
    auto watch = [&](int fd) {
      if (fd >= 0) p[n++] = {fd, POLLIN, 0};
    };
    watch(fd_out);
    watch(fd_status);
    if (!exited) watch(fd_pid);
    if (spec.control) watch(spec.control->fd());
    int wait_ms = static_cast<int>(left);
    if (fd_pid < 0 && !exited) wait_ms = std::min(wait_ms, 20);  // no pidfd (an old kernel): look often
    if (::poll(p, n, wait_ms) < 0 && errno != EINTR) {
      out.end = RunOutcome::End::kTimedOut;
      break;
    }
    for (;;) {
      if (fd_out < 0) break;
      ssize_t got = ::read(fd_out, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) break;  // EAGAIN: nothing more now
      if (got == 0) {
        ::close(fd_out);
        fd_out = -1;
        break;
      }
      out.total += static_cast<std::size_t>(got);
      if (out.output.size() < spec.cap)
        out.output.append(buf, std::min<std::size_t>(static_cast<std::size_t>(got), spec.cap - out.output.size()));
    }
    while (fd_status >= 0) {
      ssize_t got = ::read(fd_status, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) break;
      if (got == 0) {
        ::close(fd_status);
        fd_status = -1;
        break;
      }
      if (status_text.size() < 4096) status_text.append(buf, static_cast<std::size_t>(got));
      if (fd_ns < 0) {
        if (auto at = status_text.find("\"child-pid\":"); at != std::string::npos) {
          pid_t child = static_cast<pid_t>(std::atol(status_text.c_str() + at + 12));
          if (child > 0) fd_ns = pidfd_open(child);
        }
      }
    }
    if (!exited) {
      pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        exited = true;
        // A plain child's group may have left jobs behind: they go with it. Under bwrap the
        // namespace is empty already.
        ::kill(-pid, SIGKILL);
        deadline = std::min(deadline, Clock::now() + kDrainAfterExit);
      }
    }
  }
  if (!exited) {
    if (fd_ns >= 0) pidfd_kill(fd_ns);
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  // bwrap's child is the namespace's first process: once it is gone, so is everything it started.
  if (fd_ns >= 0) {
    pidfd_kill(fd_ns);
    pollfd p{fd_ns, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(kNamespaceGone.count()));
    ::close(fd_ns);
  }
  for (int fd : {fd_out, fd_status, fd_pid})
    if (fd >= 0) ::close(fd);
  out.status = status;
  return out;
}

SandboxSupport probe_sandbox(const std::string& bwrap) {
  SandboxSupport s;
  s.bwrap = find_on_path(bwrap);
  if (s.bwrap.empty()) {
    s.reason = fmt::format(
        "bubblewrap ({}) is not installed, so commands cannot run in a sandbox; install it (Debian: apt-get install "
        "bubblewrap)",
        bwrap);
    return s;
  }
  RunSpec spec;
  spec.argv = {s.bwrap,
               "--ro-bind",
               "/",
               "/",
               "--dev",
               "/dev",
               "--proc",
               "/proc",
               "--unshare-pid",
               "--unshare-net",
               "--die-with-parent",
               "--new-session",
               "--cap-drop",
               "ALL",
               "--",
               "true"};
  spec.cwd = "/";
  spec.limit = std::chrono::seconds(10);
  spec.cap = 4096;
  spec.use_bwrap = false;
  RunOutcome r = run_contained(spec);
  if (r.end == RunOutcome::End::kExited && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) {
    s.available = true;
    return s;
  }
  std::string why = !r.error.empty()                      ? r.error
                    : r.end == RunOutcome::End::kTimedOut ? std::string("it did not finish in 10 s")
                                                          : first_line(r.output);
  s.reason = fmt::format(
      "bubblewrap cannot make a sandbox here ({}); it needs user namespaces (sysctl "
      "kernel.unprivileged_userns_clone=1, or an AppArmor profile that allows bwrap)",
      why.empty() ? "no reason given" : why);
  return s;
}

const SandboxSupport& sandbox_support() {
  static const SandboxSupport s = [] {
    const char* override = std::getenv("OPPX_BWRAP");
    return probe_sandbox(override && *override ? override : "bwrap");
  }();
  return s;
}

SandboxPolicy sandbox_policy_from_config(const std::string& cwd, std::string& problem) {
  SandboxPolicy policy;
  std::string root = repository_root(cwd);
  policy.workspace = root.empty() ? cwd : root;
  auto config = read_user_config();
  if (!config) {
    problem = config.error();
    return policy;
  }
  if (const auto* v = config->if_contains("sandbox")) {
    auto mode = v->is_string() ? sandbox_mode_from(std::string_view(v->as_string())) : std::nullopt;
    if (mode) {
      policy.mode = *mode;
    } else {
      problem = fmt::format(
          "{}: \"sandbox\" is one of \"read-only\", \"workspace-write\" or \"off\"; commands run in "
          "workspace-write until it is corrected",
          user_config_file());
    }
  }
  if (const auto* v = config->if_contains("sandbox_network")) {
    if (v->is_bool()) {
      policy.network = v->as_bool();
    } else {
      problem = fmt::format("{}: \"sandbox_network\" is true or false; commands have no network until it is corrected",
                            user_config_file());
    }
  }
  return policy;
}

std::string describe_sandbox(const SandboxPolicy& policy) {
  if (policy.mode == SandboxMode::kOff) return "off: commands run unconfined, network included";
  if (!sandbox_support().available) return "unavailable (" + sandbox_support().reason + "): every command is asked";
  return fmt::format("{}, {}", sandbox_mode_name(policy.mode), policy.network ? "network on" : "no network");
}

}  // namespace oppx::chat
