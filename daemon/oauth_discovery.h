// The pure parts of an OAuth login to a remote connector (issue 27; MCP 2025-11-25 and 2026-07-28,
// Authorization): reading a 401's Bearer challenge, the metadata URLs to try in the
// specification's order, checking the metadata fetched, PKCE and `state`, the authorization URL,
// and checking the redirect that comes back. No network, no state, nothing that blocks: the
// daemon's login flow (to come) fetches the URLs these name and feeds the answers back in.
#pragma once

#include <boost/json/fwd.hpp>
#include <boost/system/result.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::daemon::oauth {

// What a 401 or 403 says in `WWW-Authenticate: Bearer …` (RFC 6750 §3). Empty when absent.
struct BearerChallenge {
  std::string resource_metadata;  // RFC 9728 §5.1: where the resource's metadata is
  std::string scope;              // the scopes the resource wants, space-separated
  std::string error;              // invalid_token, insufficient_scope, invalid_request
  std::string error_description;
};

// The first Bearer challenge of a WWW-Authenticate value (which may hold several challenges, of
// any scheme, in any case); nullopt when there is none. Never throws; garbage yields what could
// be read before it.
std::optional<BearerChallenge> parse_bearer_challenge(std::string_view header);

// The protected-resource metadata URLs to fetch, in order, for the connector's URL: the
// challenge's `resource_metadata` alone when it has one, else the path-aware well-known URL, then
// the root one. Fails when the connector's URL is not an http(s) URL.
boost::system::result<std::vector<std::string>, std::string> resource_metadata_urls(
    std::string_view server_url, const std::optional<BearerChallenge>& challenge);

// The authorization-server metadata URLs to fetch, in order, for an issuer (RFC 8414 §3.1 and
// OpenID Connect Discovery, as MCP orders them).
boost::system::result<std::vector<std::string>, std::string> authorization_server_metadata_urls(
    std::string_view issuer);

// What the login needs of the protected resource's metadata (RFC 9728 §2).
struct ResourceMetadata {
  std::string resource;  // the value of `resource` (RFC 8707) in every request
  std::vector<std::string> authorization_servers;
  std::vector<std::string> scopes_supported;
};
boost::system::result<ResourceMetadata, std::string> check_resource_metadata(const boost::json::value& metadata,
                                                                             std::string_view server_url);

// What the login needs of the authorization server's metadata (RFC 8414 §2).
struct AuthServerMetadata {
  std::string issuer;
  std::string authorization_endpoint;
  std::string token_endpoint;
  std::string registration_endpoint;  // empty: no dynamic client registration
  std::vector<std::string> scopes_supported;
  std::vector<std::string> token_endpoint_auth_methods_supported;
  bool iss_parameter_supported = false;  // authorization_response_iss_parameter_supported
  bool client_id_metadata_document_supported = false;
};
// Refuses metadata whose issuer is not `issuer` or that does not offer PKCE with S256.
boost::system::result<AuthServerMetadata, std::string> check_auth_server_metadata(const boost::json::value& metadata,
                                                                                  std::string_view issuer);

// PKCE (RFC 7636): a verifier of 43 unreserved characters from 32 random bytes, and its challenge.
struct Pkce {
  std::string verifier;
  std::string challenge;  // S256
};
boost::system::result<Pkce, std::string> make_pkce();
// BASE64URL(SHA256(verifier)) without padding (RFC 7636 §4.2).
std::string s256_challenge(std::string_view verifier);
// A `state` for one authorization request: 32 random bytes, base64url.
boost::system::result<std::string, std::string> make_state();

// The `scope` to ask for: the challenge's, else the resource's scopes_supported, else none; with
// offline_access added when the authorization server lists it (so that it gives a refresh token).
std::string choose_scope(const std::optional<BearerChallenge>& challenge, const ResourceMetadata& resource,
                         const AuthServerMetadata& server);

struct AuthorizationRequest {
  std::string client_id;
  std::string redirect_uri;
  std::string code_challenge;
  std::string state;
  std::string scope;     // omitted when empty
  std::string resource;  // RFC 8707
};
// The URL the user's browser opens: the server's authorization endpoint (its own query kept) with
// the request's parameters, each percent-encoded.
boost::system::result<std::string, std::string> authorization_url(const AuthServerMetadata& server,
                                                                  const AuthorizationRequest& request);

// What the login expects of the redirect to its callback.
struct RedirectExpectation {
  std::string state;
  std::string issuer;
  bool iss_required = false;  // the server advertises authorization_response_iss_parameter_supported
};
// The authorization code of a redirect's query (with or without its '?'), or why it cannot be
// redeemed: another state, a missing or different `iss` (RFC 9207 §2.4), an error from the server,
// no code.
boost::system::result<std::string, std::string> check_redirect(std::string_view query,
                                                               const RedirectExpectation& expected);

}  // namespace oppx::daemon::oauth
