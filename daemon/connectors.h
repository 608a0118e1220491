// The daemon's connectors: the user's mcp.json read when the daemon starts and (again, when it
// changed) on a client's request, one Connector per definition shared by every client, started
// in parallel, the JSON the mcp/… methods answer with, the tool-list cache and the subscribers
// told of every change. Headers and env values are masked in everything it returns.
#pragma once

#include "daemon/connector.h"
#include "daemon/mcp_config.h"
#include "daemon/subscriptions.h"
#include "daemon/tools_cache.h"

#include <boost/json/object.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

class Connectors {
 public:
  Connectors(boost::asio::io_context& io, std::string state_dir);
  ~Connectors();

  // Re-reads the user's connectors file when it changed since the last look, with the asking
  // client's environment: new and changed definitions start, removed ones stop. A connector also
  // restarts when `env` sets a variable its definition reads to another value than the one it
  // started with (a variable `env` lacks changes nothing). At daemon start: the daemon's own.
  void refresh(const EnvMap& env);
  // Runs `fn` once no connector (or the one named) is still starting.
  void when_settled(const std::string& name, std::function<void()> fn);
  void reconnect(const std::string& name, const EnvMap& env);  // empty name: all

  boost::json::object list_json() const;
  boost::json::object entry_json(const Connector& c) const;
  // Its tools; while it is starting with none yet, the list cached for its definition, if any.
  const boost::json::array& tools_of(const Connector& c, bool* cached) const;
  Subscriptions& subscriptions() { return subscriptions_; }
  std::shared_ptr<Connector> find(const std::string& name) const;
  std::size_t size() const { return connectors_.size(); }
  void stop_all();

 private:
  void settled_check();
  void reload(const EnvMap& env);
  void adopt(const std::shared_ptr<Connector>& c);
  void start_one(Connector& c, const EnvMap& env, std::chrono::milliseconds timeout);
  std::string changed_variable(const Connector& c, const EnvMap& env) const;
  void changed(const Connector& c);
  void removed(Connector& c, bool gone);

  // What was last told about a connector, and the variables it started with (hashed values).
  struct Seen {
    std::string state;  // state and reason
    std::string tools;  // hash of the last running tool list
    std::map<std::string, std::string> env;
  };
  boost::asio::io_context& io_;
  std::string state_dir_;
  std::string config_path_;
  std::string config_stamp_;  // inode, size and mtime of what was read last
  std::string config_error_;
  std::vector<std::string> warnings_;
  std::map<std::string, std::shared_ptr<Connector>> connectors_;
  std::vector<std::pair<std::string, std::function<void()>>> waiters_;
  ToolsCache cache_;
  Subscriptions subscriptions_;
  std::map<const Connector*, Seen> seen_;  // erased when the connector is removed
};

}  // namespace oppx::daemon
