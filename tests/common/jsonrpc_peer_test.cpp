// common/jsonrpc_peer over the in-memory transport: calls both ways, out-of-order replies,
// exactly one reply per request (a dropped or throwing handler still answers), duplicate ids,
// and a disconnect that cancels what is in flight.
#include "common/jsonrpc_peer.h"
#include "common/ndjson_transport.h"
#include "tests/support/loop.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <map>
#include <optional>

namespace oppx {
namespace {

namespace json = boost::json;

struct Peers {
  explicit Peers(std::function<void(proto::Request, Reply)> serve) {
    auto [a, b] = make_memory_pair(io);
    JsonRpcPeer::Options so;
    so.name = "server";
    so.on_request = std::move(serve);
    so.on_closed = [this](const TransportError&) { server_closed = true; };
    server = JsonRpcPeer::create(std::move(a), std::move(so));
    JsonRpcPeer::Options co;
    co.name = "client";
    co.on_notification = [this](proto::Notification n) { notes.push_back(n.method); };
    client = JsonRpcPeer::create(std::move(b), std::move(co));
    server->start();
    client->start();
  }
  boost::asio::io_context io;
  std::shared_ptr<JsonRpcPeer> server, client;
  std::vector<std::string> notes;
  bool server_closed = false;
};

TEST(JsonRpcPeer, CallsAreAnsweredOutOfOrderById) {
  std::map<std::string, Reply> held;
  std::unique_ptr<Peers> p;
  p = std::make_unique<Peers>([&](proto::Request req, Reply reply) {
    std::string key(req.params.as_object().at("key").as_string());
    if (req.method == "wait") {
      held.emplace(key, std::move(reply));
    } else {  // "release": answers the held one first, then itself
      held.at(key).ok(json::value(key));
      held.erase(key);
      reply.ok(json::value("released " + key));
    }
  });
  std::vector<std::string> order;
  auto record = [&](std::string tag) {
    return
        [&order, tag](JsonRpcPeer::CallResult r) { order.push_back(tag + "=" + (r ? json::serialize(*r) : "error")); };
  };
  p->client->call("wait", json::object{{"key", "a"}}, record("wait a"));
  p->client->call("wait", json::object{{"key", "b"}}, record("wait b"));
  p->client->call("release", json::object{{"key", "b"}}, record("release b"));
  p->client->call("release", json::object{{"key", "a"}}, record("release a"));
  ASSERT_TRUE(test::run_until(p->io, [&] { return order.size() == 4; }));
  EXPECT_EQ(order, (std::vector<std::string>{"wait b=\"b\"", "release b=\"released b\"", "wait a=\"a\"",
                                             "release a=\"released a\""}));
}

TEST(JsonRpcPeer, ADroppedOrThrowingHandlerStillAnswers) {
  Peers p([](proto::Request req, Reply) {
    if (req.method == "throw") throw std::runtime_error("boom");
    // "drop": the Reply goes out of scope unused
  });
  std::vector<proto::RpcError> errors;
  auto keep = [&](JsonRpcPeer::CallResult r) {
    ASSERT_FALSE(r);
    errors.push_back(r.error());
  };
  p.client->call("drop", nullptr, keep);
  p.client->call("throw", nullptr, keep);
  ASSERT_TRUE(test::run_until(p.io, [&] { return errors.size() == 2; }));
  for (auto& e : errors) {
    EXPECT_EQ(e.code, -32603);
    EXPECT_EQ(e.kind, "internal");
  }
  EXPECT_EQ(p.server->in_flight(), 0u);
}

TEST(JsonRpcPeer, AReusedIdInFlightIsRefused) {
  std::vector<Reply> held;
  boost::asio::io_context io;
  auto [server_end, client_end] = make_memory_pair(io);
  JsonRpcPeer::Options so;
  so.on_request = [&](proto::Request, Reply r) { held.push_back(std::move(r)); };
  auto server = JsonRpcPeer::create(std::move(server_end), std::move(so));
  server->start();
  std::vector<std::string> lines;
  client_end->start({[&](std::string l) { lines.push_back(l); }, [](const TransportError&) {}});
  client_end->send({.text = R"({"jsonrpc":"2.0","id":5,"method":"hold"})"});
  client_end->send({.text = R"({"jsonrpc":"2.0","id":5,"method":"hold"})"});
  ASSERT_TRUE(test::run_until(io, [&] { return lines.size() == 1 && held.size() == 1; }));
  auto err = proto::parse_message(lines[0]);
  ASSERT_TRUE(err);
  auto& resp = std::get<proto::Response>(*err);
  EXPECT_EQ(resp.error.kind, "duplicate_id");
  EXPECT_EQ(resp.id, json::value(5));
  held.front().ok(json::value(1));
  ASSERT_TRUE(test::run_until(io, [&] { return lines.size() == 2; }));
  EXPECT_NE(lines[1].find("\"result\":1"), std::string::npos);
}

TEST(JsonRpcPeer, DisconnectCancelsInFlightWorkBothWays) {
  std::vector<Reply> held;
  bool cancelled = false;
  Peers p([&](proto::Request, Reply reply) {
    reply.on_cancel([&] { cancelled = true; });
    held.push_back(std::move(reply));
  });
  std::optional<JsonRpcPeer::CallResult> from_client, from_server;
  p.client->call("slow", nullptr, [&](JsonRpcPeer::CallResult r) { from_client = std::move(r); });
  ASSERT_TRUE(test::run_until(p.io, [&] { return held.size() == 1; }));
  p.server->call("ask_client", nullptr, [&](JsonRpcPeer::CallResult r) { from_server = std::move(r); });
  p.client->abort();
  ASSERT_TRUE(test::run_until(p.io, [&] { return cancelled && from_server && from_client && p.server_closed; }));
  ASSERT_TRUE(from_client.has_value());
  EXPECT_EQ(from_client->error().kind, "disconnected");
  EXPECT_EQ(from_server->error().kind, "disconnected");
  EXPECT_TRUE(held.front().cancelled());
  held.front().ok(json::value(1));  // discarded, no crash
}

TEST(JsonRpcPeer, NotificationsAndUnknownResponsesAreNotReplies) {
  Peers p([](proto::Request, Reply reply) { reply.ok(nullptr); });
  p.server->notify("notifications/hello", json::object{{"x", 1}});
  std::optional<JsonRpcPeer::CallResult> r;
  p.client->call("ping", nullptr, [&](JsonRpcPeer::CallResult res) { r = std::move(res); });
  ASSERT_TRUE(test::run_until(p.io, [&] { return r.has_value(); }));
  EXPECT_EQ(p.notes, std::vector<std::string>{"notifications/hello"});
}

// A transport that keeps what is sent and lets the test play the far end and the transport.
class RecordingTransport final : public Transport {
 public:
  explicit RecordingTransport(std::vector<Message>* sent, Handlers* handlers) : sent_(sent), handlers_(handlers) {}
  void start(Handlers h) override { *handlers_ = std::move(h); }
  bool send(Message m) override {
    sent_->push_back(std::move(m));
    return true;
  }
  void close() override {}
  void abort() override {}

 private:
  std::vector<Message>* sent_;
  Handlers* handlers_;
};

TEST(JsonRpcPeer, EachMessageSaysWhatItIsSoNoTransportParsesIt) {
  std::vector<Message> sent;
  Transport::Handlers far;
  JsonRpcPeer::Options o;
  o.name = "client";
  o.on_request = [](proto::Request, Reply reply) { reply.ok(nullptr); };
  auto peer = JsonRpcPeer::create(std::make_unique<RecordingTransport>(&sent, &far), std::move(o));
  peer->start();
  RequestOptions slow_write;
  slow_write.repeatable = false;
  slow_write.slow_first_byte = true;
  slow_write.label = "the call to write";
  json::value id = peer->call(
      "tools/call", json::object{}, [](JsonRpcPeer::CallResult) {}, slow_write);
  peer->notify("notifications/cancelled", json::object{{"requestId", id}}, id);
  far.on_line(R"({"jsonrpc":"2.0","id":"s1","method":"ping"})");
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].kind, Message::Kind::kRequest);
  EXPECT_EQ(sent[0].method, "tools/call");
  EXPECT_EQ(sent[0].id, id);
  EXPECT_FALSE(sent[0].repeatable);
  EXPECT_TRUE(sent[0].slow_first_byte);
  EXPECT_EQ(sent[0].label, "the call to write");
  EXPECT_EQ(sent[1].kind, Message::Kind::kNotification);
  EXPECT_EQ(sent[1].cancels, id);
  EXPECT_EQ(sent[2].kind, Message::Kind::kResponse);
  EXPECT_NE(sent[2].text.find("\"s1\""), std::string::npos);
}

TEST(JsonRpcPeer, OnlyTheTransportsOwnErrorsAreNotReceivedFromTheFarEnd) {
  std::vector<Message> sent;
  Transport::Handlers far;
  JsonRpcPeer::Options o;
  o.name = "client";
  auto peer = JsonRpcPeer::create(std::make_unique<RecordingTransport>(&sent, &far), std::move(o));
  peer->start();
  std::optional<JsonRpcPeer::CallResult> claimed, own;
  json::value a = peer->call("tools/call", nullptr, [&](JsonRpcPeer::CallResult r) { claimed = std::move(r); });
  json::value b = peer->call("tools/call", nullptr, [&](JsonRpcPeer::CallResult r) { own = std::move(r); });
  // The far end claims a kind in its error line; the transport reports its own failure apart.
  far.on_line(proto::serialize_error(a, proto::RpcError::make(proto::ErrorCode::kInternal, "login", "claimed")));
  far.on_request_failed(b, proto::RpcError::make(proto::ErrorCode::kInternal, "login", "refused (HTTP 401)"));
  ASSERT_TRUE(claimed && own);
  EXPECT_TRUE(claimed->error().received);
  EXPECT_FALSE(own->error().received);
  EXPECT_EQ(own->error().kind, "login");
  EXPECT_EQ(peer->calls_waiting(), 0u);
}

}  // namespace
}  // namespace oppx
