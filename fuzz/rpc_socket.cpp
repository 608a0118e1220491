// Fuzz target: bytes a socket client sends the daemon, through the real NDJSON line decoder
// (common/ndjson_transport), the JSON-RPC peer (common/jsonrpc_peer) and the method table's
// machinery (daemon/router) with the real `hello` decoder. Property: each request whose id occurs
// once in the input gets exactly one reply, and every line written back is a JSON-RPC response.
#include "daemon/router.h"
#include "fuzz/driver.h"
#include "proto/daemon_api.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>

namespace {

using namespace oppx;
namespace json = boost::json;

daemon::Router make_router() {
  daemon::Router r;
  r.add(
      "hello", +[](const proto::HelloParams& p, Reply reply, daemon::Client& c) {
        c.env = p.env;
        c.cwd = p.cwd;
        reply.ok(json::value_from(proto::HelloResult{proto::kProtocolVersion, "fuzz", "fuzz", 1}));
      });
  r.add("echo", [](const proto::Request& req, Reply reply, daemon::Client&) { reply.ok(req.params); });
  r.add("fail", [](const proto::Request&, Reply reply, daemon::Client&) {
    reply.fail(proto::RpcError::make(proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams, "no"));
  });
  // Dropped unanswered: the Reply answers with an internal error itself.
  r.add("drop", [](const proto::Request&, Reply, daemon::Client&) {});
  r.add("twice", [](const proto::Request&, Reply reply, daemon::Client&) {
    reply.ok(json::value(1));
    reply.ok(json::value(2));  // the second is logged and dropped
  });
  return r;
}

[[noreturn]] void broken(const std::string& what, std::string_view input, const std::string& wrote) {
  std::fprintf(stderr, "rpc_socket: %s\n--- input\n%.*s\n--- written\n%s\n", what.c_str(),
               static_cast<int>(input.size()), input.data(), wrote.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const daemon::Router router = make_router();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto client = std::make_shared<daemon::Client>();
  JsonRpcPeer::Options o;
  o.name = "fuzz client";
  o.on_request = [client](proto::Request req, Reply reply) { router.dispatch(req, std::move(reply), *client); };
  std::string wrote = fuzz::drive_peer(input, std::move(o));

  // Ids as the peer reads them: a request's, or a malformed line's when it had a usable one.
  std::map<std::string, int> ids_in, requests, replies;
  for (auto line : fuzz::complete_lines(input)) {
    auto m = proto::parse_message(line);
    if (m && std::holds_alternative<proto::Request>(*m)) {
      auto key = proto::id_key(std::get<proto::Request>(*m).id);
      ++ids_in[key];
      ++requests[key];
    } else if (m && std::holds_alternative<proto::Response>(*m)) {
      ++ids_in[proto::id_key(std::get<proto::Response>(*m).id)];
    } else if (!m && !m.error().id.is_null()) {
      ++ids_in[proto::id_key(m.error().id)];
    }
  }
  for (auto line : fuzz::complete_lines(wrote)) {
    // A response: the id (null for a line whose id was unusable) and a result or an error.
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    const json::object* o = ec ? nullptr : v.if_object();
    if (!o || o->size() != 3 || !o->contains("id") || (o->contains("result") == o->contains("error")) ||
        o->at("jsonrpc") != "2.0")
      broken("a line written back is no response", input, wrote);
    if (!o->at("id").is_null()) ++replies[proto::id_key(o->at("id"))];
  }
  if (!wrote.empty() && wrote.back() != '\n') broken("the last line written back has no newline", input, wrote);
  for (auto& [key, n] : requests) {
    if (ids_in[key] == 1 && replies[key] != 1)
      broken("request " + key + " got " + std::to_string(replies[key]) + " replies", input, wrote);
  }
  return 0;
}
