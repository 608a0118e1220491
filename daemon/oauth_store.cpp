// OAuthStore: two StateFiles. Tokens are keyed by the authorization server and the resource
// together, as one string of both, so that no lookup can hand a token to another resource.
#include "daemon/oauth_store.h"

#include <boost/json.hpp>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

std::string token_key(const std::string& issuer, const std::string& resource) {
  return json::serialize(json::array{json::string(issuer), json::string(resource)});
}

std::string text_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::optional<OAuthStore::Token> token_of(const json::object& o) {
  OAuthStore::Token out;
  out.access_token = text_of(o, "access_token");
  if (out.access_token.empty()) return std::nullopt;
  out.refresh_token = text_of(o, "refresh_token");
  out.scope = text_of(o, "scope");
  if (const json::value* at = o.if_contains("expires_at"); at && at->is_int64())
    out.expires_at = OAuthStore::Clock::time_point(std::chrono::seconds(at->get_int64()));
  if (const json::value* life = o.if_contains("lifetime"); life && life->is_int64())
    out.lifetime = std::chrono::seconds(life->get_int64());
  out.server_url = text_of(o, "server_url");
  out.token_endpoint = text_of(o, "token_endpoint");
  out.client_id = text_of(o, "client_id");
  out.auth_method = text_of(o, "auth_method");
  return out;
}

}  // namespace

OAuthStore::OAuthStore(const std::string& state_dir, Worker* worker)
    : clients_(state_dir + "/oauth-clients.json", "the OAuth client store",
               "oppx registers again with each authorization server at the next login.", "clients", worker),
      tokens_(state_dir + "/oauth-tokens.json", "the OAuth token store",
              "every connector that logs in with OAuth needs `oppx mcp login <name>` again.", "tokens", worker) {}

std::optional<OAuthStore::Client> OAuthStore::client(const std::string& issuer) {
  clients_.load();
  const json::object* all = clients_.section(false);
  const json::value* c = all ? all->if_contains(issuer) : nullptr;
  if (!c || !c->is_object()) return std::nullopt;
  Client out{text_of(c->get_object(), "client_id"), text_of(c->get_object(), "client_secret"),
             text_of(c->get_object(), "auth_method"), text_of(c->get_object(), "redirect_uri")};
  if (out.client_id.empty()) return std::nullopt;
  return out;
}

void OAuthStore::put_client(const std::string& issuer, const Client& c, StateFile::Saved done) {
  clients_.load();
  json::object entry{{"client_id", c.client_id}, {"auth_method", c.auth_method.empty() ? "none" : c.auth_method}};
  if (!c.client_secret.empty()) entry["client_secret"] = c.client_secret;
  if (!c.redirect_uri.empty()) entry["redirect_uri"] = c.redirect_uri;
  (*clients_.section(true))[issuer] = std::move(entry);
  clients_.save(std::move(done));
}

std::optional<OAuthStore::Token> OAuthStore::token(const std::string& issuer, const std::string& resource) {
  tokens_.load();
  const json::object* all = tokens_.section(false);
  const json::value* t = all ? all->if_contains(token_key(issuer, resource)) : nullptr;
  if (!t || !t->is_object()) return std::nullopt;
  const json::object& o = t->get_object();
  // Kept with the key too: a hand-edited entry under another key is not taken for this one.
  if (text_of(o, "issuer") != issuer || text_of(o, "resource") != resource) return std::nullopt;
  return token_of(o);
}

std::optional<OAuthStore::Grant> OAuthStore::token_for_server(const std::string& server_url) {
  tokens_.load();
  const json::object* all = tokens_.section(false);
  if (!all) return std::nullopt;
  for (auto& [key, v] : *all) {
    if (!v.is_object() || text_of(v.get_object(), "server_url") != server_url) continue;
    const json::object& o = v.get_object();
    std::string issuer = text_of(o, "issuer"), resource = text_of(o, "resource");
    if (key != token_key(issuer, resource)) continue;
    if (auto t = token_of(o)) return Grant{issuer, resource, std::move(*t)};
  }
  return std::nullopt;
}

void OAuthStore::put_token(const std::string& issuer, const std::string& resource, const Token& t,
                           StateFile::Saved done) {
  tokens_.load();
  json::object entry{{"issuer", issuer}, {"resource", resource}, {"access_token", t.access_token}};
  if (!t.refresh_token.empty()) entry["refresh_token"] = t.refresh_token;
  if (!t.scope.empty()) entry["scope"] = t.scope;
  if (t.expires_at)
    entry["expires_at"] = std::chrono::duration_cast<std::chrono::seconds>(t.expires_at->time_since_epoch()).count();
  if (t.lifetime) entry["lifetime"] = t.lifetime->count();
  for (auto [key, value] : {std::pair<const char*, const std::string*>{"server_url", &t.server_url},
                            {"token_endpoint", &t.token_endpoint},
                            {"client_id", &t.client_id},
                            {"auth_method", &t.auth_method}}) {
    if (!value->empty()) entry[key] = *value;
  }
  (*tokens_.section(true))[token_key(issuer, resource)] = std::move(entry);
  tokens_.save(std::move(done));
}

int OAuthStore::forget(const std::string& resource, StateFile::Saved done) {
  tokens_.load();
  json::object* all = tokens_.section(false);
  int gone = 0;
  if (all) {
    for (auto it = all->begin(); it != all->end();) {
      bool match = it->value().is_object() && text_of(it->value().get_object(), "resource") == resource;
      if (match) {
        it = all->erase(it);
        ++gone;
      } else {
        ++it;
      }
    }
  }
  tokens_.save(std::move(done));
  return gone;
}

std::string OAuthStore::problem() const {
  std::string p = clients_.problem();
  if (!tokens_.problem().empty()) p += (p.empty() ? "" : "; ") + tokens_.problem();
  return p;
}

}  // namespace oppx::daemon
