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

// Runs argv in `cwd` with stdin from /dev/null and stdout+stderr together, as a plain child in
// its own session (run_contained without bwrap), ended at the deadline. Keeps at most `cap` bytes.
Captured capture(const std::vector<std::string>& argv, const std::string& cwd, std::chrono::milliseconds limit,
                 std::size_t cap) {
  RunSpec spec{argv, cwd, limit, cap};
  spec.use_bwrap = false;
  RunOutcome r = run_contained(spec);
  bool ended = r.end == RunOutcome::End::kExited;
  return {ended ? r.status : -1, r.end == RunOutcome::End::kTimedOut, std::move(r.output), std::move(r.error)};
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
                         std::size_t cap, SandboxPolicy policy, const RunControl* control) {
  if (command.empty()) return {false, "run needs a \"command\""};
  if (policy.workspace.empty()) policy.workspace = cwd;
  RunOutcome r = run_contained(RunSpec{{"/bin/sh", "-c", command}, cwd, limit, cap + 1, std::move(policy), control});
  auto done = [&](bool ok, std::string text) {
    BuiltinResult b{ok, std::move(text)};
    b.sandboxed = r.sandboxed;
    return b;
  };
  if (!r.error.empty()) return done(false, r.error);
  std::size_t total = r.total;
  std::string text = cut_text(std::move(r.output), cap);
  if (total > cap + 1) text += fmt::format(" [it wrote {} bytes in all]", total);
  using End = RunOutcome::End;
  if (r.end == End::kTimedOut) {
    return done(false, text + fmt::format("\n[stopped: it ran longer than {:g} s; it and everything it started "
                                          "were ended]",
                                          std::chrono::duration<double>(limit).count()));
  }
  if (r.end == End::kCancelled) return done(false, text + "\n[stopped: cancelled by the user]");
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) return done(true, text.empty() ? "(no output)" : text);
  std::string how = WIFEXITED(r.status) ? fmt::format("exit status {}", WEXITSTATUS(r.status))
                                        : fmt::format("killed by signal {}", WTERMSIG(r.status));
  return done(false, text + "\n[" + how + "]");
}

}  // namespace oppx::chat
