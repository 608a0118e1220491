// The method table of the socket API: one line per method, the index of what oppxd speaks.
// docs/protocol.md documents each; a new method is a line here and a handler below it.
#include "daemon/server.h"

#include "common/budget.h"
#include "common/log.h"
#include "common/proc.h"
#include "daemon/agent_service.h"
#include "daemon/browser.h"
#include "daemon/child_process.h"
#include "daemon/connector_scope.h"
#include "daemon/connectors.h"
#include "daemon/methods_browser.h"
#include "daemon/methods_config.h"
#include "daemon/methods_oauth.h"
#include "daemon/methods_permissions.h"
#include "daemon/methods_resources.h"
#include "daemon/permissions.h"
#include "daemon/status_waits.h"
#include "common/fs.h"
#include "common/paths.h"
#include "common/tool_text.h"
#include "daemon/tool_result.h"
#include "daemon/tool_search.h"
#include "proto/agent_api.h"
#include "proto/daemon_api.h"
#include "proto/elicitation.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"
#include "proto/tool_search_api.h"

#include <boost/json/value_from.hpp>

#include <fmt/format.h>

#include <cctype>
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

// A reply that several callbacks may want to use; the first one wins.
using SharedReply = std::shared_ptr<Reply>;

void mcp_list(Server& s, const proto::McpListParams& p, Reply reply, Client& client) {
  ConnectorLookup lookup(s, client, request_root(p.cwd, client));
  lookup.refresh(Connectors::Restart::kNever);
  auto shared = std::make_shared<Reply>(std::move(reply));
  lookup.list(p.wait, [shared](proto::McpListResult list) { shared->ok(json::value_from(list)); });
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
  auto found = ConnectorLookup(s, client, root).refresh_and_find(p.name, Connectors::Restart::kNever);
  if (!found) return reply.fail(unknown_connector(p.name));
  auto shared = std::make_shared<Reply>(std::move(reply));
  found->tools([&s, shared, root, name = p.name](std::optional<proto::ConnectorEntry> e) {
    if (!e) return shared->fail(unknown_connector(name));
    mark_denied(s, root, *e);
    shared->ok(json::value_from(*e));
  });
}

// tools/search: the tools of the connectors this folder sees that run or are starting (their
// running or cached lists, never waited for), less those a deny rule covers, best first.
void tools_search(Server& s, const proto::ToolsSearchParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  ConnectorLookup lookup(s, client, root);
  lookup.refresh(Connectors::Restart::kNever);
  proto::McpListResult listed;
  lookup.list(false, [&listed](proto::McpListResult l) { listed = std::move(l); });  // at once: no wait
  std::vector<std::pair<std::string, json::array>> lists;
  for (const auto& e : listed.connectors) {
    if (e.state != "running" && e.state != "starting" && e.state != "idle") continue;
    auto found = lookup.find(e.name);
    if (!found) continue;
    json::array offered;
    for (json::value& t : found->tools_now()) {
      const json::value* name = t.is_object() ? t.as_object().if_contains("name") : nullptr;
      if (!name || !name->is_string()) continue;
      if (!root.empty() &&
          s.permissions().judge_tool(root, e.name, std::string(name->get_string()), false).verdict == Verdict::kDeny)
        continue;
      offered.push_back(std::move(t));
    }
    lists.emplace_back(e.name, std::move(offered));
  }
  ToolIndex index;
  for (const auto& [name, tools] : lists) index.add(name, tools);
  proto::ToolsSearchResult out;
  out.searched = static_cast<std::int64_t>(index.size());
  std::string_view context = std::string_view(p.context).substr(0, proto::kMaxSearchContext);
  for (auto& hit : index.search(p.query, static_cast<std::size_t>(p.limit), context)) {
    proto::ToolsSearchHit h{hit.connector, hit.name, "", hit.score, hit.exact};
    for (const auto& [name, tools] : lists) {
      if (name != hit.connector) continue;
      for (const json::value& t : tools) {
        const json::object& o = t.as_object();
        if (o.at("name").get_string() == hit.name) h.line = tool_line(name, o);
      }
    }
    out.tools.push_back(std::move(h));
  }
  reply.ok(json::value_from(out));
}

// The server's notifications/progress for a call, passed on to its caller under the caller's
// request id and progress token.
std::function<void(const json::object&)> progress_to(std::weak_ptr<JsonRpcPeer> peer, json::value id,
                                                     json::value token) {
  return [peer = std::move(peer), id = std::move(id), token = std::move(token)](const json::object& progress) {
    auto client = peer.lock();
    if (!client) return;
    auto from_server = proto::decode<proto::ToolsProgress>(progress);
    if (!from_server) return;
    proto::ToolsProgress note = std::move(*from_server);
    note.id = id;
    note.progress_token = token;
    client->notify(proto::kToolsProgress, json::value_from(note));
  };
}

// What a connector's server asks the user during a call goes to the client that made it
// (mcp/elicit); its answer goes back with the form's defaults applied, and a form answer that
// does not fit the server's schema is declined (logged). A client that cannot be asked declines.
std::function<void(const json::object&, std::function<void(json::object)>)> elicit_from(std::weak_ptr<JsonRpcPeer> peer,
                                                                                        std::string connector,
                                                                                        std::string tool) {
  return [peer = std::move(peer), connector = std::move(connector), tool = std::move(tool)](
             const json::object& params, std::function<void(json::object)> answer) {
    proto::ElicitQuestion q{connector, tool};
    if (auto* m = params.if_contains("mode"); m && m->is_string() && m->as_string() == "url") q.mode = "url";
    if (auto* m = params.if_contains("message"); m && m->is_string()) q.message = m->as_string();
    if (auto* u = params.if_contains("url"); u && u->is_string()) q.url = u->as_string();
    if (auto* sc = params.if_contains("requestedSchema"); sc && sc->is_object()) q.schema = sc->as_object();
    auto client = peer.lock();
    if (!client) return answer(json::object{{"action", "decline"}});
    client->call(proto::kMcpElicit, json::value_from(q), [q, answer = std::move(answer)](JsonRpcPeer::CallResult r) {
      auto a = proto::decode_reply<proto::ElicitAnswer>(r);
      if (!a) {
        log::info("connector {}: its question to the user was declined: {}", q.connector, a.error());
        return answer(json::value_from(proto::ElicitAnswer{}).as_object());
      }
      if (a->action == "accept" && q.mode == "form") {
        a->content = proto::with_defaults(q.schema, std::move(a->content));
        if (std::string why = proto::form_problem(q.schema, a->content); !why.empty()) {
          log::warn("connector {}: the answer to its form does not fit it ({}); declined", q.connector, why);
          return answer(json::value_from(proto::ElicitAnswer{}).as_object());
        }
        return answer(json::object{{"action", "accept"}, {"content", std::move(a->content)}});
      }
      answer(json::value_from(proto::ElicitAnswer{a->action, {}}).as_object());
    });
  };
}

void send_tools_call(Server& s, const proto::ToolsCallParams& p, const std::string& root, const SharedReply& shared,
                     Client& client);

// The rules first (gate_call: deny, plan mode, allow, else the session is asked), then the call.
// The folder's repository is found once (a walk up for .git) and judged and called in alike.
void tools_call(Server& s, const proto::ToolsCallParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  ConnectorLookup lookup(s, client, root);
  if (!lookup.refresh_and_find(p.connector, Connectors::Restart::kMay))
    return reply.fail(unknown_connector(p.connector));
  auto shared = std::make_shared<Reply>(std::move(reply));
  // While the session is asked the client may go, or cancel the call: then nothing is sent.
  std::weak_ptr<JsonRpcPeer> peer = client.peer;
  gate_call(
      s, p, root, client,
      [&s, p, root, shared, peer, &client] {
        if (shared->cancelled() || !peer.lock()) return;
        send_tools_call(s, p, root, shared, client);
      },
      [shared](proto::RpcError e) { shared->fail(std::move(e)); });
}

// A file of the results folder (cache, 0700) for the whole of a cut result: named for the call,
// the time and a counter, so that no two calls share one.
std::string result_file(const proto::ToolsCallParams& p, std::string_view ext) {
  static std::uint64_t counter = 0;
  std::string name = p.connector + "." + p.tool;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  return fmt::format("{}/{}-{}-{}{}", paths::results_dir(), name.substr(0, 100), ms.count(), ++counter, ext);
}

// The result as the model sees it: its text and its structuredContent (when it fits the tool's
// outputSchema), each cut at the connector's limit; the whole of what was cut is written to a file
// of the results folder first (on the worker), and the marker names it.
void answer_result(Server& s, const proto::ToolsCallParams& p, const json::value& r, std::size_t limit,
                   const json::value& schema, const SharedReply& shared) {
  ResultForModel m = result_for_model(r, limit, schema.is_null() ? nullptr : &schema);
  if (!m.structured_problem.empty())
    log::info("{}.{}: its structuredContent does not fit its outputSchema ({}); the text is given instead", p.connector,
              p.tool, m.structured_problem);
  // The model sees this as reference text from outside, never as instructions.
  proto::ToolsCallResult out{p.connector, p.tool, p.arguments, m.text, false, !m.whole_text.empty(), true};
  out.is_error = r.is_object() && r.as_object().contains("isError") && r.as_object().at("isError") == json::value(true);
  out.structured = m.structured;
  out.structured_problem = m.structured_problem;
  struct Whole {
    std::string text_file, structured_file, error;
  };
  Whole want{m.whole_text.empty() ? "" : result_file(p, ".txt"),
             m.whole_structured.empty() ? "" : result_file(p, ".json"), ""};
  bool text_cut = !m.whole_text.empty(), structured_cut = !m.whole_structured.empty();
  auto finish = [shared, out = std::move(out), text_cut, structured_cut, limit, text_chars = m.text_chars,
                 structured_chars = m.structured_chars](Whole w) mutable {
    if (!w.error.empty()) log::warn("cannot keep a cut result: {}", w.error);
    out.text_file = w.error.empty() ? w.text_file : "";
    out.structured_file = w.error.empty() ? w.structured_file : "";
    if (text_cut) out.text += cut_marker(limit, text_chars, out.text_file);
    if (structured_cut) out.structured += cut_marker(limit, structured_chars, out.structured_file);
    shared->ok(json::value_from(out));
  };
  if (want.text_file.empty() && want.structured_file.empty()) return finish(std::move(want));
  s.connectors().worker().run(
      [want, dir = paths::results_dir(), text = std::move(m.whole_text),
       structured = std::move(m.whole_structured)]() mutable {
        if (auto made = ensure_private_dir(dir); !made) {
          want.error = made.error();
          return want;
        }
        for (auto [path, content] :
             {std::pair{&want.text_file, &text}, std::pair{&want.structured_file, &structured}}) {
          if (path->empty()) continue;
          if (auto w = atomic_write(*path, *content, 0600); !w) want.error = w.error();
        }
        return want;
      },
      std::move(finish));
}

// Found again once the rules let the call go (the session's browser may have stopped meanwhile),
// then sent; the answer is the result as the model sees it.
void send_tools_call(Server& s, const proto::ToolsCallParams& p, const std::string& root, const SharedReply& shared,
                     Client& client) {
  auto found = ConnectorLookup(s, client, root).find(p.connector);
  if (!found) return shared->fail(unknown_connector(p.connector));
  // A caller that goes away cancels its call: at the server too once it was sent. The hook
  // holds the cancel weakly (see Connector::CancelCall), so a finished call frees at once.
  auto cancel = std::make_shared<Connector::CancelCall>();
  shared->on_cancel([cancel] {
    if (*cancel) (*cancel)();
  });
  CallOptions options;
  options.timeout = std::chrono::milliseconds(p.timeout_ms);
  if (!p.progress_token.is_null()) options.on_progress = progress_to(client.peer, shared->id(), p.progress_token);
  options.on_elicit = elicit_from(client.peer, p.connector, p.tool);
  std::size_t limit = found->result_limit();
  json::value schema = found->output_schema(p.tool);
  *cancel = found->call(p.tool, p.arguments, std::move(options),
                        [&s, shared, p, limit, schema = std::move(schema)](Connector::CallResult r) {
                          if (!r) return shared->fail(r.error());
                          answer_result(s, p, *r, limit, schema, shared);
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
  auto method = [&r, &s](std::string_view name, auto handler) { r.add(std::string(name), s, handler); };
  method(proto::kHello, hello);
  // daemon/status's handler holds the open waits (until): the status now, or once it holds.
  auto waits = std::make_shared<StatusWaits>(s.io(), [&s] { return status_of(s); });
  r.add(std::string(proto::kDaemonStatus),
        [waits](const proto::StatusParams& p, Reply reply, Client&) { waits->answer(p, std::move(reply)); });
  method(proto::kDaemonShutdown, shutdown);
  method(proto::kMcpList, mcp_list);
  method(proto::kMcpGet, mcp_get);
  method(proto::kMcpTools, mcp_tools);
  method(proto::kMcpAdd, mcp_add);
  method(proto::kMcpRemove, mcp_remove);
  method(proto::kMcpReconnect, mcp_reconnect);
  method(proto::kMcpLogin, mcp_login);
  method(proto::kMcpLoginWait, mcp_login_wait);
  method(proto::kMcpLoginRedirect, mcp_login_redirect);
  method(proto::kMcpLogout, mcp_logout);
  method(proto::kMcpSubscribe, mcp_subscribe);
  method(proto::kMcpUnsubscribe, mcp_unsubscribe);
  method(proto::kConsentApprove, consent_approve);
  method(proto::kConsentDeny, consent_deny);
  method(proto::kToolsCall, tools_call);
  method(proto::kToolsSearch, tools_search);
  method(proto::kMcpResources, mcp_resources);
  method(proto::kMcpRead, mcp_read);
  method(proto::kMcpPrompts, mcp_prompts);
  method(proto::kMcpPrompt, mcp_prompt);
  method(proto::kSessionOpen, session_open);
  method(proto::kPermissionsList, permissions_list);
  method(proto::kPermissionsAllow, permissions_allow);
  method(proto::kPermissionsDeny, permissions_deny);
  method(proto::kPermissionsRemove, permissions_remove);
  method(proto::kPermissionsJudge, permissions_judge);
  method(proto::kBrowserStatus, browser_status);
  method(proto::kBrowserStart, browser_start);
  method(proto::kBrowserStop, browser_stop);
  // The agent (daemon/agent_service.h): its turns run on threads of their own.
  r.add(std::string(proto::kAgentOpen),
        [&s](const proto::AgentOpenParams& p, Reply reply, Client& c) { s.agents().open(p, std::move(reply), c); });
  r.add(std::string(proto::kAgentTurn),
        [&s](const proto::AgentTurnParams& p, Reply reply, Client& c) { s.agents().turn(p, std::move(reply), c); });
  r.add(std::string(proto::kAgentCancel),
        [&s](const proto::NoParams&, Reply reply, Client& c) { s.agents().cancel(std::move(reply), c); });
  r.add(std::string(proto::kAgentState),
        [&s](const proto::AgentStateParams& p, Reply reply, Client& c) { s.agents().state(p, std::move(reply), c); });
  r.add(std::string(proto::kAgentConversations), [&s](const proto::AgentConversationsParams& p, Reply reply,
                                                      Client& c) { s.agents().conversations(p, std::move(reply), c); });
}

}  // namespace oppx::daemon
