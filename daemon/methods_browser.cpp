// browser/status, browser/start and browser/stop: the session's headless browser, started and
// stopped on a client's request and ended with its session. Callbacks on the daemon's loop.
#include "daemon/methods_browser.h"

#include "common/playwright.h"
#include "daemon/browser.h"
#include "daemon/server.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <algorithm>

#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

proto::RpcError needs_session() {
  return proto::RpcError::make(proto::ErrorCode::kInvalidParams, "no_session",
                               "the browser belongs to a session: send session/open first");
}

proto::RpcError problem_error(const BrowserProblem& p) {
  auto e = proto::RpcError::make(proto::ErrorCode::kInternal, p.kind, p.message);
  json::value data = json::value_from(p);
  for (auto& [k, v] : data.as_object()) e.data[k] = v;
  return e;
}

void allow_for_session(Session& session, bool on) {
  auto& list = session.allow;
  auto it = std::find(list.begin(), list.end(), kBrowserSessionRule);
  if (on && it == list.end()) list.emplace_back(kBrowserSessionRule);
  if (!on && it != list.end()) list.erase(it);
}

void status(Server& s, const Client& client, Reply reply) {
  EnvMap env(client.env.begin(), client.env.end());
  proto::BrowserStatusResult r;
  r.version = playwright::kMcpVersion;
  if (std::string installed = playwright::installed_version(); !installed.empty()) r.installed = installed;
  r.engine = playwright::engine_dir();
  r.sandbox = ::geteuid() == 0 ? "off (Chromium refuses it as root)" : "on";
  if (auto b = choose_browser(env)) {
    r.browser = {b->kind, b->path, std::nullopt};
  } else {
    r.browser.problem = b.error();
  }
  if (client.session)
    r.session = client.session->browser ? client.session->browser->status() : proto::SessionBrowserStatus{};
  r.spare = s.browser_spare().status();
  reply.ok(json::value_from(r));
}

void start(Server& s, Reply reply, Client& client) {
  if (!client.session) return reply.fail(needs_session());
  Session& session = *client.session;
  if (!session.browser) session.browser = std::make_shared<SessionBrowser>(s.io(), session.id, &s.browser_spare());
  auto shared = std::make_shared<Reply>(std::move(reply));
  std::weak_ptr<SessionBrowser> weak = session.browser;
  EnvMap env(client.env.begin(), client.env.end());
  session.browser->start(env, [shared, weak, &client](std::optional<BrowserProblem> problem) {
    auto browser = weak.lock();
    if (!browser || !client.session || client.session->browser != browser) return;  // its session ended
    if (problem) return shared->fail(problem_error(*problem));
    allow_for_session(*client.session, true);
    proto::BrowserStartResult r;
    static_cast<proto::SessionBrowserStatus&>(r) = browser->status();
    r.session_allow = kBrowserSessionRule;
    shared->ok(json::value_from(r));
  });
}

void stop(Reply reply, Client& client) {
  if (!client.session) return reply.fail(needs_session());
  Session& session = *client.session;
  bool was = session.browser && session.browser->state() != "off";
  session.browser.reset();  // stops its server, and Chromium with it
  allow_for_session(session, false);
  reply.ok(json::value_from(proto::BrowserStopResult{"off", was}));
}

}  // namespace

void browser_status(Server& s, const proto::NoParams&, Reply reply, Client& client) {
  status(s, client, std::move(reply));
}

void browser_start(Server& s, const proto::NoParams&, Reply reply, Client& client) {
  start(s, std::move(reply), client);
}

void browser_stop(Server&, const proto::NoParams&, Reply reply, Client& client) { stop(std::move(reply), client); }

}  // namespace oppx::daemon
