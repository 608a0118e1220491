// daemon/oauth_discovery: the Bearer challenge (several challenges, quoting, garbage), the
// metadata URLs in the specification's order, the metadata checks (issuer, S256, resource), PKCE
// against RFC 7636's vector, the authorization URL's encoding, the scope choice and the redirect's
// state, iss (RFC 9207) and error.
#include "daemon/oauth_discovery.h"

#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/params_view.hpp>

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace oppx::daemon::oauth {
namespace {

namespace json = boost::json;
using Urls = std::vector<std::string>;

// ---- the challenge ----

TEST(OAuthChallenge, ReadsEveryParameter) {
  auto c = parse_bearer_challenge(
      R"(Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", )"
      R"(scope="files:read files:write", error="insufficient_scope", )"
      R"(error_description="The request needs \"files:write\"")");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->resource_metadata, "https://mcp.example.com/.well-known/oauth-protected-resource");
  EXPECT_EQ(c->scope, "files:read files:write");
  EXPECT_EQ(c->error, "insufficient_scope");
  EXPECT_EQ(c->error_description, R"(The request needs "files:write")");
}

TEST(OAuthChallenge, SchemeAndNamesInAnyCaseAndTokenValues) {
  auto c = parse_bearer_challenge("bEaReR ERROR=invalid_token ,  Scope = read");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->error, "invalid_token");
  EXPECT_EQ(c->scope, "read");
}

TEST(OAuthChallenge, FindsBearerAmongOtherChallenges) {
  auto c = parse_bearer_challenge(
      R"(Basic realm="x, error=\"no\"", Newauth abc123==, Bearer realm="mcp", error="invalid_token", )"
      R"(DPoP algs="ES256", error="use_dpop_nonce")");
  ASSERT_TRUE(c);
  // Neither Basic's quoted text nor DPoP's error is the Bearer challenge's.
  EXPECT_EQ(c->error, "invalid_token");
  EXPECT_TRUE(c->scope.empty());
}

TEST(OAuthChallenge, FirstBearerAndFirstParameterWin) {
  auto c = parse_bearer_challenge(R"(Bearer scope="a", scope="b", Bearer scope="c")");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->scope, "a");
}

TEST(OAuthChallenge, BearerWithNoParameters) {
  auto c = parse_bearer_challenge("Bearer");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->resource_metadata.empty());
  EXPECT_TRUE(c->error.empty());
}

TEST(OAuthChallenge, NoBearerIsNothing) {
  EXPECT_FALSE(parse_bearer_challenge(""));
  EXPECT_FALSE(parse_bearer_challenge(R"(Basic realm="Bearer")"));
  EXPECT_FALSE(parse_bearer_challenge("Bearerish scope=x"));
  EXPECT_FALSE(parse_bearer_challenge("error=invalid_token"));
}

TEST(OAuthChallenge, GarbageNeverThrowsOrOverreads) {
  // Unterminated quote, escape at the very end, lone '=' and ',' and bytes outside ASCII.
  auto c = parse_bearer_challenge(R"(Bearer scope="open)");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->scope, "open");
  c = parse_bearer_challenge("Bearer error=\"x\\");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->error, "x");
  for (std::string_view bad : {"=", ",,,", "Bearer =", "Bearer ==,=", "Bearer error=", "Bearer error=\"", "\"\\",
                               "Bearer \xff\xfe error=\x01", "Bearer error=\"a\"\"b\"scope=c", "Bearer\terror\t=\tx"}) {
    std::string copy(bad);  // a heap copy, so that a sanitizer sees any read past its end
    EXPECT_NO_THROW(parse_bearer_challenge(copy)) << bad;
  }
  c = parse_bearer_challenge("Bearer\terror\t=\tx");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->error, "x");
}

// ---- where the metadata is ----

TEST(OAuthDiscovery, ChallengeUrlAlone) {
  BearerChallenge c;
  c.resource_metadata = "https://auth.example.com/prm/mcp";
  auto urls = resource_metadata_urls("https://mcp.example.com/public/mcp", c);
  ASSERT_TRUE(urls) << urls.error();
  EXPECT_EQ(*urls, Urls{"https://auth.example.com/prm/mcp"});
}

TEST(OAuthDiscovery, PathAwareThenRoot) {
  auto urls = resource_metadata_urls("https://mcp.example.com/public/mcp", std::nullopt);
  ASSERT_TRUE(urls) << urls.error();
  EXPECT_EQ(*urls, (Urls{"https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
                         "https://mcp.example.com/.well-known/oauth-protected-resource"}));
}

TEST(OAuthDiscovery, NoPathOnlyRootKeepingPortDroppingUserAndFragment) {
  Urls root{"http://127.0.0.1:8080/.well-known/oauth-protected-resource"};
  EXPECT_EQ(*resource_metadata_urls("http://127.0.0.1:8080", std::nullopt), root);
  EXPECT_EQ(*resource_metadata_urls("http://me:pw@127.0.0.1:8080/#frag", std::nullopt), root);
}

TEST(OAuthDiscovery, BadChallengeUrlFallsBackToWellKnown) {
  BearerChallenge c;
  c.resource_metadata = "javascript:alert(1)";
  auto urls = resource_metadata_urls("https://mcp.example.com/mcp", c);
  ASSERT_TRUE(urls);
  EXPECT_EQ(urls->front(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
}

TEST(OAuthDiscovery, ConnectorUrlMustBeHttp) {
  for (std::string_view bad : {"", "mcp.example.com/mcp", "ftp://x/y", "https://", "not a url"}) {
    auto urls = resource_metadata_urls(bad, std::nullopt);
    ASSERT_FALSE(urls) << bad;
    EXPECT_NE(urls.error().find("not an http(s) URL"), std::string::npos);
  }
}

TEST(OAuthDiscovery, IssuerWithPath) {
  auto urls = authorization_server_metadata_urls("https://auth.example.com/tenant1");
  ASSERT_TRUE(urls) << urls.error();
  EXPECT_EQ(*urls, (Urls{"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                         "https://auth.example.com/.well-known/openid-configuration/tenant1",
                         "https://auth.example.com/tenant1/.well-known/openid-configuration"}));
  // A trailing slash changes nothing.
  EXPECT_EQ(*authorization_server_metadata_urls("https://auth.example.com/tenant1/"), *urls);
}

TEST(OAuthDiscovery, IssuerWithoutPath) {
  Urls expected{"https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration"};
  EXPECT_EQ(*authorization_server_metadata_urls("https://auth.example.com"), expected);
  EXPECT_EQ(*authorization_server_metadata_urls("https://auth.example.com/"), expected);
  EXPECT_FALSE(authorization_server_metadata_urls("urn:example:issuer"));
}

// ---- the metadata ----

json::value resource_doc(std::string resource) {
  return json::value{{"resource", resource},
                     {"authorization_servers", json::array{"https://auth.example.com"}},
                     {"scopes_supported", json::array{"read", "write"}}};
}

TEST(OAuthMetadata, ResourceIdenticalOrCanonicallyEqual) {
  for (std::string r : {"https://mcp.example.com/mcp", "HTTPS://MCP.Example.com:443/mcp/"}) {
    auto m = check_resource_metadata(resource_doc(r), "https://mcp.example.com/mcp");
    ASSERT_TRUE(m) << r << ": " << m.error();
    EXPECT_EQ(m->resource, r);
    EXPECT_EQ(m->authorization_servers, Urls{"https://auth.example.com"});
    EXPECT_EQ(m->scopes_supported, (Urls{"read", "write"}));
  }
}

TEST(OAuthMetadata, ResourceThatIsAPathPrefixOfTheConnector) {
  // What the root well-known URL (tried second) names for a server below it.
  EXPECT_TRUE(check_resource_metadata(resource_doc("https://mcp.example.com"), "https://mcp.example.com/v1/mcp"));
  EXPECT_TRUE(check_resource_metadata(resource_doc("https://mcp.example.com/v1/"), "https://mcp.example.com/v1/mcp"));
}

TEST(OAuthMetadata, ResourceOfAnotherServerRefused) {
  for (std::string r :
       {"https://evil.example.com/mcp", "http://mcp.example.com/mcp", "https://mcp.example.com:8443/mcp",
        "https://mcp.example.com/mc", "https://mcp.example.com/mcp/admin", "https://mcp.example.com/v1/mcp?x=1", ""}) {
    auto m = check_resource_metadata(resource_doc(r), "https://mcp.example.com/v1/mcp");
    ASSERT_FALSE(m) << r;
    EXPECT_NE(m.error().find("RFC 9728"), std::string::npos);
  }
}

TEST(OAuthMetadata, ResourceWithoutAuthorizationServerOrNotAnObject) {
  json::value doc{{"resource", "https://mcp.example.com/mcp"}};
  auto m = check_resource_metadata(doc, "https://mcp.example.com/mcp");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().find("no authorization server"), std::string::npos);
  EXPECT_FALSE(check_resource_metadata(json::value("x"), "https://mcp.example.com/mcp"));
}

json::object server_doc(std::string issuer) {
  return json::object{{"issuer", issuer},
                      {"authorization_endpoint", issuer + "/authorize"},
                      {"token_endpoint", issuer + "/token"},
                      {"registration_endpoint", issuer + "/register"},
                      {"code_challenge_methods_supported", json::array{"plain", "S256"}},
                      {"scopes_supported", json::array{"read", "offline_access"}},
                      {"token_endpoint_auth_methods_supported", json::array{"none"}},
                      {"authorization_response_iss_parameter_supported", true},
                      {"client_id_metadata_document_supported", true}};
}

TEST(OAuthMetadata, AuthServerFields) {
  auto m = check_auth_server_metadata(server_doc("https://auth.example.com"), "https://auth.example.com");
  ASSERT_TRUE(m) << m.error();
  EXPECT_EQ(m->authorization_endpoint, "https://auth.example.com/authorize");
  EXPECT_EQ(m->token_endpoint, "https://auth.example.com/token");
  EXPECT_EQ(m->registration_endpoint, "https://auth.example.com/register");
  EXPECT_EQ(m->scopes_supported, (Urls{"read", "offline_access"}));
  EXPECT_EQ(m->token_endpoint_auth_methods_supported, Urls{"none"});
  EXPECT_TRUE(m->iss_parameter_supported);
  EXPECT_TRUE(m->client_id_metadata_document_supported);
}

TEST(OAuthMetadata, OptionalFieldsDefaultToOff) {
  json::object doc = server_doc("https://auth.example.com");
  doc.erase("registration_endpoint");
  doc.erase("client_id_metadata_document_supported");
  doc["authorization_response_iss_parameter_supported"] = "true";  // a string is not true
  auto m = check_auth_server_metadata(doc, "https://auth.example.com");
  ASSERT_TRUE(m) << m.error();
  EXPECT_TRUE(m->registration_endpoint.empty());
  EXPECT_FALSE(m->iss_parameter_supported);
  EXPECT_FALSE(m->client_id_metadata_document_supported);
}

TEST(OAuthMetadata, IssuerMustBeIdentical) {
  for (std::string other : {"https://evil.example.com", "https://auth.example.com/", ""}) {
    auto m = check_auth_server_metadata(server_doc(other), "https://auth.example.com");
    ASSERT_FALSE(m) << other;
    EXPECT_NE(m.error().find("issuer"), std::string::npos);
  }
  json::object doc = server_doc("https://auth.example.com");
  doc.erase("issuer");
  EXPECT_FALSE(check_auth_server_metadata(doc, "https://auth.example.com"));
}

TEST(OAuthMetadata, RefusedWithoutS256) {
  for (json::value methods : {json::value(json::array{"plain"}), json::value(json::array{}), json::value("S256"),
                              json::value(json::array{"s256"}), json::value()}) {
    json::object doc = server_doc("https://auth.example.com");
    if (methods.is_null())
      doc.erase("code_challenge_methods_supported");
    else
      doc["code_challenge_methods_supported"] = methods;
    auto m = check_auth_server_metadata(doc, "https://auth.example.com");
    ASSERT_FALSE(m) << json::serialize(methods);
    EXPECT_NE(m.error().find("S256"), std::string::npos);
    EXPECT_NE(m.error().find("PKCE"), std::string::npos);
  }
}

TEST(OAuthMetadata, EndpointsMustBeUrls) {
  json::object doc = server_doc("https://auth.example.com");
  doc["token_endpoint"] = 7;
  auto m = check_auth_server_metadata(doc, "https://auth.example.com");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().find("token_endpoint"), std::string::npos);
  EXPECT_FALSE(check_auth_server_metadata(json::array{}, "https://auth.example.com"));
}

// ---- PKCE and state ----

TEST(OAuthPkce, Rfc7636AppendixB) {
  EXPECT_EQ(s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
}

bool unreserved(const std::string& s) {
  return s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") == std::string::npos;
}

TEST(OAuthPkce, VerifierShapeAndChallenge) {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    auto p = make_pkce();
    ASSERT_TRUE(p) << p.error();
    EXPECT_GE(p->verifier.size(), 43u);
    EXPECT_LE(p->verifier.size(), 128u);
    EXPECT_TRUE(unreserved(p->verifier)) << p->verifier;
    EXPECT_EQ(p->challenge, s256_challenge(p->verifier));
    EXPECT_EQ(p->challenge.size(), 43u);  // 32 bytes of SHA-256, no padding
    EXPECT_TRUE(unreserved(p->challenge));
    seen.insert(p->verifier);
  }
  EXPECT_EQ(seen.size(), 50u);
}

TEST(OAuthPkce, StateIsRandomAndUnreserved) {
  auto a = make_state();
  auto b = make_state();
  ASSERT_TRUE(a && b);
  EXPECT_GE(a->size(), 43u);
  EXPECT_TRUE(unreserved(*a));
  EXPECT_NE(*a, *b);
}

// ---- scope and the authorization URL ----

TEST(OAuthScope, ChallengeThenResourceThenNone) {
  BearerChallenge c;
  c.scope = "files:write";
  ResourceMetadata r;
  r.scopes_supported = {"read", "write"};
  AuthServerMetadata s;
  EXPECT_EQ(choose_scope(c, r, s), "files:write");
  EXPECT_EQ(choose_scope(std::nullopt, r, s), "read write");
  EXPECT_EQ(choose_scope(BearerChallenge{}, r, s), "read write");
  EXPECT_EQ(choose_scope(std::nullopt, ResourceMetadata{}, s), "");
}

TEST(OAuthScope, OfflineAccessWhenTheServerListsIt) {
  ResourceMetadata r;
  r.scopes_supported = {"read"};
  AuthServerMetadata s;
  s.scopes_supported = {"read", "offline_access"};
  EXPECT_EQ(choose_scope(std::nullopt, r, s), "read offline_access");
  BearerChallenge c;
  c.scope = "offline_access read";
  EXPECT_EQ(choose_scope(c, r, s), "offline_access read");  // not twice
  c.scope = "offline_accessx";
  EXPECT_EQ(choose_scope(c, r, s), "offline_accessx offline_access");
  s.scopes_supported = {"read"};
  EXPECT_EQ(choose_scope(std::nullopt, r, s), "read");
}

std::map<std::string, std::string> params_of(const std::string& url) {
  std::map<std::string, std::string> out;
  auto u = boost::urls::parse_uri(url);
  EXPECT_TRUE(u) << url;
  if (!u) return out;
  for (auto p : u->params()) out[p.key] = p.value;
  return out;
}

// Values with every character that needs encoding in a query: ':', '/', '&', '=', '?', ' '.
AuthorizationRequest request() {
  return {.client_id = "https://oppx.example/client.json",
          .redirect_uri = "http://127.0.0.1:33418/callback",
          .code_challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
          .state = "st-1",
          .scope = "read write&admin=1",
          .resource = "https://mcp.example.com/mcp?tenant=a b"};
}

TEST(OAuthAuthorizationUrl, EveryParameterEncoded) {
  AuthServerMetadata s;
  s.authorization_endpoint = "https://auth.example.com/authorize";
  auto url = authorization_url(s, request());
  ASSERT_TRUE(url) << url.error();
  EXPECT_EQ(*url,
            "https://auth.example.com/authorize?response_type=code"
            "&client_id=https%3A%2F%2Foppx.example%2Fclient.json"
            "&redirect_uri=http%3A%2F%2F127.0.0.1%3A33418%2Fcallback"
            "&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
            "&code_challenge_method=S256&state=st-1&scope=read%20write%26admin%3D1"
            "&resource=https%3A%2F%2Fmcp.example.com%2Fmcp%3Ftenant%3Da%20b");
  auto p = params_of(*url);
  EXPECT_EQ(p["scope"], "read write&admin=1");
  EXPECT_EQ(p["resource"], "https://mcp.example.com/mcp?tenant=a b");
  EXPECT_EQ(p.count("admin"), 0u);
}

TEST(OAuthAuthorizationUrl, EndpointQueryKeptFragmentDroppedEmptyScopeOmitted) {
  AuthServerMetadata s;
  s.authorization_endpoint = "https://auth.example.com/oauth/authorize?tenant=a#top";
  auto r = request();
  r.scope.clear();
  auto url = authorization_url(s, r);
  ASSERT_TRUE(url) << url.error();
  EXPECT_TRUE(url->starts_with("https://auth.example.com/oauth/authorize?tenant=a&response_type=code")) << *url;
  EXPECT_EQ(url->find('#'), std::string::npos);
  auto p = params_of(*url);
  EXPECT_EQ(p.count("scope"), 0u);
  EXPECT_EQ(p["code_challenge_method"], "S256");
  EXPECT_EQ(p["state"], "st-1");
}

TEST(OAuthAuthorizationUrl, NoEndpointIsAnError) { EXPECT_FALSE(authorization_url(AuthServerMetadata{}, request())); }

// ---- the redirect ----

RedirectExpectation expect(bool iss_required) { return {"st-1", "https://auth.example.com", iss_required}; }

TEST(OAuthRedirect, CodeWithMatchingIss) {
  auto code = check_redirect("?code=abc%2B1&state=st-1&iss=https%3A%2F%2Fauth.example.com", expect(true));
  ASSERT_TRUE(code) << code.error();
  EXPECT_EQ(*code, "abc+1");
}

TEST(OAuthRedirect, IssOptionalWhenNotAdvertised) {
  auto code = check_redirect("code=abc&state=st-1", expect(false));
  ASSERT_TRUE(code) << code.error();
  EXPECT_EQ(*code, "abc");
}

TEST(OAuthRedirect, IssMissingWhenRequired) {
  auto code = check_redirect("code=abc&state=st-1", expect(true));
  ASSERT_FALSE(code);
  EXPECT_NE(code.error().find("no iss"), std::string::npos);
}

TEST(OAuthRedirect, IssMismatchEvenWhenNotAdvertised) {
  for (bool required : {true, false}) {
    for (std::string_view q :
         {"code=abc&state=st-1&iss=https%3A%2F%2Fevil.example.com",
          "code=abc&state=st-1&iss=https%3A%2F%2Fauth.example.com%2F", "code=abc&state=st-1&iss="}) {
      auto code = check_redirect(q, expect(required));
      ASSERT_FALSE(code) << q;
      EXPECT_NE(code.error().find("mix-up"), std::string::npos) << code.error();
    }
  }
}

TEST(OAuthRedirect, StateMustMatch) {
  for (std::string_view q :
       {"code=abc&iss=https%3A%2F%2Fauth.example.com", "code=abc&state=st-2&iss=https%3A%2F%2Fauth.example.com",
        "code=abc&state=ST-1", "code=abc&state"}) {
    auto code = check_redirect(q, expect(false));
    ASSERT_FALSE(code) << q;
    EXPECT_NE(code.error().find("state"), std::string::npos);
  }
}

TEST(OAuthRedirect, ServerErrorReported) {
  auto code = check_redirect(
      "error=access_denied&error_description=The+user+said+no&state=st-1&iss=https%3A%2F%2Fauth.example.com",
      expect(true));
  ASSERT_FALSE(code);
  EXPECT_EQ(code.error(), "The authorization server refused the login: access_denied: The user said no");
  // An error from another issuer is the mix-up, not the error.
  code = check_redirect("error=access_denied&state=st-1&iss=https%3A%2F%2Fevil.example.com", expect(false));
  ASSERT_FALSE(code);
  EXPECT_NE(code.error().find("mix-up"), std::string::npos);
}

TEST(OAuthRedirect, NoCodeOrBadQuery) {
  auto code = check_redirect("state=st-1&code=", expect(false));
  ASSERT_FALSE(code);
  EXPECT_NE(code.error().find("no authorization code"), std::string::npos);
  code = check_redirect("code=%zz&state=st-1", expect(false));
  ASSERT_FALSE(code);
  EXPECT_NE(code.error().find("not a valid URL query"), std::string::npos);
  EXPECT_FALSE(check_redirect("", expect(false)));
}

}  // namespace
}  // namespace oppx::daemon::oauth
