// daemon/router: a handler's params type picks its decoder, a bad field is answered -32602 with
// data.field before the handler runs, and an unknown method lists the known ones.
#include "common/jsonrpc_peer.h"
#include "common/ndjson_transport.h"
#include "daemon/router.h"
#include "proto/mcp_api.h"
#include "tests/support/loop.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <optional>

namespace oppx::daemon {
namespace {

namespace json = boost::json;

std::optional<proto::ToolsCallParams> seen;

void record_call(const proto::ToolsCallParams& p, Reply reply, Client&) {
  seen = p;
  reply.ok(json::object{{"tool", p.tool}});
}

struct RoutedPeers {
  RoutedPeers() {
    router.add("tools/call", record_call);
    auto [a, b] = make_memory_pair(io);
    JsonRpcPeer::Options so;
    so.name = "daemon";
    so.on_request = [this](proto::Request req, Reply reply) { router.dispatch(req, std::move(reply), client); };
    server = JsonRpcPeer::create(std::move(a), std::move(so));
    JsonRpcPeer::Options co;
    co.name = "client";
    peer = JsonRpcPeer::create(std::move(b), std::move(co));
    server->start();
    peer->start();
  }
  JsonRpcPeer::CallResult call(std::string method, json::value params) {
    std::optional<JsonRpcPeer::CallResult> out;
    peer->call(std::move(method), std::move(params), [&out](JsonRpcPeer::CallResult r) { out = std::move(r); });
    EXPECT_TRUE(test::run_until(io, [&] { return out.has_value(); }));
    return out ? std::move(*out) : JsonRpcPeer::CallResult(boost::system::in_place_error, proto::RpcError{});
  }
  boost::asio::io_context io;
  Router router;
  Client client;
  std::shared_ptr<JsonRpcPeer> server, peer;
};

TEST(Router, TheHandlersParamsTypePicksTheDecoder) {
  RoutedPeers p;
  seen.reset();
  auto ok = p.call("tools/call", json::object{{"connector", "c"}, {"tool", "echo"}, {"timeout_ms", 50}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->at("tool"), json::value("echo"));
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->timeout_ms, 50);
  EXPECT_EQ(seen->arguments, json::value(json::object{}));  // the decoder's default

  seen.reset();
  auto bad = p.call("tools/call", json::object{{"connector", "c"}, {"tool", "echo"}, {"timeout_ms", "soon"}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, static_cast<int>(proto::ErrorCode::kInvalidParams));
  EXPECT_EQ(bad.error().kind, proto::kind::kInvalidParams);
  EXPECT_EQ(bad.error().data.at("field"), json::value("params.timeout_ms"));
  EXPECT_EQ(bad.error().message, "params.timeout_ms: expected integer");
  EXPECT_FALSE(seen) << "the handler ran on params that did not decode";
}

TEST(Router, AnUnknownMethodListsTheKnownOnes) {
  RoutedPeers p;
  auto r = p.call("tools/cal", json::object{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, static_cast<int>(proto::ErrorCode::kMethodNotFound));
  EXPECT_EQ(r.error().data.at("methods"), json::value(json::array{"tools/call"}));
}

}  // namespace
}  // namespace oppx::daemon
