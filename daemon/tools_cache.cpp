// ToolsCache. The file is small (a few tool lists) and written only when a list changed, so it is
// written in full each time, atomically, never read-modify-written by two daemons at once (one
// daemon per user and socket; a second socket's daemon may overwrite it, which costs only a miss).
#include "daemon/tools_cache.h"

#include "common/fs.h"
#include "common/log.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {
constexpr std::size_t kMaxFileBytes = 16u << 20;
}

std::string definition_hash(std::string_view canonical) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : canonical) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return fmt::format("{:016x}", h);
}

ToolsCache::ToolsCache(std::string path, Save save) : path_(std::move(path)), save_(std::move(save)) {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno != ENOENT)
      log::warn("tool-list cache {} unreadable ({}); starting without it", path_, std::strerror(errno));
    return;
  }
  std::string text = read_and_close(fd, kMaxFileBytes);
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  const json::value* e = !ec && v.is_object() ? v.as_object().if_contains("entries") : nullptr;
  if (!e || !e->is_object()) {
    log::warn("tool-list cache {} is not what oppxd writes; it will be replaced", path_);
    return;
  }
  for (auto& [hash, entry] : e->as_object()) {
    const json::object* o = entry.if_object();
    if (!o || !o->contains("tools") || !o->at("tools").is_array()) continue;
    json::object kept = *o;
    if (!kept.contains("saved") || !kept.at("saved").is_int64()) kept["saved"] = 0;
    entries_[hash] = std::move(kept);
  }
}

const json::array* ToolsCache::find(std::string_view canonical) const {
  const json::value* e = entries_.if_contains(definition_hash(canonical));
  return e ? &e->as_object().at("tools").as_array() : nullptr;
}

std::string ToolsCache::era(std::string_view canonical) const {
  const json::value* e = entries_.if_contains(definition_hash(canonical));
  const json::value* v = e ? e->as_object().if_contains("version") : nullptr;
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

void ToolsCache::store(std::string_view name, std::string_view canonical, const json::array& tools,
                       std::string_view version) {
  std::string key = definition_hash(canonical);
  if (const json::value* e = entries_.if_contains(key);
      e && e->as_object().at("tools") == json::value(tools) && era(canonical) == version)
    return;
  auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  entries_[key] = json::object{{"name", name}, {"saved", now.count()}, {"tools", tools}, {"version", version}};
  while (entries_.size() > kMaxEntries) {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->value().at("saved").as_int64() < oldest->value().at("saved").as_int64()) oldest = it;
    }
    entries_.erase(oldest);
  }
  save();
}

void ToolsCache::save() {
  std::string text = proto::json_text(json::object{{"version", 1}, {"entries", entries_}});
  if (save_) return save_(path_, std::move(text));
  if (auto r = atomic_write(path_, text, 0600); !r) log::warn("cannot save the tool-list cache: {}", r.error());
}

}  // namespace oppx::daemon
