// The terminal chat's second connection to the daemon, subscribed to mcp/changed: a connector
// that went down (with its steps), came back or changed its tool list becomes a notice, shown at
// once at the prompt (or after the turn), and the chat reads the tool list again before the next
// turn. When the daemon goes away its thread ends; the chat makes a new watcher once it is back.
#pragma once

#include "common/sync_client.h"
#include "proto/mcp_results.h"

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace oppx::cli {

class ConnectorWatcher {
 public:
  explicit ConnectorWatcher(const std::string& socket);
  ~ConnectorWatcher();
  ConnectorWatcher(const ConnectorWatcher&) = delete;
  ConnectorWatcher& operator=(const ConnectorWatcher&) = delete;

  // What a connector's change is worth saying: a warning when it went down, else a line.
  struct Notice {
    std::string name;
    bool down = false;
    std::string text;
    std::string shown() const;  // escaped, for the terminal
  };
  std::vector<Notice> take();
  // A connector came, went or changed since the last call.
  bool changed() { return changed_.exchange(false); }
  // These connectors' start was said already: their notice, queued or next, is dropped.
  void said(const std::vector<std::string>& names);

 private:
  void run();
  void note(const proto::ConnectorEntry& c);

  std::optional<SyncClient> client_;
  std::map<std::string, std::string> state_;  // the reader thread's only
  std::thread thread_;
  std::atomic<bool> stop_{false}, changed_{false};
  std::mutex m_;
  std::vector<Notice> notices_;
  std::set<std::string> said_;
};

}  // namespace oppx::cli
