// The method table of the socket API: one line per method, the index of what oppxd speaks.
// docs/protocol.md documents each; a new method is a line here and a handler below it.
#include "daemon/server.h"

#include "common/budget.h"
#include "common/log.h"
#include "common/proc.h"
#include "daemon/agent_service.h"
#include "daemon/child_process.h"
#include "daemon/browser.h"
#include "daemon/connectors.h"
#include "daemon/methods_browser.h"
#include "daemon/methods_config.h"
#include "daemon/methods_permissions.h"
#include "daemon/permissions.h"
#include "daemon/status_waits.h"
#include "proto/agent_api.h"
#include "proto/daemon_api.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/json/value_from.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

void hello(Server&, const proto::HelloParams& p, Reply reply, Client& client) {
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
  if (!p.env.empty()) client.env = p.env;
  if (!p.cwd.empty()) client.cwd = p.cwd;
  log::debug("client {} is {}", client.id, p.client);
  reply.ok(json::value_from(proto::HelloResult{proto::kProtocolVersion, OPPX_VERSION, kBuildId, ::getpid()}));
}

proto::StatusResult status_of(Server& server) {
  proto::StatusResult s;
  s.pid = ::getpid();
  s.version = OPPX_VERSION;
  s.build = kBuildId;
  s.uptime_ms = static_cast<std::int64_t>(server.uptime_seconds() * 1000);
  s.clients = server.client_count();
  s.connectors = static_cast<std::int64_t>(server.connectors().size());
  s.rss_kib = rss_kib(::getpid());
  s.buffered_bytes = static_cast<std::int64_t>(buffer_budget().in_use());
  s.buffer_budget = static_cast<std::int64_t>(buffer_budget().limit());
  s.socket = server.options().socket_path;
  s.log = server.options().log_path;
  s.isolation = connector_isolation().kind;
  s.isolation_reason = connector_isolation().reason;
  s.reaper_pid = reaper_pid();
  s.requests_waiting = static_cast<std::int64_t>(server.connectors().calls_waiting());
  s.spare_state = server.browser_spare().status().state;
  s.children = static_cast<std::int64_t>(children_unreaped());
  s.worker_jobs = static_cast<std::int64_t>(server.connectors().worker().jobs());
  return s;
}

proto::RpcError unknown_connector(const std::string& name) {
  auto e = proto::RpcError::make(proto::ErrorCode::kInvalidParams, "unknown_connector",
                                 "no connector named " + name + "; `oppx mcp list` shows them");
  e.data["field"] = "params.name";
  return e;
}

// A reply that several callbacks may want to use; the first one wins.
using SharedReply = std::shared_ptr<Reply>;

// The connectors `root` sees, and the session's browser when it has one.
json::value list_with_browser(Server& s, const std::string& root, const std::weak_ptr<SessionBrowser>& browser) {
  proto::McpListResult list = s.connectors().list(root);
  if (auto b = browser_list_entry(browser.lock())) list.connectors.push_back(std::move(*b));
  return json::value_from(list);
}

void mcp_list(Server& s, const proto::McpListParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kNever);
  std::weak_ptr<SessionBrowser> browser = session_browser(client, std::string(kBrowserName));
  if (!p.wait) return reply.ok(list_with_browser(s, root, browser));
  auto shared = std::make_shared<Reply>(std::move(reply));
  s.connectors().when_settled(root, "",
                              [&s, shared, root, browser] { shared->ok(list_with_browser(s, root, browser)); });
}

// The tools of `e` that a deny rule of `project` covers: a session leaves them out of its list.
void mark_denied(Server& s, const std::string& project, proto::ConnectorEntry& e) {
  if (project.empty() || !e.tools) return;
  for (const json::value& t : *e.tools) {
    const json::value* name = t.is_object() ? t.as_object().if_contains("name") : nullptr;
    if (!name || !name->is_string()) continue;
    std::string tool(name->get_string());
    if (s.permissions().judge_tool(project, e.name, tool, false).verdict == Verdict::kDeny)
      e.denied.push_back(std::move(tool));
  }
}

void mcp_tools(Server& s, const proto::McpToolsParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  if (auto b = session_browser(client, p.name)) {
    proto::ConnectorEntry e = browser_entry(*b);
    e.tools = b->tools();
    mark_denied(s, root, e);
    return reply.ok(json::value_from(e));
  }
  s.connectors().refresh(client.env, root, Connectors::Restart::kNever);
  if (!s.connectors().find(p.name, root)) return reply.fail(unknown_connector(p.name));
  auto shared = std::make_shared<Reply>(std::move(reply));
  auto answer = [&s, shared, name = p.name, root] {
    auto c = s.connectors().find(name, root);
    auto e = c ? s.connectors().get(name, root) : std::nullopt;
    if (!e) return shared->fail(unknown_connector(name));
    bool cached = false;
    e->tools = s.connectors().tools_of(*c, &cached);
    mark_denied(s, root, *e);
    shared->ok(json::value_from(*e));
  };
  // A connector still starting answers at once with the list cached for its definition.
  bool cached = false;
  s.connectors().tools_of(*s.connectors().find(p.name, root), &cached);
  if (cached) return answer();
  s.connectors().when_settled(root, p.name, answer);
}

// Sends one call to `c` and answers with its result as the model sees it: `browser_folder`, for
// the session's browser, is where the files its results link are read from.
void send_call(const std::shared_ptr<Connector>& c, const proto::ToolsCallParams& p, const SharedReply& shared,
               const std::shared_ptr<Connector::CancelCall>& cancel, const std::weak_ptr<JsonRpcPeer>& peer,
               CallOptions options, std::string browser_folder) {
  if (!p.progress_token.is_null()) {
    options.on_progress = [peer, id = shared->id(), token = p.progress_token](const json::object& progress) {
      auto client = peer.lock();
      if (!client) return;
      // The server's notifications/progress params, passed on under the caller's id and token.
      auto from_server = proto::decode<proto::ToolsProgress>(progress);
      if (!from_server) return;
      proto::ToolsProgress note = std::move(*from_server);
      note.id = id;
      note.progress_token = token;
      client->notify("tools/progress", json::value_from(note));
    };
  }
  *cancel = c->call(p.tool, p.arguments, std::move(options),
                    [shared, p, folder = std::move(browser_folder)](Connector::CallResult r) {
                      if (!r) return shared->fail(r.error());
                      if (!folder.empty()) inline_browser_files(*r, folder);
                      bool truncated = false;
                      std::string text = result_text(*r, kResultLimit, &truncated);
                      bool is_error = r->is_object() && r->as_object().contains("isError") &&
                                      r->as_object().at("isError") == json::value(true);
                      // The model sees this as reference text from outside, never as instructions.
                      shared->ok(json::value_from(
                          proto::ToolsCallResult{p.connector, p.tool, p.arguments, text, is_error, truncated, true}));
                    });
}

// A call to the session's browser: it runs once started (browser/start), with only its offered tools.
void browser_call(const std::shared_ptr<SessionBrowser>& b, const proto::ToolsCallParams& p, Reply reply,
                  Client& client) {
  auto c = b->connector();
  if (!c || b->state() == "off")
    return reply.fail(proto::RpcError::make(proto::ErrorCode::kInternal, "connector_down",
                                            "this session's browser is not started: browser/start first"));
  if (!offered_browser_tool(p.tool)) {
    auto e = proto::RpcError::make(proto::ErrorCode::kInvalidParams, "not_offered",
                                   p.tool +
                                       " is not offered: it reaches your files, runs code without a question, or "
                                       "answers with images");
    e.data["field"] = "params.tool";
    return reply.fail(std::move(e));
  }
  // A browser that stays on the web: checked here, before Playwright sees the call, for every front end.
  if (std::string why = refused_browser_call(p.tool, p.arguments); !why.empty()) {
    auto e = proto::RpcError::make(proto::ErrorCode::kInvalidParams, "refused_url", why);
    e.data["field"] = "params.arguments";
    return reply.fail(std::move(e));
  }
  auto shared = std::make_shared<Reply>(std::move(reply));
  auto cancel = std::make_shared<Connector::CancelCall>();
  shared->on_cancel([cancel] {
    if (*cancel) (*cancel)();
  });
  CallOptions options;
  options.timeout = std::chrono::milliseconds(p.timeout_ms);
  send_call(c, p, shared, cancel, client.peer, std::move(options), b->folder());
}

void send_tools_call(Server& s, const proto::ToolsCallParams& p, std::shared_ptr<Reply> shared, Client& client);

// The rules first (gate_call: deny, plan mode, allow, else the session is asked), then the call.
void tools_call(Server& s, const proto::ToolsCallParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  if (!session_browser(client, p.connector)) {
    s.connectors().refresh(client.env, root, Connectors::Restart::kMay);
    if (!s.connectors().find(p.connector, root)) return reply.fail(unknown_connector(p.connector));
  }
  auto shared = std::make_shared<Reply>(std::move(reply));
  // While the session is asked the client may go, or cancel the call: then nothing is sent.
  std::weak_ptr<JsonRpcPeer> peer = client.peer;
  gate_call(
      s, p, client,
      [&s, p, shared, peer, &client] {
        if (shared->cancelled() || !peer.lock()) return;
        send_tools_call(s, p, shared, client);
      },
      [shared](proto::RpcError e) { shared->fail(std::move(e)); });
}

void send_tools_call(Server& s, const proto::ToolsCallParams& p, std::shared_ptr<Reply> shared, Client& client) {
  if (auto b = session_browser(client, p.connector)) return browser_call(b, p, std::move(*shared), client);
  std::string root = request_root(p.cwd, client);
  // A caller that goes away cancels its call: at the server too once it was sent. The hook
  // holds the cancel weakly (see Connector::CancelCall), so a finished call frees at once.
  auto cancel = std::make_shared<Connector::CancelCall>();
  shared->on_cancel([cancel] {
    if (*cancel) (*cancel)();
  });
  // The call's time limit also bounds the wait for a connector still starting (up to 30 s, or
  // 180 s after a reconnect): whichever comes first answers, the other finds `answered` set.
  auto limit = std::chrono::milliseconds(p.timeout_ms);
  auto asked_at = std::chrono::steady_clock::now();
  struct StartWait {
    bool answered = false;
    std::optional<boost::asio::steady_timer> timer;  // only while it starts: none on the quick path
  };
  auto wait = std::make_shared<StartWait>();
  s.connectors().when_settled(
      root, p.connector, [&s, shared, p, root, cancel, peer = client.peer, limit, asked_at, wait] {
        if (wait->answered) return;
        wait->answered = true;
        if (wait->timer) wait->timer->cancel();
        if (shared->cancelled()) return;  // gone while the connector was starting
        auto c = s.connectors().find(p.connector, root);
        if (!c) return shared->fail(unknown_connector(p.connector));
        CallOptions options;
        auto waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked_at);
        options.timeout = std::max(limit - waited, std::chrono::milliseconds(1));
        options.asked = limit;
        send_call(c, p, shared, cancel, peer, std::move(options), {});
      });
  if (wait->answered) return;  // not starting: the call went out at once
  wait->timer.emplace(s.io(), limit);
  wait->timer->async_wait([shared, wait, name = p.connector, limit](boost::system::error_code ec) {
    if (ec || wait->answered) return;
    wait->answered = true;
    shared->fail(start_outlasted_call(name, limit));
  });
}

// The current list, then mcp/changed notifications until the connection ends (or unsubscribe).
void mcp_subscribe(Server& s, const proto::NoParams&, Reply reply, Client& client) {
  std::string root = request_root("", client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kNever);
  s.connectors().subscriptions().add(client.id, client.peer);
  reply.ok(json::value_from(s.connectors().list(root)));
}

void mcp_unsubscribe(Server& s, const proto::NoParams&, Reply reply, Client& client) {
  reply.ok(json::value_from(proto::McpUnsubscribeResult{false, s.connectors().subscriptions().remove(client.id)}));
}

void mcp_reconnect(Server& s, const proto::McpReconnectParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kMay);
  if (!p.name.empty() && !s.connectors().find(p.name, root)) return reply.fail(unknown_connector(p.name));
  s.connectors().reconnect(p.name, client.env, root);
  auto shared = std::make_shared<Reply>(std::move(reply));
  s.connectors().when_settled(root, p.name, [&s, shared, root, name = p.name] {
    proto::McpListResult out = s.connectors().list(root);
    if (!name.empty()) {
      // One named: that one alone (not a repository's of the same name that the user's hides).
      std::erase_if(out.connectors,
                    [&name](const proto::ConnectorEntry& c) { return c.name != name || c.state == "hidden"; });
    }
    shared->ok(json::value_from(out));
  });
}

void shutdown(Server& server, const proto::NoParams&, Reply reply, Client&) {
  reply.ok(json::value_from(proto::ShutdownResult{}));
  server.stop("asked by a client (daemon/shutdown)");
}

}  // namespace

void register_methods(Router& r, Server& s) {
  auto method = [&r, &s](std::string name, auto handler) { r.add(std::move(name), s, handler); };
  method("hello", hello);
  // daemon/status's handler holds the open waits (until): the status now, or once it holds.
  auto waits = std::make_shared<StatusWaits>(s.io(), [&s] { return status_of(s); });
  r.add("daemon/status",
        [waits](const proto::StatusParams& p, Reply reply, Client&) { waits->answer(p, std::move(reply)); });
  method("daemon/shutdown", shutdown);
  method("mcp/list", mcp_list);
  method("mcp/get", mcp_get);
  method("mcp/tools", mcp_tools);
  method("mcp/add", mcp_add);
  method("mcp/remove", mcp_remove);
  method("mcp/reconnect", mcp_reconnect);
  method("mcp/subscribe", mcp_subscribe);
  method("mcp/unsubscribe", mcp_unsubscribe);
  method("consent/approve", consent_approve);
  method("consent/deny", consent_deny);
  method("tools/call", tools_call);
  method("session/open", session_open);
  method("permissions/list", permissions_list);
  method("permissions/allow", permissions_allow);
  method("permissions/deny", permissions_deny);
  method("permissions/remove", permissions_remove);
  method("permissions/judge", permissions_judge);
  method("browser/status", browser_status);
  method("browser/start", browser_start);
  method("browser/stop", browser_stop);
  // The agent (daemon/agent_service.h): its turns run on threads of their own.
  r.add(std::string(proto::kAgentOpen),
        [&s](const proto::AgentOpenParams& p, Reply reply, Client& c) { s.agents().open(p, std::move(reply), c); });
  r.add(std::string(proto::kAgentTurn),
        [&s](const proto::AgentTurnParams& p, Reply reply, Client& c) { s.agents().turn(p, std::move(reply), c); });
  r.add(std::string(proto::kAgentCancel),
        [&s](const proto::NoParams&, Reply reply, Client& c) { s.agents().cancel(std::move(reply), c); });
  r.add(std::string(proto::kAgentState),
        [&s](const proto::AgentStateParams& p, Reply reply, Client& c) { s.agents().state(p, std::move(reply), c); });
  r.add(std::string(proto::kAgentConversations), [&s](const proto::AgentConversationsParams& p, Reply reply, Client& c) {
    s.agents().conversations(p, std::move(reply), c);
  });
}

}  // namespace oppx::daemon
