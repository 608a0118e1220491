// read, grep and run for the agent loop. Output is collected with poll() and a deadline; a
// command's whole process group ends when its time is up.
#include "chat/builtins.h"

#include "chat/agent.h"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oppx::chat {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxMatches = 200;
constexpr std::uintmax_t kMaxReadBytes = 4 << 20;

std::string resolve(const std::string& cwd, const std::string& path) {
  if (path.empty()) return cwd;
  return path[0] == '/' ? path : cwd + "/" + path;
}

bool looks_binary(std::string_view s) { return s.substr(0, 8000).find('\0') != std::string_view::npos; }

struct Captured {
  int status = -1;  // from waitpid; -1 when killed at the deadline
  bool timed_out = false;
  std::string output;
  std::string error;  // the spawn failed
};

// Runs argv in `cwd` with stdin from /dev/null and stdout+stderr into one pipe, in its own process
// group, killed at the deadline. Keeps at most `cap` bytes (and drains the rest).
Captured capture(const std::vector<std::string>& argv, const std::string& cwd, std::chrono::milliseconds limit,
                 std::size_t cap) {
  Captured c;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    c.error = std::string("cannot make a pipe: ") + std::strerror(errno);
    return c;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    c.error = std::string("cannot start a process: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return c;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    if (::chdir(cwd.c_str()) != 0) _exit(126);
    ::signal(SIGPIPE, SIG_DFL);
    ::execvp(args[0], args.data());
    _exit(127);
  }
  ::setpgid(pid, pid);
  ::close(fds[1]);
  auto deadline = Clock::now() + limit;
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      c.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (c.output.size() < cap)
      c.output.append(buf, std::min<std::size_t>(static_cast<std::size_t>(got), cap - c.output.size()));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Whatever the group left running (a background job) goes with it.
  ::kill(-pid, SIGKILL);
  c.status = c.timed_out ? -1 : status;
  return c;
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

std::string cut_text(std::string text, std::size_t cap) {
  if (text.size() <= cap) return text;
  std::size_t total = text.size();
  text.resize(cap);
  // Not in the middle of a UTF-8 sequence.
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();
  if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
  return text + fmt::format("\n[… cut at {} of {} characters]", cap, total);
}

BuiltinResult read_action(const std::string& cwd, const std::string& path, std::size_t cap) {
  if (path.empty()) return {false, "read needs a \"path\""};
  std::string full = resolve(cwd, path);
  std::error_code ec;
  auto st = fs::status(full, ec);
  if (ec || !fs::exists(st)) return {false, path + ": no such file"};
  if (fs::is_directory(st)) {
    std::string list = path + " is a folder; its entries:\n";
    for (const auto& e : fs::directory_iterator(full, ec)) {
      list += e.path().filename().string() + (e.is_directory() ? "/" : "") + "\n";
    }
    return {true, cut_text(list, cap)};
  }
  std::ifstream f(full, std::ios::binary);
  if (!f) return {false, path + ": cannot be read (" + std::strerror(errno) + ")"};
  std::string text(std::min<std::uintmax_t>(fs::file_size(full, ec), kMaxReadBytes), '\0');
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(f.gcount()));
  if (looks_binary(text)) return {false, path + ": a binary file, not shown"};
  return {true, cut_text(std::move(text), cap)};
}

BuiltinResult grep_action(const std::string& cwd, const std::string& pattern, const std::string& path,
                          std::size_t cap) {
  if (pattern.empty()) return {false, "grep needs a \"pattern\""};
  std::string where = path.empty() ? "." : path;
  if (on_path("rg")) {
    Captured c = capture(
        {"rg", "--line-number", "--no-heading", "--color", "never", "--max-count", "50", "-e", pattern, "--", where},
        cwd, std::chrono::seconds(30), cap + 1);
    if (!c.error.empty()) return {false, c.error};
    if (c.timed_out) return {false, "grep took more than 30 s; narrow the path or the pattern"};
    int code = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 2;
    if (code == 1) return {true, "no match"};
    if (code != 0) return {false, cut_text(c.output, cap)};
    return {true, cut_text(c.output, cap)};
  }
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::extended);
  } catch (const std::regex_error& e) {
    return {false, "the pattern is not a regular expression: " + std::string(e.what())};
  }
  std::string root = resolve(cwd, where);
  std::string out;
  std::size_t matches = 0;
  auto search_file = [&](const fs::path& file) {
    std::ifstream f(file, std::ios::binary);
    std::string line;
    std::string shown = file.lexically_relative(cwd).string();
    for (int n = 1; std::getline(f, line) && matches < kMaxMatches; ++n) {
      if (line.find('\0') != std::string::npos) return;  // binary
      if (std::regex_search(line, re)) {
        out += fmt::format("{}:{}:{}\n", shown, n, line.substr(0, 500));
        ++matches;
      }
    }
  };
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) {
    search_file(root);
  } else if (fs::is_directory(root, ec)) {
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator() && matches < kMaxMatches; it.increment(ec)) {
      if (ec) break;
      std::string name = it->path().filename().string();
      if (it->is_directory(ec) && (name == ".git" || name == "node_modules")) {
        it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(ec) && it->file_size(ec) <= kMaxReadBytes) search_file(it->path());
    }
  } else {
    return {false, where + ": no such file or folder"};
  }
  if (out.empty()) return {true, "no match"};
  if (matches >= kMaxMatches) out += fmt::format("[… stopped at {} matches]\n", kMaxMatches);
  return {true, cut_text(std::move(out), cap)};
}

BuiltinResult run_action(const std::string& cwd, const std::string& command, std::chrono::milliseconds limit,
                         std::size_t cap) {
  if (command.empty()) return {false, "run needs a \"command\""};
  Captured c = capture({"/bin/sh", "-c", command}, cwd, limit, cap + 1);
  if (!c.error.empty()) return {false, c.error};
  std::string text = cut_text(std::move(c.output), cap);
  if (c.timed_out) {
    return {false, text + fmt::format("\n[stopped: it ran longer than {} s]",
                                      std::chrono::duration_cast<std::chrono::seconds>(limit).count())};
  }
  if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) return {true, text.empty() ? "(no output)" : text};
  std::string how = WIFEXITED(c.status) ? fmt::format("exit status {}", WEXITSTATUS(c.status))
                                        : fmt::format("killed by signal {}", WTERMSIG(c.status));
  return {false, text + "\n[" + how + "]"};
}

}  // namespace oppx::chat
