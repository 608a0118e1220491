// ConsentStore: read when it changed on disk, written whole and atomically (common/fs
// atomic_write: temp in the same folder, fsync, rename, fsync of the folder) with keys it does not
// know kept. Fail closed: a file we cannot trust is moved aside, never half-believed.
#include "daemon/consent.h"

#include "common/fs.h"
#include "common/log.h"
#include "daemon/config_write.h"

#include <boost/json.hpp>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

constexpr std::size_t kMaxStoreBytes = 4u << 20;

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string file_stamp(const struct stat& st) {
  return fmt::format("{}:{}:{}.{}", st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

json::object* repositories(json::value& doc, bool create) {
  if (!doc.is_object()) {
    if (!create) return nullptr;
    doc = json::object{{"version", 1}};
  }
  json::value* r = doc.as_object().if_contains("repositories");
  if (!r) {
    if (!create) return nullptr;
    r = &(doc.as_object()["repositories"] = json::object{});
  }
  return r->if_object();
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::string repository_root(const std::string& folder) {
  if (folder.empty() || folder[0] != '/') return folder;
  std::string dir = folder;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  for (std::string d = dir;;) {
    struct stat st {};
    if (::lstat((d + (d == "/" ? ".git" : "/.git")).c_str(), &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
      return d;
    if (d == "/") break;
    d = dirname_of(d);
  }
  return dir;
}

ConsentStore::ConsentStore(std::string path) : path_(std::move(path)) {}

void ConsentStore::set_aside(const std::string& why) {
  std::string bad = path_ + ".bad-" + utc_now("%Y%m%dT%H%M%SZ");
  for (int i = 1; ::access(bad.c_str(), F_OK) == 0 && i < 100; ++i)
    bad = fmt::format("{}.bad-{}-{}", path_, utc_now("%Y%m%dT%H%M%SZ"), i);
  bool moved = ::rename(path_.c_str(), bad.c_str()) == 0;
  // Said until something is approved again, so worded as what happened then, not as now.
  problem_ = fmt::format(
      "the consent store {} was set aside at {} because it {}: {}, and nothing in it counts as approved any "
      "more. Approve your repository connectors again with `oppx mcp approve <name>`",
      path_, utc_now("%H:%M:%S UTC"), why,
      moved ? "it was moved aside to " + bad : fmt::format("it could not be moved aside ({})", std::strerror(errno)));
  log::warn("{}", problem_);
  doc_ = nullptr;
  stamp_ = "moved";
}

void ConsentStore::load() {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0) {
    doc_ = nullptr;
    stamp_ = "missing";
    return;
  }
  // Whoever else can write this file could approve a repository's command for us.
  if (S_ISLNK(st.st_mode)) return set_aside("is a symbolic link");
  if (!S_ISREG(st.st_mode)) return set_aside("is not a regular file");
  if (st.st_uid != ::geteuid()) return set_aside(fmt::format("belongs to uid {}, not to you", st.st_uid));
  if (st.st_mode & 077)
    return set_aside(
        fmt::format("can be read or written by others (mode {:04o}; oppx writes it 0600)", st.st_mode & 07777));
  if (file_stamp(st) == stamp_) return;
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return set_aside(fmt::format("cannot be read ({})", std::strerror(errno)));
  std::string text = read_and_close(fd, kMaxStoreBytes);
  if (text.size() > kMaxStoreBytes) return set_aside("is larger than 4 MiB");
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return set_aside("is not valid JSON (" + ec.message() + ")");
  if (!v.is_object()) return set_aside("is not a JSON object");
  if (auto* r = v.as_object().if_contains("repositories"); r && !r->is_object())
    return set_aside("has a \"repositories\" that is not an object");
  doc_ = std::move(v);
  stamp_ = file_stamp(st);
}

Consent ConsentStore::lookup(const std::string& root, const std::string& name, const std::string& sha256) {
  load();
  json::object* repos = repositories(doc_, false);
  if (!repos) return Consent::kNone;
  json::value* repo = repos->if_contains(root);
  json::value* entry = repo && repo->is_object() ? repo->as_object().if_contains(name) : nullptr;
  if (!entry || !entry->is_object()) return Consent::kNone;
  const json::value* hash = entry->as_object().if_contains("sha256");
  const json::value* decision = entry->as_object().if_contains("decision");
  bool approved = decision && decision->is_string() && decision->as_string() == "approve";
  if (!hash || !hash->is_string() || hash->as_string() != sha256) return approved ? Consent::kChanged : Consent::kNone;
  if (approved) return Consent::kApproved;
  if (decision && decision->is_string() && decision->as_string() == "deny") return Consent::kDenied;
  return Consent::kNone;
}

boost::system::result<void, std::string> ConsentStore::record(const std::string& root, const std::string& name,
                                                              json::value decision) {
  load();
  json::object* repos = repositories(doc_, true);
  if (!repos) return fmt::format("{}: \"repositories\" is not an object; move the file away", path_);
  json::value& repo = (*repos)[root];
  if (!repo.is_object()) repo = json::object{};
  if (decision.is_null()) {
    repo.as_object().erase(name);
    if (repo.as_object().empty()) repos->erase(root);
  } else {
    repo.as_object()[name] = std::move(decision);
  }
  if (auto r = atomic_write(path_, pretty_json(doc_), 0600); !r) {
    stamp_.clear();  // read it again next time: memory may now differ from the file
    return r.error();
  }
  struct stat st {};
  stamp_ = ::lstat(path_.c_str(), &st) == 0 ? file_stamp(st) : "";
  problem_.clear();
  return {};
}

boost::system::result<void, std::string> ConsentStore::approve(const std::string& root, const std::string& name,
                                                               const std::string& sha256) {
  return record(root, name,
                json::object{{"sha256", sha256}, {"decision", "approve"}, {"at", utc_now("%Y-%m-%dT%H:%M:%SZ")}});
}

boost::system::result<void, std::string> ConsentStore::deny(const std::string& root, const std::string& name,
                                                            const std::string& sha256) {
  return record(root, name,
                json::object{{"sha256", sha256}, {"decision", "deny"}, {"at", utc_now("%Y-%m-%dT%H:%M:%SZ")}});
}

boost::system::result<void, std::string> ConsentStore::forget(const std::string& root, const std::string& name) {
  return record(root, name, nullptr);
}

}  // namespace oppx::daemon
