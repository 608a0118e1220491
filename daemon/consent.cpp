// ConsentStore: the decisions, in a StateFile (read when it changed on disk, written whole and
// atomically, keys it does not know kept; a file we cannot trust is moved aside, never
// half-believed).
#include "daemon/consent.h"

#include "common/fs.h"
#include "common/log.h"
#include "common/text.h"
#include "daemon/config_write.h"

#include <boost/json.hpp>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

boost::system::result<std::string, std::string> file_sha256(const std::string& path) {
  // O_NONBLOCK: a FIFO put in a file's place must not block the daemon (it is then no regular file).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return {boost::system::in_place_error, std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return {boost::system::in_place_error, "not a regular file"};
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  char buf[65536];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) EVP_DigestUpdate(ctx, buf, static_cast<std::size_t>(n));
  }
  int error = n < 0 ? errno : 0;
  ::close(fd);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  if (error) return {boost::system::in_place_error, std::strerror(error)};
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return {boost::system::in_place_value, hex};
}

namespace {

// A file an interpreter runs: one marked executable, or named as a script or module is.
bool runnable(const std::string& path, const struct stat& st) {
  if (st.st_mode & 0111) return true;
  static constexpr std::string_view kScripts[] = {".js",  ".mjs", ".cjs",  ".ts",  ".mts", ".cts", ".jsx",
                                                  ".tsx", ".py",  ".pyc",  ".pyz", ".rb",  ".pl",  ".pm",
                                                  ".php", ".sh",  ".bash", ".zsh", ".lua", ".jar", ".wasm"};
  std::string name = basename_of(path);
  auto dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return false;
  std::string ext = lower(name.substr(dot));
  return std::find(std::begin(kScripts), std::end(kScripts), ext) != std::end(kScripts);
}

}  // namespace

std::vector<std::string> files_it_runs(const ConnectorDef& def, const std::string& root) {
  std::vector<std::string> out;
  if (def.kind != ConnectorDef::Kind::kStdio || root.empty() || root[0] != '/') return out;
  std::string top = normal_path(root);
  // As the connector starts: in its entry's "cwd" (relative to its file's folder), else the root.
  std::string base = def.file.empty() ? top : dirname_of(def.file);
  std::string folder = def.cwd.empty() || def.cwd.find("${") != std::string::npos ? base
                       : def.cwd[0] == '/'                                        ? def.cwd
                                                                                  : base + "/" + def.cwd;
  auto take = [&](const std::string& value, bool is_command) {
    if (value.empty() || value.find("${") != std::string::npos) return;
    std::string path = normal_path(value[0] == '/' ? value : folder + "/" + value);
    if (!path.starts_with(top == "/" ? top : top + "/")) return;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    // An argument that names data (a database the server writes, a notes file) is not what runs,
    // and counting it would make the connector wait again after every run.
    if (!is_command && !runnable(path, st)) return;
    std::string relative = path.substr(top == "/" ? 1 : top.size() + 1);
    if (std::find(out.begin(), out.end(), relative) == out.end()) out.push_back(relative);
  };
  // A command without a slash is looked up in PATH, not in the folder.
  if (def.command.find('/') != std::string::npos) take(def.command, true);
  for (auto& a : def.args) take(a, false);
  return out;
}

std::string file_change(const FileHashes& approved, const FileHashes& now, std::string_view since) {
  for (auto& [path, sha] : now) {
    auto was = approved.find(path);
    if (was == approved.end()) return fmt::format("{} appeared {}", path, since);
    if (was->second != sha) return fmt::format("{} changed {}", path, since);
  }
  for (auto& [path, sha] : approved) {
    if (!now.contains(path)) return fmt::format("{} is gone {}", path, since);
  }
  return {};
}

ConsentStore::ConsentStore(std::string path, Worker* worker)
    : file_(std::move(path), "the consent store",
            "nothing in it counts as approved any more. Approve your repository connectors again with "
            "`oppx mcp approve <name>`",
            "repositories", worker) {}

Consent ConsentStore::lookup(const std::string& root, const std::string& name, const std::string& sha256) {
  file_.load();
  json::object* repos = file_.section(false);
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

void ConsentStore::record(const std::string& root, const std::string& name, json::value decision, Saved done) {
  file_.load();
  json::object* repos = file_.section(true);
  if (!repos) return done(fmt::format("{}: \"repositories\" is not an object; move the file away", file_.path()));
  json::value& repo = (*repos)[root];
  if (!repo.is_object()) repo = json::object{};
  if (decision.is_null()) {
    repo.as_object().erase(name);
    if (repo.as_object().empty()) repos->erase(root);
  } else {
    repo.as_object()[name] = std::move(decision);
  }
  file_.save(std::move(done));
}

void ConsentStore::approve(const std::string& root, const std::string& name, const std::string& sha256,
                           const FileHashes& files, Saved done) {
  json::object decision{{"sha256", sha256}, {"decision", "approve"}, {"at", utc_now("%Y-%m-%dT%H:%M:%SZ")}};
  if (!files.empty()) {
    json::object f;
    for (auto& [path, sha] : files) f[path] = sha;
    decision["files"] = std::move(f);
  }
  record(root, name, std::move(decision), std::move(done));
}

FileHashes ConsentStore::approved_files(const std::string& root, const std::string& name) {
  file_.load();
  FileHashes out;
  json::object* repos = file_.section(false);
  json::value* repo = repos ? repos->if_contains(root) : nullptr;
  json::value* entry = repo && repo->is_object() ? repo->as_object().if_contains(name) : nullptr;
  json::value* files = entry && entry->is_object() ? entry->as_object().if_contains("files") : nullptr;
  if (files && files->is_object()) {
    for (auto& [path, sha] : files->as_object())
      out[std::string(path)] = sha.is_string() ? std::string(sha.as_string()) : "";
  }
  return out;
}

void ConsentStore::deny(const std::string& root, const std::string& name, const std::string& sha256, Saved done) {
  record(root, name, json::object{{"sha256", sha256}, {"decision", "deny"}, {"at", utc_now("%Y-%m-%dT%H:%M:%SZ")}},
         std::move(done));
}

void ConsentStore::forget(const std::string& root, const std::string& name, Saved done) {
  record(root, name, nullptr, std::move(done));
}

}  // namespace oppx::daemon
