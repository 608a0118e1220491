// spawn_child: posix_spawn with POSIX_SPAWN_SETSID and closefrom(3), so nothing of the daemon
// (socket, lock, other children's pipes) leaks into a connector; the program is checked before
// the spawn so that "not installed" is told apart from "started and died".
#include "daemon/child_process.h"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::daemon {

namespace {

bool executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string find_program(const std::string& program, const std::vector<std::string>& env) {
  if (program.find('/') != std::string::npos) return executable(program) ? program : "";
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  }
  std::string_view p(path);
  while (true) {
    auto colon = p.find(':');
    std::string dir(p.substr(0, colon));
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (executable(candidate)) return candidate;
    if (colon == std::string_view::npos) return "";
    p.remove_prefix(colon + 1);
  }
}

boost::system::result<Child, SpawnError> spawn_child(const SpawnSpec& spec) {
  std::string program = find_program(spec.program, spec.env);
  if (program.empty()) {
    return SpawnError{true, fmt::format("{} is not installed (not found on PATH, or not executable)", spec.program)};
  }
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return SpawnError{false, std::string("pipe: ") + std::strerror(errno)};
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]);
    return SpawnError{false, std::string("pipe: ") + std::strerror(errno)};
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
    return SpawnError{false, std::string("pipe: ") + std::strerror(errno)};
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv{program.data()};
  std::vector<std::string> args = spec.args;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = spec.env;
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, program.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]), ::close(out[0]), ::close(err[0]);
    return SpawnError{rc == ENOENT || rc == EACCES, fmt::format("cannot run {}: {}", program, std::strerror(rc))};
  }
  return Child{pid, in[1], out[0], err[0]};
}

void signal_group(pid_t pgid, int sig) {
  if (pgid > 0) ::kill(-pgid, sig);
}

}  // namespace oppx::daemon
