// daemon/mcp_client in-process, over the in-memory transport with a scripted server (a JSON-RPC
// peer whose answers each test writes): initialize and the version check, paginated tools/list,
// list_changed, progress, cancellation, server requests we did not offer, and the rule that a
// server's error kind never passes for ours.
#include "daemon/mcp_client.h"

#include "common/ndjson_transport.h"
#include "daemon/connector.h"
#include "tests/support/loop.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <map>
#include <optional>

namespace oppx::daemon {
namespace {

namespace json = boost::json;
using test::run_until;

// A scripted MCP server on one end of a memory pair and the McpClient on the other.
struct Session {
  using Handler = std::function<void(proto::Request&, Reply&)>;

  explicit Session(std::map<std::string, Handler> script, McpClient::Options options = {}) : script(std::move(script)) {
    auto [a, b] = make_memory_pair(io);
    JsonRpcPeer::Options so;
    so.name = "scripted server";
    so.on_request = [this](proto::Request req, Reply reply) {
      requests.push_back(req.method);
      auto it = this->script.find(req.method);
      if (it == this->script.end())
        return reply.fail(proto::RpcError::make(proto::ErrorCode::kMethodNotFound, "", "no " + req.method));
      it->second(req, reply);
      if (!reply.done()) held.emplace_back(std::move(reply));
    };
    so.on_notification = [this](proto::Notification n) {
      notes.push_back(n.method);
      if (n.method == "notifications/cancelled") cancelled.push_back(n.params);
    };
    server = JsonRpcPeer::create(std::move(a), std::move(so));
    server->start();
    options.name = "scripted";
    options.list_changed_debounce = std::chrono::milliseconds(1);
    McpClient::Handlers h;
    h.on_tools = [this](json::array t) {
      tools = std::move(t);
      ++lists;
    };
    h.on_failed = [this](std::string_view kind, std::string why, int) {
      failed_kind = std::string(kind);
      failed_why = std::move(why);
    };
    h.on_closed = [this](const TransportError& e) { closed = e.kind; };
    client = McpClient::create(io, std::move(b), options, std::move(h));
  }

  ~Session() { server->abort(); }  // requests still held need no answer then

  // The client has handled all the server sent before: its answer to a ping came back after it.
  void round_trip() {
    bool pong = false;
    server->call("ping", nullptr, [&pong](JsonRpcPeer::CallResult) { pong = true; });
    ASSERT_TRUE(run_until(io, [&] { return pong; }));
  }

  boost::asio::io_context io;
  std::map<std::string, Handler> script;
  std::shared_ptr<JsonRpcPeer> server;
  std::shared_ptr<McpClient> client;
  std::vector<std::string> requests, notes;
  std::vector<json::value> cancelled;
  std::vector<Reply> held;  // requests the script did not answer yet
  json::array tools;
  int lists = 0;
  std::optional<std::string> failed_kind, closed;
  std::string failed_why;
};

Session::Handler answer(json::value v) {
  return [v](proto::Request&, Reply& r) { r.ok(v); };
}

json::object tool(std::string name) { return json::object{{"name", name}, {"inputSchema", json::object{}}}; }

Session::Handler initialize(std::string version = "2025-06-18") {
  return answer(json::object{{"protocolVersion", version}, {"capabilities", json::object{}}});
}

TEST(McpClient, InitializesAndReadsEveryPageOfTools) {
  Session s({{"initialize", initialize()},
             {"tools/list", [](proto::Request& req, Reply& r) {
                const json::value* cursor =
                    req.params.is_object() ? req.params.as_object().if_contains("cursor") : nullptr;
                if (!cursor)
                  return r.ok(json::object{{"tools", json::array{tool("a"), tool("b")}}, {"nextCursor", "p2"}});
                // The second page repeats "b": a name is kept once.
                r.ok(json::object{{"tools", json::array{tool("b"), tool("c")}}});
              }}});
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1 || s.failed_kind; }));
  ASSERT_FALSE(s.failed_kind) << s.failed_why;
  ASSERT_EQ(s.tools.size(), 3u);
  EXPECT_EQ(s.tools[2].as_object().at("name"), "c");
  EXPECT_TRUE(s.client->ready());
  EXPECT_EQ(s.requests, (std::vector<std::string>{"initialize", "tools/list", "tools/list"}));
  EXPECT_EQ(s.notes, (std::vector<std::string>{"notifications/initialized"}));
}

// Roots offered: advertised in initialize, and roots/list answers with the folders as they are
// when asked (set after the start), as file: URIs; without them, roots/list is refused.
TEST(McpClient, OffersRootsReadWhenTheServerAsks) {
  auto folders = std::make_shared<std::vector<std::string>>();
  json::value capabilities;
  McpClient::Options o;
  o.roots = [folders] { return *folders; };
  Session s({{"initialize",
              [&capabilities](proto::Request& req, Reply& r) {
                capabilities = req.params.at("capabilities");
                r.ok(json::object{{"protocolVersion", "2025-06-18"}, {"capabilities", json::object{}}});
              }},
             {"tools/list", answer(json::object{{"tools", json::array{}}})}},
            o);
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1 || s.failed_kind; }));
  EXPECT_EQ(capabilities, (json::object{{"roots", json::object{}}}));
  *folders = {"/tmp/a b/100%"};
  std::optional<JsonRpcPeer::CallResult> listed;
  s.server->call("roots/list", nullptr, [&](JsonRpcPeer::CallResult r) { listed = std::move(r); });
  ASSERT_TRUE(run_until(s.io, [&] { return listed.has_value(); }));
  ASSERT_TRUE(*listed);
  EXPECT_EQ(
      **listed,
      (json::object{{"roots", json::array{json::object{{"uri", "file:///tmp/a%20b/100%25"}, {"name", "100%"}}}}}));

  Session bare({{"initialize", initialize()}, {"tools/list", answer(json::object{{"tools", json::array{}}})}});
  bare.client->start();
  std::optional<JsonRpcPeer::CallResult> refused;
  bare.server->call("roots/list", nullptr, [&](JsonRpcPeer::CallResult r) { refused = std::move(r); });
  ASSERT_TRUE(run_until(bare.io, [&] { return refused.has_value(); }));
  EXPECT_FALSE(*refused);
}

TEST(McpClient, RefusesAProtocolVersionItDoesNotSpeak) {
  Session s({{"initialize", initialize("1999-01-01")}});
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.failed_kind.has_value(); }));
  EXPECT_EQ(*s.failed_kind, proto::kind::kStopped);
  EXPECT_EQ(s.failed_why, "it speaks MCP protocol \"1999-01-01\", which oppx does not support");
  EXPECT_EQ(s.lists, 0);
}

TEST(McpClient, ACursorSeenBeforeEndsTheList) {
  Session s({{"initialize", initialize()},
             {"tools/list", [n = 0](proto::Request&, Reply& r) mutable {
                r.ok(json::object{{"tools", json::array{tool("t" + std::to_string(n++))}}, {"nextCursor", "same"}});
              }}});
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1 || s.failed_kind; }));
  EXPECT_EQ(s.tools.size(), 2u);  // the first page, and the one that gave "same" again
}

TEST(McpClient, ListChangedFetchesTheToolsAgain) {
  json::array current{tool("a")};
  Session s({{"initialize", initialize()}, {"tools/list", [&current](proto::Request&, Reply& r) {
                                              r.ok(json::object{{"tools", current}});
                                            }}});
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1; }));
  current.push_back(tool("b"));
  s.server->notify("notifications/tools/list_changed", nullptr);
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 2; }));
  EXPECT_EQ(s.tools.size(), 2u);
}

TEST(McpClient, AnswersServerRequestsItDidNotOfferAtOnce) {
  Session s({{"initialize", initialize()}, {"tools/list", answer(json::object{{"tools", json::array{}}})}});
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1; }));
  std::optional<JsonRpcPeer::CallResult> sampling, ping;
  s.server->call("sampling/createMessage", json::object{}, [&](JsonRpcPeer::CallResult r) { sampling = r; });
  s.server->call("ping", nullptr, [&](JsonRpcPeer::CallResult r) { ping = r; });
  ASSERT_TRUE(run_until(s.io, [&] { return sampling && ping; }));
  ASSERT_FALSE(*sampling);
  EXPECT_EQ(sampling->error().code, static_cast<int>(proto::ErrorCode::kMethodNotFound));
  EXPECT_TRUE(*ping);
  EXPECT_FALSE(s.failed_kind);
}

TEST(McpClient, AnEchoedInitializeSaysItIsNotAnMcpServer) {
  Session s({{"initialize", [&](proto::Request& req, Reply&) {
                // Held unanswered; the "server" sends oppx's own request back, as `cat` would.
                (void)req;
              }}});
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.requests.size() == 1; }));
  s.server->call("initialize", json::object{}, [](JsonRpcPeer::CallResult) {});
  ASSERT_TRUE(run_until(s.io, [&] { return s.failed_kind.has_value(); }));
  EXPECT_EQ(*s.failed_kind, proto::kind::kConfig);
  EXPECT_NE(s.failed_why.find("is not an MCP server"), std::string::npos) << s.failed_why;
}

TEST(McpClient, ProgressReachesItsCallAndAServersErrorKindIsNotOurs) {
  std::string token;
  Session s({{"initialize", initialize()},
             {"tools/list", answer(json::object{{"tools", json::array{tool("slow")}}})},
             {"tools/call", [&token](proto::Request& req, Reply&) {
                // Held: the test answers it. The token is the one the call asked progress with.
                token = json::value_to<std::string>(req.params.at("_meta").at("progressToken"));
              }}});
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1; }));
  std::vector<json::object> progress;
  std::optional<McpClient::CallResult> result;
  s.client->call_tool(
      "slow", json::object{}, false, [&](const json::object& p) { progress.push_back(p); },
      [&](McpClient::CallResult r) { result = std::move(r); });
  ASSERT_TRUE(run_until(s.io, [&] { return s.held.size() == 1; }));
  ASSERT_FALSE(token.empty());
  s.server->notify("notifications/progress", json::object{{"progressToken", "not-ours"}, {"progress", 2}});
  s.server->notify("notifications/progress", json::object{{"progressToken", token}, {"progress", 1}});
  ASSERT_TRUE(run_until(s.io, [&] { return progress.size() == 1; }));
  EXPECT_EQ(progress[0].at("progress"), 1);
  EXPECT_FALSE(progress[0].contains("progressToken"));
  // A server's error that claims one of the kinds the daemon acts on does not get it.
  s.held[0].fail(proto::RpcError::make(proto::ErrorCode::kInternal, "disconnected", "a server claiming our kind"));
  ASSERT_TRUE(run_until(s.io, [&] { return result.has_value(); }));
  ASSERT_FALSE(*result);
  EXPECT_EQ(result->error().kind, "");
  EXPECT_EQ(result->error().data.at("server_kind"), "disconnected");
  // Progress after the answer goes nowhere.
  s.server->notify("notifications/progress", json::object{{"progressToken", token}, {"progress", 3}});
  s.round_trip();
  EXPECT_EQ(progress.size(), 1u);
}

TEST(McpClient, ACancelledCallTellsTheServerAndIgnoresItsLateAnswer) {
  Session s({{"initialize", initialize()},
             {"tools/list", answer(json::object{{"tools", json::array{tool("slow")}}})},
             {"tools/call", [](proto::Request&, Reply&) {}}});
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1; }));
  bool answered = false;
  json::value id =
      s.client->call_tool("slow", json::object{}, false, nullptr, [&](McpClient::CallResult) { answered = true; });
  ASSERT_TRUE(run_until(s.io, [&] { return s.held.size() == 1; }));
  s.client->cancel(id, "the caller went away");
  ASSERT_TRUE(run_until(s.io, [&] { return s.cancelled.size() == 1; }));
  EXPECT_EQ(s.cancelled[0].as_object().at("requestId"), id);
  EXPECT_EQ(s.cancelled[0].as_object().at("reason"), "the caller went away");
  s.held[0].ok(json::object{{"content", json::array{}}});
  s.round_trip();
  EXPECT_EQ(s.client->calls_waiting(), 0u);
  EXPECT_FALSE(answered);
}

TEST(McpClient, ADisconnectDuringInitializeIsReportedUnlessTheLinkReportsIt) {
  for (bool quiet : {false, true}) {
    McpClient::Options o;
    o.quiet_on_disconnect = quiet;
    Session s({{"initialize", [](proto::Request&, Reply&) {}}}, o);
    s.client->start();
    ASSERT_TRUE(run_until(s.io, [&] { return s.held.size() == 1; }));
    s.server->abort();
    ASSERT_TRUE(run_until(s.io, [&] { return s.closed.has_value(); }));
    s.io.poll();
    EXPECT_EQ(s.failed_kind.has_value(), !quiet) << "quiet " << quiet;
    if (!quiet) {
      EXPECT_EQ(s.failed_why.rfind("initialize failed: ", 0), 0u) << s.failed_why;
    }
  }
}

}  // namespace
}  // namespace oppx::daemon
