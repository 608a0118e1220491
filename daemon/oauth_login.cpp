// One OAuth login (MCP Authorization, 2025-11-25 and 2026-07-28): the server's challenge (the
// last 401 or 403 it sent, else asked for now), its protected-resource metadata, its
// authorization server's metadata, who oppx is there (the definition's client, else a client ID
// metadata document, else a registration of its own, kept per authorization server), then the
// browser: the authorization URL, and the redirect back to the loopback listener or pasted,
// checked (state, iss) before its code is redeemed with the PKCE verifier and `resource`.
#include "daemon/oauth_parts.h"

#include "common/log.h"
#include "common/text.h"
#include "daemon/connector.h"
#include "proto/mcp_versions.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <set>
#include <sstream>

// As in http_transport.cpp: GCC 12's false positive on Asio's coroutine frames.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace oppx::daemon {

namespace asio = boost::asio;
namespace json = boost::json;
using SysClock = std::chrono::system_clock;
using Started = OAuth::Started;

struct OAuthLogin : std::enable_shared_from_this<OAuthLogin> {
  OAuthLogin(asio::io_context& io) : deadline(io) {}
  std::string id, connector, url;
  ConnectorDef def;
  EnvMap env;
  OAuth::Settings settings;
  std::shared_ptr<OAuthGrant> grant;
  oauth::ResourceMetadata resource;
  oauth::AuthServerMetadata server;
  oauth::ClientCredentials client;
  oauth::Pkce pkce;
  std::string state, scope, redirect_uri;
  std::shared_ptr<CallbackListener> listener;
  asio::steady_timer deadline;
  bool redeeming = false, ended = false;
  std::string failure;  // why it ended without a login
  std::vector<OAuth::Ended> waiters;

  void end(std::string why) {
    if (ended) return;
    ended = true;
    failure = std::move(why);
    deadline.cancel();
    if (listener) listener->close();
    if (!failure.empty()) log::warn("oauth: the login of {} failed: {}", connector, failure);
    auto now = std::move(waiters);
    for (auto& w : now) {
      if (failure.empty())
        w({});
      else
        w(failure);
    }
  }
};

CallbackListener::Page take_redirect(std::shared_ptr<OAuthLogin> l, std::string_view query);

namespace {

std::string join_scopes(const std::set<std::string>& s) {
  std::string out;
  for (auto& x : s) out += (out.empty() ? "" : " ") + x;
  return out;
}

std::set<std::string> split_scopes(std::string_view s) {
  std::set<std::string> out;
  std::istringstream in{std::string(s)};
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

// The first of `urls` that answers 200 with a JSON object.
using JsonFound = boost::system::result<json::value, std::string>;
asio::awaitable<JsonFound> first_json(http::Client& http, const std::vector<std::string>& urls, std::string_view what) {
  std::string tried;
  for (auto& u : urls) {
    http::Request req;
    req.url = u;
    req.headers.push_back({"Accept", "application/json", "*"});
    req.headers.push_back({"MCP-Protocol-Version", std::string(proto::mcp::kLatest), "*"});
    auto got = co_await oauth_fetch(http, std::move(req));
    if (got && got->status == 200) {
      boost::system::error_code ec;
      json::value v = json::parse(got->body, ec);
      if (!ec && v.is_object()) co_return JsonFound(boost::system::in_place_value, std::move(v));
    }
    tried += fmt::format("{}{} ({})", tried.empty() ? "" : ", ", escape_controls(u),
                         !got ? got.error().message : fmt::format("HTTP {}", got->status));
  }
  co_return JsonFound(boost::system::in_place_error, fmt::format("no {} was found; oppx tried {}", what, tried));
}

// The 401 the server gives a request without a token: its challenge, or why there is none.
using Challenge = boost::system::result<std::string, std::string>;
asio::awaitable<Challenge> ask_challenge(http::Client& http, const std::string& url) {
  http::Request req;
  req.method = "POST";
  req.url = url;
  req.headers.push_back({"Content-Type", "application/json", "*"});
  req.headers.push_back({"Accept", "application/json, text/event-stream", "*"});
  req.body = json::serialize(
      json::object{{"jsonrpc", "2.0"},
                   {"id", 0},
                   {"method", "initialize"},
                   {"params", json::object{{"protocolVersion", proto::mcp::kLatest},
                                           {"capabilities", json::object()},
                                           {"clientInfo", json::object{{"name", "oppx"}, {"version", "login"}}}}}});
  auto got = co_await oauth_fetch(http, std::move(req), 64u << 10);
  if (!got) co_return Challenge(boost::system::in_place_error, got.error().message);
  if (got->status == 401 || got->status == 403)
    co_return Challenge(boost::system::in_place_value, got->header("WWW-Authenticate"));
  co_return Challenge(boost::system::in_place_error,
                      fmt::format("{} answered HTTP {} without asking for a login; there is nothing to log in to",
                                  http::origin_of(url), got->status));
}

// Who oppx is at this authorization server: the definition's client, else the client ID
// metadata document, else its own registration (kept per authorization server).
asio::awaitable<boost::system::result<void, std::string>> choose_client(OAuthLogin& l, OAuth::Impl& impl) {
  auto mine = configured_client(l.def, l.env);
  if (!mine) co_return mine.error();
  int port = l.def.oauth.callback_port;
  auto listen = [&l, &impl](int p) {
    std::weak_ptr<OAuthLogin> w = l.weak_from_this();
    return CallbackListener::listen(impl.io, p, [w](const std::string& query) -> CallbackListener::Page {
      auto self = w.lock();
      if (!self || self->ended) return {true, "This login has ended", "Start it again with `oppx mcp login`."};
      return take_redirect(self, query);
    });
  };
  if (*mine) {
    l.client = **mine;
    l.client.auth =
        oauth::choose_client_auth(l.server.token_endpoint_auth_methods_supported, "", !l.client.client_secret.empty());
  } else if (l.server.client_id_metadata_document_supported && !l.settings.client_metadata_url.empty()) {
    l.client.client_id = l.settings.client_metadata_url;
    l.client.auth = oauth::ClientAuth::none;
  } else if (auto kept = impl.store.client(l.server.issuer); kept && !port) {
    // The registration's own port, when it is free: else a new registration below.
    if (auto at = kept->redirect_uri.rfind(':'); at != std::string::npos) {
      int p = std::atoi(kept->redirect_uri.c_str() + at + 1);
      auto ok = p > 0 ? listen(p) : boost::system::result<std::shared_ptr<CallbackListener>, std::string>("no port");
      if (ok) {
        l.listener = *ok;
        l.client.client_id = kept->client_id;
        l.client.client_secret = kept->client_secret;
        l.client.auth = oauth::choose_client_auth(l.server.token_endpoint_auth_methods_supported, kept->auth_method,
                                                  !kept->client_secret.empty());
      }
    }
  }
  if (!l.listener) {
    auto ok = listen(port);
    if (!ok) co_return ok.error();
    l.listener = *ok;
  }
  l.redirect_uri = l.listener->redirect_uri();
  if (!l.client.client_id.empty()) co_return boost::system::result<void, std::string>();
  if (l.server.registration_endpoint.empty()) {
    co_return fmt::format(
        "the authorization server {} lets no client register itself (it has no registration endpoint) and "
        "oppx has no client there; register one with its operator and add it to the connector: `oppx mcp add {} "
        "--url {} --client-id <id> [--client-secret '${{VAR}}'] --force`",
        l.server.issuer, l.connector, l.url);
  }
  http::Request req;
  req.method = "POST";
  req.url = l.server.registration_endpoint;
  req.headers.push_back({"Content-Type", "application/json", "*"});
  req.headers.push_back({"Accept", "application/json", "*"});
  req.body = json::serialize(oauth::registration_request(l.redirect_uri, l.scope));
  req.repeatable = false;
  auto got = co_await oauth_fetch(impl.http, std::move(req));
  if (!got) co_return fmt::format("registering with {} failed: {}", l.server.issuer, got.error().message);
  auto reg = oauth::parse_registration_response(got->body);
  if (!reg)
    co_return fmt::format("registering with {} failed (HTTP {}): {}", l.server.issuer, got->status, reg.error());
  l.client.client_id = reg->client_id;
  l.client.client_secret = reg->client_secret;
  l.client.auth = oauth::choose_client_auth(l.server.token_endpoint_auth_methods_supported,
                                            reg->token_endpoint_auth_method, !reg->client_secret.empty());
  impl.store.put_client(l.server.issuer,
                        {reg->client_id, reg->client_secret, reg->token_endpoint_auth_method, l.redirect_uri},
                        [](auto) {});
  log::info("oauth: registered with {} for {}", l.server.issuer, l.connector);
  co_return boost::system::result<void, std::string>();
}

asio::awaitable<void> run_login(std::shared_ptr<OAuthLogin> l, std::shared_ptr<OAuth::Impl> impl, Started started) {
  auto fail = [&](std::string why) {
    l->end(why);
    started({boost::system::in_place_error, why});
  };
  // The challenge: the server's last refusal, else a request without a token now.
  std::string header = l->grant->challenge;
  if (header.empty()) {
    auto c = co_await ask_challenge(impl->http, l->url);
    if (!c) co_return fail(c.error());
    header = *c;
  }
  auto challenge = oauth::parse_bearer_challenge(header);
  auto prm_urls = oauth::resource_metadata_urls(l->url, challenge);
  if (!prm_urls) co_return fail(prm_urls.error());
  auto prm = co_await first_json(impl->http, *prm_urls, "protected-resource metadata (RFC 9728)");
  if (!prm) co_return fail(prm.error() + "; the server may not support OAuth: ask its operator for a token instead");
  auto resource = oauth::check_resource_metadata(*prm, l->url);
  if (!resource) co_return fail(resource.error());
  l->resource = *resource;
  const std::string& issuer = l->resource.authorization_servers.front();
  auto as_urls = oauth::authorization_server_metadata_urls(issuer);
  if (!as_urls) co_return fail(as_urls.error());
  auto as = co_await first_json(impl->http, *as_urls, "authorization server metadata");
  if (!as) co_return fail(as.error());
  auto server = oauth::check_auth_server_metadata(*as, issuer);
  if (!server) co_return fail(server.error());
  l->server = *server;
  // The scopes: the definition's, else as the challenge and metadata say; a step-up keeps what
  // the last login was given.
  std::set<std::string> scopes(l->def.oauth.scopes.begin(), l->def.oauth.scopes.end());
  if (scopes.empty()) scopes = split_scopes(oauth::choose_scope(challenge, l->resource, l->server));
  if (challenge && challenge->error == "insufficient_scope") {
    for (auto& s : split_scopes(challenge->scope)) scopes.insert(s);
    for (auto& s : split_scopes(l->grant->kept.scope)) scopes.insert(s);
  }
  l->scope = join_scopes(scopes);
  if (auto c = co_await choose_client(*l, *impl); !c) co_return fail(c.error());
  auto pkce = oauth::make_pkce();
  auto state = oauth::make_state();
  if (!pkce || !state) co_return fail(!pkce ? pkce.error() : state.error());
  l->pkce = *pkce;
  l->state = *state;
  auto url = oauth::authorization_url(
      l->server, {l->client.client_id, l->redirect_uri, l->pkce.challenge, l->state, l->scope, l->resource.resource});
  if (!url) co_return fail(url.error());
  l->deadline.expires_after(l->settings.wait);
  l->deadline.async_wait([w = std::weak_ptr<OAuthLogin>(l)](boost::system::error_code ec) {
    auto self = w.lock();
    if (ec || !self || self->redeeming) return;
    self->end(fmt::format("no login came back within {}; run `oppx mcp login {}` again",
                          duration_text(self->settings.wait), self->connector));
  });
  log::info("oauth: {} waits for a login at {} (scope \"{}\")", l->connector, l->server.issuer, l->scope);
  started(proto::McpLoginStart{l->id, *url, l->redirect_uri, l->server.issuer, l->scope,
                               std::chrono::duration_cast<std::chrono::seconds>(l->settings.wait).count()});
}

asio::awaitable<void> redeem(std::shared_ptr<OAuthLogin> l, std::shared_ptr<OAuth::Impl> impl, std::string code) {
  auto form =
      oauth::authorization_code_request(l->client, code, l->redirect_uri, l->pkce.verifier, l->resource.resource);
  http::Request req;
  req.method = "POST";
  req.url = l->server.token_endpoint;
  req.headers.push_back({"Content-Type", "application/x-www-form-urlencoded", "*"});
  req.headers.push_back({"Accept", "application/json", "*"});
  if (!form.authorization.empty()) req.headers.push_back({"Authorization", form.authorization, {}});
  req.body = std::move(form.body);
  req.repeatable = false;  // a code is good for one use
  auto got = co_await oauth_fetch(impl->http, std::move(req));
  if (!got)
    co_return l->end(fmt::format("redeeming the login at {} failed: {}", l->server.issuer, got.error().message));
  auto t = oauth::parse_token_response(got->body, SysClock::now(), l->connector);
  if (!t) co_return l->end(t.error());
  OAuthStore::Token kept;
  kept.access_token = t->access_token;
  kept.refresh_token = t->refresh_token;
  kept.scope = t->scope.empty() ? l->scope : t->scope;
  kept.expires_at = t->expires_at;
  kept.lifetime = t->expires_in;
  kept.server_url = l->url;
  kept.token_endpoint = l->server.token_endpoint;
  l->grant->challenge.clear();
  // The login ends once its token is on disk (a daemon stopped right after keeps it), and its
  // connector starts first, so that who waits for the login sees it start (and settle).
  l->grant->take(l->server.issuer, l->resource.resource, std::move(kept), l->client,
                 [l, weak = std::weak_ptr<OAuth::Impl>(impl)](boost::system::result<void, std::string> r) {
                   if (!r) log::warn("oauth: the login of {} works but could not be kept: {}", l->connector, r.error());
                   log::info("oauth: {} is logged in at {}", l->connector, l->server.issuer);
                   if (auto impl = weak.lock(); impl && impl->logged_in) impl->logged_in(l->connector);
                   l->end("");
                 });
}

}  // namespace

void end_login(OAuthLogin& l, std::string why) { l.end(std::move(why)); }

// The redirect's query, from the listener or pasted: checked, then its code redeemed.
CallbackListener::Page take_redirect(std::shared_ptr<OAuthLogin> l, std::string_view query) {
  if (l->ended || l->redeeming) return {true, "This login has ended", "Run `oppx mcp login` again if you need to."};
  auto code = oauth::check_redirect(query, {l->state, l->server.issuer, l->server.iss_parameter_supported});
  if (!code) {
    // A wrong state or issuer ends it too: nothing that came back can be trusted to be this login's.
    l->end(code.error());
    return {true, "The login failed", code.error()};
  }
  auto impl = l->grant->owner.lock();
  if (!impl) return {true, "The login failed", "oppxd is stopping."};
  l->redeeming = true;
  asio::co_spawn(impl->io, redeem(l, impl, *code), asio::detached);
  return {true, "Logged in", fmt::format("oppx has the login for {}. You can close this tab.", l->connector)};
}

void OAuth::login(const ConnectorDef& def, const std::string& url, const EnvMap& env, Settings settings,
                  Started started) {
  auto id = oauth::make_state();
  if (!id) return started({boost::system::in_place_error, id.error()});
  auto l = std::make_shared<OAuthLogin>(impl_->io);
  l->id = id->substr(0, 16);
  l->connector = def.name;
  l->url = url;
  l->def = def;
  l->env = env;
  l->settings = std::move(settings);
  l->grant = impl_->grant(url);
  l->grant->connector = def.name;
  // A new login of the same connector replaces one still waiting.
  for (auto& [other_id, other] : impl_->logins) {
    if (other->url == url && !other->ended) other->end("a newer login of the same connector replaced it");
  }
  std::erase_if(impl_->logins, [](auto& kv) { return kv.second->ended && kv.second->waiters.empty(); });
  impl_->logins[l->id] = l;
  asio::co_spawn(impl_->io, run_login(l, impl_, std::move(started)), asio::detached);
}

bool OAuth::wait(const std::string& id, Ended done) {
  auto it = impl_->logins.find(id);
  if (it == impl_->logins.end()) return false;
  auto& l = it->second;
  if (!l->ended) {
    l->waiters.push_back(std::move(done));
  } else if (l->failure.empty()) {
    done({});
  } else {
    done(l->failure);
  }
  return true;
}

boost::system::result<void, std::string> OAuth::redirect(const std::string& id, const std::string& url) {
  auto it = impl_->logins.find(id);
  if (it == impl_->logins.end()) return std::string("there is no such login; start it again with `oppx mcp login`");
  auto& l = it->second;
  if (l->ended) return std::string("this login has ended already");
  auto q = url.find('?');
  if (q == std::string::npos) {
    return std::string(
        "that is not the address the browser was sent to: paste the whole address, from http://127.0.0.1 to its "
        "end (it holds ?code=…&state=…)");
  }
  auto page = take_redirect(l, std::string_view(url).substr(q + 1, url.find('#') - q - 1));
  if (!page.done) return page.text;
  if (l->ended && !l->failure.empty()) return l->failure;
  return {};
}

}  // namespace oppx::daemon
