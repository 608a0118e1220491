// How long oppx keeps what sessions leave behind (conversations, the browser's snapshots and
// logs): config.json's "retention_days" (30 by default; 0 keeps everything), and the pruning of
// what is older. Pruned when a session or the daemon starts.
#pragma once

#include <chrono>
#include <string>

namespace oppx {

inline constexpr int kDefaultRetentionDays = 30;

// config.json's "retention_days" as a duration; zero when it is 0 (nothing is pruned). The
// default when it is absent or not a whole number of days, or config.json is unreadable.
std::chrono::hours retention();

// Removes each entry of `dir` (a file, or a folder with all it holds) whose newest change, its own
// or that of anything it holds, is older than `age`. Links are removed, never followed. Returns
// how many entries went. Nothing happens for a zero `age` or a missing `dir`.
int prune_older_than(const std::string& dir, std::chrono::hours age);

}  // namespace oppx
