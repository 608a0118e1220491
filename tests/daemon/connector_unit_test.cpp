// daemon/connector in-process, given links by a test factory: each start opens an in-memory
// transport to a scripted MCP server, so its state machine, retry policy and call deadlines are
// tested without processes or sockets (the end-to-end connector tests show what users see).
#include "daemon/connector.h"

#include "common/jsonrpc_peer.h"
#include "common/ndjson_transport.h"
#include "daemon/link.h"
#include "tests/support/loop.h"

#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <optional>

namespace oppx::daemon {
namespace {

namespace json = boost::json;
using test::run_until;

// The server side of one start: answers initialize and tools/list; tools/call goes to `on_call`.
struct ScriptedServer {
  std::shared_ptr<JsonRpcPeer> peer;
  std::vector<Reply> held;  // calls not answered yet
  std::vector<json::value> cancelled;
};

class MemoryLink final : public Link {
 public:
  MemoryLink(boost::asio::io_context& io, std::function<void(std::unique_ptr<Transport>)> serve)
      : io_(io), serve_(std::move(serve)) {}
  void open(Handlers h) override {
    handlers_ = std::move(h);
    auto [ours, theirs] = make_memory_pair(io_);
    serve_(std::move(theirs));
    handlers_.on_open(std::move(ours));
  }
  void transport_ended(const TransportError& e) override {
    if (handlers_.on_failed) handlers_.on_failed({proto::kind::kStopped, "the server went away: " + e.message});
  }
  void close() override { handlers_ = {}; }
  bool closes_gracefully() const override { return false; }
  bool reports_its_loss() const override { return false; }
  std::string log_note() const override { return ""; }

 private:
  boost::asio::io_context& io_;
  std::function<void(std::unique_ptr<Transport>)> serve_;
  Handlers handlers_;
};

json::object tool(std::string name, bool read_only) {
  return json::object{
      {"name", name}, {"inputSchema", json::object{}}, {"annotations", json::object{{"readOnlyHint", read_only}}}};
}

class ConnectorUnit : public ::testing::Test {
 protected:
  ConnectorUnit() {
    ConnectorDef def;
    def.name = "scripted";
    def.command = "unused";
    connector = Connector::create(
        io, def, "/nonexistent/log",
        [this](boost::asio::io_context& io, const ConnectorDef&, const EnvMap&, LinkContext) -> LinkResult {
          return std::shared_ptr<Link>(
              std::make_shared<MemoryLink>(io, [this](std::unique_ptr<Transport> t) { serve(std::move(t)); }));
        });
  }

  ~ConnectorUnit() override {
    for (auto& s : servers) s->peer->abort();  // calls still held need no answer then
  }

  void serve(std::unique_ptr<Transport> t) {
    auto s = std::make_shared<ScriptedServer>();
    servers.push_back(s);
    JsonRpcPeer::Options o;
    o.name = "scripted server";
    std::weak_ptr<ScriptedServer> w = s;
    o.on_request = [this, w](proto::Request req, Reply reply) {
      auto s = w.lock();
      if (req.method == "initialize")
        return reply.ok(json::object{{"protocolVersion", "2025-06-18"}, {"capabilities", json::object{}}});
      if (req.method == "tools/list")
        return reply.ok(json::object{{"tools", json::array{tool("read", true), tool("write", false)}}});
      if (req.method == "tools/call" && s) return s->held.push_back(std::move(reply));
      reply.fail(proto::RpcError::make(proto::ErrorCode::kMethodNotFound, "", "no " + req.method));
    };
    o.on_notification = [w](proto::Notification n) {
      auto s = w.lock();
      if (s && n.method == "notifications/cancelled") s->cancelled.push_back(n.params);
    };
    s->peer = JsonRpcPeer::create(std::move(t), std::move(o));
    s->peer->start();
  }

  void start_and_run() {
    connector->start({}, std::chrono::seconds(10));
    ASSERT_TRUE(run_until(io, [&] { return connector->state() != ConnectorState::kStarting; }));
    ASSERT_EQ(connector->state(), ConnectorState::kRunning) << connector->reason();
  }

  boost::asio::io_context io;
  std::vector<std::shared_ptr<ScriptedServer>> servers;
  std::shared_ptr<Connector> connector;
};

json::value text_result(std::string text) {
  return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", text}}}}};
}

TEST_F(ConnectorUnit, RunsWithItsToolsAndAnswersACall) {
  start_and_run();
  EXPECT_EQ(connector->tools().size(), 2u);
  EXPECT_TRUE(connector->read_only("read"));
  EXPECT_FALSE(connector->read_only("write"));
  std::optional<Connector::CallResult> result;
  connector->call("write", json::object{}, std::chrono::seconds(10), [&](Connector::CallResult r) { result = r; });
  ASSERT_TRUE(run_until(io, [&] { return servers.back()->held.size() == 1; }));
  EXPECT_EQ(connector->calls_open(), 1u);
  EXPECT_EQ(connector->calls_waiting(), 1u);
  servers.back()->held[0].ok(text_result("done"));
  ASSERT_TRUE(run_until(io, [&] { return result.has_value(); }));
  ASSERT_TRUE(*result);
  EXPECT_EQ(connector->calls_open(), 0u);
}

TEST_F(ConnectorUnit, AReadOnlyCallLostWithItsServerIsRepeatedOnceAfterARestart) {
  start_and_run();
  std::optional<Connector::CallResult> result;
  connector->call("read", json::object{}, std::chrono::seconds(10), [&](Connector::CallResult r) { result = r; });
  ASSERT_TRUE(run_until(io, [&] { return servers.back()->held.size() == 1; }));
  servers.back()->peer->abort();  // the server goes away with the call unanswered
  servers.back()->held.clear();
  ASSERT_TRUE(run_until(io, [&] { return servers.size() == 2 && servers.back()->held.size() == 1; }));
  servers.back()->held[0].ok(text_result("again"));
  ASSERT_TRUE(run_until(io, [&] { return result.has_value(); }));
  ASSERT_TRUE(*result) << result->error().message;
  EXPECT_EQ(connector->state(), ConnectorState::kRunning);
}

TEST_F(ConnectorUnit, AWriteLostWithItsServerIsNotRepeated) {
  start_and_run();
  std::optional<Connector::CallResult> result;
  connector->call("write", json::object{}, std::chrono::seconds(10), [&](Connector::CallResult r) { result = r; });
  ASSERT_TRUE(run_until(io, [&] { return servers.back()->held.size() == 1; }));
  servers.back()->peer->abort();
  servers.back()->held.clear();
  ASSERT_TRUE(run_until(io, [&] { return result.has_value(); }));
  ASSERT_FALSE(*result);
  EXPECT_EQ(result->error().kind, "connector_down");
  EXPECT_NE(result->error().message.find("may or may not have run"), std::string::npos) << result->error().message;
  EXPECT_EQ(servers.size(), 1u);
  EXPECT_EQ(connector->state(), ConnectorState::kFailed);
}

TEST_F(ConnectorUnit, AServersErrorClaimingALostLoginLeavesItRunning) {
  start_and_run();
  std::optional<Connector::CallResult> result;
  connector->call("write", json::object{}, std::chrono::seconds(10), [&](Connector::CallResult r) { result = r; });
  ASSERT_TRUE(run_until(io, [&] { return servers.back()->held.size() == 1; }));
  servers.back()->held[0].fail(proto::RpcError::make(proto::ErrorCode::kInternal, "login", "bad arguments"));
  ASSERT_TRUE(run_until(io, [&] { return result.has_value(); }));
  ASSERT_FALSE(*result);
  EXPECT_EQ(result->error().kind, "");
  EXPECT_EQ(connector->state(), ConnectorState::kRunning);
}

TEST_F(ConnectorUnit, ACallPastItsLimitIsCancelledAtTheServerAndTheConnectorRuns) {
  start_and_run();
  std::optional<Connector::CallResult> result;
  connector->call("write", json::object{}, std::chrono::milliseconds(50), [&](Connector::CallResult r) { result = r; });
  ASSERT_TRUE(run_until(io, [&] { return result.has_value(); }));
  ASSERT_FALSE(*result);
  EXPECT_EQ(result->error().kind, proto::kind::kTimeout);
  ASSERT_TRUE(run_until(io, [&] { return servers.back()->cancelled.size() == 1; }));
  EXPECT_EQ(connector->state(), ConnectorState::kRunning);
  EXPECT_EQ(connector->calls_open(), 0u);
}

TEST_F(ConnectorUnit, HoldStopsItAndKeepsItWaiting) {
  start_and_run();
  connector->hold("approve it first");
  EXPECT_EQ(connector->state(), ConnectorState::kWaiting);
  EXPECT_EQ(connector->reason(), "approve it first");
  EXPECT_TRUE(connector->tools().empty());
  ASSERT_TRUE(run_until(io, [&] { return servers.back()->peer->closed(); }));
}

}  // namespace
}  // namespace oppx::daemon
