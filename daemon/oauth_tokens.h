// The pure parts of an OAuth login that come after discovery (issue 27): the dynamic client
// registration oppx asks for (RFC 7591) and its answer, the token endpoint's form bodies
// (RFC 6749 §4.1.3 and §6, with `resource` from RFC 8707) and how the client authenticates there
// (§2.3.1), the token response (§5.1) or its error (§5.2), and when a token is due for refresh.
// No network and no clock of their own: `now` is a parameter.
#pragma once

#include <boost/json/fwd.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::daemon::oauth {

// The body of oppx's registration request (RFC 7591 §2): a native public client with the loopback
// callback, the authorization_code and refresh_token grants, and `scope` when not empty.
boost::json::object registration_request(std::string_view redirect_uri, std::string_view scope);

struct ClientRegistration {
  std::string client_id;
  std::string client_secret;                             // empty: a public client
  std::optional<std::int64_t> client_secret_expires_at;  // 0: never (RFC 7591 §3.2.1)
  std::string token_endpoint_auth_method;                // empty: not said
};
// The registration endpoint's answer (RFC 7591 §3.2.1), or what went wrong (its §3.2.2 error
// included) and what to do about it.
boost::system::result<ClientRegistration, std::string> parse_registration_response(std::string_view body);

// How the client authenticates at the token endpoint (RFC 6749 §2.3.1, RFC 8414 §2).
enum class ClientAuth { none, client_secret_post, client_secret_basic };
// Without a secret, none. With one: the registration's method when it is one oppx knows, else
// client_secret_post, then client_secret_basic, then none, the first the server supports; a server
// that lists nothing supports client_secret_basic (RFC 8414's default).
ClientAuth choose_client_auth(const std::vector<std::string>& token_endpoint_auth_methods_supported,
                              std::string_view registered_method, bool has_secret);

struct ClientCredentials {
  std::string client_id;
  std::string client_secret;
  ClientAuth auth = ClientAuth::none;
};

// A POST to the token endpoint: an application/x-www-form-urlencoded body and, for
// client_secret_basic, the value of the Authorization header (empty otherwise).
struct TokenRequest {
  std::string body;
  std::string authorization;
};
TokenRequest authorization_code_request(const ClientCredentials& client, std::string_view code,
                                        std::string_view redirect_uri, std::string_view code_verifier,
                                        std::string_view resource);
// `scope` is omitted when empty (the server then keeps the grant's).
TokenRequest refresh_token_request(const ClientCredentials& client, std::string_view refresh_token,
                                   std::string_view resource, std::string_view scope);

// One application/x-www-form-urlencoded key or value (RFC 6749 appendix B): unreserved characters
// as they are, space as '+', every other byte as %XX.
std::string form_encode(std::string_view s);

struct TokenResponse {
  std::string access_token;
  std::string token_type;  // "Bearer" (however the server spelled it)
  std::optional<std::chrono::seconds> expires_in;
  std::optional<std::chrono::system_clock::time_point> expires_at;  // now + expires_in
  std::string refresh_token;                                        // empty: none given
  std::string scope;                                                // empty: the one asked for
};
// The token endpoint's answer (RFC 6749 §5.1), or its error (§5.2) as a message saying what to
// do; `connector` names the connector in that message (`oppx mcp login <connector>`).
boost::system::result<TokenResponse, std::string> parse_token_response(std::string_view body,
                                                                       std::chrono::system_clock::time_point now,
                                                                       std::string_view connector);

// Whether a token should be refreshed now: from a margin before it expires, the smaller of 60 s and
// a tenth of its lifetime. A token without an expiry is never due.
bool should_refresh(std::optional<std::chrono::system_clock::time_point> expires_at,
                    std::optional<std::chrono::seconds> lifetime, std::chrono::system_clock::time_point now);

}  // namespace oppx::daemon::oauth
