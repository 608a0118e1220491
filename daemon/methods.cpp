// The method table of the socket API: one line per method, the index of what oppxd speaks.
// docs/protocol.md documents each; a new method is a line here and a handler below it.
#include "daemon/server.h"

#include "common/budget.h"
#include "common/log.h"
#include "common/proc.h"
#include "daemon/child_process.h"
#include "daemon/browser.h"
#include "daemon/connectors.h"
#include "daemon/methods_browser.h"
#include "daemon/methods_config.h"
#include "daemon/methods_permissions.h"
#include "daemon/status_waits.h"
#include "proto/decode.h"
#include "proto/daemon_api.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/json/value_from.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
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
  s.spare_state = std::string(server.browser_spare().status_json().at("state").as_string());
  s.children = static_cast<std::int64_t>(children_unreaped());
  s.worker_jobs = static_cast<std::int64_t>(server.connectors().worker().jobs());
  return s;
}

struct NameParams {
  std::string name;
  bool wait = false;
  std::string cwd;
};
boost::system::result<NameParams, std::string> name_params(const json::value& params, bool required) {
  proto::FieldReader r(params, "params");
  NameParams p;
  p.name = r.string("name", required).value_or("");
  p.wait = r.boolean("wait", false).value_or(false);
  p.cwd = r.string("cwd", false).value_or("");
  if (!r.ok()) return {boost::system::in_place_error, r.error()};
  if (!p.cwd.empty() && p.cwd[0] != '/')
    return {boost::system::in_place_error, "params.cwd: expected an absolute path"};
  return p;
}

struct CallParams {
  std::string connector, tool, cwd;
  json::value arguments;
  std::int64_t timeout_ms = 0;
  json::value progress_token;  // null: the caller wants no progress
};
boost::system::result<CallParams, std::string> call_params(const json::value& params) {
  proto::FieldReader r(params, "params");
  CallParams p;
  p.connector = r.string("connector", true).value_or("");
  p.tool = r.string("tool", true).value_or("");
  p.timeout_ms = r.integer("timeout_ms", false).value_or(kCallTimeout.count());
  p.cwd = r.string("cwd", false).value_or("");
  if (!r.ok()) return {boost::system::in_place_error, r.error()};
  if (!p.cwd.empty() && p.cwd[0] != '/')
    return {boost::system::in_place_error, "params.cwd: expected an absolute path"};
  const json::value* a = params.as_object().if_contains("arguments");
  if (a && !a->is_null() && !a->is_object())
    return {boost::system::in_place_error, "params.arguments: expected object"};
  p.arguments = a && a->is_object() ? *a : json::value(json::object{});
  if (p.timeout_ms <= 0 || p.timeout_ms > 3'600'000)
    return {boost::system::in_place_error, "params.timeout_ms: expected 1 to 3600000"};
  if (const json::value* t = params.as_object().if_contains("progress_token"); t && !t->is_null()) {
    if (!t->is_string() && !t->is_int64()) {
      return {boost::system::in_place_error, "params.progress_token: expected a string or an integer"};
    }
    p.progress_token = *t;
  }
  return p;
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
json::object list_with_browser(Server& s, const std::string& root, const std::weak_ptr<SessionBrowser>& browser) {
  json::object o = s.connectors().list_json(root);
  if (auto b = browser_list_entry(browser.lock())) o["connectors"].as_array().emplace_back(std::move(*b));
  return o;
}

void mcp_list(Server& s, const NameParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kNever);
  std::weak_ptr<SessionBrowser> browser = session_browser(client, std::string(kBrowserName));
  if (!p.wait) return reply.ok(list_with_browser(s, root, browser));
  auto shared = std::make_shared<Reply>(std::move(reply));
  s.connectors().when_settled(root, "",
                              [&s, shared, root, browser] { shared->ok(list_with_browser(s, root, browser)); });
}

void mcp_tools(Server& s, const NameParams& p, Reply reply, Client& client) {
  if (auto b = session_browser(client, p.name)) {
    json::object o = b->status_json();
    o["name"] = p.name;
    o["tools"] = b->tools();
    return reply.ok(std::move(o));
  }
  std::string root = request_root(p.cwd, client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kNever);
  if (!s.connectors().find(p.name, root)) return reply.fail(unknown_connector(p.name));
  auto shared = std::make_shared<Reply>(std::move(reply));
  auto answer = [&s, shared, name = p.name, root] {
    auto c = s.connectors().find(name, root);
    auto o = c ? s.connectors().get_json(name, root) : std::nullopt;
    if (!o) return shared->fail(unknown_connector(name));
    bool cached = false;
    (*o)["tools"] = s.connectors().tools_of(*c, &cached);
    shared->ok(std::move(*o));
  };
  // A connector still starting answers at once with the list cached for its definition.
  bool cached = false;
  s.connectors().tools_of(*s.connectors().find(p.name, root), &cached);
  if (cached) return answer();
  s.connectors().when_settled(root, p.name, answer);
}

// Sends one call to `c` and answers with its result as the model sees it: `browser_folder`, for
// the session's browser, is where the files its results link are read from.
void send_call(const std::shared_ptr<Connector>& c, const CallParams& p, const SharedReply& shared,
               const std::shared_ptr<Connector::CancelCall>& cancel, const std::weak_ptr<JsonRpcPeer>& peer,
               CallOptions options, std::string browser_folder) {
  if (!p.progress_token.is_null()) {
    options.on_progress = [peer, id = shared->id(), token = p.progress_token](const json::object& progress) {
      auto client = peer.lock();
      if (!client) return;
      json::object note{{"id", id}, {"progress_token", token}};
      for (const char* k : {"progress", "total", "message"}) {
        if (const json::value* v = progress.if_contains(k)) note[k] = *v;
      }
      client->notify("tools/progress", note);
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
                      shared->ok(json::object{{"connector", p.connector},
                                              {"tool", p.tool},
                                              {"arguments", p.arguments},
                                              {"text", text},
                                              {"isError", is_error},
                                              {"truncated", truncated},
                                              {"untrusted", true}});
                    });
}

// A call to the session's browser: it runs once started (browser/start), with only its offered tools.
void browser_call(const std::shared_ptr<SessionBrowser>& b, const CallParams& p, Reply reply, Client& client) {
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
  auto shared = std::make_shared<Reply>(std::move(reply));
  auto cancel = std::make_shared<Connector::CancelCall>();
  shared->on_cancel([cancel] {
    if (*cancel) (*cancel)();
  });
  CallOptions options;
  options.timeout = std::chrono::milliseconds(p.timeout_ms);
  send_call(c, p, shared, cancel, client.peer, std::move(options), b->folder());
}

void tools_call(Server& s, const CallParams& p, Reply reply, Client& client) {
  if (auto b = session_browser(client, p.connector)) return browser_call(b, p, std::move(reply), client);
  std::string root = request_root(p.cwd, client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kMay);
  if (!s.connectors().find(p.connector, root)) return reply.fail(unknown_connector(p.connector));
  auto shared = std::make_shared<Reply>(std::move(reply));
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
void mcp_subscribe(Server& s, Reply reply, Client& client) {
  std::string root = request_root("", client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kNever);
  s.connectors().subscriptions().add(client.id, client.peer);
  reply.ok(s.connectors().list_json(root));
}

void mcp_unsubscribe(Server& s, Reply reply, Client& client) {
  reply.ok(json::object{{"subscribed", false}, {"was_subscribed", s.connectors().subscriptions().remove(client.id)}});
}

void mcp_reconnect(Server& s, const NameParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kMay);
  if (!p.name.empty() && !s.connectors().find(p.name, root)) return reply.fail(unknown_connector(p.name));
  s.connectors().reconnect(p.name, client.env, root);
  auto shared = std::make_shared<Reply>(std::move(reply));
  s.connectors().when_settled(root, p.name, [&s, shared, root, name = p.name] {
    json::object out = s.connectors().list_json(root);
    if (!name.empty()) {
      // One named: that one alone (not a repository's of the same name that the user's hides).
      json::array& all = out["connectors"].as_array();
      json::array one;
      for (auto& c : all) {
        if (c.at("name") == json::value(name) && c.at("state") != json::value("hidden")) one.push_back(c);
      }
      all = std::move(one);
    }
    shared->ok(std::move(out));
  });
}

void shutdown(Server& server, Reply reply) {
  reply.ok(json::value_from(proto::ShutdownResult{}));
  server.stop("asked by a client (daemon/shutdown)");
}

}  // namespace

void register_methods(Router& r, Server& s) {
  r.add("hello", proto::decode_hello_params, hello);
  auto waits = std::make_shared<StatusWaits>(s.io(), [&s] { return status_of(s); });
  r.add("daemon/status", proto::decode_status_params,
        [waits](const proto::StatusParams& p, Reply reply, Client&) { waits->answer(p, std::move(reply)); });
  r.add("daemon/shutdown", no_params, [&s](NoParams, Reply reply, Client&) { shutdown(s, std::move(reply)); });
  r.add(
      "mcp/list", [](const json::value& v) { return name_params(v, false); },
      [&s](const NameParams& p, Reply reply, Client& c) { mcp_list(s, p, std::move(reply), c); });
  r.add(
      "mcp/tools", [](const json::value& v) { return name_params(v, true); },
      [&s](const NameParams& p, Reply reply, Client& c) { mcp_tools(s, p, std::move(reply), c); });
  r.add(
      "mcp/reconnect", [](const json::value& v) { return name_params(v, false); },
      [&s](const NameParams& p, Reply reply, Client& c) { mcp_reconnect(s, p, std::move(reply), c); });
  r.add("mcp/subscribe", no_params, [&s](NoParams, Reply reply, Client& c) { mcp_subscribe(s, std::move(reply), c); });
  r.add("mcp/unsubscribe", no_params,
        [&s](NoParams, Reply reply, Client& c) { mcp_unsubscribe(s, std::move(reply), c); });
  r.add("mcp/get", decode_get_params,
        [&s](const GetParams& p, Reply reply, Client& c) { mcp_get(s, p, std::move(reply), c); });
  r.add("mcp/add", decode_add_params,
        [&s](const AddParams& p, Reply reply, Client& c) { mcp_add(s, p, std::move(reply), c); });
  r.add("mcp/remove", decode_remove_params,
        [&s](const RemoveParams& p, Reply reply, Client& c) { mcp_remove(s, p, std::move(reply), c); });
  r.add("consent/approve", decode_consent_params,
        [&s](const ConsentParams& p, Reply reply, Client& c) { consent_decide(s, p, true, std::move(reply), c); });
  r.add("consent/deny", decode_consent_params,
        [&s](const ConsentParams& p, Reply reply, Client& c) { consent_decide(s, p, false, std::move(reply), c); });
  r.add("tools/call", call_params,
        [&s](const CallParams& p, Reply reply, Client& c) { tools_call(s, p, std::move(reply), c); });
  r.add(
      "permissions/list", [](const json::value& v) { return decode_rule_params(v, false); },
      [&s](const RuleParams& p, Reply reply, Client& c) { permissions_list(s, p, std::move(reply), c); });
  r.add(
      "permissions/allow", [](const json::value& v) { return decode_rule_params(v, true); },
      [&s](const RuleParams& p, Reply reply, Client& c) { permissions_add(s, p, true, std::move(reply), c); });
  r.add(
      "permissions/deny", [](const json::value& v) { return decode_rule_params(v, true); },
      [&s](const RuleParams& p, Reply reply, Client& c) { permissions_add(s, p, false, std::move(reply), c); });
  r.add(
      "permissions/remove", [](const json::value& v) { return decode_rule_params(v, true); },
      [&s](const RuleParams& p, Reply reply, Client& c) { permissions_remove(s, p, std::move(reply), c); });
  r.add("session/open", decode_session_params,
        [](const SessionParams& p, Reply reply, Client& c) { session_open(p, std::move(reply), c); });
  r.add("permissions/judge", decode_judge_params,
        [&s](const JudgeParams& p, Reply reply, Client& c) { permissions_judge(s, p, std::move(reply), c); });
  register_browser_methods(r, s);
}

}  // namespace oppx::daemon
