// The last tool list of each connector definition, kept across daemon restarts in
// $XDG_STATE_HOME/oppx/mcp-tools-cache.json, so that `mcp list` and `mcp tools` answer at once
// while a slow connector is still starting. Keyed by a hash of the definition as written
// (ConnectorDef::canonical): an edited definition never shows the old list.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace oppx::daemon {

// A stable 64-bit hash (FNV-1a) of a canonical definition, as 16 hex digits. A cache key, not a
// security measure: a collision could only show a wrong list marked "cached" until the start ends.
std::string definition_hash(std::string_view canonical);

class ToolsCache {
 public:
  static constexpr std::size_t kMaxEntries = 64;  // the least recently saved ones go first

  // Writes `text` to `path`: the daemon's goes through its worker (worker.h), off the loop.
  using Save = std::function<void(const std::string& path, std::string text)>;

  // Reads the file; a missing or unreadable one is an empty cache (the reason is logged).
  // Without `save`, the file is written at once, on the caller's thread.
  explicit ToolsCache(std::string path, Save save = {});

  // The list saved for this definition, or nullptr.
  const boost::json::array* find(std::string_view canonical) const;
  // The MCP version its server spoke last ("" when not known), so that its next start goes
  // straight to that era (no server/discover probe for a 2025-11-25 one).
  std::string era(std::string_view canonical) const;
  // Saves the list and the version when they differ from those kept; writes the file (atomic,
  // 0600) then.
  void store(std::string_view name, std::string_view canonical, const boost::json::array& tools,
             std::string_view version);
  const std::string& path() const { return path_; }

 private:
  void save();
  std::string path_;
  Save save_;
  boost::json::object entries_;  // hash → {"name", "saved" (unix seconds), "tools", "version"}
};

}  // namespace oppx::daemon
