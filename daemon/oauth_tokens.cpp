// The registration and token exchanges' pure parts (see the header): Boost.JSON for the bodies,
// OpenSSL's base64 for client_secret_basic, and a form encoder of its own.
#include "daemon/oauth_tokens.h"

#include "common/http.h"

#include <boost/json.hpp>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <charconv>

namespace oppx::daemon::oauth {

namespace json = boost::json;
using boost::system::in_place_error;

namespace {

using http::iequals;

// The body as a JSON object, or why not; `what` names the exchange in the message.
boost::system::result<json::object, std::string> parse_object(std::string_view body, std::string_view what) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object())
    return {in_place_error, fmt::format("the {} answer is not a JSON object; the authorization server may be "
                                        "misconfigured or not an OAuth server",
                                        what)};
  return std::move(v.get_object());
}

// A string member: nullopt when absent, an error when of another type.
boost::system::result<std::optional<std::string>, std::string> optional_string(const json::object& o,
                                                                               std::string_view key,
                                                                               std::string_view what) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::optional<std::string>();
  if (!v->is_string()) return {in_place_error, fmt::format("the {} answer's {} is not a string", what, key)};
  return std::optional<std::string>(std::string(v->get_string()));
}

// A non-negative integer member (a JSON number, or a string of digits as some servers send).
boost::system::result<std::optional<std::int64_t>, std::string> optional_count(const json::object& o,
                                                                               std::string_view key,
                                                                               std::string_view what) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::optional<std::int64_t>();
  std::int64_t n = -1;
  if (v->is_int64())
    n = v->get_int64();
  else if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    n = static_cast<std::int64_t>(v->get_uint64());
  else if (v->is_string()) {
    std::string_view s = v->get_string();
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) n = -1;
  }
  if (n < 0) return {in_place_error, fmt::format("the {} answer's {} is not a non-negative whole number", what, key)};
  return std::optional<std::int64_t>(n);
}

// RFC 6749 §5.2 / RFC 7591 §3.2.2: an `error` member, described.
std::optional<std::string> error_of(const json::object& o) {
  auto* e = o.if_contains("error");
  if (!e || !e->is_string()) return std::nullopt;
  std::string out(e->get_string());
  auto* d = o.if_contains("error_description");
  if (d && d->is_string() && !d->get_string().empty()) out += fmt::format(" ({})", std::string_view(d->get_string()));
  return out;
}

void add_param(std::string& body, std::string_view name, std::string_view value) {
  if (!body.empty()) body += '&';
  body += form_encode(name);
  body += '=';
  body += form_encode(value);
}

std::string base64(std::string_view s) {
  std::string out(4 * ((s.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// The client's part of a token request: client_id (and the secret) in the body, or a Basic header.
void authenticate(TokenRequest& request, const ClientCredentials& client) {
  switch (client.auth) {
    case ClientAuth::none:
      add_param(request.body, "client_id", client.client_id);
      break;
    case ClientAuth::client_secret_post:
      add_param(request.body, "client_id", client.client_id);
      add_param(request.body, "client_secret", client.client_secret);
      break;
    case ClientAuth::client_secret_basic:
      request.authorization =
          "Basic " + base64(form_encode(client.client_id) + ":" + form_encode(client.client_secret));
      break;
  }
}

std::optional<ClientAuth> auth_named(std::string_view name) {
  if (name == "none") return ClientAuth::none;
  if (name == "client_secret_post") return ClientAuth::client_secret_post;
  if (name == "client_secret_basic") return ClientAuth::client_secret_basic;
  return std::nullopt;
}

}  // namespace

json::object registration_request(std::string_view redirect_uri, std::string_view scope) {
  json::object o;
  o["client_name"] = "oppx";
  o["redirect_uris"] = json::array{json::string(redirect_uri)};
  o["grant_types"] = json::array{"authorization_code", "refresh_token"};
  o["response_types"] = json::array{"code"};
  o["token_endpoint_auth_method"] = "none";
  o["application_type"] = "native";
  if (!scope.empty()) o["scope"] = scope;
  return o;
}

boost::system::result<ClientRegistration, std::string> parse_registration_response(std::string_view body) {
  static constexpr std::string_view what = "client registration";
  auto o = parse_object(body, what);
  if (!o) return {in_place_error, o.error()};
  if (auto e = error_of(*o))
    return {in_place_error, fmt::format("the authorization server refused to register oppx: {}; configure a "
                                        "client_id for this connector instead",
                                        *e)};
  ClientRegistration r;
  auto id = optional_string(*o, "client_id", what);
  if (!id) return {in_place_error, id.error()};
  if (!*id || (*id)->empty())
    return {in_place_error,
            "the client registration answer has no client_id; the authorization server does not "
            "support dynamic registration: configure a client_id for this connector instead"};
  r.client_id = std::move(**id);
  auto secret = optional_string(*o, "client_secret", what);
  if (!secret) return {in_place_error, secret.error()};
  if (*secret) r.client_secret = std::move(**secret);
  auto expires = optional_count(*o, "client_secret_expires_at", what);
  if (!expires) return {in_place_error, expires.error()};
  r.client_secret_expires_at = *expires;
  auto method = optional_string(*o, "token_endpoint_auth_method", what);
  if (!method) return {in_place_error, method.error()};
  if (*method) r.token_endpoint_auth_method = std::move(**method);
  return r;
}

ClientAuth choose_client_auth(const std::vector<std::string>& supported, std::string_view registered_method,
                              bool has_secret) {
  if (!has_secret) return ClientAuth::none;
  if (auto registered = auth_named(registered_method)) return *registered;
  if (supported.empty()) return ClientAuth::client_secret_basic;
  auto offers = [&](std::string_view m) { return std::find(supported.begin(), supported.end(), m) != supported.end(); };
  if (offers("client_secret_post")) return ClientAuth::client_secret_post;
  if (offers("client_secret_basic")) return ClientAuth::client_secret_basic;
  return ClientAuth::none;
}

std::string form_encode(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~')
      out += c;
    else if (c == ' ')
      out += '+';
    else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 0xF];
    }
  }
  return out;
}

TokenRequest authorization_code_request(const ClientCredentials& client, std::string_view code,
                                        std::string_view redirect_uri, std::string_view code_verifier,
                                        std::string_view resource) {
  TokenRequest r;
  add_param(r.body, "grant_type", "authorization_code");
  add_param(r.body, "code", code);
  add_param(r.body, "redirect_uri", redirect_uri);
  add_param(r.body, "code_verifier", code_verifier);
  authenticate(r, client);
  if (!resource.empty()) add_param(r.body, "resource", resource);
  return r;
}

TokenRequest refresh_token_request(const ClientCredentials& client, std::string_view refresh_token,
                                   std::string_view resource, std::string_view scope) {
  TokenRequest r;
  add_param(r.body, "grant_type", "refresh_token");
  add_param(r.body, "refresh_token", refresh_token);
  authenticate(r, client);
  if (!resource.empty()) add_param(r.body, "resource", resource);
  if (!scope.empty()) add_param(r.body, "scope", scope);
  return r;
}

boost::system::result<TokenResponse, std::string> parse_token_response(std::string_view body,
                                                                       std::chrono::system_clock::time_point now,
                                                                       std::string_view connector) {
  static constexpr std::string_view what = "token endpoint's";
  auto o = parse_object(body, what);
  if (!o) return {in_place_error, o.error()};
  if (auto* e = o->if_contains("error"); e && e->is_string()) {
    std::string described = *error_of(*o);
    std::string_view code = e->get_string();
    if (code == "invalid_grant")
      return {in_place_error, fmt::format("the login to {} is no longer valid ({}): log in again with `oppx mcp "
                                          "login {}`",
                                          connector, described, connector)};
    if (code == "invalid_client" || code == "unauthorized_client")
      return {in_place_error, fmt::format("the authorization server of {} does not accept oppx's client ({}): log "
                                          "in again with `oppx mcp login {}`, or configure a client_id",
                                          connector, described, connector)};
    if (code == "invalid_scope")
      return {in_place_error, fmt::format("the authorization server of {} refused the scope asked for ({}): change "
                                          "the connector's scope and log in again with `oppx mcp login {}`",
                                          connector, described, connector)};
    return {in_place_error,
            fmt::format("the authorization server of {} refused the token request: {}", connector, described)};
  }
  TokenResponse t;
  auto access = optional_string(*o, "access_token", what);
  if (!access) return {in_place_error, access.error()};
  if (!*access || (*access)->empty())
    return {in_place_error, fmt::format("the token endpoint's answer has no access_token; log in again with `oppx "
                                        "mcp login {}`",
                                        connector)};
  t.access_token = std::move(**access);
  auto type = optional_string(*o, "token_type", what);
  if (!type) return {in_place_error, type.error()};
  if (!*type) return {in_place_error, "the token endpoint's answer has no token_type"};
  if (!iequals(**type, "Bearer"))
    return {in_place_error,
            fmt::format("the token endpoint gave a token of type \"{}\"; oppx only uses Bearer tokens", **type)};
  t.token_type = std::move(**type);
  auto expires = optional_count(*o, "expires_in", what);
  if (!expires) return {in_place_error, expires.error()};
  if (*expires) {
    // A lifetime beyond ten years is taken as ten years (and the time point cannot overflow).
    t.expires_in = std::chrono::seconds(std::min<std::int64_t>(**expires, std::int64_t{10} * 365 * 24 * 3600));
    t.expires_at = now + *t.expires_in;
  }
  auto refresh = optional_string(*o, "refresh_token", what);
  if (!refresh) return {in_place_error, refresh.error()};
  if (*refresh) t.refresh_token = std::move(**refresh);
  auto scope = optional_string(*o, "scope", what);
  if (!scope) return {in_place_error, scope.error()};
  if (*scope) t.scope = std::move(**scope);
  return t;
}

bool should_refresh(std::optional<std::chrono::system_clock::time_point> expires_at,
                    std::optional<std::chrono::seconds> lifetime, std::chrono::system_clock::time_point now) {
  if (!expires_at) return false;
  std::chrono::seconds margin(60);
  if (lifetime) margin = std::min(margin, *lifetime / 10);
  return now >= *expires_at - margin;
}

}  // namespace oppx::daemon::oauth
