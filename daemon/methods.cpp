// The method table of the socket API: one line per method, the index of what oppxd speaks.
// docs/protocol.md documents each; a new method is a line here and a handler below it.
#include "daemon/server.h"

#include "common/log.h"
#include "common/proc.h"
#include "proto/daemon_api.h"

#include <boost/json/value_from.hpp>

#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

struct NoParams {};
boost::system::result<NoParams, std::string> no_params(const json::value& params) {
  if (!params.is_null() && !params.is_object()) return std::string("params: expected object");
  return NoParams{};
}

void hello(const proto::HelloParams& p, Reply reply, Client& client) {
  if (p.protocol != proto::kProtocolVersion) {
    auto e = proto::RpcError::make(proto::ErrorCode::kVersionMismatch, proto::kind::kVersionMismatch,
                                   "this daemon speaks protocol " + std::to_string(proto::kProtocolVersion) +
                                       " and the client " + std::to_string(p.protocol) +
                                       "; restart the daemon with `oppx daemon restart`");
    e.data["daemon_protocol"] = proto::kProtocolVersion;
    e.data["daemon_build"] = kBuildId;
    return reply.fail(std::move(e));
  }
  client.name = p.client;
  log::debug("client {} is {}", client.id, p.client);
  reply.ok(json::value_from(proto::HelloResult{proto::kProtocolVersion, OPPX_VERSION, kBuildId, ::getpid()}));
}

void status(Server& server, Reply reply) {
  proto::StatusResult s;
  s.pid = ::getpid();
  s.version = OPPX_VERSION;
  s.build = kBuildId;
  s.uptime_ms = static_cast<std::int64_t>(server.uptime_seconds() * 1000);
  s.clients = server.client_count();
  s.connectors = 0;
  s.rss_kib = rss_kib(::getpid());
  s.socket = server.options().socket_path;
  s.log = server.options().log_path;
  reply.ok(json::value_from(s));
}

void shutdown(Server& server, Reply reply) {
  reply.ok(json::value_from(proto::ShutdownResult{}));
  server.stop("asked by a client (daemon/shutdown)");
}

}  // namespace

void register_methods(Router& r, Server& s) {
  r.add("hello", proto::decode_hello_params, hello);
  r.add("daemon/status", no_params, [&s](NoParams, Reply reply, Client&) { status(s, std::move(reply)); });
  r.add("daemon/shutdown", no_params, [&s](NoParams, Reply reply, Client&) { shutdown(s, std::move(reply)); });
}

}  // namespace oppx::daemon
