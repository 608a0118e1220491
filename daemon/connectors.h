// The daemon's connectors: the user's mcp.json read (again, when it changed) on a client's
// request, one Connector per definition shared by every client, started in parallel, and the
// JSON the mcp/… methods answer with. Headers and env values are masked in everything it returns.
#pragma once

#include "daemon/connector.h"
#include "daemon/mcp_config.h"

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
  // client's environment: new and changed definitions start, removed ones stop.
  void refresh(const EnvMap& env);
  // Runs `fn` once no connector (or the one named) is still starting.
  void when_settled(const std::string& name, std::function<void()> fn);
  void reconnect(const std::string& name, const EnvMap& env);  // empty name: all

  boost::json::object list_json() const;
  boost::json::object entry_json(const Connector& c) const;
  std::shared_ptr<Connector> find(const std::string& name) const;
  std::size_t size() const { return connectors_.size(); }
  void stop_all();

 private:
  void settled_check();
  boost::asio::io_context& io_;
  std::string state_dir_;
  std::string config_path_;
  std::string config_stamp_;  // inode, size and mtime of what was read last
  std::string config_error_;
  std::vector<std::string> warnings_;
  std::map<std::string, std::shared_ptr<Connector>> connectors_;
  std::vector<std::pair<std::string, std::function<void()>>> waiters_;
};

}  // namespace oppx::daemon
