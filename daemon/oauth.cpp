// OAuth's grants: one per connector URL, its token read from the store, sent by the transport,
// refreshed once for everyone (before it expires, and on a 401 while the others wait), and
// forgotten when the authorization server refuses the refresh. The logins are in oauth_login.cpp.
#include "daemon/oauth_parts.h"

#include "common/log.h"
#include "common/text.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <fmt/format.h>

// As in http_transport.cpp: GCC 12's false positive on Asio's coroutine frames.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace oppx::daemon {

namespace asio = boost::asio;
using SysClock = std::chrono::system_clock;

namespace {

std::string auth_method_name(oauth::ClientAuth a) {
  switch (a) {
    case oauth::ClientAuth::client_secret_post:
      return "client_secret_post";
    case oauth::ClientAuth::client_secret_basic:
      return "client_secret_basic";
    case oauth::ClientAuth::none:
      break;
  }
  return "none";
}

oauth::ClientAuth auth_method_of(std::string_view name) {
  if (name == "client_secret_post") return oauth::ClientAuth::client_secret_post;
  if (name == "client_secret_basic") return oauth::ClientAuth::client_secret_basic;
  return oauth::ClientAuth::none;
}

asio::awaitable<void> run_refresh(std::shared_ptr<OAuthGrant> g, std::shared_ptr<OAuth::Impl> impl) {
  auto form = oauth::refresh_token_request(g->client, g->kept.refresh_token, g->resource, "");
  http::Request req;
  req.method = "POST";
  req.url = g->kept.token_endpoint;
  req.headers.push_back({"Content-Type", "application/x-www-form-urlencoded", "*"});
  req.headers.push_back({"Accept", "application/json", "*"});
  if (!form.authorization.empty()) req.headers.push_back({"Authorization", form.authorization, {}});
  req.body = std::move(form.body);
  req.repeatable = false;  // a refresh token may be good for one use only
  auto answer = co_await oauth_fetch(impl->http, std::move(req));
  if (!answer) {
    // Out of reach for now: the login is kept, and the next 401 (or the next start) tries again.
    co_return g->refreshed(false, fmt::format("its token could not be refreshed ({}); the login is kept: run `oppx "
                                              "mcp reconnect {}` once the authorization server can be reached",
                                              answer.error().message, g->connector));
  }
  auto t = oauth::parse_token_response(answer->body, SysClock::now(), g->connector);
  if (!t) {
    log::warn("oauth: the refresh of {}'s token was refused; the login is forgotten", g->connector);
    impl->store.forget(g->resource, [](auto) {});
    g->kept = {};
    co_return g->refreshed(false, t.error());
  }
  OAuthStore::Token next = g->kept;
  next.access_token = t->access_token;
  if (!t->refresh_token.empty()) next.refresh_token = t->refresh_token;  // else the old one stays good
  if (!t->scope.empty()) next.scope = t->scope;
  next.expires_at = t->expires_at;
  next.lifetime = t->expires_in;
  g->take(g->issuer, g->resource, std::move(next), g->client);
  log::info("oauth: {}'s token was refreshed", g->connector);
  g->refreshed(true, "");
}

}  // namespace

http::awaitable<http::Outcome<http::Response>> oauth_fetch(http::Client& client, http::Request req, std::size_t cap) {
  req.timeouts.connect = std::chrono::seconds(10);
  req.timeouts.headers = std::chrono::seconds(15);
  req.timeouts.total = std::chrono::seconds(30);
  auto ex = co_await client.open(std::move(req));
  if (!ex) co_return ex.error();
  auto body = co_await ex->read_body(cap);
  if (!body) {
    ex->abort();
    co_return body.error();
  }
  http::Response out = ex->head();
  out.body = std::move(*body);
  ex->release();
  co_return out;
}

boost::system::result<std::optional<oauth::ClientCredentials>, std::string> configured_client(const ConnectorDef& def,
                                                                                              const EnvMap& env) {
  if (def.oauth.client_id.empty()) return std::optional<oauth::ClientCredentials>();
  oauth::ClientCredentials c;
  for (auto [from, to] :
       {std::pair{&def.oauth.client_id, &c.client_id}, {&def.oauth.client_secret, &c.client_secret}}) {
    auto x = expand(*from, env);
    if (!x)
      return {boost::system::in_place_error,
              fmt::format("\"oauth\" of {}: {}; set it and log in again", def.name, x.error().describe())};
    *to = std::move(*x);
  }
  return std::optional<oauth::ClientCredentials>(std::move(c));
}

// ---- OAuthGrant

OAuthGrant::~OAuthGrant() { log::hide(this, {}); }

std::string OAuthGrant::login_command() const { return fmt::format("`oppx mcp login {}`", connector); }

void OAuthGrant::take(std::string iss, std::string res, OAuthStore::Token token, oauth::ClientCredentials c,
                      StateFile::Saved saved) {
  issuer = std::move(iss);
  resource = std::move(res);
  kept = std::move(token);
  client = std::move(c);
  kept.client_id = client.client_id;
  kept.auth_method = auth_method_name(client.auth);
  log::hide(this, {kept.access_token, kept.refresh_token, client.client_secret});
  plan_refresh();
  if (!saved) saved = [](auto) {};
  auto impl = owner.lock();
  if (!impl || kept.access_token.empty()) return saved({});
  impl->store.put_token(issuer, resource, kept, std::move(saved));
}

void OAuthGrant::plan_refresh() {
  timer.cancel();
  if (kept.access_token.empty() || kept.refresh_token.empty() || !kept.expires_at) return;
  // From the margin before it expires (oauth::should_refresh), checked when the timer fires.
  auto life = kept.lifetime.value_or(std::chrono::seconds(600));
  auto margin = std::min<SysClock::duration>(std::chrono::seconds(60), life / 10);
  auto wait = *kept.expires_at - margin - SysClock::now();
  timer.expires_after(std::max<std::chrono::steady_clock::duration>(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait), std::chrono::seconds(0)));
  timer.async_wait([w = weak_from_this()](boost::system::error_code ec) {
    auto self = w.lock();
    if (ec || !self || self->refreshing) return;
    self->refresh();
  });
}

void OAuthGrant::refresh() {
  auto impl = owner.lock();
  if (!impl) return refreshed(false, "oppxd is stopping");
  refreshing = true;
  asio::co_spawn(impl->io, run_refresh(shared_from_this(), impl), asio::detached);
}

void OAuthGrant::refreshed(bool ok, std::string why) {
  refreshing = false;
  auto now = std::move(waiting);
  waiting.clear();
  for (auto& w : now) w(ok, why);
}

void OAuthGrant::refused(Refusal r, std::function<void(bool again, std::string why)> done) {
  if (!r.challenge.empty()) challenge = r.challenge;
  auto c = oauth::parse_bearer_challenge(r.challenge);
  if (r.status == 403 && c && c->error == "insufficient_scope") {
    return done(false,
                fmt::format("it needs a wider permission{} than the login gave; run {} to grant it",
                            c->scope.empty() ? "" : " (scope \"" + escape_controls(c->scope) + "\")", login_command()));
  }
  // Another request's refresh already gave a new token: this one tries it.
  if (!r.sent.empty() && !kept.access_token.empty() && r.sent != kept.access_token) return done(true, "");
  if (refreshing) return waiting.push_back(std::move(done));
  if (r.status == 401 && !r.sent.empty() && !kept.refresh_token.empty() && !kept.token_endpoint.empty()) {
    waiting.push_back(std::move(done));
    return refresh();
  }
  if (r.status == 401 && !r.sent.empty()) {
    // Expired or revoked, and no refresh token to get another: only a login helps.
    if (auto impl = owner.lock()) impl->store.forget(resource, [](auto) {});
    kept = {};
    timer.cancel();
    return done(false, fmt::format("its login has expired; run {} to log in again", login_command()));
  }
  done(false, fmt::format("it needs a login; run {} (in the chat: /mcp auth {})", login_command(), connector));
}

// ---- OAuth

std::shared_ptr<OAuthGrant> OAuth::Impl::grant(const std::string& url) {
  auto& g = grants[url];
  if (g) return g;
  g = std::make_shared<OAuthGrant>(io, weak_from_this(), url);
  if (auto kept = store.token_for_server(url)) {
    g->issuer = kept->issuer;
    g->resource = kept->resource;
    g->kept = std::move(kept->token);
    g->client.client_id = g->kept.client_id;
    g->client.auth = auth_method_of(g->kept.auth_method);
    if (auto registered = store.client(g->issuer); registered && registered->client_id == g->client.client_id)
      g->client.client_secret = registered->client_secret;
    log::hide(g.get(), {g->kept.access_token, g->kept.refresh_token, g->client.client_secret});
    g->plan_refresh();
  }
  return g;
}

OAuth::OAuth(asio::io_context& io, const std::string& state_dir, Worker* worker)
    : impl_(std::make_shared<Impl>(io, state_dir, worker)) {}

OAuth::~OAuth() { stop(); }

void OAuth::stop() {
  auto logins = impl_->logins;
  for (auto& [id, l] : logins) end_login(*l, "oppxd is stopping");
  for (auto& [url, g] : impl_->grants) {
    g->timer.cancel();
    if (g->refreshing) g->refreshed(false, "oppxd is stopping");
  }
  impl_->http.close_all();
}

void OAuth::on_logged_in(std::function<void(const std::string&)> fn) { impl_->logged_in = std::move(fn); }

std::shared_ptr<HttpAuth> OAuth::auth_for(const ConnectorDef& def, const std::string& url, const EnvMap& env) {
  auto g = impl_->grant(url);
  g->connector = def.name;
  // A client named in the definition: its secret as this start's environment gives it.
  if (auto mine = configured_client(def, env); mine && *mine && (*mine)->client_id == g->client.client_id) {
    g->client.client_secret = (*mine)->client_secret;
    log::hide(g.get(), {g->kept.access_token, g->kept.refresh_token, g->client.client_secret});
  }
  return g;
}

int OAuth::logout(const std::string& url, StateFile::Saved done) {
  auto g = impl_->grant(url);
  int gone = 0;
  if (g->resource.empty())
    done({});
  else
    gone = impl_->store.forget(g->resource, std::move(done));
  g->kept = {};
  g->timer.cancel();
  return gone;
}

proto::LoginState OAuth::state_of(const std::string& url) {
  auto it = impl_->grants.find(url);
  std::shared_ptr<OAuthGrant> g = it != impl_->grants.end() ? it->second : impl_->grant(url);
  proto::LoginState s;
  s.logged_in = !g->kept.access_token.empty();
  if (!s.logged_in) return s;
  s.issuer = g->issuer;
  if (g->kept.expires_at)
    s.expires_at = std::chrono::duration_cast<std::chrono::seconds>(g->kept.expires_at->time_since_epoch()).count();
  s.refreshes = !g->kept.refresh_token.empty();
  s.scope = g->kept.scope;
  return s;
}

std::string OAuth::problem() const { return impl_->store.problem(); }

}  // namespace oppx::daemon
