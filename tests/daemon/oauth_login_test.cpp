// OAuth logins of HTTP connectors through the daemon's socket (issue 27), end to end: a real oppxd,
// and tests/support/fake_oauth_server.js (an MCP server and its authorization server in one
// process) as a real child. The browser is this test: it fetches the authorization URL, following
// the redirect to the daemon's loopback listener or reading it to paste. No token may appear in
// any answer or in the daemon's log; every wait has a deadline.
#include "tests/support/harness.h"
#include "tests/support/waits.h"

#include "common/sync_client.h"
#include "proto/daemon_api.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace oppx::test {
namespace {

namespace json = boost::json;

const std::string kFakeOAuth = std::string(OPPX_TEST_SUPPORT) + "/fake_oauth_server.js";

struct HttpAnswer {
  int status = 0;  // 0: no answer (the error says why)
  std::string head, body, location, error;
};

// One HTTP/1.1 request to http://127.0.0.1:<port>/… with Connection: close, read until the body's
// length or the end, within 10 s: the test's own browser.
HttpAnswer http_request(const std::string& method, const std::string& url) {
  HttpAnswer a;
  std::smatch m;
  static const std::regex kUrl(R"(http://([0-9.]+):(\d+)(/.*)?)");
  if (!std::regex_match(url, m, kUrl)) {
    a.error = "not a loopback http URL: " + url;
    return a;
  }
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(m[2])));
  ::inet_pton(AF_INET, m[1].str().c_str(), &addr.sin_addr);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    a.error = "cannot connect to " + url;
    if (fd >= 0) ::close(fd);
    return a;
  }
  std::string path = m[3].matched ? m[3].str() : "/";
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: " + m[1].str() + ":" + m[2].str() +
                    "\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    a.error = "write failed";
    ::close(fd);
    return a;
  }
  std::string in;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      a.error = "no whole answer within 10 s: " + in;
      break;
    }
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
    auto end = in.find("\r\n\r\n");
    if (end == std::string::npos) continue;
    std::smatch len;
    static const std::regex kLength(R"(\r\ncontent-length: *(\d+))", std::regex::icase);
    std::string head = in.substr(0, end);
    if (std::regex_search(head, len, kLength) && in.size() >= end + 4 + std::stoul(len[1])) break;
  }
  ::close(fd);
  auto end = in.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (a.error.empty()) a.error = "no HTTP answer: " + in;
    return a;
  }
  a.head = in.substr(0, end);
  a.body = in.substr(end + 4);
  std::sscanf(a.head.c_str(), "HTTP/1.%*d %d", &a.status);
  std::smatch loc;
  static const std::regex kLocation(R"(\r\nlocation: *([^\r]*))", std::regex::icase);
  if (std::regex_search(a.head, loc, kLocation)) a.location = loc[1];
  return a;
}

// GET with the redirects followed, as a browser opens the authorization URL.
HttpAnswer browse(std::string url) {
  for (int i = 0; i < 5; ++i) {
    HttpAnswer a = http_request("GET", url);
    if (a.status < 300 || a.status >= 400 || a.location.empty()) return a;
    url = a.location;
  }
  HttpAnswer loop;
  loop.error = "too many redirects";
  return loop;
}

std::string text(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

// The entry of connector `name` in an McpListResult; empty when it is not there.
json::object entry_in(const json::value& list, const std::string& name) {
  if (!list.is_object() || !list.as_object().contains("connectors")) return {};
  for (auto& c : list.at("connectors").as_array())
    if (c.is_object() && text(c.as_object(), "name") == name) return c.as_object();
  return {};
}

std::string joined_steps(const json::object& e) {
  std::string out;
  if (auto* s = e.if_contains("steps"); s && s->is_array())
    for (auto& x : s->as_array())
      if (x.is_string()) out += std::string(x.as_string()) + "\n";
  return out;
}

// Access and refresh tokens as the fake makes them ("at-…", "rt-…": 32 base64url characters).
std::vector<std::string> tokens_in(const std::string& s) {
  static const std::regex kToken(R"((at|rt)-[A-Za-z0-9_-]{32})");
  std::vector<std::string> out;
  for (std::sregex_iterator it(s.begin(), s.end(), kToken), end; it != end; ++it) out.push_back(it->str());
  return out;
}

struct OAuthLogin : ::testing::Test {
  TempHome home;
  std::unique_ptr<Process> fake;
  int port = 0, port2 = 0;
  const std::string name = "web";

  void start_fake(std::vector<std::string> args = {}) {
    args.insert(args.begin(), {"node", kFakeOAuth});
    fake = std::make_unique<Process>(args);
    ASSERT_TRUE(fake->wait_for_stdout(" ready\n")) << fake->err();
    std::sscanf(fake->out().c_str(), "ports %d %d", &port, &port2);
    ASSERT_GT(port, 0) << fake_out();
    home.write_mcp_config("\"" + name + "\":" + json::serialize(json::object{{"type", "http"}, {"url", url()}}));
  }
  // What the fake printed so far (read now: Process reads its output only when asked).
  std::string fake_out() {
    fake->wait_for_stdout("\x01", 100ms);
    return fake->out();
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port); }
  std::string url() const { return base() + "/mcp"; }
  std::string tokens_file() const { return home.root() + "/state/oppx/oauth-tokens.json"; }

  json::object stats() {
    HttpAnswer a = http_request("GET", base() + "/_stats");
    EXPECT_EQ(a.status, 200) << a.error;
    boost::system::error_code ec;
    json::value v = json::parse(a.body, ec);
    return !ec && v.is_object() ? v.as_object() : json::object{};
  }
  static std::int64_t count(const json::object& s, std::string_view group, std::string_view key = {}) {
    const json::value* v = s.if_contains(group);
    if (v && !key.empty()) v = v->is_object() ? v->as_object().if_contains(key) : nullptr;
    return v && v->is_int64() ? v->as_int64() : -1;
  }
  void expire() { ASSERT_EQ(http_request("POST", base() + "/_expire").status, 200); }

  // A client that said hello with this process's environment and `extra` (the daemon started
  // first when none answers).
  std::optional<SyncClient> client(const EnvPairs& extra = {}) { return hello_client(home, extra); }

  json::value list(SyncClient& c) {
    auto r = c.call("mcp/list", json::object{{"wait", true}}, 30s);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : json::value();
  }
  json::object entry(SyncClient& c) { return entry_in(list(c), name); }
  std::string state(SyncClient& c) { return text(entry(c), "state"); }

  // mcp/login's answer (empty when it failed, the failure recorded).
  json::object start_login(SyncClient& c) {
    auto r = c.call("mcp/login", json::object{{"name", name}}, 30s);
    EXPECT_TRUE(r) << r.error().kind << ": " << r.error().message << "\n" << fake_out();
    return r && r->is_object() ? r->as_object() : json::object{};
  }

  // A whole login: mcp/login, the browser sent to the URL and back to the listener, then the
  // wait's answer (an McpListResult).
  json::value login(SyncClient& c) {
    json::object start = start_login(c);
    if (start.empty()) return {};
    HttpAnswer page = browse(text(start, "url"));
    EXPECT_EQ(page.status, 200) << page.error << page.head << page.body << "\n" << fake_out();
    EXPECT_NE(page.body.find("Logged in"), std::string::npos) << page.body;
    auto done = c.call("mcp/login/wait", json::object{{"login", start.at("login")}}, 30s);
    EXPECT_TRUE(done) << done.error().kind << ": " << done.error().message << "\n" << fake_out();
    return done ? *done : json::value();
  }

  // tools/call echo through the socket: the text, or the error's words prefixed "error: ".
  std::string echo(SyncClient& c, const std::string& message) {
    auto r = c.call("tools/call",
                    json::object{{"connector", name}, {"tool", "echo"}, {"arguments", {{"message", message}}}}, 30s);
    if (!r) return "error: " + r.error().kind + ": " + r.error().message;
    const json::object& o = r->as_object();
    if (auto* e = o.if_contains("is_error"); e && e->is_bool() && e->as_bool()) return "error: " + text(o, "text");
    return text(o, "text");
  }

  void TearDown() override { home.stop_daemon(); }
};

std::int64_t tool_count(const json::object& e) {
  auto* t = e.if_contains("tools");
  if (!t) return -1;
  if (t->is_array()) return static_cast<std::int64_t>(t->as_array().size());
  return t->is_int64() ? t->as_int64() : -1;
}

TEST_F(OAuthLogin, ALoginThroughTheSocketStartsTheConnectorAndNoTokenIsShownOrLogged) {
  start_fake();
  auto c = client();
  ASSERT_TRUE(c);
  json::value done = login(*c);
  json::object e = entry_in(done, name);
  EXPECT_EQ(text(e, "state"), "running") << json::serialize(done) << "\n" << fake_out() << "\n" << home.read_log();
  EXPECT_EQ(tool_count(e), 2) << json::serialize(e);

  json::value listed = list(*c);
  json::object mine = entry_in(listed, name);
  ASSERT_TRUE(mine.contains("login")) << json::serialize(mine);
  const json::object& l = mine.at("login").as_object();
  EXPECT_EQ(l.at("logged_in"), json::value(true)) << json::serialize(l);
  EXPECT_EQ(text(l, "issuer"), base());
  std::int64_t now = std::time(nullptr);
  ASSERT_TRUE(l.contains("expires_at") && l.at("expires_at").is_int64()) << json::serialize(l);
  EXPECT_GT(l.at("expires_at").as_int64(), now + 3000) << json::serialize(l);
  EXPECT_LE(l.at("expires_at").as_int64(), now + 3700) << json::serialize(l);
  EXPECT_EQ(echo(*c, "hi"), "echo: hi");

  struct stat st {};
  ASSERT_EQ(::stat(tokens_file().c_str(), &st), 0) << tokens_file();
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::vector<std::string> kept = tokens_in(read_file(tokens_file()));
  ASSERT_FALSE(kept.empty()) << read_file(tokens_file());

  auto got = c->call("mcp/get", json::object{{"name", name}}, 10s);
  ASSERT_TRUE(got) << got.error().message;
  auto tools = c->call("mcp/tools", json::object{{"name", name}}, 10s);
  ASSERT_TRUE(tools) << tools.error().message;
  std::string shown = json::serialize(done) + json::serialize(listed) + json::serialize(*got) + json::serialize(*tools);
  std::string logged = home.read_log();
  for (auto& t : kept) {
    EXPECT_EQ(shown.find(t), std::string::npos) << "a token in an answer: " << shown;
    EXPECT_EQ(logged.find(t), std::string::npos) << "a token in oppxd.log: " << logged;
  }
  EXPECT_EQ(count(stats(), "authorize"), 1);
}

TEST_F(OAuthLogin, BeforeTheLoginTheConnectorSaysSoAndIsNotStartedAgainAndAgain) {
  start_fake();
  auto c = client();
  ASSERT_TRUE(c);
  json::object e = entry(*c);
  EXPECT_EQ(text(e, "state"), "login") << json::serialize(e) << "\n" << fake_out();
  EXPECT_NE(joined_steps(e).find("oppx mcp login " + name), std::string::npos) << json::serialize(e);
  ASSERT_TRUE(e.contains("login")) << json::serialize(e);
  EXPECT_EQ(e.at("login").as_object().at("logged_in"), json::value(false));

  // Listing again does not start it again, and neither does time: a start every few seconds
  // (a restart loop) would reach the server within the 2.5 s this waits for one.
  std::int64_t before = count(stats(), "mcp");
  EXPECT_EQ(state(*c), "login");
  EXPECT_EQ(count(stats(), "mcp"), before);
  std::size_t from = fake_out().size();
  EXPECT_FALSE(fake->wait_for_stdout_after(from, "mcp POST", 2500ms))
      << "the connector was started again without a login\n"
      << fake_out() << "\n"
      << home.read_log();
  EXPECT_EQ(count(stats(), "token", "authorization_code"), 0);
}

TEST_F(OAuthLogin, TwentyCallsRefusedAtOnceMakeOneRefresh) {
  start_fake({"--refresh-delay=500"});
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_EQ(text(entry_in(login(*c), name), "state"), "running") << fake_out();
  expire();

  constexpr int kCalls = 20;
  std::vector<std::optional<SyncClient>> clients;
  for (int i = 0; i < kCalls; ++i) clients.push_back(client());
  std::vector<std::string> answers(kCalls);
  std::vector<std::thread> threads;
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      if (clients[i]) answers[i] = echo(*clients[i], "n" + std::to_string(i));
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(answers[i], "echo: n" + std::to_string(i)) << fake_out();
  json::object s = stats();
  EXPECT_EQ(count(s, "token", "refresh_token"), 1) << json::serialize(s) << "\n" << fake_out();
  EXPECT_EQ(count(s, "token_refused"), 0) << json::serialize(s);
}

TEST_F(OAuthLogin, ATokenIsRefreshedBeforeItExpires) {
  start_fake({"--lifetime=3"});
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_EQ(text(entry_in(login(*c), name), "state"), "running") << fake_out();
  std::int64_t calls = count(stats(), "mcp_methods", "tools/call");
  // No request asks for it: the refresh comes from the expiry alone (a tenth of 3 s before it).
  EXPECT_TRUE(fake->wait_for_stdout("token refresh_token ok", 10s)) << fake_out();
  EXPECT_EQ(count(stats(), "mcp_methods", "tools/call"), calls);
  EXPECT_EQ(fake_out().find("401 bad-token"), std::string::npos) << "no request carried an expired token\n"
                                                                 << fake_out();
  EXPECT_EQ(echo(*c, "fresh"), "echo: fresh");
}

TEST_F(OAuthLogin, ARefusedRefreshForgetsTheTokenAndAsksForALogin) {
  start_fake({"--reject-refresh"});
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_EQ(text(entry_in(login(*c), name), "state"), "running") << fake_out();
  std::vector<std::string> kept = tokens_in(read_file(tokens_file()));
  ASSERT_FALSE(kept.empty());
  expire();

  std::string answer = echo(*c, "after");
  EXPECT_EQ(answer.rfind("error: ", 0), 0u) << answer;
  EXPECT_NE(answer.find("oppx mcp login"), std::string::npos) << answer;
  EXPECT_TRUE(when_connectors_change(home.socket(), [&] { return state(*c) == "login"; }))
      << json::serialize(entry(*c)) << "\n"
      << fake_out();
  json::object e = entry(*c);
  EXPECT_NE(joined_steps(e).find("oppx mcp login " + name), std::string::npos) << json::serialize(e);
  EXPECT_TRUE(when_file_changes(tokens_file(), [&] { return tokens_in(read_file(tokens_file())).empty(); }))
      << read_file(tokens_file());
  EXPECT_EQ(count(stats(), "token", "refresh_token"), 1);
}

TEST_F(OAuthLogin, ADaemonRestartKeepsTheLogin) {
  start_fake();
  {
    auto c = client();
    ASSERT_TRUE(c);
    ASSERT_EQ(text(entry_in(login(*c), name), "state"), "running") << fake_out();
  }
  home.stop_daemon();
  auto c = client();  // a new daemon, in the same home
  ASSERT_TRUE(c);
  json::object e = entry(*c);
  EXPECT_EQ(text(e, "state"), "running") << json::serialize(e) << "\n" << fake_out();
  EXPECT_EQ(echo(*c, "again"), "echo: again");
  json::object s = stats();
  EXPECT_EQ(count(s, "authorize"), 1) << json::serialize(s);
  EXPECT_EQ(count(s, "token", "authorization_code"), 1) << json::serialize(s);
}

TEST_F(OAuthLogin, TheRedirectPastedEndsTheLogin) {
  start_fake();
  auto c = client();
  ASSERT_TRUE(c);
  json::object start = start_login(*c);
  ASSERT_FALSE(start.empty());
  // The browser is elsewhere: the address it was sent to is read, not followed.
  HttpAnswer a = http_request("GET", text(start, "url"));
  ASSERT_EQ(a.status, 302) << a.error << a.head << a.body;
  EXPECT_EQ(a.location.rfind(text(start, "redirect_uri") + "?", 0), 0u) << a.location;
  auto pasted = c->call("mcp/login/redirect", json::object{{"login", start.at("login")}, {"url", a.location}}, 30s);
  ASSERT_TRUE(pasted) << pasted.error().kind << ": " << pasted.error().message << "\n" << fake_out();
  auto done = c->call("mcp/login/wait", json::object{{"login", start.at("login")}}, 30s);
  ASSERT_TRUE(done) << done.error().kind << ": " << done.error().message << "\n" << fake_out();
  EXPECT_EQ(text(entry_in(*done, name), "state"), "running") << json::serialize(*done);
  json::object e = entry(*c);
  ASSERT_TRUE(e.contains("login")) << json::serialize(e);
  EXPECT_EQ(e.at("login").as_object().at("logged_in"), json::value(true));
}

TEST_F(OAuthLogin, TheWaitForTheRedirectIsBounded) {
  start_fake();
  auto c = client({{"OPPX_OAUTH_LOGIN_WAIT_MS", "300"}});
  ASSERT_TRUE(c);
  json::object start = start_login(*c);
  ASSERT_FALSE(start.empty());
  auto done = c->call("mcp/login/wait", json::object{{"login", start.at("login")}}, 20s);
  ASSERT_FALSE(done) << json::serialize(*done);
  EXPECT_EQ(done.error().kind, "login") << done.error().message;
  EXPECT_NE(done.error().message.find("no login came back"), std::string::npos) << done.error().message;
  EXPECT_NE(done.error().message.find("oppx mcp login " + name), std::string::npos) << done.error().message;
  EXPECT_EQ(count(stats(), "authorize"), 0);
}

TEST_F(OAuthLogin, APastedRedirectWithAnotherStateIsRefused) {
  start_fake();
  auto c = client();
  ASSERT_TRUE(c);
  json::object start = start_login(*c);
  ASSERT_FALSE(start.empty());
  HttpAnswer a = http_request("GET", text(start, "url"));
  ASSERT_EQ(a.status, 302) << a.error << a.head << a.body;
  std::string forged = std::regex_replace(a.location, std::regex("([?&]state=)[^&]*"), "$1forged-state");
  ASSERT_NE(forged, a.location);
  auto pasted = c->call("mcp/login/redirect", json::object{{"login", start.at("login")}, {"url", forged}}, 30s);
  ASSERT_FALSE(pasted) << json::serialize(*pasted);
  EXPECT_EQ(pasted.error().kind, "login") << pasted.error().message;
  auto done = c->call("mcp/login/wait", json::object{{"login", start.at("login")}}, 30s);
  EXPECT_FALSE(done) << "a login refused ends";
  json::object s = stats();
  EXPECT_EQ(count(s, "token", "authorization_code"), 0) << json::serialize(s);
  EXPECT_EQ(count(s, "token", "refresh_token"), 0) << json::serialize(s);
  EXPECT_NE(state(*c), "running");
}

TEST_F(OAuthLogin, ALogoutForgetsTheTokensAndTheConnectorAsksForALogin) {
  start_fake();
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_EQ(text(entry_in(login(*c), name), "state"), "running") << fake_out();
  ASSERT_FALSE(tokens_in(read_file(tokens_file())).empty());
  auto out = c->call("mcp/logout", json::object{{"name", name}}, 30s);
  ASSERT_TRUE(out) << out.error().kind << ": " << out.error().message;
  EXPECT_EQ(text(out->as_object(), "name"), name);
  EXPECT_GE(out->as_object().at("forgotten").as_int64(), 1) << json::serialize(*out);
  EXPECT_TRUE(when_connectors_change(home.socket(), [&] { return state(*c) == "login"; }))
      << json::serialize(entry(*c)) << "\n"
      << fake_out();
  std::string file = read_file(tokens_file());
  EXPECT_TRUE(tokens_in(file).empty()) << file;
  EXPECT_EQ(file.find(url()), std::string::npos) << file;
  json::object e = entry(*c);
  ASSERT_TRUE(e.contains("login")) << json::serialize(e);
  EXPECT_EQ(e.at("login").as_object().at("logged_in"), json::value(false));
}

// A redirect of /mcp to another origin: the request that follows it carries no token.
TEST_F(OAuthLogin, ATokenNeverFollowsARedirectToAnotherOrigin) {
  start_fake({"--redirect-mcp"});
  auto c = client();
  ASSERT_TRUE(c);
  login(*c);
  json::object s = stats();
  EXPECT_GE(count(s, "bearer", "main"), 1) << json::serialize(s);
  EXPECT_EQ(count(s, "bearer", "second"), 0) << json::serialize(s) << "\n" << fake_out();
}

}  // namespace
}  // namespace oppx::test
