// daemon/consent and the repository's .mcp.json, as a user meets them: a fresh clone runs and
// expands nothing, `oppx mcp approve` runs exactly what was shown, any change asks again (a
// swapped symlink too), the store survives kill -9 mid-write and two approvals at once, and a
// corrupt or unsafe store fails closed. A repository connector here is `sh -c` that leaves a
// marker file: the marker is the proof that it ran (or never did).
#include "tests/support/harness.h"

#include "cli/daemon_client.h"
#include "daemon/consent.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

void write_file(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  ::rename(tmp.c_str(), path.c_str());
}

struct Consent : ::testing::Test {
  TempHome home;
  std::string repo = home.root() + "/repo";
  std::string store = home.root() + "/state/oppx/mcp-approved.json";
  char old_cwd[4096] = {};

  void SetUp() override {
    ::mkdir(repo.c_str(), 0700);
    ::mkdir((repo + "/.git").c_str(), 0700);
    ::mkdir((repo + "/src").c_str(), 0700);
    // oppx is run from a subfolder: the repository root is found by its .git.
    ASSERT_NE(::getcwd(old_cwd, sizeof old_cwd), nullptr);
    ASSERT_EQ(::chdir((repo + "/src").c_str()), 0);
  }
  void TearDown() override {
    oppx({"daemon", "stop"});
    (void)!::chdir(old_cwd);
  }

  // A connector that, when it runs, writes `marker` (with whatever its argument expanded to)
  // and then serves MCP as the fake server does.
  static json::object marking(const std::string& marker, const std::string& arg = "ran") {
    return json::object{{"command", "/bin/sh"},
                        {"args", json::array{"-c", "echo \"$0\" > " + marker + "; exec " FAKE_MCP_SERVER " ok", arg}}};
  }
  void write_repo(const json::object& servers, const std::string& path = "") {
    write_file(path.empty() ? repo + "/.mcp.json" : path, json::serialize(json::object{{"mcpServers", servers}}));
  }
  json::object get(const std::string& name) {
    Result r = oppx({"mcp", "get", name, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out).as_object() : json::object{};
  }
  json::object list() {
    Result r = oppx({"mcp", "list", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out).as_object() : json::object{};
  }
  std::string state(const std::string& name) {
    auto o = get(name);
    return o.contains("state") ? std::string(o.at("state").as_string()) : "";
  }
  // A socket client that says hello with this process's environment and the repository as cwd.
  SyncClient client() {
    auto c = SyncClient::connect(home.socket());
    if (!c) {
      EXPECT_EQ(oppx({"daemon", "start"}).exit_code, 0);
      c = SyncClient::connect(home.socket());
    }
    EXPECT_TRUE(c);
    json::object env;
    for (char** e = environ; *e; ++e) {
      std::string kv(*e);
      env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    }
    EXPECT_TRUE(c->call("hello", json::object{{"protocol", 1}, {"env", env}, {"cwd", repo + "/src"}}, 5s));
    return std::move(*c);
  }
};

TEST_F(Consent, AFreshCloneRunsNothingAndExpandsNothing) {
  ::setenv("OPPX_TEST_CLONE_SECRET", "s3cr3t-from-env-1234", 1);
  std::string marker = repo + "/ran";
  // A repository cannot approve itself: no key in its files is read as trust.
  write_file(repo + "/.mcp.json",
             json::serialize(json::object{{"enableAllProjectMcpServers", true},
                                          {"approved", true},
                                          {"mcpServers", {{"clone", marking(marker, "${OPPX_TEST_CLONE_SECRET}")}}}}));
  ::mkdir((repo + "/.oppx").c_str(), 0700);
  write_file(repo + "/.oppx/mcp-approved.json",
             R"({"repositories":{")" + repo + R"(":{"clone":{"decision":"approve"}}}})");

  Result human = oppx({"mcp", "list"});
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("clone [repo]"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("waiting"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("oppx mcp approve clone"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("reads: ${OPPX_TEST_CLONE_SECRET}"), std::string::npos) << human.out;
  auto e = get("clone");
  EXPECT_EQ(e.at("state"), json::value("waiting"));
  EXPECT_EQ(e.at("source"), json::value("project"));
  EXPECT_EQ(e.at("root"), json::value(repo));
  EXPECT_EQ(e.at("consent"), json::value("none"));
  Result tools = oppx({"mcp", "tools", "clone"});
  EXPECT_EQ(tools.exit_code, 1);
  EXPECT_NE(tools.err.find("waiting"), std::string::npos) << tools.err;
  Result call = oppx({"mcp", "call", "clone", "echo"});
  EXPECT_EQ(call.exit_code, 1);
  Result reconnect = oppx({"mcp", "reconnect"});
  EXPECT_EQ(reconnect.exit_code, 0) << reconnect.err;

  EXPECT_FALSE(exists(marker)) << "a repository's command ran before consent";
  EXPECT_EQ(state("clone"), "waiting");
  for (const std::string& out :
       {human.out, human.err, json::serialize(e), tools.err, call.err, reconnect.out, home.read_log()}) {
    EXPECT_EQ(out.find("s3cr3t-from-env-1234"), std::string::npos) << "expanded before consent: " << out;
  }
}

TEST_F(Consent, ItsLiteralValuesCanBeReviewedUnmaskedAndReferencesStayReferences) {
  ::setenv("OPPX_TEST_REVIEW_SECRET", "s3cr3t-review-5678", 1);
  json::object def = marking(repo + "/ran");
  def["env"] = json::object{{"NODE_OPTIONS", "--require /tmp/evil-hook.js"},
                            {"TOKEN", "${OPPX_TEST_REVIEW_SECRET:-fallback-literal-99}"}};
  write_repo({{"helper", def}});
  // Masked by default, in the list and in get; the waiting reason says how to see them.
  Result human = oppx({"mcp", "list"});
  EXPECT_EQ(human.out.find("evil-hook"), std::string::npos) << human.out;
  EXPECT_EQ(human.out.find("fallback-literal"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("oppx mcp get helper --show-values"), std::string::npos) << human.out;
  // Asked for, they are shown as the file has them: the literal in full, the reference unexpanded.
  Result shown = oppx({"mcp", "get", "helper", "--show-values"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("NODE_OPTIONS=--require /tmp/evil-hook.js"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("TOKEN=${OPPX_TEST_REVIEW_SECRET:-fallback-literal-99}"), std::string::npos) << shown.out;
  Result as_json = oppx({"mcp", "get", "helper", "--show-values", "--json"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  auto e = json::parse(as_json.out).as_object();
  EXPECT_EQ(e.at("env").at("NODE_OPTIONS"), json::value("--require /tmp/evil-hook.js"));
  EXPECT_EQ(e.at("values"), json::value("as_written"));
  EXPECT_EQ(e.at("sha256"), get("helper").at("sha256"));
  for (const std::string& out : {shown.out, as_json.out, home.read_log()}) {
    EXPECT_EQ(out.find("s3cr3t-review-5678"), std::string::npos) << "expanded for review: " << out;
  }
  EXPECT_FALSE(exists(repo + "/ran"));
}

TEST_F(Consent, ApproveRunsExactlyWhatWasShownAndExpandsOnlyThen) {
  ::setenv("OPPX_TEST_VALUE", "expanded-at-start", 1);
  std::string marker = repo + "/ran";
  write_repo({{"tool", marking(marker, "${OPPX_TEST_VALUE}")}});
  EXPECT_EQ(state("tool"), "waiting");
  Result approve = oppx({"mcp", "approve", "tool"});
  ASSERT_EQ(approve.exit_code, 0) << approve.out << approve.err;
  EXPECT_NE(approve.out.find("Approved this definition:"), std::string::npos);
  EXPECT_NE(approve.out.find("/bin/sh -c"), std::string::npos) << approve.out;
  EXPECT_NE(approve.out.find("tool is running with"), std::string::npos) << approve.out;
  EXPECT_NE(approve.out.find("consent:  approved"), std::string::npos) << "what it is now: " << approve.out;
  EXPECT_EQ(read_file(marker), "expanded-at-start\n");
  auto e = get("tool");
  EXPECT_EQ(e.at("state"), json::value("running"));
  EXPECT_EQ(e.at("consent"), json::value("approved"));
  // Kept per root and name as the sha256 of the canonical definition, 0600.
  auto doc = json::parse(read_file(store));
  EXPECT_EQ(doc.at("repositories").at(repo).at("tool").at("sha256"), e.at("sha256"));
  struct stat st {};
  ASSERT_EQ(::stat(store.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A tool call reaches it through the repository (the cwd the CLI sent).
  Result call = oppx({"mcp", "call", "tool", "echo", R"({"text":"hi"})"});
  EXPECT_EQ(call.exit_code, 0) << call.err;
  // Deny stops it and keeps it waiting.
  Result deny = oppx({"mcp", "deny", "tool"});
  EXPECT_EQ(deny.exit_code, 0) << deny.err;
  auto denied = get("tool");
  EXPECT_EQ(denied.at("state"), json::value("waiting"));
  EXPECT_EQ(denied.at("consent"), json::value("denied"));
}

// Each variant changes one thing of an approved definition; each must ask again.
TEST_F(Consent, AnyChangeToTheDefinitionAsksAgain) {
  std::string marker = repo + "/ran";
  json::object base = marking(marker);
  base["env"] = json::object{{"A", "1"}};
  // Port 9 (discard) on loopback: refused at once, wherever the HTTP transport stands.
  json::object http{{"type", "http"}, {"url", "http://127.0.0.1:9/mcp"}, {"headers", {{"X-Key", "one"}}}};
  struct Change {
    std::string what;
    bool stdio;  // which of the two it changes
    std::function<void(json::object&, json::object&)> apply;
  };
  std::vector<Change> changes = {
      {"command", true, [](json::object& s, json::object&) { s["command"] = "/bin/bash"; }},
      {"args", true, [](json::object& s, json::object&) { s["args"].as_array().push_back("extra"); }},
      {"env value", true, [](json::object& s, json::object&) { s["env"].as_object()["A"] = "2"; }},
      {"env key", true, [](json::object& s, json::object&) { s["env"].as_object()["B"] = "1"; }},
      {"key order", true,
       [](json::object& s, json::object&) {
         json::object r;
         for (auto it = s.end(); it != s.begin();) {
           --it;
           r[it->key()] = it->value();
         }
         s = r;
       }},
      {"url", false, [](json::object&, json::object& h) { h["url"] = "http://127.0.0.1:9/mcp2"; }},
      {"header", false, [](json::object&, json::object& h) { h["headers"].as_object()["X-Key"] = "onf"; }},
  };
  for (auto& [what, stdio_changed, change] : changes) {
    SCOPED_TRACE(what);
    write_repo({{"stdio", base}, {"web", http}});
    for (const char* name : {"stdio", "web"}) {
      Result a = oppx({"mcp", "approve", name});
      EXPECT_NE(a.out.find("Approved"), std::string::npos) << a.out << a.err;
      EXPECT_EQ(get(name).at("consent"), json::value("approved"));
    }
    ASSERT_EQ(state("stdio"), "running");
    json::object s = base, h = http;
    change(s, h);
    write_repo({{"stdio", s}, {"web", h}});
    EXPECT_EQ(state(stdio_changed ? "stdio" : "web"), "waiting");
    auto changed = get(stdio_changed ? "stdio" : "web");
    EXPECT_EQ(changed.at("consent"), json::value("changed"));
    EXPECT_NE(std::string(changed.at("reason").as_string()).find("its definition changed since you approved it"),
              std::string::npos)
        << changed.at("reason");
    EXPECT_EQ(get(stdio_changed ? "web" : "stdio").at("consent"), json::value("approved"));
  }
}

// Consent covers the files of the repository that a connector runs (its command, and arguments
// that name a file there): a `git pull` that changes one makes it wait again, naming the file;
// approving again runs the new one; the same bytes written again change nothing.
TEST_F(Consent, AChangedFileItRunsAsksAgain) {
  ::mkdir((repo + "/bin").c_str(), 0700);
  ::mkdir((repo + "/tools").c_str(), 0700);
  auto program = [&](const std::string& path, const std::string& version) {
    write_file(path, "#!/bin/sh\necho " + version + " >> " + path + ".ran\nexec " FAKE_MCP_SERVER " ok\n");
    ::chmod(path.c_str(), 0755);
  };
  std::string server = repo + "/bin/server", script = repo + "/tools/server.sh";
  program(server, "v1");
  program(script, "v1");
  write_repo({{"direct", {{"command", "./bin/server"}}},
              {"script", {{"command", "/bin/sh"}, {"args", {"tools/server.sh", "-v"}}}}});
  auto shown = get("direct");
  ASSERT_EQ(shown.at("files").as_array().size(), 1u) << shown;
  EXPECT_EQ(shown.at("files").at(0).at("path"), json::value("bin/server"));
  EXPECT_EQ(shown.at("files").at(0).at("sha256"), json::value(daemon::sha256_hex(read_file(server))));
  EXPECT_EQ(get("script").at("files").at(0).at("path"), json::value("tools/server.sh"));
  EXPECT_NE(oppx({"mcp", "list"}).out.find("    runs: tools/server.sh\n"), std::string::npos);
  Result human = oppx({"mcp", "get", "direct"});
  EXPECT_NE(human.out.find("runs:     bin/server (sha256 " + daemon::sha256_hex(read_file(server)) + ")"),
            std::string::npos)
      << human.out;
  for (const char* name : {"direct", "script"}) {
    Result a = oppx({"mcp", "approve", name});
    ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
    EXPECT_NE(a.out.find("runs:"), std::string::npos) << a.out;
  }
  EXPECT_EQ(read_file(server + ".ran"), "v1\n");
  EXPECT_EQ(read_file(script + ".ran"), "v1\n");
  auto doc = json::parse(read_file(store));
  EXPECT_EQ(doc.at("repositories").at(repo).at("direct").at("files").at("bin/server"),
            json::value(daemon::sha256_hex(read_file(server))));

  // A pull changes the program: it stops and waits, saying which file; the other runs on.
  program(server, "v2");
  auto changed = get("direct");
  EXPECT_EQ(changed.at("state"), json::value("waiting"));
  EXPECT_EQ(changed.at("consent"), json::value("changed"));
  EXPECT_NE(std::string(changed.at("reason").as_string()).find("bin/server changed since you approved it"),
            std::string::npos)
      << changed.at("reason");
  EXPECT_EQ(oppx({"mcp", "reconnect", "direct"}).exit_code, 1);
  EXPECT_EQ(read_file(server + ".ran"), "v1\n") << "the changed program ran without consent";
  // The same bytes written again (a checkout that rewrites it) keep the other running as it was.
  program(script, "v1");
  EXPECT_EQ(state("script"), "running");
  EXPECT_EQ(get("script").at("consent"), json::value("approved"));
  EXPECT_EQ(read_file(script + ".ran"), "v1\n");

  // Approving what it shows now does not take a file changed after it was shown.
  auto c = client();
  auto stale = c.call(
      "consent/approve",
      json::object{
          {"name", "direct"}, {"sha256", changed.at("sha256")}, {"files", {{"bin/server", std::string(64, '0')}}}},
      10s);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().kind, "changed");
  EXPECT_NE(stale.error().message.find("bin/server changed since it was shown"), std::string::npos)
      << stale.error().message;
  EXPECT_EQ(state("direct"), "waiting");
  // Approved again, the new one runs.
  Result again = oppx({"mcp", "approve", "direct"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(state("direct"), "running");
  EXPECT_EQ(read_file(server + ".ran"), "v1\nv2\n");
}

TEST_F(Consent, ASwappedSymlinkNeverRunsWhatWasNotApproved) {
  std::string a = repo + "/a.json", b = repo + "/b.json", marker_a = repo + "/ran-a", marker_b = repo + "/ran-b";
  write_repo({{"tool", marking(marker_a)}}, a);
  write_repo({{"tool", marking(marker_b)}}, b);
  ASSERT_EQ(::symlink("a.json", (repo + "/.mcp.json").c_str()), 0);
  std::string shown = std::string(get("tool").at("sha256").as_string());
  // Swapped between what the user saw and the approval: the approval of A must not run B.
  std::string link_tmp = repo + "/.mcp.json.new";
  ASSERT_EQ(::symlink("b.json", link_tmp.c_str()), 0);
  ASSERT_EQ(::rename(link_tmp.c_str(), (repo + "/.mcp.json").c_str()), 0);
  auto c = client();
  auto r = c.call("consent/approve", json::object{{"name", "tool"}, {"sha256", shown}}, 10s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "changed") << r.error().message;
  EXPECT_FALSE(exists(marker_b));
  EXPECT_EQ(state("tool"), "waiting");

  // Approved and running A; then swapped to B: B waits and A stops.
  ASSERT_EQ(::symlink("a.json", link_tmp.c_str()), 0);
  ASSERT_EQ(::rename(link_tmp.c_str(), (repo + "/.mcp.json").c_str()), 0);
  ASSERT_EQ(oppx({"mcp", "approve", "tool"}).exit_code, 0);
  EXPECT_TRUE(exists(marker_a));
  ASSERT_EQ(::symlink("b.json", link_tmp.c_str()), 0);
  ASSERT_EQ(::rename(link_tmp.c_str(), (repo + "/.mcp.json").c_str()), 0);
  EXPECT_EQ(state("tool"), "waiting");
  EXPECT_FALSE(exists(marker_b)) << "the swapped-in definition ran without consent";
}

TEST_F(Consent, ACorruptStoreFailsClosedAndIsMovedAside) {
  std::string marker = repo + "/ran";
  write_repo({{"tool", marking(marker)}});
  ASSERT_EQ(oppx({"mcp", "approve", "tool"}).exit_code, 0);
  ASSERT_EQ(state("tool"), "running");
  std::string good = read_file(store);
  write_file(store, good.substr(0, good.size() / 2));  // torn
  ::chmod(store.c_str(), 0600);
  Result human = oppx({"mcp", "list"});
  EXPECT_NE(human.err.find("is not valid JSON"), std::string::npos) << human.err;
  EXPECT_NE(human.err.find("moved aside to " + store + ".bad-"), std::string::npos) << human.err;
  EXPECT_NE(human.err.find("nothing in it counts as approved"), std::string::npos) << human.err;
  EXPECT_EQ(state("tool"), "waiting") << "a connector approved in a corrupt store must stop";
  EXPECT_FALSE(exists(store));
  EXPECT_NE(home.read_log().find("moved aside"), std::string::npos);
  // Approving again writes a fresh store.
  ASSERT_EQ(oppx({"mcp", "approve", "tool"}).exit_code, 0);
  EXPECT_EQ(state("tool"), "running");
  EXPECT_EQ(list().contains("consent_error"), false);
}

TEST_F(Consent, AnUnsafeStoreFailsClosed) {
  std::string marker = repo + "/ran";
  write_repo({{"tool", marking(marker)}});
  ASSERT_EQ(oppx({"mcp", "approve", "tool"}).exit_code, 0);
  ::chmod(store.c_str(), 0644);  // another user could have written it
  auto l = list();
  ASSERT_TRUE(l.contains("consent_error"));
  EXPECT_NE(std::string(l.at("consent_error").as_string()).find("mode 0644"), std::string::npos);
  EXPECT_EQ(state("tool"), "waiting");

  // A symlink in its place is not followed.
  ASSERT_EQ(oppx({"mcp", "approve", "tool"}).exit_code, 0);
  std::string elsewhere = home.root() + "/elsewhere.json";
  ::rename(store.c_str(), elsewhere.c_str());
  ASSERT_EQ(::symlink(elsewhere.c_str(), store.c_str()), 0);
  l = list();
  ASSERT_TRUE(l.contains("consent_error"));
  EXPECT_NE(std::string(l.at("consent_error").as_string()).find("symbolic link"), std::string::npos);
  EXPECT_EQ(state("tool"), "waiting");
}

TEST_F(Consent, TwoClientsApprovingAtOnceBothSurvive) {
  json::object servers;
  for (int i = 0; i < 6; ++i) servers["c" + std::to_string(i)] = marking(repo + "/ran" + std::to_string(i));
  write_repo(servers);
  ASSERT_EQ(list().at("connectors").as_array().size(), 6u);
  std::vector<Process> runs;
  for (int i = 0; i < 6; ++i)
    runs.emplace_back(std::vector<std::string>{OPPX_BIN, "mcp", "approve", "c" + std::to_string(i)});
  for (auto& p : runs) EXPECT_EQ(p.wait(30s).exit_code, 0) << p.err();
  auto doc = json::parse(read_file(store));
  EXPECT_EQ(doc.at("repositories").at(repo).as_object().size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(state("c" + std::to_string(i)), "running");
}

TEST_F(Consent, Kill9MidWriteLeavesTheOldOrTheNewFile) {
  // An HTTP connector on a closed loopback port: approving it spawns nothing, so the daemon is
  // killed in the middle of store writes and not of a child's start.
  write_repo({{"tool", marking(repo + "/ran")}, {"other", {{"type", "http"}, {"url", "http://127.0.0.1:9/mcp"}}}});
  // Unknown keys are kept across every write.
  ::mkdir((home.root() + "/state").c_str(), 0700);
  ::mkdir((home.root() + "/state/oppx").c_str(), 0700);
  write_file(store, R"({"future_key":{"x":1},"repositories":{}})");
  ::chmod(store.c_str(), 0600);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    std::string sha = std::string(get("other").at("sha256").as_string());
    auto pid = daemon_pid(home.socket());
    ASSERT_TRUE(pid);
    std::string why =
        kill_daemon_mid_writes(client(), static_cast<pid_t>(*pid), 20 + round * 7, [&sha](SyncClient& c, int i) {
          auto r =
              c.call(i % 2 ? "consent/approve" : "consent/deny", json::object{{"name", "other"}, {"sha256", sha}}, 5s);
          return r ? std::string() : r.error().message;
        });
    ASSERT_EQ(why, "");
    boost::system::error_code ec;
    json::value doc = json::parse(read_file(store), ec);
    ASSERT_FALSE(ec) << "torn store after kill -9: " << read_file(store);
    EXPECT_EQ(doc.at("future_key"), json::parse(R"({"x":1})"));
    EXPECT_TRUE(doc.at("repositories").at(repo).as_object().contains("other"));
    EXPECT_TRUE(cli::wait_for_exit(*pid, 10s));
  }
}

TEST_F(Consent, TheUsersDefinitionWinsAndTheRepositorysIsShownHidden) {
  std::string dir = home.root() + "/config/oppx";
  ::mkdir((home.root() + "/config").c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  write_file(
      dir + "/mcp.json",
      json::serialize(json::object{{"mcpServers", {{"shared", {{"command", FAKE_MCP_SERVER}, {"args", {"ok"}}}}}}}));
  ::chmod((dir + "/mcp.json").c_str(), 0600);
  write_repo({{"shared", marking(repo + "/ran")}});
  auto l = list();
  int seen = 0;
  for (auto& c : l.at("connectors").as_array()) {
    if (c.at("name") != json::value("shared")) continue;
    ++seen;
    if (c.at("source") == json::value("project")) {
      EXPECT_EQ(c.at("hidden_by"), json::value("user"));
    } else {
      EXPECT_FALSE(c.as_object().contains("hidden_by"));
    }
  }
  EXPECT_EQ(seen, 2);
  auto e = get("shared");
  EXPECT_EQ(e.at("source"), json::value("user"));
  EXPECT_EQ(e.at("hides").at("source"), json::value("project"));
  // Approving the hidden one is refused, and nothing says it was approved; it never runs while
  // yours has the name.
  Result approve = oppx({"mcp", "approve", "shared"});
  ASSERT_EQ(approve.exit_code, 1);
  EXPECT_EQ(approve.out.find("Approved"), std::string::npos) << approve.out;
  EXPECT_NE(approve.err.find("hidden by your own connector"), std::string::npos) << approve.err;
  Result deny = oppx({"mcp", "deny", "shared"});
  EXPECT_NE(deny.out.find("state:    hidden"), std::string::npos) << deny.out;
  EXPECT_NE(deny.out.find("stays off while your own connector of that name exists"), std::string::npos) << deny.out;
  EXPECT_FALSE(exists(repo + "/ran"));
}

TEST_F(Consent, YourConnectorAddedElsewhereHidesARunningRepositoryOne) {
  write_repo({{"shared", marking(repo + "/ran")}});
  ASSERT_EQ(oppx({"mcp", "approve", "shared"}).exit_code, 0);
  ASSERT_EQ(state("shared"), "running");
  // Added from another folder: this repository's set is worked out again at its next request.
  ASSERT_EQ(::chdir(home.root().c_str()), 0);
  ASSERT_EQ(oppx({"mcp", "add", "shared", "--", FAKE_MCP_SERVER, "ok"}).exit_code, 0);
  ASSERT_EQ(::chdir(repo.c_str()), 0);
  auto l = list();
  for (auto& c : l.at("connectors").as_array()) {
    if (c.at("source") == json::value("project")) {
      EXPECT_EQ(c.at("hidden_by"), json::value("user"));
      EXPECT_EQ(c.at("state"), json::value("hidden"));
    }
  }
  EXPECT_EQ(get("shared").at("source"), json::value("user"));
  // Removing yours shows the repository's again, still approved: it starts (mcp/list waits).
  ASSERT_EQ(oppx({"mcp", "remove", "shared"}).exit_code, 0);
  auto c = client();
  auto settled = c.call("mcp/list", json::object{{"wait", true}}, 30s);
  ASSERT_TRUE(settled) << settled.error().message;
  const json::array& all = settled->at("connectors").as_array();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].at("source"), json::value("project"));
  EXPECT_EQ(all[0].at("state"), json::value("running"));
}

TEST_F(Consent, ApprovingNeedsARepositoryConnectorAndTheHashShown) {
  write_repo({{"tool", marking(repo + "/ran")}});
  Result unknown = oppx({"mcp", "approve", "nope"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no connector named nope"), std::string::npos) << unknown.err;
  auto c = client();
  auto r = c.call("consent/approve", json::object{{"name", "tool"}}, 5s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "invalid_params");
  EXPECT_NE(r.error().message.find("sha256"), std::string::npos);
  EXPECT_FALSE(exists(repo + "/ran"));
}

TEST_F(Consent, AnApprovedConnectorWithAnUnsetOrMultilineVariableDoesNotStart) {
  ::unsetenv("OPPX_TEST_NOT_SET");
  ::setenv("OPPX_TEST_TWO_LINES", "first\r\nsecond-line-value", 1);
  write_repo({{"unset", marking(repo + "/ran1", "${OPPX_TEST_NOT_SET}")},
              {"crlf", marking(repo + "/ran2", "${OPPX_TEST_TWO_LINES}")}});
  Result a = oppx({"mcp", "approve", "unset"});
  EXPECT_EQ(a.exit_code, 1);
  EXPECT_NE(a.out.find("${OPPX_TEST_NOT_SET}"), std::string::npos) << a.out;
  Result b = oppx({"mcp", "approve", "crlf"});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.out.find("it reads ${OPPX_TEST_TWO_LINES}, whose value in the environment of the oppx command that "
                       "started it holds a line break or NUL"),
            std::string::npos)
      << b.out;
  EXPECT_EQ(b.out.find("not set"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find("second-line-value"), std::string::npos);
  EXPECT_EQ(home.read_log().find("second-line-value"), std::string::npos);
  EXPECT_FALSE(exists(repo + "/ran1"));
  EXPECT_FALSE(exists(repo + "/ran2"));
}

// A repository connector's "cwd" may not lead out of the repository (by "..", an absolute path,
// a symlink committed in it, or a variable): what runs there could be neither shown nor hashed.
// Set aside before consent, approving it runs nothing; a folder inside still waits as before, and
// the user's own connectors may run wherever they say.
TEST_F(Consent, AFolderOutsideTheRepositoryIsUnsupported) {
  std::string outside = home.root() + "/outside";
  ::mkdir(outside.c_str(), 0700);
  ASSERT_EQ(::symlink(outside.c_str(), (repo + "/escape").c_str()), 0);
  auto in = [](const std::string& cwd, const std::string& marker) {
    json::object def = marking(marker);
    def["cwd"] = cwd;
    return def;
  };
  write_repo({{"up", in("..", repo + "/ran-up")},
              {"absolute", in(outside, repo + "/ran-absolute")},
              {"linked", in("escape", repo + "/ran-linked")},
              {"linked-up", in("escape/../outside", repo + "/ran-linked-up")},
              {"variable", in("${HOME}", repo + "/ran-variable")},
              {"inside", in("src", "ran-inside")}});  // its marker is written in the folder it runs in
  for (const char* name : {"up", "absolute", "linked", "linked-up", "variable"}) {
    auto e = get(name);
    EXPECT_EQ(e.at("state"), json::value("unsupported")) << name << ": " << json::serialize(e);
    std::string reason = e.contains("reason") ? std::string(e.at("reason").as_string()) : "";
    EXPECT_NE(reason.find(std::string("mcpServers.") + name + ".cwd: "), std::string::npos) << reason;
    EXPECT_NE(reason.find(std::string(name) == "variable" ? "from a variable" : "outside the repository " + repo),
              std::string::npos)
        << reason;
    EXPECT_NE(json::serialize(e).find("Remove \\\"cwd\\\""), std::string::npos) << json::serialize(e);
    Result approve = oppx({"mcp", "approve", name});
    EXPECT_EQ(state(name), "unsupported") << approve.out << approve.err;
  }
  EXPECT_NE(oppx({"mcp", "list"}).out.find("outside the repository"), std::string::npos);
  EXPECT_EQ(state("inside"), "waiting");
  Result approve = oppx({"mcp", "approve", "inside"});
  EXPECT_EQ(approve.exit_code, 0) << approve.out << approve.err;
  EXPECT_EQ(state("inside"), "running");
  for (const char* marker : {"ran-up", "ran-absolute", "ran-linked", "ran-linked-up", "ran-variable"})
    EXPECT_FALSE(exists(repo + "/" + marker)) << marker << ": a connector ran outside its repository";
  EXPECT_TRUE(exists(repo + "/src/ran-inside"));

  // The user's own connector runs in the folder it names, outside any repository.
  std::string dir = home.root() + "/config/oppx";
  ::mkdir((home.root() + "/config").c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  json::object mine = marking("ran-mine");  // written in the folder it runs in
  mine["cwd"] = outside;
  write_file(dir + "/mcp.json", json::serialize(json::object{{"mcpServers", {{"mine", mine}}}}));
  ::chmod((dir + "/mcp.json").c_str(), 0600);
  EXPECT_NE(state("mine"), "unsupported");
  EXPECT_TRUE(when_files_change(outside, [&] { return exists(outside + "/ran-mine"); }));
}

// A link the folder went through when it was approved, pointed elsewhere afterwards: the next
// start checks the folder again and holds the connector.
TEST_F(Consent, AFolderLinkRetargetedOutsideAfterApprovalHoldsTheNextStart) {
  std::string outside = home.root() + "/outside";
  ::mkdir(outside.c_str(), 0700);
  ::mkdir((repo + "/src").c_str(), 0700);
  ASSERT_EQ(::symlink((repo + "/src").c_str(), (repo + "/moving").c_str()), 0);
  json::object def = marking("ran-moving");
  def["cwd"] = "moving";
  write_repo({{"moving", def}});
  // Review shows the folder it runs in.
  EXPECT_NE(oppx({"mcp", "list"}).out.find("    cwd: moving\n"), std::string::npos) << oppx({"mcp", "list"}).out;
  EXPECT_NE(oppx({"mcp", "get", "moving"}).out.find("  cwd:      moving\n"), std::string::npos);
  EXPECT_EQ(get("moving").at("cwd"), json::value("moving"));
  ASSERT_EQ(oppx({"mcp", "approve", "moving"}).exit_code, 0);
  EXPECT_EQ(state("moving"), "running");
  ASSERT_EQ(::unlink((repo + "/moving").c_str()), 0);
  ASSERT_EQ(::symlink(outside.c_str(), (repo + "/moving").c_str()), 0);
  Result r = oppx({"mcp", "reconnect", "moving"});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(state("moving"), "running");
  EXPECT_NE(json::serialize(get("moving")).find("outside the repository"), std::string::npos)
      << json::serialize(get("moving"));
  EXPECT_FALSE(exists(outside + "/ran-moving")) << "it ran outside its repository";
}

TEST_F(Consent, AFifoOrDeviceAsMcpJsonIsAnErrorNotAHang) {
  ASSERT_EQ(::mkfifo((repo + "/.mcp.json").c_str(), 0600), 0);
  auto l = list();
  ASSERT_TRUE(l.contains("project"));
  EXPECT_NE(std::string(l.at("project").at("error").as_string()).find("not a regular file"), std::string::npos);
  ::unlink((repo + "/.mcp.json").c_str());
  ASSERT_EQ(::symlink("/dev/zero", (repo + "/.mcp.json").c_str()), 0);
  l = list();
  EXPECT_NE(std::string(l.at("project").at("error").as_string()).find("not a regular file"), std::string::npos);
}

TEST(RepositoryRoot, IsTheNearestFolderWithGitElseTheFolder) {
  TempHome home;
  std::string r = home.root() + "/r";
  ::mkdir(r.c_str(), 0700);
  ::mkdir((r + "/a").c_str(), 0700);
  ::mkdir((r + "/a/b").c_str(), 0700);
  EXPECT_EQ(daemon::repository_root(r + "/a/b"), r + "/a/b");
  ::mkdir((r + "/.git").c_str(), 0700);
  EXPECT_EQ(daemon::repository_root(r + "/a/b"), r);
  EXPECT_EQ(daemon::repository_root(r + "/a/b/"), r);
  std::ofstream(r + "/a/.git") << "gitdir: ../.git/worktrees/a\n";  // a worktree or submodule
  EXPECT_EQ(daemon::repository_root(r + "/a/b"), r + "/a");
}

TEST(FilesItRuns, AreTheCommandAndArgumentsThatNameAFileUnderTheRoot) {
  TempHome home;
  std::string r = home.root() + "/r";
  for (const char* d : {"", "/bin", "/sub", "/sub/lib"}) ::mkdir((r + d).c_str(), 0700);
  for (const char* f : {"/bin/server", "/main.py", "/sub/lib/x.js", "/sub/y.js", "/notes.db", "/tool"})
    std::ofstream(r + f) << "x";
  ::chmod((r + "/tool").c_str(), 0755);
  std::ofstream(home.root() + "/outside.py") << "x";
  daemon::ConnectorDef def;
  def.file = r + "/.mcp.json";
  def.command = "./bin/server";
  // Data it is given (notes.db, which it may write at every run) is not what runs; a program is.
  def.args = {"main.py",       "--flag",        "missing.py", "../outside.py", "${DIR}/main.py", "bin", "./main.py",
              "/etc/hostname", r + "/sub/y.js", "notes.db",   "tool"};
  EXPECT_EQ(daemon::files_it_runs(def, r), (std::vector<std::string>{"bin/server", "main.py", "sub/y.js", "tool"}));
  // A program found on PATH is not the repository's; a "cwd" moves where the arguments are taken from.
  def.command = "python3";
  def.cwd = "sub";
  def.args = {"lib/x.js", "../main.py", "main.py"};
  EXPECT_EQ(daemon::files_it_runs(def, r), (std::vector<std::string>{"sub/lib/x.js", "main.py"}));
  def.kind = daemon::ConnectorDef::Kind::kHttp;
  EXPECT_TRUE(daemon::files_it_runs(def, r).empty());
}

TEST(FilesItRuns, AChangeNamesTheFile) {
  daemon::FileHashes approved{{"a", "1"}, {"b", "2"}};
  EXPECT_EQ(daemon::file_change(approved, approved, "since then"), "");
  EXPECT_EQ(daemon::file_change(approved, {{"a", "1"}, {"b", "3"}}, "since then"), "b changed since then");
  EXPECT_EQ(daemon::file_change(approved, {{"a", "1"}}, "since then"), "b is gone since then");
  EXPECT_EQ(daemon::file_change(approved, {{"a", "1"}, {"b", "2"}, {"c", "4"}}, "since then"), "c appeared since then");
}

TEST(ConsentHash, IsTheSha256OfTheCanonicalText) {
  EXPECT_EQ(daemon::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace oppx::test
