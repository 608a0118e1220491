// Private folders: created 0700 and verified with lstat (owned by us, no group/other bits, not
// a symlink). Nothing here ever chmods an existing folder: an unsafe one is refused with the path
// and the reason, and the user decides.
#pragma once

#include <boost/system/result.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace oppx {

// Checks an existing folder. The error is one sentence that names the path, the cause and a fix.
boost::system::result<void, std::string> check_private_dir(const std::string& dir);

// Creates the missing parts of `dir` with mode 0700, then checks the last one.
boost::system::result<void, std::string> ensure_private_dir(const std::string& dir);

// flock(LOCK_EX) that gives up after `wait`; false when the lock was not taken.
bool lock_within(int fd, std::chrono::milliseconds wait);

// Readers see the old file or the new one, never half: a temp file in the same folder, fsync,
// rename, fsync of the folder. A failed fsync is a failure. It blocks for the disk: the daemon
// writes its tool-list cache through its worker thread (daemon/worker.h); its connectors,
// consent and permission files are still written on its loop.
boost::system::result<void, std::string> atomic_write(const std::string& path, std::string_view content, int mode);

// Reads `fd` to its end, or until more than `cap` bytes (then the result is longer than `cap`,
// so that the caller can tell); closes it.
std::string read_and_close(int fd, std::size_t cap);

std::string dirname_of(const std::string& path);
std::string basename_of(const std::string& path);
// `path` is `folder` or inside it (both absolute and normal; no file system access).
bool path_under(const std::string& path, const std::string& folder);
// The executable `program` as found on PATH (or as given, when it holds a '/'); empty if none.
std::string find_on_path(const std::string& program);

// The repository a folder belongs to: the nearest folder at or above it holding `.git` (a folder,
// or the file a worktree or submodule has), else the folder itself. Git is not run.
std::string repository_root(const std::string& folder);

}  // namespace oppx
