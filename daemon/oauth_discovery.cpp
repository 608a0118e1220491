// The pure parts of an OAuth login (see the header): a hand-written reader of RFC 7235 challenges
// (it only moves forward through the string_view and never throws), Boost.URL for the URLs,
// OpenSSL for the random bytes and SHA-256.
#include "daemon/oauth_discovery.h"

#include "common/http.h"

#include <boost/json.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/parse_query.hpp>
#include <boost/url/params_view.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <boost/url/url.hpp>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace oppx::daemon::oauth {

namespace json = boost::json;
namespace urls = boost::urls;
using boost::system::in_place_error;

namespace {

// ---- WWW-Authenticate (RFC 7235 §2.1, RFC 9110 §11.2) ----

using http::is_tchar;

using http::iequals;

// A cursor over the header; every read checks the end first.
struct Reader {
  std::string_view s;
  std::size_t pos = 0;

  bool done() const { return pos >= s.size(); }
  char peek() const { return done() ? '\0' : s[pos]; }
  void skip_spaces() {
    while (!done() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
  }
  std::string_view token() {
    std::size_t start = pos;
    while (!done() && is_tchar(s[pos])) ++pos;
    return s.substr(start, pos - start);
  }
  // After the opening quote; an unterminated string ends with the header (taken as written,
  // less a backslash that escapes nothing).
  std::string quoted() {
    std::string out;
    ++pos;
    while (!done() && s[pos] != '"') {
      if (s[pos] == '\\' && ++pos == s.size()) break;
      out += s[pos++];
    }
    if (!done()) ++pos;
    return out;
  }
};

void set_param(BearerChallenge& c, std::string_view name, std::string value) {
  // RFC 6750 §3: each attribute at most once; the first one counts.
  auto set = [&](std::string& field) {
    if (field.empty()) field = std::move(value);
  };
  if (iequals(name, "resource_metadata"))
    set(c.resource_metadata);
  else if (iequals(name, "scope"))
    set(c.scope);
  else if (iequals(name, "error"))
    set(c.error);
  else if (iequals(name, "error_description"))
    set(c.error_description);
}

// ---- URLs ----

boost::system::result<urls::url_view, std::string> parse_http_url(std::string_view text, std::string_view what) {
  auto u = urls::parse_uri(text);
  if (!u || (!iequals(u->scheme(), "https") && !iequals(u->scheme(), "http")) || u->encoded_host().empty())
    return {in_place_error, fmt::format("{} \"{}\" is not an http(s) URL with a host", what, text)};
  return *u;
}

// scheme://host[:port] of a URL, without its user information.
std::string origin_of(const urls::url_view& u) {
  return fmt::format("{}://{}", u.scheme(), std::string_view(u.encoded_host_and_port()));
}

// RFC 8414 §3.1 / RFC 9728 §3.1: the well-known suffix goes between the host and the path.
std::string well_known(const urls::url_view& u, std::string_view suffix, std::string_view path) {
  return origin_of(u) + "/.well-known/" + std::string(suffix) + std::string(path);
}

std::string strip_trailing_slash(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  return std::string(path);
}

std::string base64url(const unsigned char* data, std::size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    bits = (bits << 8) | data[i];
    count += 8;
    while (count >= 6) {
      count -= 6;
      out += kAlphabet[(bits >> count) & 63];
    }
  }
  if (count > 0) out += kAlphabet[(bits << (6 - count)) & 63];
  return out;
}

boost::system::result<std::string, std::string> random_base64url(std::size_t bytes) {
  std::array<unsigned char, 64> buf{};
  bytes = std::min(bytes, buf.size());
  if (RAND_bytes(buf.data(), static_cast<int>(bytes)) != 1)
    return {in_place_error,
            "the system's random number generator failed (OpenSSL RAND_bytes), so no login can "
            "start; check that /dev/urandom is readable and try again"};
  return {boost::system::in_place_value, base64url(buf.data(), bytes)};
}

// ---- JSON fields ----

std::string string_field(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::vector<std::string> strings_field(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  auto* v = o.if_contains(key);
  if (!v || !v->is_array()) return out;
  for (auto& e : v->get_array())
    if (e.is_string()) out.emplace_back(e.get_string());
  return out;
}

bool bool_field(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_bool() && v->get_bool();
}

bool contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// A URL as RFC 3986 §6.2.2-.3 compares it: scheme and host in lower case, the scheme's default
// port dropped, no fragment, no trailing slash on the path.
struct Canonical {
  std::string origin;
  std::string path;
  std::string query;
};
std::optional<Canonical> canonical(std::string_view text) {
  auto u = urls::parse_uri(text);
  if (!u) return std::nullopt;
  Canonical c;
  auto lower = [](char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; };
  std::string scheme(u->scheme());
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), lower);
  std::string host(u->encoded_host());
  std::transform(host.begin(), host.end(), host.begin(), lower);
  std::string port(u->port());
  if ((scheme == "https" && port == "443") || (scheme == "http" && port == "80")) port.clear();
  c.origin = scheme + "://" + host + (port.empty() ? "" : ":" + port);
  c.path = strip_trailing_slash(u->encoded_path());
  c.query = std::string(u->encoded_query());
  return c;
}

// RFC 9728 §3.3 wants the resource identical to the URL the metadata was found for; the root
// well-known URL (tried second) names the whole origin, or a prefix of the connector's path, so a
// resource that is the connector's URL or a path-segment prefix of it, on the same origin, is
// the one the connector belongs to.
bool resource_covers(const Canonical& resource, const Canonical& server) {
  if (resource.origin != server.origin) return false;
  if (resource.path == server.path) return resource.query.empty() || resource.query == server.query;
  if (!resource.query.empty()) return false;
  return server.path.starts_with(resource.path) && server.path[resource.path.size()] == '/';
}

std::string query_param(std::string_view name, std::string_view value) {
  return fmt::format("{}={}", name, urls::encode(value, urls::unreserved_chars));
}

// One key or value of an application/x-www-form-urlencoded query (RFC 6749 appendix B): '+' is
// a space, %XX a byte; nullopt when an escape is broken or the text holds a byte a URL cannot.
std::optional<std::string> form_decode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%') {
      int hi = i + 1 < s.size() ? hex(s[i + 1]) : -1, lo = i + 2 < s.size() ? hex(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '#' || c == '"') {
      return std::nullopt;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::optional<BearerChallenge> parse_bearer_challenge(std::string_view header) {
  Reader r{header};
  std::optional<BearerChallenge> found;
  bool in_bearer = false;
  while (!r.done()) {
    r.skip_spaces();
    if (r.peek() == ',') {
      ++r.pos;
      continue;
    }
    std::string_view name = r.token();
    if (name.empty()) {
      if (!r.done()) ++r.pos;  // not a token: skip the character, read on
      continue;
    }
    r.skip_spaces();
    if (r.peek() != '=') {
      // A token not followed by '=' starts a new challenge: its scheme. Only the first Bearer
      // counts (a second one would be a broken server's).
      if (found && in_bearer) return found;
      in_bearer = iequals(name, "bearer") && !found;
      if (in_bearer) found.emplace();
      continue;
    }
    ++r.pos;
    r.skip_spaces();
    std::string value;
    if (r.peek() == '"') {
      value = r.quoted();
    } else {
      std::string_view t = r.token();
      if (t.empty()) {
        // token68 ("abc==") after a scheme: its trailing '='s; nothing we read.
        while (r.peek() == '=') ++r.pos;
        continue;
      }
      value = std::string(t);
    }
    if (in_bearer) set_param(*found, name, std::move(value));
  }
  return found;
}

boost::system::result<std::vector<std::string>, std::string> resource_metadata_urls(
    std::string_view server_url, const std::optional<BearerChallenge>& challenge) {
  auto server = parse_http_url(server_url, "The connector's URL");
  if (!server) return {in_place_error, server.error()};
  // MCP, Protected Resource Metadata Discovery: the challenge's URL when present. One that is not
  // an http(s) URL is a server's mistake; the well-known URLs may still answer.
  if (challenge && !challenge->resource_metadata.empty() &&
      parse_http_url(challenge->resource_metadata, "resource_metadata"))
    return std::vector<std::string>{challenge->resource_metadata};
  std::string path(server->encoded_path());
  if (path == "/") path.clear();
  // RFC 9728 §3.1: the well-known suffix goes before the path and/or query.
  if (server->has_query()) path += "?" + std::string(server->encoded_query());
  std::vector<std::string> out;
  if (!path.empty()) out.push_back(well_known(*server, "oauth-protected-resource", path));
  out.push_back(well_known(*server, "oauth-protected-resource", ""));
  return out;
}

boost::system::result<std::vector<std::string>, std::string> authorization_server_metadata_urls(
    std::string_view issuer) {
  auto u = parse_http_url(issuer, "The authorization server's issuer");
  if (!u) return {in_place_error, u.error()};
  std::string path = strip_trailing_slash(u->encoded_path());
  if (path.empty())
    return std::vector<std::string>{well_known(*u, "oauth-authorization-server", ""),
                                    well_known(*u, "openid-configuration", "")};
  // MCP, Authorization Server Metadata Discovery: RFC 8414 with path insertion, then OpenID
  // Connect with path insertion, then OpenID Connect with the path appended.
  return std::vector<std::string>{well_known(*u, "oauth-authorization-server", path),
                                  well_known(*u, "openid-configuration", path),
                                  origin_of(*u) + path + "/.well-known/openid-configuration"};
}

boost::system::result<ResourceMetadata, std::string> check_resource_metadata(const json::value& metadata,
                                                                             std::string_view server_url) {
  if (!metadata.is_object())
    return {in_place_error, fmt::format("The protected-resource metadata of {} is not a JSON object; the server "
                                        "cannot be logged in to until its operator fixes it",
                                        server_url)};
  const auto& o = metadata.get_object();
  ResourceMetadata m;
  m.resource = string_field(o, "resource");
  m.authorization_servers = strings_field(o, "authorization_servers");
  m.scopes_supported = strings_field(o, "scopes_supported");
  auto resource = canonical(m.resource);
  auto server = canonical(server_url);
  if (m.resource.empty() || !resource || !server || !resource_covers(*resource, *server))
    return {in_place_error, fmt::format("The protected-resource metadata names the resource \"{}\", which is not "
                                        "{} (RFC 9728 §3.3: a token for another resource must not be asked for "
                                        "or sent); check the connector's URL, or ask the server's operator",
                                        m.resource, server_url)};
  if (m.authorization_servers.empty())
    return {in_place_error, fmt::format("The protected-resource metadata of {} names no authorization server, so "
                                        "oppx cannot tell where to log in; ask the server's operator",
                                        server_url)};
  return m;
}

boost::system::result<AuthServerMetadata, std::string> check_auth_server_metadata(const json::value& metadata,
                                                                                  std::string_view issuer) {
  if (!metadata.is_object())
    return {in_place_error, fmt::format("The metadata of the authorization server {} is not a JSON object", issuer)};
  const auto& o = metadata.get_object();
  AuthServerMetadata m;
  m.issuer = string_field(o, "issuer");
  // RFC 8414 §3.3: identical, or an attacker's metadata could stand in for the server's.
  if (m.issuer != issuer)
    return {in_place_error, fmt::format("The authorization server's metadata names the issuer \"{}\", not \"{}\" "
                                        "it was fetched for (RFC 8414 §3.3), so oppx does not trust it; ask the "
                                        "server's operator to fix its metadata",
                                        m.issuer, issuer)};
  m.authorization_endpoint = string_field(o, "authorization_endpoint");
  m.token_endpoint = string_field(o, "token_endpoint");
  for (auto [field, value] :
       {std::pair{"authorization_endpoint", &m.authorization_endpoint}, std::pair{"token_endpoint", &m.token_endpoint}})
    if (!parse_http_url(*value, field))
      return {in_place_error, fmt::format("The authorization server {} gives no usable {} (\"{}\"); ask the "
                                          "server's operator",
                                          issuer, field, *value)};
  // MCP, Authorization Code Protection: no S256 advertised means no login, even when the list is
  // missing altogether.
  if (!contains(strings_field(o, "code_challenge_methods_supported"), "S256"))
    return {in_place_error, fmt::format("The authorization server {} does not list S256 in "
                                        "code_challenge_methods_supported, so it cannot protect the login with "
                                        "PKCE as MCP requires; oppx refuses to log in to it. Ask the server's "
                                        "operator to enable PKCE with S256",
                                        issuer)};
  m.registration_endpoint = string_field(o, "registration_endpoint");
  m.scopes_supported = strings_field(o, "scopes_supported");
  m.token_endpoint_auth_methods_supported = strings_field(o, "token_endpoint_auth_methods_supported");
  m.iss_parameter_supported = bool_field(o, "authorization_response_iss_parameter_supported");
  m.client_id_metadata_document_supported = bool_field(o, "client_id_metadata_document_supported");
  return m;
}

std::string s256_challenge(std::string_view verifier) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(verifier.data(), verifier.size(), md, &len, EVP_sha256(), nullptr);
  return base64url(md, len);
}

boost::system::result<Pkce, std::string> make_pkce() {
  // RFC 7636 §4.1: 32 octets, base64url-encoded, give the recommended 43 characters.
  auto verifier = random_base64url(32);
  if (!verifier) return {in_place_error, verifier.error()};
  return Pkce{*verifier, s256_challenge(*verifier)};
}

boost::system::result<std::string, std::string> make_state() { return random_base64url(32); }

std::string choose_scope(const std::optional<BearerChallenge>& challenge, const ResourceMetadata& resource,
                         const AuthServerMetadata& server) {
  std::string scope;
  if (challenge && !challenge->scope.empty()) {
    scope = challenge->scope;
  } else {
    for (auto& s : resource.scopes_supported) scope += (scope.empty() ? "" : " ") + s;
  }
  bool has_offline = false;
  std::string_view rest = scope;
  while (!rest.empty()) {
    auto end = rest.find(' ');
    if (rest.substr(0, end) == "offline_access") has_offline = true;
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  if (!has_offline && contains(server.scopes_supported, "offline_access"))
    scope += (scope.empty() ? "" : " ") + std::string("offline_access");
  return scope;
}

boost::system::result<std::string, std::string> authorization_url(const AuthServerMetadata& server,
                                                                  const AuthorizationRequest& request) {
  auto endpoint = parse_http_url(server.authorization_endpoint, "The authorization endpoint");
  if (!endpoint) return {in_place_error, endpoint.error()};
  urls::url u(*endpoint);
  u.remove_fragment();
  // RFC 6749 §3.1: the endpoint's own query is kept.
  std::string query(u.encoded_query());
  auto add = [&](std::string_view name, std::string_view value) {
    query += (query.empty() ? "" : "&") + query_param(name, value);
  };
  add("response_type", "code");
  add("client_id", request.client_id);
  add("redirect_uri", request.redirect_uri);
  add("code_challenge", request.code_challenge);
  add("code_challenge_method", "S256");
  add("state", request.state);
  if (!request.scope.empty()) add("scope", request.scope);
  add("resource", request.resource);
  u.set_encoded_query(query);
  return {boost::system::in_place_value, std::string(u.buffer())};
}

boost::system::result<std::string, std::string> check_redirect(std::string_view query,
                                                               const RedirectExpectation& expected) {
  if (!query.empty() && query.front() == '?') query.remove_prefix(1);
  // Split and decoded here rather than with Boost.URL's params_view, whose decoding constructor
  // the shared libboost_url of Boost 1.81 does not export.
  std::optional<std::string> code, state, iss, error, description;
  for (std::string_view rest = query; !rest.empty();) {
    std::string_view pair = rest.substr(0, rest.find('&'));
    rest.remove_prefix(std::min(rest.size(), pair.size() + 1));
    if (pair.empty()) continue;
    std::size_t eq = pair.find('=');
    auto key = form_decode(pair.substr(0, eq));
    auto value = form_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!key || !value)
      return {in_place_error,
              "The address the login came back to is not a valid URL query; start the login again "
              "and paste the whole address the browser shows"};
    auto take = [&](std::optional<std::string>& field) {
      if (!field) field = std::move(*value);
    };
    if (*key == "code")
      take(code);
    else if (*key == "state")
      take(state);
    else if (*key == "iss")
      take(iss);
    else if (*key == "error")
      take(error);
    else if (*key == "error_description")
      take(description);
  }
  // The state first: a redirect that is not this login's answers nothing about it.
  if (!state || *state != expected.state)
    return {in_place_error,
            "The login's answer does not carry the state oppx sent (an old or forged redirect); "
            "start the login again and finish it in the browser window it opens"};
  // RFC 9207 §2.4: compared whenever present, in errors too; required when advertised.
  if (iss && *iss != expected.issuer)
    return {in_place_error, fmt::format("The login's answer comes from the issuer \"{}\", not \"{}\" where oppx "
                                        "sent it (a mix-up attack, RFC 9207); the code was not used. Start the "
                                        "login again",
                                        *iss, expected.issuer)};
  if (!iss && expected.iss_required)
    return {in_place_error, fmt::format("The login's answer has no iss, though {} says it always sends one "
                                        "(RFC 9207); the code was not used. Start the login again",
                                        expected.issuer)};
  if (error)
    return {in_place_error, fmt::format("The authorization server refused the login: {}{}{}", *error,
                                        description && !description->empty() ? ": " : "", description.value_or(""))};
  if (!code || code->empty())
    return {in_place_error, "The login's answer holds no authorization code; start the login again"};
  return {boost::system::in_place_value, *code};
}

}  // namespace oppx::daemon::oauth
