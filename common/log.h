// The daemon's log: one line per event, appended to $XDG_STATE_HOME/oppx/oppxd.log (0600),
// rotated to oppxd.log.1 past a size cap. Single-threaded by design (the daemon has one thread).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

namespace oppx::log {

enum class Level { kDebug, kInfo, kWarn, kError };

// Opens (creating 0600) the log file; `mirror_stderr` also copies each line to stderr.
// Returns an error message when the file cannot be opened; logging then goes to stderr only.
std::string open(const std::string& path, bool mirror_stderr);
void close();
// Lines below this level are dropped (default kInfo; oppxd --verbose sets kDebug).
void set_level(Level level);
bool enabled(Level level);  // false for lines set_level drops, so that they are not even formatted
void write(Level level, std::string_view message);
// Values no line may show, such as the expanded ${VAR} values a connector started with: every
// line has them masked (mask_secrets of common/text.h), whichever code logs it. `owner` keeps its
// own list; an empty list forgets it.
void hide(const void* owner, std::vector<std::string> secrets);

inline constexpr std::size_t kRotateBytes = 4u << 20;

template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::kError, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::kDebug)) write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace oppx::log
