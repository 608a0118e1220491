// Router::dispatch: unknown methods get -32601 with the list of known ones in data, so a plugin
// author sees at once what this daemon speaks.
#include "daemon/router.h"

#include <boost/json/array.hpp>

namespace oppx::daemon {

void Router::add(std::string method, Handler handler) { handlers_[std::move(method)] = std::move(handler); }

void Router::dispatch(const proto::Request& req, Reply reply, Client& client) const {
  auto it = handlers_.find(req.method);
  if (it == handlers_.end()) {
    auto e = proto::RpcError::make(
        proto::ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
        "unknown method " + req.method + "; see docs/protocol.md for the methods of this version");
    boost::json::array known;
    for (auto& [name, _] : handlers_) known.emplace_back(name);
    e.data["methods"] = std::move(known);
    return reply.fail(std::move(e));
  }
  it->second(req, std::move(reply), client);
}

proto::RpcError Router::invalid_params(const std::string& message) {
  proto::RpcError e = proto::RpcError::make(proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams, message);
  e.data["field"] = message.substr(0, message.find(':'));
  return e;
}

std::vector<std::string> Router::methods() const {
  std::vector<std::string> out;
  for (auto& [name, _] : handlers_) out.push_back(name);
  return out;
}

}  // namespace oppx::daemon
