// The newest change of an entry is found with lstat, stopping at the first recent one, so that a
// folder in use costs one look.
#include "common/retention.h"

#include "common/user_config.h"

#include <filesystem>

#include <sys/stat.h>

namespace oppx {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::system_clock;

Clock::time_point changed_at(const struct stat& st) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(st.st_mtim.tv_sec) +
                                                                       std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

// Whether `path` and everything under it changed before `cutoff`.
bool all_older(const fs::path& path, Clock::time_point cutoff) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  if (changed_at(st) >= cutoff) return false;
  if (!S_ISDIR(st.st_mode)) return true;
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (!all_older(it->path(), cutoff)) return false;
  }
  return !ec;
}

}  // namespace

std::chrono::hours retention() {
  std::chrono::hours fallback(24 * kDefaultRetentionDays);
  auto conf = read_user_config();
  if (!conf) return fallback;
  const boost::json::value* v = conf->if_contains("retention_days");
  if (!v || !v->is_int64() || v->as_int64() < 0 || v->as_int64() > 100 * 365) return fallback;
  return std::chrono::hours(24 * v->as_int64());
}

int prune_older_than(const std::string& dir, std::chrono::hours age) {
  if (age.count() <= 0) return 0;
  auto cutoff = Clock::now() - age;
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!all_older(it->path(), cutoff)) continue;
    std::error_code rm;
    if (fs::remove_all(it->path(), rm) > 0 && !rm) ++removed;
  }
  return removed;
}

}  // namespace oppx
