// What the agent's `read` and `grep` may open unasked: the workspace, that is the project root
// (the repository of the session's folder, else the folder itself) and the folders the user adds
// (config.json's "workspace_folders", add_folder). Elsewhere is outside: the chat asks, `-p`
// declines. Some places are never read (common/secret_paths.h: credentials and oppx's own
// folders): that denial wins inside the workspace too, and after a yes. A path is resolved once
// and opened without following a link out of the workspace (openat2 with RESOLVE_BENEATH; the
// opened file's real path is checked again), and only a regular file or a folder is opened.
#pragma once

#include <cstdint>
#include <sys/stat.h>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::chat {

enum class Place { kInside, kOutside, kDenied };

struct PathCheck {
  Place place = Place::kOutside;
  std::string path;  // absolute and lexically normal, `~` expanded: what was asked for
  std::string real;  // where it leads, links followed (as far as it exists)
  std::string why;   // outside or denied: one sentence naming the path
};

// A file or folder opened for reading; it closes the descriptor.
struct Opened {
  Opened() = default;
  Opened(Opened&& o) noexcept;
  Opened& operator=(Opened&&) = delete;
  ~Opened();
  explicit operator bool() const { return fd >= 0; }

  int fd = -1;
  PathCheck check;  // check.real is the opened file's own real path once open
  bool directory = false;
  std::uintmax_t size = 0;
  std::string error;  // why it was not opened
};

class Workspace {
 public:
  // `cwd`: the session's folder, where relative paths start; `roots`: the workspace's folders.
  Workspace(std::string cwd, std::vector<std::string> roots);
  // The workspace of a session in `cwd`: its repository root and config.json's
  // "workspace_folders" (absolute, or starting with ~/).
  static Workspace of(const std::string& cwd);

  // Another folder of the workspace (a future /add-dir); "" or why not (it is missing, or denied).
  std::string add_folder(const std::string& dir);

  const std::string& cwd() const { return cwd_; }
  const std::vector<std::string>& roots() const { return roots_; }

  // Where `path` (relative to cwd, absolute, or ~/…) is: inside, outside or denied. Links are
  // followed to decide: a link in the workspace to a file elsewhere is outside.
  PathCheck check(const std::string& path) const;

  // Opens `path` for reading when it is inside, or outside and `outside_allowed` (the user said
  // yes); never when denied. A regular file or a folder only: a FIFO, device or socket is refused
  // at once, without blocking.
  Opened open(const std::string& path, bool outside_allowed) const;

  // Whether an absolute path lies in a place never read; the place when so.
  std::string denied_by(const std::string& abs) const;
  // A file of a place never read that is the same file as `st` (a hard link to it); "" when none.
  std::string linked_to_denied(const struct stat& st) const;

 private:
  std::string cwd_;
  std::vector<std::string> roots_;       // as given, normal
  std::vector<std::string> real_roots_;  // links resolved
  std::vector<std::string> deny_;        // as listed and resolved
};

// Whether what was read looks like a secret: a private key block, a .env file, an ssh key or
// .netrc by its name, or a token of a well-known form (GitHub, OpenAI-style sk-, Slack, AWS, …).
bool looks_sensitive(std::string_view path, std::string_view text);

}  // namespace oppx::chat
