// read, grep and run for the agent loop. Output is collected with poll() and a deadline; a
// command's whole process group ends when its time is up.
#include "chat/builtins.h"

#include "chat/agent.h"
#include "common/fs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <regex>
#include <sstream>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oppx::chat {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxMatches = 200;
constexpr std::uintmax_t kMaxReadBytes = 4 << 20;

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

namespace {

// read's and grep's answer for a path that was not opened.
BuiltinResult not_opened(const Opened& o) {
  BuiltinResult r{false, o.error};
  r.resolved = o.check.real;
  r.outside = o.check.place == Place::kOutside;
  return r;
}

// At most `max` bytes of an open regular file, from its start.
std::string read_fd(int fd, std::uintmax_t max) {
  std::string text;
  char buf[65536];
  while (text.size() < max) {
    ssize_t n = ::read(fd, buf, static_cast<std::size_t>(std::min<std::uintmax_t>(sizeof buf, max - text.size())));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

// The entries of an open folder, sorted, folders with a trailing slash (links are not followed).
std::string list_folder(int fd) {
  std::vector<std::string> names;
  int copy = ::dup(fd);
  DIR* d = copy < 0 ? nullptr : ::fdopendir(copy);
  if (!d) {
    if (copy >= 0) ::close(copy);
    return {};
  }
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    bool dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st {};
      dir = ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    names.push_back(name + (dir ? "/" : ""));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += n + "\n";
  return out;
}

}  // namespace

namespace {

// `text` from character `offset` (UTF-8 code points), at most `cap` of them; a marker says where
// the next part starts when more follows.
std::string page(const std::string& text, std::size_t offset, std::size_t cap) {
  auto starts_char = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  std::size_t total = 0, from = text.size(), to = text.size();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!starts_char(text[i])) continue;
    if (total == offset) from = i;
    if (total == offset + cap) to = i;
    ++total;
  }
  if (offset == 0 && total <= cap) return text;
  if (offset >= total) return fmt::format("[nothing from character {}: it has {} characters]", offset, total);
  std::string out = text.substr(from, to - from);
  std::size_t end = std::min(total, offset + cap);
  if (offset > 0) out = fmt::format("[characters {} to {} of {}]\n", offset, end, total) + out;
  if (end < total)
    out += fmt::format("\n[… {} of {} characters shown; read again with \"offset\": {} for what follows]", end, total,
                       end);
  return out;
}

}  // namespace

BuiltinResult read_kept_result(const std::string& path, std::size_t cap, std::size_t offset) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return {false, fmt::format("{}: {}", path, std::strerror(errno))};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return {false, path + ": not a regular file"};
  }
  std::string text = read_fd(fd, kMaxReadBytes);
  ::close(fd);
  BuiltinResult r;
  r.ok = true;
  r.resolved = path;
  r.sensitive = looks_sensitive("", text);
  r.text = page(text, offset, cap);
  return r;
}

BuiltinResult read_action(const Workspace& ws, const std::string& path, std::size_t cap, bool outside_allowed,
                          std::size_t offset) {
  if (path.empty()) return {false, "read needs a \"path\""};
  Opened o = ws.open(path, outside_allowed);
  if (!o) return not_opened(o);
  BuiltinResult r;
  r.resolved = o.check.real;
  r.outside = o.check.place == Place::kOutside;
  if (o.directory) {
    r.ok = true;
    r.text = cut_text(path + " is a folder; its entries:\n" + list_folder(o.fd), cap);
    return r;
  }
  std::string text = read_fd(o.fd, kMaxReadBytes);
  if (looks_binary(text)) {
    r.text = path + ": a binary file, not shown";
    return r;
  }
  r.sensitive = looks_sensitive(o.check.path, text) || looks_sensitive(o.check.real, {});
  r.ok = true;
  r.text = page(text, offset, cap);
  return r;
}

BuiltinResult grep_action(const Workspace& ws, const std::string& pattern, const std::string& path, std::size_t cap,
                          bool outside_allowed) {
  if (pattern.empty()) return {false, "grep needs a \"pattern\""};
  Opened o = ws.open(path.empty() ? "." : path, outside_allowed);
  if (!o) return not_opened(o);
  BuiltinResult r;
  r.resolved = o.check.real;
  r.outside = o.check.place == Place::kOutside;
  // Names relative to the session's folder, as the model wrote them.
  auto shown = [&ws](const std::string& abs) {
    std::string rel = fs::path(abs).lexically_relative(ws.cwd()).string();
    return rel.empty() ? abs : rel;
  };
  if (!find_on_path("rg").empty()) {
    // ripgrep follows no link it finds and skips what is not a regular file; it is given the
    // checked path (the real one when outside), and what it prints from a denied place is dropped.
    std::string where = r.outside ? o.check.real : shown(o.check.path);
    Captured c = capture(
        {"rg", "--line-number", "--no-heading", "--color", "never", "--max-count", "50", "-e", pattern, "--", where},
        ws.cwd(), std::chrono::seconds(30), cap + 1);
    if (!c.error.empty()) return {false, c.error};
    if (c.timed_out) return {false, "grep took more than 30 s; narrow the path or the pattern"};
    int code = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 2;
    if (code == 1) {
      r.ok = true;
      r.text = "no match";
      return r;
    }
    std::string kept;
    std::istringstream lines(c.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      std::string file = line.substr(0, line.find(':'));
      std::string abs = fs::path(file[0] == '/' ? file : ws.cwd() + "/" + file).lexically_normal().string();
      if (!ws.denied_by(abs).empty()) continue;
      struct stat fst {};  // a hard link to a file of a denied place
      if (::stat(abs.c_str(), &fst) == 0 && fst.st_nlink > 1 && !ws.linked_to_denied(fst).empty()) continue;
      if (looks_sensitive(file, line)) r.sensitive = true;
      kept += line + "\n";
    }
    r.ok = code == 0;
    r.text = kept.empty() && r.ok ? "no match" : cut_text(std::move(kept), cap);
    return r;
  }
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::extended);
  } catch (const std::regex_error& e) {
    return {false, "the pattern is not a regular expression: " + std::string(e.what())};
  }
  std::string out;
  std::size_t matches = 0;
  auto search_text = [&](const std::string& text, const std::string& name) {
    if (looks_binary(text)) return;
    std::istringstream f(text);
    std::string line;
    for (int n = 1; std::getline(f, line) && matches < kMaxMatches; ++n) {
      if (std::regex_search(line, re)) {
        out += fmt::format("{}:{}:{}\n", name, n, line.substr(0, 500));
        if (looks_sensitive(name, line)) r.sensitive = true;
        ++matches;
      }
    }
  };
  if (!o.directory) {
    search_text(read_fd(o.fd, kMaxReadBytes), shown(o.check.path));
  } else {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(o.check.path, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator() && matches < kMaxMatches; it.increment(ec)) {
      if (ec) break;
      std::string file = it->path().string();
      std::string name = it->path().filename().string();
      // Links are neither followed nor read; FIFOs, devices and sockets are never opened.
      fs::file_status st = it->symlink_status(ec);
      if (fs::is_directory(st)) {
        if (name == ".git" || name == "node_modules" || !ws.denied_by(file).empty()) it.disable_recursion_pending();
        continue;
      }
      if (!fs::is_regular_file(st) || !ws.denied_by(file).empty()) continue;
      int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
      if (fd < 0) continue;
      struct stat fst {};
      if (::fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && static_cast<std::uintmax_t>(fst.st_size) <= kMaxReadBytes &&
          (fst.st_nlink <= 1 || ws.linked_to_denied(fst).empty()))
        search_text(read_fd(fd, kMaxReadBytes), shown(file));
      ::close(fd);
    }
  }
  r.ok = true;
  if (out.empty()) {
    r.text = "no match";
    return r;
  }
  if (matches >= kMaxMatches) out += fmt::format("[… stopped at {} matches]\n", kMaxMatches);
  r.text = cut_text(std::move(out), cap);
  return r;
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
  // The note after the output, on a line of its own (the first line when there was none).
  auto noted = [&text](const std::string& note) { return text.empty() ? note : text + "\n" + note; };
  using End = RunOutcome::End;
  if (r.end == End::kTimedOut) {
    return done(false, noted(fmt::format("[stopped: it ran longer than {:g} s; it and everything it started "
                                         "were ended]",
                                         std::chrono::duration<double>(limit).count())));
  }
  if (r.end == End::kCancelled) return done(false, noted("[stopped: cancelled by the user]"));
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) return done(true, text.empty() ? "(no output)" : text);
  std::string how = WIFEXITED(r.status) ? fmt::format("exit status {}", WEXITSTATUS(r.status))
                                        : fmt::format("killed by signal {}", WTERMSIG(r.status));
  return done(false, noted("[" + how + "]"));
}

}  // namespace oppx::chat
