// daemon/oauth_tokens: the registration request and its answer, the token endpoint's form bodies
// and client authentication (none, client_secret_post, client_secret_basic), the token response
// and its errors, and when a token is due for refresh.
#include "daemon/oauth_tokens.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

namespace oppx::daemon::oauth {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

// ---- registration ----

TEST(OAuthRegistration, RequestsANativePublicClientWithTheCallback) {
  json::object o = registration_request("http://127.0.0.1:53682/callback", "files:read offline_access");
  EXPECT_EQ(json::value(o), json::parse(R"({
    "client_name": "oppx",
    "redirect_uris": ["http://127.0.0.1:53682/callback"],
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "token_endpoint_auth_method": "none",
    "application_type": "native",
    "scope": "files:read offline_access"})"));
  EXPECT_FALSE(registration_request("http://127.0.0.1:1/cb", "").contains("scope"));
}

TEST(OAuthRegistration, ReadsTheAnswer) {
  auto r = parse_registration_response(R"({"client_id":"abc","client_secret":"s3","client_secret_expires_at":0,)"
                                       R"("token_endpoint_auth_method":"client_secret_basic","client_name":"oppx"})");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->client_id, "abc");
  EXPECT_EQ(r->client_secret, "s3");
  EXPECT_EQ(r->client_secret_expires_at, 0);
  EXPECT_EQ(r->token_endpoint_auth_method, "client_secret_basic");

  auto p = parse_registration_response(R"({"client_id":"pub"})");
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->client_id, "pub");
  EXPECT_EQ(p->client_secret, "");
  EXPECT_FALSE(p->client_secret_expires_at);
  EXPECT_EQ(p->token_endpoint_auth_method, "");
}

TEST(OAuthRegistration, RefusesBadAnswersSayingWhatToDo) {
  auto missing = parse_registration_response(R"({"client_secret":"s"})");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("client_id"), std::string::npos);
  EXPECT_NE(missing.error().find("configure a client_id"), std::string::npos);

  EXPECT_FALSE(parse_registration_response(R"({"client_id":""})"));
  EXPECT_FALSE(parse_registration_response(R"({"client_id":42})"));
  EXPECT_FALSE(parse_registration_response(R"({"client_id":"a","client_secret":7})"));
  EXPECT_FALSE(parse_registration_response(R"({"client_id":"a","client_secret_expires_at":"soon"})"));
  EXPECT_FALSE(parse_registration_response(R"({"client_id":"a","client_secret_expires_at":-1})"));
  EXPECT_FALSE(parse_registration_response(R"(["client_id"])"));
  EXPECT_FALSE(parse_registration_response("<html>nope"));
  EXPECT_FALSE(parse_registration_response(""));

  auto refused =
      parse_registration_response(R"({"error":"invalid_redirect_uri","error_description":"loopback not allowed"})");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("invalid_redirect_uri (loopback not allowed)"), std::string::npos);
}

// ---- client authentication ----

TEST(OAuthClientAuth, ChoosesWhatTheServerSupportsInOrder) {
  using V = std::vector<std::string>;
  EXPECT_EQ(choose_client_auth({"client_secret_post", "client_secret_basic"}, "", false), ClientAuth::none);
  EXPECT_EQ(choose_client_auth({"client_secret_basic", "client_secret_post"}, "", true),
            ClientAuth::client_secret_post);
  EXPECT_EQ(choose_client_auth(V{"client_secret_basic", "private_key_jwt"}, "", true), ClientAuth::client_secret_basic);
  EXPECT_EQ(choose_client_auth(V{}, "", true), ClientAuth::client_secret_basic);  // RFC 8414's default
  EXPECT_EQ(choose_client_auth(V{"none"}, "", true), ClientAuth::none);
  // The registration's method wins when oppx knows it.
  EXPECT_EQ(choose_client_auth(V{"client_secret_post", "client_secret_basic"}, "client_secret_basic", true),
            ClientAuth::client_secret_basic);
  EXPECT_EQ(choose_client_auth(V{"client_secret_post"}, "private_key_jwt", true), ClientAuth::client_secret_post);
}

TEST(OAuthTokenRequest, FormEncodesEveryByte) {
  EXPECT_EQ(form_encode("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(form_encode("a b+c&d=e/f?g%"), "a+b%2Bc%26d%3De%2Ff%3Fg%25");
  EXPECT_EQ(form_encode("\xc3\xa9:"), "%C3%A9%3A");
  EXPECT_EQ(form_encode(""), "");
}

TEST(OAuthTokenRequest, AuthorizationCodeForAPublicClient) {
  auto r = authorization_code_request({"my client", "", ClientAuth::none}, "c/d+e", "http://127.0.0.1:53682/callback",
                                      "ver~ifier", "https://mcp.example.com/mcp");
  EXPECT_EQ(r.body,
            "grant_type=authorization_code&code=c%2Fd%2Be"
            "&redirect_uri=http%3A%2F%2F127.0.0.1%3A53682%2Fcallback&code_verifier=ver~ifier"
            "&client_id=my+client&resource=https%3A%2F%2Fmcp.example.com%2Fmcp");
  EXPECT_EQ(r.authorization, "");
}

TEST(OAuthTokenRequest, ClientSecretPostPutsBothInTheBody) {
  auto r = authorization_code_request({"id", "s&cret", ClientAuth::client_secret_post}, "code", "http://l/cb", "v",
                                      "https://r");
  EXPECT_EQ(r.body,
            "grant_type=authorization_code&code=code&redirect_uri=http%3A%2F%2Fl%2Fcb&code_verifier=v"
            "&client_id=id&client_secret=s%26cret&resource=https%3A%2F%2Fr");
  EXPECT_EQ(r.authorization, "");
}

TEST(OAuthTokenRequest, ClientSecretBasicIsAHeaderOfTheEncodedPair) {
  // RFC 6749 §2.3.1: each of id and secret form-encoded, then "id:secret" in base64.
  // "a b:c:d" is form-encoded to "a+b" and "c%3Ad": base64("a+b:c%3Ad").
  auto r = refresh_token_request({"a b", "c:d", ClientAuth::client_secret_basic}, "rt", "https://r", "");
  EXPECT_EQ(r.authorization, "Basic YStiOmMlM0Fk");
  EXPECT_EQ(r.body, "grant_type=refresh_token&refresh_token=rt&resource=https%3A%2F%2Fr");
  EXPECT_EQ(r.body.find("client_"), std::string::npos);
}

TEST(OAuthTokenRequest, RefreshWithScopeAndWithout) {
  auto r = refresh_token_request({"id", "", ClientAuth::none}, "r/t", "https://mcp.example.com", "read write");
  EXPECT_EQ(r.body,
            "grant_type=refresh_token&refresh_token=r%2Ft&client_id=id"
            "&resource=https%3A%2F%2Fmcp.example.com&scope=read+write");
  auto n = refresh_token_request({"id", "", ClientAuth::none}, "rt", "https://mcp.example.com", "");
  EXPECT_EQ(n.body.find("scope"), std::string::npos);
}

// ---- token response ----

const Clock::time_point now = Clock::time_point(std::chrono::seconds(1'800'000'000));

TEST(OAuthTokenResponse, ReadsEveryField) {
  auto t = parse_token_response(
      R"({"access_token":"at","token_type":"bearer","expires_in":3600,"refresh_token":"rt","scope":"a b"})", now,
      "github");
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(t->access_token, "at");
  EXPECT_EQ(t->token_type, "bearer");
  EXPECT_EQ(t->expires_in, 3600s);
  EXPECT_EQ(t->expires_at, now + 3600s);
  EXPECT_EQ(t->refresh_token, "rt");
  EXPECT_EQ(t->scope, "a b");

  auto minimal = parse_token_response(R"({"access_token":"at","token_type":"Bearer"})", now, "github");
  ASSERT_TRUE(minimal) << minimal.error();
  EXPECT_FALSE(minimal->expires_at);
  EXPECT_FALSE(minimal->expires_in);
  EXPECT_EQ(minimal->refresh_token, "");

  auto as_string = parse_token_response(R"({"access_token":"at","token_type":"BEARER","expires_in":"60"})", now, "g");
  ASSERT_TRUE(as_string) << as_string.error();
  EXPECT_EQ(as_string->expires_at, now + 60s);

  auto huge =
      parse_token_response(R"({"access_token":"at","token_type":"Bearer","expires_in":18446744073709551})", now, "g");
  ASSERT_TRUE(huge) << huge.error();
  EXPECT_GT(*huge->expires_at, now + 24h * 365 * 5);
}

TEST(OAuthTokenResponse, RefusesBadAnswers) {
  auto bad = [](std::string_view body) { return !parse_token_response(body, now, "g"); };
  EXPECT_TRUE(bad(R"({"token_type":"Bearer"})"));
  EXPECT_TRUE(bad(R"({"access_token":"","token_type":"Bearer"})"));
  EXPECT_TRUE(bad(R"({"access_token":"at"})"));
  EXPECT_TRUE(bad(R"({"access_token":5,"token_type":"Bearer"})"));
  EXPECT_TRUE(bad(R"({"access_token":"at","token_type":["Bearer"]})"));
  EXPECT_TRUE(bad(R"({"access_token":"at","token_type":"Bearer","expires_in":-5})"));
  EXPECT_TRUE(bad(R"({"access_token":"at","token_type":"Bearer","expires_in":1.5})"));
  EXPECT_TRUE(bad(R"({"access_token":"at","token_type":"Bearer","expires_in":"1h"})"));
  EXPECT_TRUE(bad(R"({"access_token":"at","token_type":"Bearer","refresh_token":{}})"));
  EXPECT_TRUE(bad(R"({"access_token":"at","token_type":"Bearer","scope":1})"));
  EXPECT_TRUE(bad("access_token=at&token_type=bearer"));
  EXPECT_TRUE(bad(R"({"access_token":"at")"));
  EXPECT_TRUE(bad("null"));

  auto mac = parse_token_response(R"({"access_token":"at","token_type":"mac"})", now, "g");
  ASSERT_FALSE(mac);
  EXPECT_NE(mac.error().find("\"mac\""), std::string::npos);
  EXPECT_NE(mac.error().find("Bearer"), std::string::npos);
}

TEST(OAuthTokenResponse, ErrorsSayWhatToDo) {
  auto grant =
      parse_token_response(R"({"error":"invalid_grant","error_description":"refresh token revoked"})", now, "github");
  ASSERT_FALSE(grant);
  EXPECT_NE(grant.error().find("`oppx mcp login github`"), std::string::npos) << grant.error();
  EXPECT_NE(grant.error().find("refresh token revoked"), std::string::npos) << grant.error();

  auto client = parse_token_response(R"({"error":"invalid_client"})", now, "linear");
  ASSERT_FALSE(client);
  EXPECT_NE(client.error().find("`oppx mcp login linear`"), std::string::npos) << client.error();

  auto other = parse_token_response(R"({"error":"temporarily_unavailable","access_token":"at","token_type":"Bearer"})",
                                    now, "linear");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().find("temporarily_unavailable"), std::string::npos) << other.error();
  EXPECT_EQ(other.error().find("oppx mcp login"), std::string::npos) << other.error();
}

// ---- refresh ----

TEST(OAuthRefresh, DueAMarginBeforeExpiry) {
  // An hour's token: the margin is 60 s.
  auto expires = now + 3600s;
  EXPECT_FALSE(should_refresh(expires, 3600s, expires - 61s));
  EXPECT_TRUE(should_refresh(expires, 3600s, expires - 60s));
  EXPECT_TRUE(should_refresh(expires, 3600s, expires + 1s));
  // A 5-minute token: a tenth of its life, 30 s.
  auto short_lived = now + 300s;
  EXPECT_FALSE(should_refresh(short_lived, 300s, short_lived - 31s));
  EXPECT_TRUE(should_refresh(short_lived, 300s, short_lived - 30s));
  // Lifetime unknown: 60 s. No expiry: never.
  EXPECT_FALSE(should_refresh(expires, std::nullopt, expires - 61s));
  EXPECT_TRUE(should_refresh(expires, std::nullopt, expires - 59s));
  EXPECT_FALSE(should_refresh(std::nullopt, std::nullopt, now + 24h * 365));
}

}  // namespace
}  // namespace oppx::daemon::oauth
