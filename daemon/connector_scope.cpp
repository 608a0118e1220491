// ConnectorLookup and ScopedConnector: the user's and the projects' connectors are the shared
// ones of daemon/connectors.h, re-read from their files on a request and waited for while they
// start; the session's is its browser (daemon/browser.h), which no file defines and which answers
// only once started, with the browser's own rules.
#include "daemon/connector_scope.h"

#include "daemon/browser.h"
#include "daemon/server.h"
#include "daemon/tool_result.h"
#include "proto/mcp_results.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

// The session browser's status is the part of a connector entry it has (state, folder, tools,
// pid, log, reason, or a failed start's reason_kind and steps).
proto::ConnectorEntry session_entry(const SessionBrowser& b) {
  proto::SessionBrowserStatus st = b.status();
  proto::ConnectorEntry e{.name = std::string(kBrowserName), .source = "browser", .type = "stdio", .state = st.state};
  e.folder = st.folder;
  e.tool_count = st.tools;
  e.pid = st.pid.value_or(0);
  e.log = st.log;
  e.reason = st.reason;
  if (st.failed) {
    e.reason_kind = st.failed->kind;
    e.reason = st.failed->message;
    e.steps = st.failed->steps;
  }
  return e;
}

}  // namespace

proto::RpcError unknown_connector(const std::string& name) {
  auto e = proto::RpcError::make(proto::ErrorCode::kInvalidParams, "unknown_connector",
                                 "no connector named " + name + "; `oppx mcp list` shows them");
  e.data["field"] = "params.name";
  return e;
}

ConnectorLookup::ConnectorLookup(Server& server, const Client& client, std::string root)
    : server_(server),
      client_(client),
      root_(std::move(root)),
      browser_(client.session ? client.session->browser : nullptr) {}

void ConnectorLookup::refresh(Connectors::Restart restart) const {
  server_.connectors().refresh(client_.env, root_, restart);
}

std::optional<ScopedConnector> ConnectorLookup::find(const std::string& name) const {
  if (browser_ && name == kBrowserName) {
    ScopedConnector found(server_, ConnectorScope::kSession, name, root_, client_.env);
    found.browser_ = browser_;
    found.connector_ = browser_->connector();
    return found;
  }
  auto c = server_.connectors().find(name, root_);
  if (!c) return std::nullopt;
  ScopedConnector found(server_, c->def().project ? ConnectorScope::kProject : ConnectorScope::kUser, name, root_,
                        client_.env);
  found.connector_ = std::move(c);
  return found;
}

std::optional<ScopedConnector> ConnectorLookup::refresh_and_find(const std::string& name,
                                                                 Connectors::Restart restart) const {
  if (!(browser_ && name == kBrowserName)) refresh(restart);
  return find(name);
}

void ConnectorLookup::list(bool wait, std::function<void(proto::McpListResult)> done) const {
  // Held weakly while it waits: a browser stopped meanwhile is not listed (nor kept running).
  auto answer = [&all = server_.connectors(), root = root_, browser = std::weak_ptr<SessionBrowser>(browser_),
                 done = std::move(done)] {
    proto::McpListResult list = all.list(root);
    if (auto b = browser.lock(); b && b->state() != "off") list.connectors.push_back(session_entry(*b));
    done(std::move(list));
  };
  if (!wait) return answer();
  server_.connectors().when_settled(root_, "", std::move(answer));
}

bool ScopedConnector::read_only(const std::string& tool) const { return connector_ && connector_->read_only(tool); }

bool ScopedConnector::asked_every_time(const std::string& tool) const {
  // A browser whose server never started runs nothing, so there is nothing to ask about.
  return scope_ == ConnectorScope::kSession && connector_ && daemon::asked_every_time(tool);
}

void ScopedConnector::tools(std::function<void(std::optional<proto::ConnectorEntry>)> done) const {
  if (browser_) {
    proto::ConnectorEntry e = session_entry(*browser_);
    e.tools = browser_->tools();
    return done(std::move(e));
  }
  Connectors& all = server_->connectors();
  if (connector_) connector_->tools_needed();
  auto answer = [&all, name = name_, root = root_, done = std::move(done)] {
    auto c = all.find(name, root);
    auto e = c ? all.get(name, root) : std::nullopt;
    if (!e) return done(std::nullopt);
    bool cached = false;
    e->tools = all.tools_of(*c, &cached);
    done(std::move(*e));
  };
  // A connector still starting answers at once with the list cached for its definition.
  bool cached = false;
  all.tools_of(*connector_, &cached);
  if (cached) return answer();
  all.when_settled(root_, name_, std::move(answer));
}

json::array ScopedConnector::tools_now() const {
  if (browser_) return browser_->tools();
  if (!connector_) return {};
  bool cached = false;
  return server_->connectors().tools_of(*connector_, &cached);
}

void ScopedConnector::request(const std::string& method, json::value params, std::chrono::milliseconds limit,
                              std::function<void(Connector::CallResult)> done) const {
  if (browser_ || !connector_) {
    if (!connector_) return done(unknown_connector(name_));
    return connector_->request(method, std::move(params), limit, std::move(done));
  }
  Connectors& all = server_->connectors();
  // Only an idle one reads the client's environment: this may run after the client is gone
  // (a list's next page), by when the connector is no longer idle.
  if (all.is_idle(*connector_)) all.wake(*connector_, *env_);
  all.when_settled(
      root_, name_,
      [&all, name = name_, root = root_, method, params = std::move(params), limit, done = std::move(done)]() mutable {
        auto c = all.find(name, root);
        if (!c) return done(unknown_connector(name));
        c->request(method, std::move(params), limit, std::move(done));
      });
}

const json::array* ScopedConnector::offers(const std::string& method) const {
  return browser_ || !connector_ ? nullptr : server_->connectors().offers(*connector_, method);
}

std::uint64_t ScopedConnector::offers_epoch() const {
  return browser_ || !connector_ ? 0 : server_->connectors().offers_epoch(*connector_);
}

void ScopedConnector::keep_offers(const std::string& method, json::array list, std::uint64_t epoch) const {
  if (!browser_ && connector_) server_->connectors().keep_offers(*connector_, method, std::move(list), epoch);
}

std::size_t ScopedConnector::result_limit() const {
  if (browser_ || !connector_ || connector_->def().result_limit == 0) return kResultLimit;
  return connector_->def().result_limit;
}

json::value ScopedConnector::output_schema(const std::string& tool) const {
  auto schema_in = [&tool](const json::array& tools) -> json::value {
    for (const json::value& t : tools) {
      const json::object* o = t.if_object();
      const json::value* name = o ? o->if_contains("name") : nullptr;
      if (!name || !name->is_string() || name->get_string() != tool) continue;
      const json::value* schema = o->if_contains("outputSchema");
      return schema ? *schema : json::value();
    }
    return {};
  };
  if (browser_) return schema_in(browser_->tools());
  if (!connector_) return {};
  // Looked up in the kept list, not a copy of it: this runs on every call.
  bool cached = false;
  return schema_in(server_->connectors().tools_of(*connector_, &cached));
}

Connector::CancelCall ScopedConnector::call(const std::string& tool, json::value arguments, CallOptions options,
                                            std::function<void(Connector::CallResult)> done) const {
  if (browser_) return call_session(tool, std::move(arguments), std::move(options), std::move(done));
  return call_shared(tool, std::move(arguments), std::move(options), std::move(done));
}

// The call's time limit also bounds the wait for a connector still starting (up to 30 s, or
// 180 s after a reconnect): whichever comes first answers, the other finds `answered` set.
Connector::CancelCall ScopedConnector::call_shared(const std::string& tool, json::value arguments, CallOptions options,
                                                   std::function<void(Connector::CallResult)> done) const {
  struct StartWait {
    bool answered = false;
    bool cancelled = false;                          // the caller went away while it started
    std::optional<boost::asio::steady_timer> timer;  // only while it starts: none on the quick path
    Connector::CancelCall sent;
  };
  auto wait = std::make_shared<StartWait>();
  auto limit = options.timeout;
  auto asked_at = std::chrono::steady_clock::now();
  Connectors& all = server_->connectors();
  if (connector_ && all.is_idle(*connector_)) all.wake(*connector_, *env_);  // a lazy one starts for its first call
  all.when_settled(root_, name_,
                   [&all, wait, name = name_, root = root_, tool, arguments = std::move(arguments),
                    options = std::move(options), done, limit, asked_at]() mutable {
                     if (wait->answered) return;
                     wait->answered = true;
                     if (wait->timer) wait->timer->cancel();
                     if (wait->cancelled) return;  // gone while the connector was starting
                     auto c = all.find(name, root);
                     if (!c) return done(unknown_connector(name));
                     auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - asked_at);
                     options.timeout = std::max(limit - waited, std::chrono::milliseconds(1));
                     options.asked = limit;
                     wait->sent = c->call(tool, std::move(arguments), std::move(options), std::move(done));
                   });
  auto cancel = [wait] {
    wait->cancelled = true;
    if (wait->sent) wait->sent();
  };
  if (wait->answered) return cancel;  // not starting: the call went out at once
  wait->timer.emplace(server_->io(), limit);
  wait->timer->async_wait([wait, done, name = name_, limit](boost::system::error_code ec) {
    if (ec || wait->answered) return;
    wait->answered = true;
    done(start_outlasted_call(name, limit));
  });
  return cancel;
}

// The session's browser runs a call once started (browser/start), with only its offered tools.
Connector::CancelCall ScopedConnector::call_session(const std::string& tool, json::value arguments, CallOptions options,
                                                    std::function<void(Connector::CallResult)> done) const {
  auto c = browser_->connector();
  if (!c || browser_->state() == "off") {
    done(proto::RpcError::make(proto::ErrorCode::kInternal, proto::kind::kConnectorDown,
                               "this session's browser is not started: browser/start first"));
    return {};
  }
  if (!offered_browser_tool(tool)) {
    auto e = proto::RpcError::make(proto::ErrorCode::kInvalidParams, "not_offered",
                                   tool +
                                       " is not offered: it reaches your files, runs code without a question, or "
                                       "answers with images");
    e.data["field"] = "params.tool";
    done(std::move(e));
    return {};
  }
  // A browser that stays on the web: checked here, before Playwright sees the call, for every front end.
  if (std::string why = refused_browser_call(tool, arguments); !why.empty()) {
    auto e = proto::RpcError::make(proto::ErrorCode::kInvalidParams, "refused_url", why);
    e.data["field"] = "params.arguments";
    done(std::move(e));
    return {};
  }
  return c->call(tool, std::move(arguments), std::move(options),
                 [folder = browser_->folder(), done = std::move(done)](Connector::CallResult r) {
                   if (r) inline_browser_files(*r, folder);
                   done(std::move(r));
                 });
}

}  // namespace oppx::daemon
