// daemon/oauth_store: the clients and tokens OAuth logins leave, in user state: written 0600 and
// read back, a token only for the exact authorization server and resource it was issued for,
// logout forgetting one resource's tokens only, and a file that cannot be trusted worth nothing.
#include "tests/support/harness.h"

#include "daemon/oauth_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

namespace oppx::test {
namespace {

using daemon::OAuthStore;
using namespace std::chrono_literals;

struct OAuthStoreTest : ::testing::Test {
  TempHome home;
  std::string dir = home.root() + "/oauth-state";
  void SetUp() override {
    std::filesystem::create_directories(dir);
    ::chmod(dir.c_str(), 0700);
  }
  static daemon::StateFile::Saved ok() {
    return [](boost::system::result<void, std::string> r) { EXPECT_TRUE(r) << r.error(); };
  }
  std::string text(const std::string& name) {
    std::ifstream f(dir + "/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
};

TEST_F(OAuthStoreTest, AClientAndATokenAreWritten0600AndReadBack) {
  auto expiry = OAuthStore::Clock::time_point(std::chrono::seconds(1'900'000'000));
  {
    OAuthStore store(dir);
    store.put_client("https://auth.example", {"cid-1", "", "none"}, ok());
    store.put_token("https://auth.example", "https://mcp.example/mcp", {"at-1", "rt-1", "read write", expiry}, ok());
  }
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/oauth-tokens.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir + "/oauth-clients.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  OAuthStore again(dir);  // as a restarted daemon reads them
  auto c = again.client("https://auth.example");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->client_id, "cid-1");
  EXPECT_EQ(c->auth_method, "none");
  auto t = again.token("https://auth.example", "https://mcp.example/mcp");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->access_token, "at-1");
  EXPECT_EQ(t->refresh_token, "rt-1");
  EXPECT_EQ(t->scope, "read write");
  ASSERT_TRUE(t->expires_at);
  EXPECT_EQ(*t->expires_at, expiry);
  EXPECT_TRUE(again.problem().empty()) << again.problem();
}

TEST_F(OAuthStoreTest, ATokenIsOnlyForTheServerAndResourceItWasIssuedFor) {
  OAuthStore store(dir);
  store.put_token("https://auth.example", "https://mcp.example/mcp", {"at-1", "", "", std::nullopt}, ok());
  EXPECT_FALSE(store.token("https://auth.example", "https://mcp.example/other"));
  EXPECT_FALSE(store.token("https://auth.example", "https://evil.example/mcp"));
  EXPECT_FALSE(store.token("https://other-auth.example", "https://mcp.example/mcp"));
  EXPECT_FALSE(store.client("https://auth.example")) << "no client was registered";
  EXPECT_TRUE(store.token("https://auth.example", "https://mcp.example/mcp"));
}

TEST_F(OAuthStoreTest, LogoutForgetsOneResourcesTokensOnly) {
  OAuthStore store(dir);
  store.put_token("https://a.example", "https://one.example/mcp", {"at-1", "", "", std::nullopt}, ok());
  store.put_token("https://b.example", "https://one.example/mcp", {"at-2", "", "", std::nullopt}, ok());
  store.put_token("https://a.example", "https://two.example/mcp", {"at-3", "", "", std::nullopt}, ok());
  EXPECT_EQ(store.forget("https://one.example/mcp", ok()), 2);
  EXPECT_FALSE(store.token("https://a.example", "https://one.example/mcp"));
  EXPECT_FALSE(store.token("https://b.example", "https://one.example/mcp"));
  EXPECT_TRUE(store.token("https://a.example", "https://two.example/mcp"));
  EXPECT_EQ(text(std::string("oauth-tokens.json")).find("at-1"), std::string::npos) << "gone from the file too";
}

TEST_F(OAuthStoreTest, AFileThatCannotBeTrustedIsSetAsideAndGrantsNothing) {
  {
    OAuthStore store(dir);
    store.put_token("https://auth.example", "https://mcp.example/mcp", {"at-1", "", "", std::nullopt}, ok());
  }
  // Readable by others: someone else may have written it, or read it.
  ASSERT_EQ(::chmod((dir + "/oauth-tokens.json").c_str(), 0644), 0);
  OAuthStore store(dir);
  EXPECT_FALSE(store.token("https://auth.example", "https://mcp.example/mcp"));
  EXPECT_NE(store.problem().find("oppx mcp login"), std::string::npos) << store.problem();
  EXPECT_EQ(store.problem().find("at-1"), std::string::npos) << "no token in a message: " << store.problem();

  std::ofstream(dir + "/oauth-clients.json") << "{not json";
  ::chmod((dir + "/oauth-clients.json").c_str(), 0600);
  EXPECT_FALSE(store.client("https://auth.example"));
}

}  // namespace
}  // namespace oppx::test
