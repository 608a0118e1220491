// Subscriptions: kept by client id, so subscribing twice on one connection is one subscription.
#include "daemon/subscriptions.h"

#include "common/jsonrpc_peer.h"

namespace oppx::daemon {

void Subscriptions::add(std::uint64_t client_id, std::weak_ptr<JsonRpcPeer> peer) {
  forget_closed();
  subscribers_[client_id] = std::move(peer);
}

bool Subscriptions::remove(std::uint64_t client_id) { return subscribers_.erase(client_id) > 0; }

void Subscriptions::publish(std::string_view method, const boost::json::value& params) {
  forget_closed();
  for (auto& [id, weak] : subscribers_) {
    if (auto peer = weak.lock()) peer->notify(method, params);
  }
}

std::size_t Subscriptions::size() {
  forget_closed();
  return subscribers_.size();
}

void Subscriptions::forget_closed() {
  std::erase_if(subscribers_, [](auto& s) {
    auto peer = s.second.lock();
    return !peer || peer->closed();
  });
}

}  // namespace oppx::daemon
