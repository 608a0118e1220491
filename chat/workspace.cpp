// A path is placed by its real path (links followed) against the roots' real paths and the deny
// list (both as listed and resolved). An inside path is then opened with openat2 from its root's
// descriptor, beneath it (a link swapped in since the check cannot lead out), falling back to
// openat with O_NOFOLLOW where the kernel has no openat2; in both cases the opened descriptor's
// own path (/proc/self/fd) is checked again, and its type with fstat before anything is read.
#include "chat/workspace.h"

#include "common/fs.h"
#include "common/paths.h"
#include "common/secret_paths.h"
#include "common/user_config.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace oppx::chat {

namespace fs = std::filesystem;

namespace {

std::string normal(const std::string& p) {
  std::string n = fs::path(p).lexically_normal().string();
  while (n.size() > 1 && n.back() == '/') n.pop_back();
  return n;
}

// Links followed as far as the path exists; weakly_canonical stops at a link to nothing, which is
// followed here by hand (where it points decides inside or outside).
std::string real_of(const std::string& abs) {
  std::string p = abs;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    fs::path r = fs::weakly_canonical(p, ec);
    if (ec) return p;
    p = normal(r.string());
    if (!fs::is_symlink(p, ec)) return p;
    fs::path target = fs::read_symlink(p, ec);
    if (ec) return p;
    p = normal(target.is_absolute() ? target.string() : (fs::path(p).parent_path() / target).string());
  }
  return p;
}

std::string expand_home(const std::string& p) {
  if (p == "~" || p.starts_with("~/")) return paths::home() + p.substr(1);
  return p;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

int open_beneath(int dir, const std::string& rel, int flags) {
#ifdef SYS_openat2
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, dir, rel.c_str(), &how, sizeof how);
  if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return static_cast<int>(fd);
#endif
  // No openat2 (or a seccomp filter refuses it): no link at the end; the real path of what was
  // opened is checked after.
  return ::openat(dir, rel.c_str(), flags | O_NOFOLLOW);
}

// The path the kernel has for an open descriptor; "" when /proc cannot say.
std::string fd_path(int fd) {
  std::array<char, 4096> buf{};
  ssize_t n = ::readlink(fmt::format("/proc/self/fd/{}", fd).c_str(), buf.data(), buf.size() - 1);
  if (n <= 0) return {};
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Opened::Opened(Opened&& o) noexcept
    : fd(std::exchange(o.fd, -1)),
      check(std::move(o.check)),
      directory(o.directory),
      size(o.size),
      error(std::move(o.error)) {}

Opened::~Opened() {
  if (fd >= 0) ::close(fd);
}

Workspace::Workspace(std::string cwd, std::vector<std::string> roots) : cwd_(normal(cwd)) {
  std::vector<std::string> deny = secret_paths(paths::home());
  for (auto& p : oppx_private_paths()) deny.push_back(p);
  deny.push_back(paths::user_mcp_config());
  deny.push_back("/proc");  // every process's environment, memory and open files
  for (const auto& d : deny) {
    if (d.empty() || d[0] != '/') continue;
    deny_.push_back(normal(d));
    if (std::string r = real_of(normal(d)); r != deny_.back()) deny_.push_back(r);
  }
  for (const auto& r : roots) add_folder(r);
}

Workspace Workspace::of(const std::string& cwd) {
  Workspace ws(cwd, {repository_root(cwd)});
  if (auto conf = read_user_config()) {
    if (const boost::json::value* v = conf->if_contains("workspace_folders"); v && v->is_array()) {
      for (const auto& f : v->as_array()) {
        if (f.is_string()) ws.add_folder(std::string(f.as_string()));
      }
    }
  }
  return ws;
}

std::string Workspace::add_folder(const std::string& dir) {
  std::string p = expand_home(dir);
  if (p.empty()) return "an empty folder name";
  std::string abs = normal(p[0] == '/' ? p : cwd_ + "/" + p);
  std::string real = real_of(abs);
  std::string d = denied_by(abs);
  if (d.empty()) d = denied_by(real);
  if (!d.empty()) return fmt::format("{} is in {}, which the agent never reads", abs, d);
  std::error_code ec;
  if (!fs::is_directory(real, ec)) return fmt::format("{} is not a folder", abs);
  if (std::find(real_roots_.begin(), real_roots_.end(), real) != real_roots_.end()) return {};
  roots_.push_back(abs);
  real_roots_.push_back(real);
  return {};
}

std::string Workspace::linked_to_denied(const struct stat& st) const {
  // The denied places are small folders of credentials: a bounded walk of each finds the file.
  constexpr int kMaxEntries = 5000;
  int seen = 0;
  for (const auto& d : deny_) {
    if (d == "/proc") continue;
    struct stat ds {};
    if (::lstat(d.c_str(), &ds) != 0) continue;
    if (S_ISREG(ds.st_mode)) {
      if (ds.st_dev == st.st_dev && ds.st_ino == st.st_ino) return d;
      continue;
    }
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(d, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator() && ++seen < kMaxEntries; it.increment(ec)) {
      struct stat fst {};
      if (::lstat(it->path().c_str(), &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_dev == st.st_dev &&
          fst.st_ino == st.st_ino)
        return it->path().string();
    }
  }
  return {};
}

std::string Workspace::denied_by(const std::string& abs) const {
  for (const auto& d : deny_) {
    if (path_under(abs, d)) return d;
  }
  return {};
}

PathCheck Workspace::check(const std::string& path) const {
  PathCheck c;
  std::string p = expand_home(path.empty() ? "." : path);
  c.path = normal(p[0] == '/' ? p : cwd_ + "/" + p);
  c.real = real_of(c.path);
  std::string d = denied_by(c.path);
  if (d.empty()) d = denied_by(c.real);
  if (!d.empty()) {
    c.place = Place::kDenied;
    c.why = fmt::format("{} is in {}, which the agent never reads (credentials, processes and oppx's own files)",
                        c.real == c.path ? c.path : c.path + " (it leads to " + c.real + ")", d);
    return c;
  }
  for (const auto& r : real_roots_) {
    if (path_under(c.real, r)) {
      c.place = Place::kInside;
      return c;
    }
  }
  c.place = Place::kOutside;
  c.why = c.real == c.path ? fmt::format("{} is outside the workspace ({})", c.path, joined(roots_))
                           : fmt::format("{} leads to {}, outside the workspace ({})", c.path, c.real, joined(roots_));
  return c;
}

Opened Workspace::open(const std::string& path, bool outside_allowed) const {
  Opened o;
  o.check = check(path);
  PathCheck& c = o.check;
  if (c.place == Place::kDenied) {
    o.error = c.why;
    return o;
  }
  if (c.place == Place::kOutside && !outside_allowed) {
    o.error = c.why;
    return o;
  }
  constexpr int kFlags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  int fd = -1;
  if (c.place == Place::kInside) {
    std::string root;
    for (const auto& r : real_roots_) {
      if (path_under(c.real, r) && r.size() > root.size()) root = r;
    }
    std::string rel = c.real == root ? "." : c.real.substr(root == "/" ? 1 : root.size() + 1);
    int dir = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) {
      o.error = fmt::format("the workspace folder {} cannot be opened ({})", root, std::strerror(errno));
      return o;
    }
    fd = open_beneath(dir, rel, kFlags);
    int saved = errno;
    ::close(dir);
    errno = saved;
    if (fd < 0 && (errno == EXDEV || errno == ELOOP)) {
      c.place = Place::kOutside;
      o.error = fmt::format("{} leads out of the workspace through a link; not read", c.path);
      return o;
    }
  } else {
    fd = ::open(c.real.c_str(), kFlags);
  }
  if (fd < 0) {
    int e = errno;
    struct stat st {};
    if (e == ENXIO && ::stat(c.real.c_str(), &st) == 0) {
      o.error = fmt::format("{} is {}, not a file: only regular files are read", c.path, kind_of(st.st_mode));
    } else if (e == ENOENT || e == ENOTDIR) {
      o.error = fmt::format("{}: no such file or folder", c.path);
    } else {
      o.error = fmt::format("{} cannot be opened ({})", c.path, std::strerror(e));
    }
    return o;
  }
  o.fd = fd;
  if (std::string real = fd_path(fd); !real.empty()) c.real = real;
  if (std::string d = denied_by(c.real); !d.empty()) {
    c.place = Place::kDenied;
    o.error = fmt::format("{} leads to {}, in {}, which the agent never reads", c.path, c.real, d);
    ::close(std::exchange(o.fd, -1));
    return o;
  }
  if (c.place == Place::kInside && std::none_of(real_roots_.begin(), real_roots_.end(),
                                                [&](const std::string& r) { return path_under(c.real, r); })) {
    c.place = Place::kOutside;
    o.error = fmt::format("{} leads to {}, outside the workspace; not read", c.path, c.real);
    ::close(std::exchange(o.fd, -1));
    return o;
  }
  struct stat st {};
  if (::fstat(o.fd, &st) != 0) {
    o.error = fmt::format("{} cannot be examined ({})", c.path, std::strerror(errno));
    ::close(std::exchange(o.fd, -1));
    return o;
  }
  if (S_ISDIR(st.st_mode)) {
    o.directory = true;
  } else if (S_ISREG(st.st_mode) && st.st_nlink > 1 && !linked_to_denied(st).empty()) {
    // A hard link planted in the repository to a key: the same file under another name.
    o.error = fmt::format("{} is another name (a hard link) of {}, which the agent never reads", c.path,
                          linked_to_denied(st));
    ::close(std::exchange(o.fd, -1));
  } else if (S_ISREG(st.st_mode)) {
    o.size = static_cast<std::uintmax_t>(st.st_size);
  } else {
    o.error = fmt::format("{} is {}, not a file: only regular files are read", c.path, kind_of(st.st_mode));
    ::close(std::exchange(o.fd, -1));
  }
  return o;
}

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

// Whether `text` holds `prefix`, not inside a longer word, followed by at least `min` characters
// that `ok` accepts.
template <class Ok>
bool token_after(std::string_view text, std::string_view prefix, std::size_t min, Ok ok) {
  for (std::size_t at = text.find(prefix); at != std::string_view::npos; at = text.find(prefix, at + 1)) {
    if (at > 0 && word_char(text[at - 1])) continue;
    std::size_t n = 0;
    while (at + prefix.size() + n < text.size() && ok(text[at + prefix.size() + n])) ++n;
    if (n >= min) return true;
  }
  return false;
}

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool alnum_(char c) { return alnum(c) || c == '_'; }
bool token_char(char c) { return alnum(c) || c == '_' || c == '-'; }
bool upper_digit(char c) {
  return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
}

bool private_key_block(std::string_view text) {
  for (std::size_t at = text.find("-----BEGIN "); at != std::string_view::npos; at = text.find("-----BEGIN ", at + 1)) {
    std::string_view line = text.substr(at, 80);
    line = line.substr(0, line.find('\n'));
    if (line.find("PRIVATE KEY-----") != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

bool looks_sensitive(std::string_view path, std::string_view text) {
  std::string_view name =
      path.substr(path.find_last_of('/') == std::string_view::npos ? 0 : path.find_last_of('/') + 1);
  if (name == ".env" ||
      (name.starts_with(".env.") && name != ".env.example" && name != ".env.sample" && name != ".env.template"))
    return true;
  for (std::string_view key :
       {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".netrc", "_netrc", ".pgpass", ".git-credentials"}) {
    if (name == key) return true;
  }
  if (private_key_block(text)) return true;
  for (std::string_view gh : {"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}) {
    if (token_after(text, gh, 36, alnum)) return true;
  }
  return token_after(text, "github_pat_", 22, alnum_) || token_after(text, "sk-", 20, token_char) ||
         token_after(text, "xoxb-", 10, token_char) || token_after(text, "xoxp-", 10, token_char) ||
         token_after(text, "glpat-", 20, token_char) || token_after(text, "AKIA", 16, upper_digit) ||
         token_after(text, "AIza", 35, token_char);
}

}  // namespace oppx::chat
