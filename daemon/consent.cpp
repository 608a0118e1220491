// ConsentStore: the decisions, in a StateFile (read when it changed on disk, written whole and
// atomically, keys it does not know kept; a file we cannot trust is moved aside, never
// half-believed).
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

ConsentStore::ConsentStore(std::string path)
    : file_(std::move(path), "the consent store",
            "nothing in it counts as approved any more. Approve your repository connectors again with "
            "`oppx mcp approve <name>`",
            "repositories") {}

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

boost::system::result<void, std::string> ConsentStore::record(const std::string& root, const std::string& name,
                                                              json::value decision) {
  file_.load();
  json::object* repos = file_.section(true);
  if (!repos) return fmt::format("{}: \"repositories\" is not an object; move the file away", file_.path());
  json::value& repo = (*repos)[root];
  if (!repo.is_object()) repo = json::object{};
  if (decision.is_null()) {
    repo.as_object().erase(name);
    if (repo.as_object().empty()) repos->erase(root);
  } else {
    repo.as_object()[name] = std::move(decision);
  }
  return file_.save();
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
