// Log lines are "2026-12-02T17:40:00.123Z INFO message". Control characters in a message are
// escaped, so bytes a client sent cannot forge log lines or drive the terminal of whoever tails it,
// and the values hidden (hide) are masked in it.
#include "common/log.h"

#include "common/text.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::log {

namespace {

struct State {
  int fd = -1;
  std::string path;
  bool mirror = true;  // before open(): stderr only
  std::size_t size = 0;
  Level level = Level::kInfo;
  std::map<const void*, std::vector<std::string>> hidden;  // by owner
  std::vector<std::string> all_hidden;                     // theirs, together
};
State& state() {
  static State s;
  return s;
}

int open_file(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
}

const char* level_name(Level l) {
  switch (l) {
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO";
    case Level::kWarn:
      return "WARN";
    case Level::kError:
      return "ERROR";
  }
  return "INFO";
}

void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a log that cannot be written must not take the daemon down
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string open(const std::string& path, bool mirror_stderr) {
  State& s = state();
  close();
  s.path = path;
  s.mirror = mirror_stderr;
  s.fd = open_file(path);
  if (s.fd < 0) {
    s.mirror = true;
    return fmt::format("cannot open log {}: {}", path, std::strerror(errno));
  }
  struct stat st {};
  s.size = ::fstat(s.fd, &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
  return {};
}

void close() {
  State& s = state();
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
}

void set_level(Level level) { state().level = level; }

void hide(const void* owner, std::vector<std::string> secrets) {
  State& s = state();
  if (secrets.empty()) {
    s.hidden.erase(owner);
  } else {
    s.hidden[owner] = std::move(secrets);
  }
  s.all_hidden.clear();
  for (auto& [o, list] : s.hidden) s.all_hidden.insert(s.all_hidden.end(), list.begin(), list.end());
}

bool enabled(Level level) { return level >= state().level; }

void write(Level level, std::string_view message) {
  State& s = state();
  if (level < s.level) return;
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);

  std::string line = fmt::format("{}.{:03d}Z {} ", stamp, static_cast<int>(ms), level_name(level));
  line += escape_controls(s.all_hidden.empty() ? std::string(message) : mask_secrets(message, s.all_hidden));
  line += '\n';

  if (s.fd >= 0) {
    if (s.size + line.size() > kRotateBytes) {
      std::string old = s.path + ".1";
      ::rename(s.path.c_str(), old.c_str());
      ::close(s.fd);
      s.fd = open_file(s.path);
      s.size = 0;
    }
    if (s.fd >= 0) {
      write_all(s.fd, line);
      s.size += line.size();
    }
  }
  if (s.mirror) write_all(STDERR_FILENO, line);
}

}  // namespace oppx::log
