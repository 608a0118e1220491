// daemon/mcp_client in-process, over the in-memory transport with a scripted server (a JSON-RPC
// peer whose answers each test writes): initialize and the version check, paginated tools/list,
// list_changed, progress, cancellation, server requests we did not offer, and the rule that a
// server's error kind never passes for ours.
#include "daemon/mcp_client.h"

#include "common/ndjson_transport.h"
#include "daemon/connector.h"
#include "tests/support/loop.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
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
  EXPECT_EQ(capabilities,
            (json::object{{"elicitation", json::object{{"form", json::object{}}, {"url", json::object{}}}},
                          {"roots", json::object{}}}));
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

namespace input {

McpClient::Options modern() {
  McpClient::Options o;
  o.stateless_first = true;
  o.roots = [] { return std::vector<std::string>{"/work/project"}; };
  return o;
}

std::map<std::string, Session::Handler> modern_script(Session::Handler call) {
  return {{"server/discover", answer(json::object{{"supportedVersions", json::array{"2026-07-28"}}})},
          {"tools/list", answer(json::object{{"tools", json::array{tool("t")}}})},
          {"tools/call", std::move(call)}};
}

json::object form(std::string message) {
  return json::object{
      {"method", "elicitation/create"},
      {"params", json::object{{"message", message}, {"requestedSchema", json::object{{"type", "object"}}}}}};
}

json::object done(std::string text) {
  return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", text}}}}};
}

}  // namespace input

// MCP 2026-07-28, a result that asks for input: the form goes to the call's own asker, roots come
// from the owner's folders, and the call is sent again under a new id with the answers and the
// state exactly as written; what the tool answers then is the call's result.
TEST(McpClient, AResultThatAsksForInputIsFulfilledAndSentAgainWithItsState) {
  std::vector<json::object> calls;
  std::vector<json::value> ids;
  Session s(
      input::modern_script([&](proto::Request& req, Reply& r) {
        calls.push_back(req.params.as_object());
        ids.push_back(req.id);
        if (calls.size() == 1)
          return r.ok(json::object{{"resultType", "input_required"},
                                   {"inputRequests", json::object{{"who", input::form("Your name?")},
                                                                  {"where", json::object{{"method", "roots/list"}}}}},
                                   {"requestState", " opaque \u00e9 state=="}});
        r.ok(input::done("thanks"));
      }),
      input::modern());
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1 || s.failed_kind; }));
  std::vector<json::object> asked;
  std::optional<McpClient::CallResult> result;
  s.client->call_tool(
      "t", json::object{{"x", 1}}, false, nullptr, [&](McpClient::CallResult r) { result = std::move(r); },
      [&](const json::object& params, std::function<void(json::object)> answer) {
        asked.push_back(params);
        answer(json::object{{"action", "accept"}, {"content", json::object{{"name", "Ann"}}}});
      });
  ASSERT_TRUE(run_until(s.io, [&] { return result.has_value(); }));
  ASSERT_TRUE(*result) << result->error().message;
  EXPECT_EQ(**result, input::done("thanks"));
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].at("message"), "Your name?");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_FALSE(calls[0].contains("inputResponses"));
  EXPECT_EQ(calls[1].at("requestState"), " opaque \u00e9 state==");
  EXPECT_EQ(calls[1].at("arguments"), (json::object{{"x", 1}}));
  EXPECT_EQ(calls[1].at("inputResponses"),
            (json::object{{"who", json::object{{"action", "accept"}, {"content", json::object{{"name", "Ann"}}}}},
                          {"where", json::object{{"roots", json::array{json::object{{"uri", "file:///work/project"},
                                                                                    {"name", "project"}}}}}}}));
  // Each round carries the protocol's _meta, with the client's capabilities.
  EXPECT_TRUE(calls[1].at("_meta").as_object().contains("io.modelcontextprotocol/clientCapabilities"));
}

// Two calls in flight each keep their own state and answers; a call with no asker declines.
TEST(McpClient, ParallelCallsNeverMixTheirRounds) {
  std::vector<json::object> retries;
  Session s(input::modern_script([&](proto::Request& req, Reply& r) {
              const json::object& p = req.params.as_object();
              std::string who(p.at("arguments").at("who").as_string());
              if (!p.contains("requestState"))
                return r.ok(json::object{{"resultType", "input_required"},
                                         {"inputRequests", json::object{{"q", input::form("for " + who)}}},
                                         {"requestState", "state-of-" + who}});
              retries.push_back(p);
              r.ok(input::done(who));
            }),
            input::modern());
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1 || s.failed_kind; }));
  // The first call's question is held, so the second call's round goes first.
  std::function<void(json::object)> held;
  std::optional<McpClient::CallResult> a, b;
  s.client->call_tool(
      "t", json::object{{"who", "a"}}, false, nullptr, [&](McpClient::CallResult r) { a = std::move(r); },
      [&](const json::object&, std::function<void(json::object)> answer) { held = std::move(answer); });
  s.client->call_tool("t", json::object{{"who", "b"}}, false, nullptr,
                      [&](McpClient::CallResult r) { b = std::move(r); });
  ASSERT_TRUE(run_until(s.io, [&] { return b.has_value() && held; }));
  held(json::object{{"action", "accept"}, {"content", json::object{{"ok", true}}}});
  ASSERT_TRUE(run_until(s.io, [&] { return a.has_value(); }));
  ASSERT_TRUE(*a && *b);
  ASSERT_EQ(retries.size(), 2u);
  EXPECT_EQ(retries[0].at("requestState"), "state-of-b");
  EXPECT_EQ(retries[0].at("inputResponses"), (json::object{{"q", json::object{{"action", "decline"}}}}));
  EXPECT_EQ(retries[1].at("requestState"), "state-of-a");
  EXPECT_EQ(retries[1].at("inputResponses").at("q").at("action"), "accept");
}

// A server that asks again and again is stopped after a bound; one that asks for what oppx does
// not offer (sampling) ends the call saying so; a cancel during a round sends nothing more.
TEST(McpClient, RoundsAreBoundedAndOnlyWhatOppxOffersIsFulfilled) {
  int rounds = 0;
  Session s(input::modern_script([&](proto::Request& req, Reply& r) {
              ++rounds;
              std::string tool(req.params.at("arguments").at("kind").as_string());
              json::object asked = tool == "sampling"
                                       ? json::object{{"s", json::object{{"method", "sampling/createMessage"}}}}
                                       : json::object{{"q", input::form("again?")}};
              r.ok(json::object{{"resultType", "input_required"}, {"inputRequests", asked}});
            }),
            input::modern());
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1 || s.failed_kind; }));
  auto yes = [](const json::object&, std::function<void(json::object)> answer) {
    answer(json::object{{"action", "accept"}, {"content", json::object{}}});
  };
  std::optional<McpClient::CallResult> forever, sampling;
  s.client->call_tool(
      "t", json::object{{"kind", "forever"}}, false, nullptr, [&](McpClient::CallResult r) { forever = std::move(r); },
      yes);
  ASSERT_TRUE(run_until(s.io, [&] { return forever.has_value(); }));
  ASSERT_FALSE(*forever);
  EXPECT_EQ(rounds, 9);  // the first request and 8 rounds
  EXPECT_NE(forever->error().message.find("asked for more input 8 times"), std::string::npos);
  s.client->call_tool(
      "t", json::object{{"kind", "sampling"}}, false, nullptr,
      [&](McpClient::CallResult r) { sampling = std::move(r); }, yes);
  ASSERT_TRUE(run_until(s.io, [&] { return sampling.has_value(); }));
  ASSERT_FALSE(*sampling);
  EXPECT_NE(sampling->error().message.find("sampling/createMessage, which oppx does not offer"), std::string::npos);

  // Cancelled while its question waits: the late answer sends no further round.
  rounds = 0;
  std::function<void(json::object)> held;
  bool answered = false;
  json::value id = s.client->call_tool(
      "t", json::object{{"kind", "once"}}, false, nullptr, [&](McpClient::CallResult) { answered = true; },
      [&](const json::object&, std::function<void(json::object)> answer) { held = std::move(answer); });
  ASSERT_TRUE(run_until(s.io, [&] { return static_cast<bool>(held); }));
  s.client->cancel(id, "the caller went away");
  held(json::object{{"action", "accept"}, {"content", json::object{}}});
  s.round_trip();
  EXPECT_EQ(rounds, 1);
  EXPECT_FALSE(answered);
}

// MCP 2025-11-25: the server's own elicitation/create goes to the newest call that can ask; with
// none open it is declined.
TEST(McpClient, AServersElicitationRequestGoesToTheNewestCallThatCanAsk) {
  Session s({{"initialize", initialize("2025-11-25")},
             {"tools/list", answer(json::object{{"tools", json::array{tool("t")}}})},
             {"tools/call", [](proto::Request&, Reply&) {}}});
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1; }));
  std::optional<JsonRpcPeer::CallResult> alone;
  s.server->call("elicitation/create", input::form("x").at("params"),
                 [&](JsonRpcPeer::CallResult r) { alone = std::move(r); });
  ASSERT_TRUE(run_until(s.io, [&] { return alone.has_value(); }));
  ASSERT_TRUE(*alone);
  EXPECT_EQ(**alone, (json::object{{"action", "decline"}}));

  std::vector<std::string> asked_of;
  auto asker = [&](std::string who) {
    return [&asked_of, who](const json::object&, std::function<void(json::object)> answer) {
      asked_of.push_back(who);
      answer(json::object{{"action", "cancel"}});
    };
  };
  s.client->call_tool(
      "t", json::object{}, false, nullptr, [](McpClient::CallResult) {}, asker("first"));
  s.client->call_tool(
      "t", json::object{}, false, nullptr, [](McpClient::CallResult) {}, asker("second"));
  s.client->call_tool("t", json::object{}, false, nullptr, [](McpClient::CallResult) {});  // cannot ask
  ASSERT_TRUE(run_until(s.io, [&] { return s.held.size() == 3; }));
  std::optional<JsonRpcPeer::CallResult> answered;
  s.server->call("elicitation/create", input::form("y").at("params"),
                 [&](JsonRpcPeer::CallResult r) { answered = std::move(r); });
  ASSERT_TRUE(run_until(s.io, [&] { return answered.has_value(); }));
  EXPECT_EQ(asked_of, (std::vector<std::string>{"second"}));
  EXPECT_EQ(**answered, (json::object{{"action", "cancel"}}));
}

}  // namespace
}  // namespace oppx::daemon

namespace oppx::daemon {
namespace {

// MCP 2026-07-28: a server that announces list changes gets one standing subscriptions/listen
// (not counted as a request waiting); its list_changed fetches the tools again; a subscription the
// server ends is opened again (the tools fetched once more); one it does not offer is not asked again.
TEST(McpClient, AModernServersListChangesComeOnAStandingSubscription) {
  json::array current{tool("a")};
  int listens = 0;
  Session s({{"server/discover",
              answer(json::object{{"supportedVersions", json::array{"2026-07-28"}},
                                  {"capabilities", json::object{{"tools", json::object{{"listChanged", true}}}}}})},
             {"tools/list", [&current](proto::Request&, Reply& r) { r.ok(json::object{{"tools", current}}); }},
             {"subscriptions/listen",
              [&listens](proto::Request& req, Reply&) {
                ++listens;
                EXPECT_EQ(req.params.at("notifications"), (json::object{{"toolsListChanged", true}, {"resourcesListChanged", true}, {"promptsListChanged", true}}));
              }}},
            input::modern());
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1 && listens == 1; }));
  EXPECT_EQ(s.client->calls_waiting(), 0u);
  current.push_back(tool("b"));
  s.server->notify("notifications/tools/list_changed",
                   json::object{{"_meta", json::object{{"io.modelcontextprotocol/subscriptionId", 1}}}});
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 2; }));
  EXPECT_EQ(s.tools.size(), 2u);
  // The server ends it: opened again, and the tools read once more.
  ASSERT_EQ(s.held.size(), 1u);
  current.push_back(tool("c"));
  s.held[0].ok(json::object{{"resultType", "complete"}});
  ASSERT_TRUE(run_until(
      s.io, [&] { return listens == 2 && s.lists == 3; }, std::chrono::seconds(5)));
  EXPECT_EQ(s.tools.size(), 3u);

  Session plain({{"server/discover",
                  answer(json::object{{"supportedVersions", json::array{"2026-07-28"}},
                                      {"capabilities", json::object{{"tools", json::object{{"listChanged", true}}}}}})},
                 {"tools/list", answer(json::object{{"tools", json::array{}}})}},
                input::modern());
  plain.client->start();
  ASSERT_TRUE(run_until(plain.io, [&] { return plain.lists == 1; }));
  plain.round_trip();
  plain.round_trip();
  EXPECT_EQ(std::count(plain.requests.begin(), plain.requests.end(), "subscriptions/listen"), 1)
      << "refused (method not found): not asked again";
}

}  // namespace
}  // namespace oppx::daemon

namespace oppx::daemon {
namespace {

// MCP 2026-07-28 "Caching": a list is fetched again when it is needed after its ttlMs passed,
// not while it is fresh, and not on a timer; an announced change renews it at once; without a
// ttlMs only an announced change does.
TEST(McpClient, AListIsFetchedAgainWhenNeededOnceItsTtlPassed) {
  int fetched = 0;
  Session s({{"server/discover", answer(json::object{{"supportedVersions", json::array{"2026-07-28"}}})},
             {"tools/list",
              [&fetched](proto::Request&, Reply& r) {
                ++fetched;
                std::int64_t ttl = fetched == 1 ? 600'000 : fetched == 2 ? 1 : 0;
                r.ok(json::object{{"tools", json::array{tool("a")}}, {"ttlMs", ttl}});
              }}},
            input::modern());
  s.client->start();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 1; }));
  s.client->refetch_if_stale();
  s.round_trip();
  EXPECT_EQ(fetched, 1) << "fresh for ten minutes";
  s.server->notify("notifications/tools/list_changed", nullptr);
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 2; }));
  // Its 1 ms passes (a timer of the loop's: the only event there is to wait for).
  bool passed = false;
  boost::asio::steady_timer ttl(s.io, std::chrono::milliseconds(5));
  ttl.async_wait([&passed](boost::system::error_code) { passed = true; });
  ASSERT_TRUE(run_until(s.io, [&] { return passed; }));
  s.client->refetch_if_stale();
  ASSERT_TRUE(run_until(s.io, [&] { return s.lists == 3; }));
  // The third list has no ttl: it stays as it is until a change is announced.
  s.client->refetch_if_stale();
  s.round_trip();
  EXPECT_EQ(fetched, 3);
}

}  // namespace
}  // namespace oppx::daemon
