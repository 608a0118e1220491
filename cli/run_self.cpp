// Running `oppx <args>` (this same program) from the chat, with the terminal as it is.
#include "cli/run_self.h"

#include "cli/line_editor.h"

#include <cerrno>
#include <csignal>
#include <cstdio>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace oppx::cli {

namespace {

void reap(pid_t pid, int& status) {
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

// Starts `oppx <args>` (this same program) with the terminal as it is; its pid, or -1. With
// `out`, its stdout is a pipe whose reading end `out` gets (its stderr stays the terminal's).
pid_t spawn_self(const std::string& self, std::vector<std::string> args, int* out) {
  std::string exe = "/proc/self/exe";
  std::vector<char*> argv{self.empty() ? exe.data() : const_cast<char*>(self.c_str())};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  std::fflush(stdout);
  int pipe[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  if (out && ::pipe2(pipe, O_CLOEXEC) == 0) ::posix_spawn_file_actions_adddup2(&actions, pipe[1], STDOUT_FILENO);
  int spawned = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  if (pipe[1] >= 0) ::close(pipe[1]);
  if (out) *out = pipe[0];
  return spawned == 0 ? pid : -1;
}

int exit_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

// Runs `oppx <args>` and waits for it; its exit status. With `output`, its stdout is read into it.
int run_self(const std::string& self, std::vector<std::string> args, std::string* output) {
  int out = -1;
  pid_t pid = spawn_self(self, std::move(args), output ? &out : nullptr);
  if (out >= 0) {
    char buf[4096];
    for (ssize_t n; pid > 0 && ((n = ::read(out, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR));)
      if (n > 0) output->append(buf, static_cast<std::size_t>(n));
    ::close(out);
  }
  if (pid < 0) return 127;
  int status = 0;
  reap(pid, status);
  return exit_status(status);
}

SelfRun run_self_interruptible(const std::string& self, const std::vector<std::string>& args,
                               const std::function<void(std::string)>& typed) {
  pid_t pid = spawn_self(self, args);
  if (pid < 0) return SelfRun::kNotStarted;
  int status = 0;
  for (;;) {
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) return SelfRun::kEnded;
    std::string k = LineEditor::read_key(100);
    if (k == "\x03") {
      ::kill(pid, SIGTERM);
      reap(pid, status);
      return SelfRun::kInterrupted;
    }
    if (k == LineEditor::kEndOfInput) {
      reap(pid, status);
      return SelfRun::kEnded;
    }
    if (!k.empty()) typed(std::move(k));
  }
}

}  // namespace oppx::cli
