// Clients that asked (mcp/subscribe) to hear about connector changes. A subscriber is held by a
// weak pointer to its connection, so a subscription ends with the connection and costs nothing
// after it; notifications are queued on each live connection, never awaited.
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string_view>

namespace oppx {
class JsonRpcPeer;
}

namespace oppx::daemon {

class Subscriptions {
 public:
  void add(std::uint64_t client_id, std::weak_ptr<JsonRpcPeer> peer);
  bool remove(std::uint64_t client_id);
  // Sends one notification to every live subscriber; forgets the ones whose connection ended.
  void publish(std::string_view method, const boost::json::value& params);
  std::size_t size();

 private:
  void forget_closed();
  std::map<std::uint64_t, std::weak_ptr<JsonRpcPeer>> subscribers_;
};

}  // namespace oppx::daemon
