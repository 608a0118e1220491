// mcp/login and its companions: the connector found as the client's folder sees it, its URL
// expanded with the client's environment, and the login run by Connectors' OAuth. A login's
// wait ends with the connector's state once it settled, as mcp/reconnect answers.
#include "daemon/methods_oauth.h"

#include "common/user_config.h"
#include "daemon/connector.h"
#include "daemon/connectors.h"
#include "daemon/methods_config.h"
#include "daemon/server.h"
#include "proto/jsonrpc.h"
#include "proto/mcp_results.h"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace oppx::daemon {

namespace json = boost::json;
using proto::ErrorCode;
using proto::RpcError;

namespace {

RpcError login_error(std::string message) {
  return RpcError::make(ErrorCode::kInternal, proto::kind::kLogin, std::move(message));
}

// The connector of that name as the client's folder sees it, when it logs in with OAuth.
boost::system::result<std::shared_ptr<Connector>, RpcError> oauth_connector(Server& s, const std::string& name,
                                                                            const std::string& root) {
  auto c = s.connectors().find(name, root);
  if (!c) {
    return RpcError::make(ErrorCode::kInvalidParams, "unknown_connector",
                          fmt::format("no connector named {}; `oppx mcp list` shows them", name));
  }
  if (c->def().kind != ConnectorDef::Kind::kHttp) {
    return RpcError::make(ErrorCode::kInvalidParams, proto::kind::kConfig,
                          fmt::format("{} runs a program on this machine; only an HTTP connector logs in with OAuth "
                                      "(a program's own login, if any, is in its documentation)",
                                      name));
  }
  if (c->state() == ConnectorState::kWaiting) {
    return RpcError::make(ErrorCode::kInvalidParams, proto::kind::kConfig,
                          fmt::format("{} waits for your consent: {}; log in once it is approved", name, c->reason()));
  }
  if (!logs_in_with_oauth(c->def())) {
    return RpcError::make(ErrorCode::kInvalidParams, proto::kind::kConfig,
                          fmt::format("{} sends an Authorization header of its own, so it does not log in with OAuth; "
                                      "remove that header (`oppx mcp add {} --url … --force` without it) to log in "
                                      "instead",
                                      name, name));
  }
  return c;
}

// The client ID metadata document URL: the client's OPPX_OAUTH_CLIENT_METADATA_URL, else
// config.json's oauth_client_metadata_url.
std::string client_metadata_url(const EnvMap& env) {
  if (auto it = env.find("OPPX_OAUTH_CLIENT_METADATA_URL"); it != env.end() && !it->second.empty()) return it->second;
  auto cfg = read_user_config();
  if (!cfg) return "";
  auto* v = cfg->if_contains("oauth_client_metadata_url");
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

}  // namespace

void mcp_login(Server& s, const proto::McpLoginParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kNever);
  auto c = oauth_connector(s, p.name, root);
  if (!c) return reply.fail(c.error());
  EnvMap env(client.env.begin(), client.env.end());
  auto url = expand((*c)->def().url, env);
  if (!url) {
    return reply.fail(
        RpcError::make(ErrorCode::kInvalidParams, proto::kind::kConfig,
                       fmt::format("the URL of {}: {}; set it and log in again", p.name, url.error().describe())));
  }
  OAuth::Settings settings{client_metadata_url(env)};
  settings.wait = env_milliseconds(env, "OPPX_OAUTH_LOGIN_WAIT_MS", kLoginWait, 100, 3'600'000);
  auto shared = std::make_shared<Reply>(std::move(reply));
  s.connectors().oauth().login((*c)->def(), *url, env, std::move(settings), [shared](auto r) {
    if (!r) return shared->fail(login_error(r.error()));
    shared->ok(json::value_from(*r));
  });
}

void mcp_login_wait(Server& s, const proto::McpLoginWaitParams& p, Reply reply, Client& client) {
  auto shared = std::make_shared<Reply>(std::move(reply));
  std::string root = request_root("", client);
  bool known = s.connectors().oauth().wait(p.login, [&s, shared, root](auto r) {
    if (!r) return shared->fail(login_error(r.error()));
    // Logged in: the answer waits for the connectors it started to settle.
    s.connectors().when_settled(root, "",
                                [&s, shared, root] { shared->ok(json::value_from(s.connectors().list(root))); });
  });
  if (!known) {
    shared->fail(RpcError::make(ErrorCode::kInvalidParams, "unknown_login",
                                "there is no such login (it ended long ago, or oppxd restarted); run `oppx mcp "
                                "login <name>` again"));
  }
}

void mcp_login_redirect(Server& s, const proto::McpLoginRedirectParams& p, Reply reply, Client&) {
  auto r = s.connectors().oauth().redirect(p.login, p.url);
  if (!r) return reply.fail(RpcError::make(ErrorCode::kInvalidParams, proto::kind::kLogin, r.error()));
  reply.ok(json::object{{"accepted", true}});
}

void mcp_logout(Server& s, const proto::McpLoginParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kNever);
  auto c = oauth_connector(s, p.name, root);
  if (!c) return reply.fail(c.error());
  std::string url = s.connectors().url_of(**c);
  if (url.empty()) {
    EnvMap env(client.env.begin(), client.env.end());
    auto u = expand((*c)->def().url, env);
    if (u) url = *u;
  }
  auto shared = std::make_shared<Reply>(std::move(reply));
  auto name = p.name;
  auto gone = std::make_shared<int>(0);
  EnvMap env(client.env.begin(), client.env.end());
  *gone = s.connectors().oauth().logout(
      url, [&s, shared, name, gone, env, root](boost::system::result<void, std::string> r) {
        if (!r)
          return shared->fail(RpcError::make(ErrorCode::kInternal, "io", "the logout was not saved: " + r.error()));
        // Its session ends now, so that its state says it needs a login (not at its next call).
        s.connectors().reconnect(name, env, root);
        shared->ok(json::value_from(proto::McpLogoutResult{name, *gone}));
      });
}

}  // namespace oppx::daemon
