// oppx mcp add|add-json|remove as a user runs them: the daemon writes mcp.json (0600, atomic,
// other keys and entries kept, 2-space JSON) and .mcp.json (--project, which counts as consent);
// bad names, URLs and values with line breaks are refused; secrets never show; and the probe
// against a scripted model server (tests/support/fake_model_server.js) and without one.
#include "tests/support/harness.h"

#include "cli/daemon_client.h"
#include "common/tool_text.h"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <thread>

#include <dirent.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 0777 : 0;
}

struct McpAdd : ::testing::Test {
  TempHome home;
  std::string config = home.root() + "/config/oppx/mcp.json";
  std::string repo = home.root() + "/repo";
  char old_cwd[4096] = {};

  void SetUp() override {
    ::mkdir(repo.c_str(), 0700);
    ::mkdir((repo + "/.git").c_str(), 0700);
    ASSERT_NE(::getcwd(old_cwd, sizeof old_cwd), nullptr);
    ASSERT_EQ(::chdir(repo.c_str()), 0);
    ::unsetenv("OPPX_SERVER");
  }
  void TearDown() override {
    oppx({"daemon", "stop"});
    (void)!::chdir(old_cwd);
  }
  void write_config(const std::string& text, mode_t mode) {
    ::mkdir((home.root() + "/config").c_str(), 0700);
    ::mkdir((home.root() + "/config/oppx").c_str(), 0700);
    std::ofstream(config) << text;
    ::chmod(config.c_str(), mode);
  }
  json::object servers(const std::string& path) { return json::parse(read_file(path)).at("mcpServers").as_object(); }
  // An executable shell script in the temp home's bin: a stand-in for a program (npx, mcp-remote).
  std::string script(const std::string& name, const std::string& body) {
    std::string dir = home.root() + "/bin";
    ::mkdir(dir.c_str(), 0700);
    std::string path = dir + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ::chmod(path.c_str(), 0700);
    return path;
  }
  // The entry of `oppx mcp list --json` named `name` (an empty object when there is none).
  json::object listed(const std::string& name) {
    json::value v = json::parse(oppx({"mcp", "list", "--json"}).out);
    for (auto& c : v.at("connectors").as_array()) {
      if (c.at("name") == json::value(name)) return c.as_object();
    }
    return {};
  }
};

TEST_F(McpAdd, WritesTheUsersFile0600KeepingWhatItDoesNotKnow) {
  write_config(R"({"future":{"x":[1,2]},"mcpServers":{"keep":{"command":"/bin/true","extra":"kept"}}})", 0600);
  Result r = oppx(
      {"mcp", "add", "linear", "--url", "https://mcp.linear.app/mcp", "-H", "Authorization: Bearer ${LINEAR_API_KEY}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Added linear in " + config), std::string::npos) << r.out;
  std::string text = read_file(config);
  EXPECT_EQ(mode_of(config), 0600u);
  auto doc = json::parse(text).as_object();
  EXPECT_EQ(doc.at("future"), json::parse(R"({"x":[1,2]})"));
  EXPECT_EQ(doc.at("mcpServers").at("keep"), json::parse(R"({"command":"/bin/true","extra":"kept"})"));
  // Written as given: the reference stays a reference, expanded only at start.
  EXPECT_EQ(doc.at("mcpServers").at("linear"), json::parse(R"({"type":"http","url":"https://mcp.linear.app/mcp",
                            "headers":{"Authorization":"Bearer ${LINEAR_API_KEY}"}})"));
  EXPECT_NE(text.find("{\n  \"future\": {\n    \"x\": [\n      1,"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');

  // A stdio one with -e, and add-json with a pasted block.
  Result s = oppx({"mcp", "add", "fs", "-e", "ROOT=/tmp", "--", FAKE_MCP_SERVER, "ok", "--json"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(servers(config).at("fs"), json::parse(std::string(R"({"command":")") + FAKE_MCP_SERVER +
                                                  R"(","args":["ok","--json"],"env":{"ROOT":"/tmp"}})"));
  // After `--` everything is the command's own, --help included.
  Result h = oppx({"mcp", "add", "helpful", "--", FAKE_MCP_SERVER, "ok", "--help"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(servers(config).at("helpful").at("args"), json::parse(R"(["ok","--help"])"));
  Result j = oppx({"mcp", "add-json", "pasted",
                   std::string(R"({"mcpServers":{"pasted":{"command":")") + FAKE_MCP_SERVER + R"("}}})"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(servers(config).size(), 5u);
}

TEST_F(McpAdd, SymlinksAreFollowedForYourFileButNeverInARepository) {
  // Yours may be a link into your dotfiles: the edit goes to the target and the link stays.
  std::string dotfiles = home.root() + "/dotfiles-mcp.json";
  std::ofstream(dotfiles) << R"({"mcpServers":{"keep":{"command":"/bin/true"}}})";
  ::chmod(dotfiles.c_str(), 0600);
  ::mkdir((home.root() + "/config").c_str(), 0700);
  ::mkdir((home.root() + "/config/oppx").c_str(), 0700);
  ASSERT_EQ(::symlink(dotfiles.c_str(), config.c_str()), 0);
  ASSERT_EQ(oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"}).exit_code, 0);
  struct stat st {};
  ASSERT_EQ(::lstat(config.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(servers(dotfiles).size(), 2u);
  // A repository's link could point anywhere (your own files): refused, nothing written.
  std::string outside = home.root() + "/outside.json";
  std::ofstream(outside) << R"({"mcpServers":{}})";
  ASSERT_EQ(::symlink(outside.c_str(), (repo + "/.mcp.json").c_str()), 0);
  Result r = oppx({"mcp", "add", "--project", "two", "--", FAKE_MCP_SERVER, "ok"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is a symbolic link; oppx does not write through links in a repository"), std::string::npos)
      << r.err;
  EXPECT_EQ(read_file(outside), R"({"mcpServers":{}})");
}

TEST_F(McpAdd, AFileReadableByOthersIsWrittenBack0600WithAWarning) {
  write_config(R"({"mcpServers":{}})", 0644);
  Result r = oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("was readable by others (mode 0644)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("`chmod 600 " + config + "`"), std::string::npos) << r.err;
  EXPECT_EQ(mode_of(config), 0600u);
}

TEST_F(McpAdd, AnExistingNameNeedsForce) {
  ASSERT_EQ(oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"}).exit_code, 0);
  Result again = oppx({"mcp", "add", "one", "--", "/bin/other"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already has a connector named one; to replace it, add --force"), std::string::npos)
      << again.err;
  EXPECT_EQ(servers(config).at("one").at("command"), json::value(FAKE_MCP_SERVER));
  Result forced = oppx({"mcp", "add", "--force", "one", "--", FAKE_MCP_SERVER, "ok", "x"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.out.find("Replaced one"), std::string::npos);
  EXPECT_EQ(servers(config).at("one").at("args"), json::parse(R"(["ok","x"])"));
}

TEST_F(McpAdd, BadNamesUrlsAndLineBreaksAreRefused) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  std::vector<Case> cases = {
      {{"mcp", "add", "my server", "--", "/bin/true"}, "\"my server\" cannot be used: it holds a space"},
      {{"mcp", "add", "a/b", "--", "/bin/true"}, "\"a/b\" cannot be used: it holds a slash"},
      {{"mcp", "add", "../x", "--", "/bin/true"}, "a name may hold only letters, digits, '-' and '_'"},
      {{"mcp", "add", "web", "--url", "ftp://example.com/mcp"}, "must start with https:// (or http://)"},
      {{"mcp", "add", "web", "--url", "file:///etc/passwd"}, "must start with https:// (or http://)"},
      {{"mcp", "add", "web", "--url", "https://x/mcp", "-H", "X-A: one\r\nX-Evil: two"}, "line break"},
      {{"mcp", "add", "cmd", "-e", "K=a\nb", "--", "/bin/true"}, "the value of K of cmd holds a line break"},
      {{"mcp", "add", "cmd", "--", "/bin/true", "a\rb"}, "an argument of cmd holds a line break"},
      // URLs that could never work are refused at add, not saved to fail later.
      {{"mcp", "add", "web", "--url", "http://"}, "the URL of web cannot be used: it has no host"},
      {{"mcp", "add", "web", "--url", "https://exa mple.com/mcp"}, "it holds a space (write it as %20)"},
      {{"mcp", "add", "web", "--url", "http://127.0.0.1:99999/mcp"}, "its port 99999 is not between 1 and 65535"},
      {{"mcp", "add", "cmd", "-e", "A B=x", "--", "/bin/true"}, "the environment variable name \"A B\" of cmd"},
      {{"mcp", "add", "cmd", "-e", "A=1", "-e", "A=2", "--", "/bin/true"}, "-e A is given twice"},
      {{"mcp", "add", "web", "--url", "https://x/mcp", "-H", "X-A: 1", "-H", "X-A: 2"}, "-H X-A is given twice"},
      {{"mcp", "add", "web", "--url", "https://x/mcp", "-H", "X-A: 1", "-H", "x-a: 2"}, "web has the header x-a twice"},
      {{"mcp", "add-json", "web", R"({"type":"http","url":"https://x/mcp","headers":{"X-A":"1","x-a":"2"}})"},
       "web has the header x-a twice"},
      {{"mcp", "add", "web", "--url", "http://localhost:abc/mcp"}, "its port \"abc\" is not a number"},
      {{"mcp", "add-json", "j", R"({"command":"node",)"}, "the definition is not valid JSON: incomplete JSON"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.args[2]);
    Result r = oppx(c.args);
    EXPECT_EQ(r.exit_code, 2) << "a usage error";
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  // A URL with a reference is checked once expanded, at start.
  Result ref = oppx({"mcp", "add", "web", "--url", "https://${OPPX_TEST_UNSET_HOST}/mcp"});
  EXPECT_EQ(ref.exit_code, 0) << ref.err;
  EXPECT_NE(ref.out.find("it needs ${OPPX_TEST_UNSET_HOST}"), std::string::npos) << ref.out;
  ASSERT_EQ(oppx({"mcp", "remove", "web"}).exit_code, 0);
  EXPECT_EQ(servers(config).size(), 0u) << "nothing may be written for a refused add";
}

TEST_F(McpAdd, AProjectAddHiddenByYourOwnSaysSoAndProbesNothingElse) {
  ASSERT_EQ(oppx({"mcp", "add", "mem", "--", FAKE_MCP_SERVER, "ok"}).exit_code, 0);
  std::string marker = repo + "/ran";
  Result r = oppx({"mcp", "add", "--project", "mem", "--", "/bin/sh", "-c",
                   "echo yes > " + marker + "; exec " FAKE_MCP_SERVER " ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Added mem in " + repo + "/.mcp.json"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("your own connector mem (in " + config + ") has the same name and wins"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("It does not run: hidden"), std::string::npos) << r.out;
  // Your own one's tools are not shown as if they were the repository's.
  EXPECT_EQ(r.out.find("Running"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("mem.echo"), std::string::npos) << r.out;
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the hidden one ran";
  Result json_out = oppx({"mcp", "list", "--json"});
  json::value listed = json::parse(json_out.out);
  for (auto& c : listed.at("connectors").as_array()) {
    if (c.at("source") == json::value("project")) {
      EXPECT_EQ(c.at("state"), json::value("hidden"));
    }
  }
}

TEST_F(McpAdd, AProjectAddCountsAsConsentAndRemoveUndoesIt) {
  std::string marker = repo + "/ran";
  Result r = oppx({"mcp", "add", "--project", "tool", "--", "/bin/sh", "-c",
                   "echo yes > " + marker + "; exec " FAKE_MCP_SERVER " ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Added tool in " + repo + "/.mcp.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tool.echo: Echoes"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(marker), "yes\n");
  // Its name taken: the way out names the repository's file, not yours.
  Result again = oppx({"mcp", "add", "--project", "tool", "--", "/bin/true"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("remove it first with `oppx mcp remove tool --project`"), std::string::npos) << again.err;
  auto store = json::parse(read_file(home.root() + "/state/oppx/mcp-approved.json"));
  EXPECT_EQ(store.at("repositories").at(repo).at("tool").at("decision"), json::value("approve"));
  // Consent was for exactly what was written: a hand edit waits again.
  std::string text = read_file(repo + "/.mcp.json");
  text.replace(text.find("echo yes"), 8, "echo now");
  std::ofstream(repo + "/.mcp.json") << text;
  Result get = oppx({"mcp", "get", "tool", "--json"});
  EXPECT_EQ(json::parse(get.out).at("state"), json::value("waiting")) << get.out;

  Result rm = oppx({"mcp", "remove", "--project", "tool"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(servers(repo + "/.mcp.json").size(), 0u);
  EXPECT_FALSE(json::parse(read_file(home.root() + "/state/oppx/mcp-approved.json"))
                   .at("repositories")
                   .as_object()
                   .contains(repo));
  Result missing = oppx({"mcp", "remove", "tool"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("has no connector named tool"), std::string::npos) << missing.err;
}

TEST_F(McpAdd, RemoveStopsTheConnector) {
  ASSERT_EQ(oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok", home.root()}).exit_code, 0);
  Result ps = run({"pgrep", "-f", std::string(FAKE_MCP_SERVER) + " ok " + home.root()});
  ASSERT_EQ(ps.exit_code, 0);
  ASSERT_EQ(oppx({"mcp", "remove", "one"}).exit_code, 0);
  EXPECT_FALSE(servers(config).contains("one"));
  EXPECT_TRUE(wait_for_exit(static_cast<pid_t>(std::stol(ps.out))));
}

TEST_F(McpAdd, OneThatDoesNotStartIsSavedWithTheReason) {
  Result r = oppx({"mcp", "add", "broken", "--", "no-such-program-oppx-add"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("It did not start (failed): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no-such-program-oppx-add is not installed"), std::string::npos) << r.out;
  // With the steps that fix it, numbered; their last one is the reconnect, which is not said twice.
  EXPECT_NE(r.out.find("\n  1. "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Then run `oppx mcp reconnect broken`.\nIt is saved anyway.\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("after those steps"), std::string::npos) << r.out;
  EXPECT_TRUE(servers(config).contains("broken"));
}

// npx for a package the registry does not have, with npm's own words as npm 11 prints them (a
// stand-in npx: a test cannot count on reaching the registry): not installed, with what to do,
// not "stopped" with the log pointer npm prints last.
TEST_F(McpAdd, APackageTheRegistryDoesNotHaveIsNotInstalled) {
  std::string npx = script("npx", R"(cat >&2 <<'EOF'
npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-doesnotexist-zzz
npm error 404
npm error 404  The requested resource '@modelcontextprotocol/server-doesnotexist-zzz@*' could not be found or you do not have permission to access it.
npm error 404
npm error 404 Note that you can also install from a
npm error 404 tarball, folder, http url, or git url.
npm error A complete log of this run can be found in: /home/ana/.npm/_logs/2026-12-03T23_11_18_662Z-debug-0.log
EOF
exit 1
)");
  Result r = oppx({"mcp", "add", "zzz", "--", npx, "-y", "@modelcontextprotocol/server-doesnotexist-zzz"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("It did not start (failed): its program stopped (exit status 1): npm error code E404: the "
                       "package does not exist on the registry: check its name; its log is "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  1. Correct the package name (or version) in the command of zzz in "), std::string::npos)
      << r.out;
  json::object c = listed("zzz");
  EXPECT_EQ(c["reason_kind"], "not_installed") << json::serialize(c);
}

// mcp-remote against a server that answers 401 and refuses its client registration: its output as
// mcp-remote 0.15.1 prints it (a stand-in named mcp-remote), whose last line is the end of the
// metadata it dumps. It needs a login (with the ~/.mcp-auth step), and is not started again and
// again (each start would open the browser).
TEST_F(McpAdd, AnMcpRemoteWhoseLoginFailedNeedsALogin) {
  std::string bridge = script("mcp-remote", R"(cat >&2 <<'EOF'
[20330] Using callback port derived from the server URL: 19866
[20330] Discovering OAuth server configuration...
[20330] Discovered authorization server: https://mcp.example.com
[20330] Initializing auth coordination on-demand
[20330] OAuth callback server running at http://127.0.0.1:19866
[20330] This instance is running the sign-in for this server (callback port 19866)
[20330] [20330] Connecting to remote server: https://mcp.example.com/mcp
[20330] Using transport strategy: http-first
[20330] Fatal error: RegistrationRejectedError: Dynamic Client Registration rejected (HTTP 400): {"error":"invalid_client_metadata","error_description":"redirect_uris not allowed"}
    at registerClient (file:///home/ana/.npm/_npx/705d23756ff7dacc/node_modules/mcp-remote/dist/chunk-KJCT2FXL.js:28409:27)
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)
    at async authInternal (file:///home/ana/.npm/_npx/705d23756ff7dacc/node_modules/mcp-remote/dist/chunk-KJCT2FXL.js:28047:12)
    at async auth (file:///home/ana/.npm/_npx/705d23756ff7dacc/node_modules/mcp-remote/dist/chunk-KJCT2FXL.js:27940:12)
    at async handleOAuthUnauthorized (file:///home/ana/.npm/_npx/705d23756ff7dacc/node_modules/mcp-remote/dist/chunk-KJCT2FXL.js:27758:7)
    at async StreamableHTTPClientTransport._send (file:///home/ana/.npm/_npx/705d23756ff7dacc/node_modules/mcp-remote/dist/chunk-KJCT2FXL.js:31421:15) {
  status: 400,
  body: '{"error":"invalid_client_metadata","error_description":"redirect_uris not allowed"}',
  submittedMetadata: {
    redirect_uris: [ 'http://localhost:19866/oauth/callback' ],
    token_endpoint_auth_method: 'none',
    grant_types: [ 'authorization_code', 'refresh_token' ],
    response_types: [ 'code' ],
    client_name: 'MCP CLI Proxy',
    client_uri: 'https://github.com/modelcontextprotocol/mcp-cli',
    software_id: '2e6dc280-f3c3-4e01-99a7-8181dbd1d23d',
    software_version: '0.15.1',
    scope: 'openid email profile',
    application_type: 'native'
  }
}
EOF
exit 1
)");
  Result r = oppx({"mcp", "add", "remote", "--", bridge, "https://mcp.example.com/mcp"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("It did not start (failed): it needs a new login: its program stopped (exit status 1): [20330] "
                       "Fatal error: RegistrationRejectedError: Dynamic Client Registration rejected (HTTP 400)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("application_type"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("`rm -rf ~/.mcp-auth`"), std::string::npos) << r.out;
  json::object c = listed("remote");
  EXPECT_EQ(c["reason_kind"], "login") << json::serialize(c);
  EXPECT_EQ(c["reason"].as_string().find("oppx starts it again"), std::string::npos) << json::serialize(c);
}

// A secret the daemon expanded into a connector, said back by its server (the issue's `leaky`):
// hidden in the add output, `mcp list --json`, a call's error and isError text, the daemon's log
// and the connector's own log. Planted values of several lengths: 3 and 5 characters (hidden as
// words of their own), 8 and 40 (anywhere).
TEST_F(McpAdd, WhatAServerSaysBackHidesTheSecretsItWasGiven) {
  const std::vector<std::string> planted = {"q7x", "k9Zp2", "s3cr3t-8", "sk-live-0123456789abcdef0123456789abcdef"};
  std::vector<std::string> outputs;
  for (std::size_t i = 0; i < planted.size(); ++i) {
    std::string var = "OPPX_TEST_LEAK_" + std::to_string(i);
    ::setenv(var.c_str(), planted[i].c_str(), 1);
    Result r = oppx({"mcp", "add", "leaky" + std::to_string(i), "-e", "API_KEY=${" + var + "}", "--", "sh", "-c",
                     "echo \"Error: 401 invalid api key $API_KEY\" >&2; exit 1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("invalid api key ***"), std::string::npos) << r.out;
    outputs.push_back(r.out + r.err);
    EXPECT_NE(json::serialize(listed("leaky" + std::to_string(i))).find("invalid api key ***"), std::string::npos);
  }
  // A running one whose tools repeat the key in their errors.
  ASSERT_EQ(oppx({"mcp", "add", "tool", "-e", "API_KEY=${OPPX_TEST_LEAK_3}", "--", FAKE_MCP_SERVER, "leak"}).exit_code,
            0);
  Result refused = oppx({"mcp", "call", "tool", "refuse", "--json"});
  EXPECT_NE(refused.out.find("upstream refused the key ***"), std::string::npos) << refused.out;
  Result failed = oppx({"mcp", "call", "tool", "fail"});
  EXPECT_NE(failed.out.find("invalid key ***"), std::string::npos) << failed.out;
  for (const Result& r : {refused, failed}) outputs.push_back(r.out + r.err);
  outputs.push_back(oppx({"mcp", "list", "--json"}).out);
  outputs.push_back(oppx({"mcp", "list"}).out);
  std::string state = home.root() + "/state/oppx";
  std::string daemon_log = read_file(state + "/oppxd.log");
  EXPECT_NE(daemon_log.find("invalid api key ***"), std::string::npos) << daemon_log;
  outputs.push_back(daemon_log);
  for (std::size_t i = 0; i < planted.size(); ++i) {
    // Once or more: it may have been started again by now.
    std::string own = read_file(state + "/mcp-leaky" + std::to_string(i) + ".log");
    std::istringstream lines(own);
    for (std::string line; std::getline(lines, line);) EXPECT_EQ(line, "Error: 401 invalid api key ***");
    EXPECT_FALSE(own.empty());
    outputs.push_back(own);
  }
  std::string tool_log = read_file(state + "/mcp-tool.log");
  EXPECT_NE(tool_log.find("fake: starting with key ***\n"), std::string::npos) << tool_log;
  outputs.push_back(tool_log);
  for (auto& out : outputs) {
    for (auto& secret : planted) {
      EXPECT_EQ(out.find("key " + secret), std::string::npos) << secret << " in " << out;
    }
    EXPECT_EQ(out.find(planted[3]), std::string::npos) << out;
    EXPECT_EQ(out.find(planted[2]), std::string::npos) << out;
  }
}

TEST_F(McpAdd, Kill9MidWriteLeavesTheOldOrTheNewFile) {
  write_config(R"({"future_key": {"x": 1}, "mcpServers": {"keep": {"command": "true"}}})", 0600);
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  auto pid = daemon_pid(home.socket());
  ASSERT_TRUE(pid);
  auto client = hello_client(home);
  ASSERT_TRUE(client);
  std::string why = kill_daemon_mid_writes(std::move(*client), static_cast<pid_t>(*pid), 25, [](SyncClient& c, int i) {
    // An HTTP connector on a closed loopback port: it fails at once, so the adds follow quickly.
    json::object def{{"type", "http"}, {"url", fmt::format("http://127.0.0.1:9/mcp{}", i)}};
    auto r = c.call("mcp/add", json::object{{"name", "churn"}, {"definition", def}, {"force", true}}, 5s);
    return r ? std::string() : r.error().message;
  });
  ASSERT_EQ(why, "");
  boost::system::error_code ec;
  json::value doc = json::parse(read_file(config), ec);
  ASSERT_FALSE(ec) << "torn mcp.json after kill -9: " << read_file(config);
  EXPECT_EQ(doc.at("future_key"), json::parse(R"({"x":1})"));
  EXPECT_TRUE(doc.at("mcpServers").as_object().contains("keep"));
  EXPECT_TRUE(doc.at("mcpServers").as_object().contains("churn"));
  EXPECT_EQ(mode_of(config), 0600u);
  // No wait for the old daemon to be gone: the next oppx command must cope with one that is dying
  // (its socket may still take the connection and then close it) and start a new one.
  // What a killed writer left beside it goes at the next write (the dead daemon's, and one more of
  // a pid known to be gone); nothing else in the folder is touched.
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  std::string leftover = fmt::format("{}.{}.tmp", config, gone);
  std::ofstream(leftover) << "{";
  std::ofstream(config + ".notes") << "mine";
  Result after = oppx({"mcp", "add", "after", "--", "true"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  std::string dir = home.root() + "/config/oppx";
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
    ::closedir(d);
  }
  for (auto& n : names) EXPECT_FALSE(n.ends_with(".tmp")) << n;
  EXPECT_EQ(read_file(config + ".notes"), "mine");
}

TEST_F(McpAdd, AProjectFileIsWritten0644AndRemovedWithProject) {
  Result r = oppx({"mcp", "add", "--project", "p1", "--", FAKE_MCP_SERVER, "ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(mode_of(repo + "/.mcp.json"), 0644u);  // a file to share: references, not secrets
  EXPECT_TRUE(servers(repo + "/.mcp.json").contains("p1"));
  // Without --project, the error says it is the repository's and how to remove it.
  Result mine = oppx({"mcp", "remove", "p1"});
  EXPECT_NE(mine.exit_code, 0);
  EXPECT_NE(mine.err.find("remove it with `oppx mcp remove p1 --project`"), std::string::npos) << mine.err;
  EXPECT_TRUE(servers(repo + "/.mcp.json").contains("p1"));
  EXPECT_EQ(oppx({"mcp", "remove", "p1", "--project"}).exit_code, 0);
  EXPECT_FALSE(servers(repo + "/.mcp.json").contains("p1"));
}

TEST_F(McpAdd, ALoadedFileReadableByOthersIsWarnedAboutInTheList) {
  write_config(R"({"mcpServers": {"keep": {"command": "true"}}})", 0644);
  Result r = oppx({"mcp", "list"});
  EXPECT_NE((r.out + r.err).find("chmod 600"), std::string::npos) << r.out << r.err;
}

TEST_F(McpAdd, ABrokenFileKeepsTheLastGoodConnectorsRunning) {
  ASSERT_EQ(oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"}).exit_code, 0);
  std::string good = read_file(config);
  std::ofstream(config) << good.substr(0, good.size() / 2);  // a half-written hand edit
  Result r = oppx({"mcp", "list", "--json"});
  json::value v = json::parse(r.out);
  EXPECT_TRUE(v.as_object().contains("error")) << r.out;
  bool running = false;
  for (auto& c : v.at("connectors").as_array()) {
    if (c.at("name") == "one" && c.at("state") == "running") running = true;
  }
  EXPECT_TRUE(running) << r.out;
  Result call = oppx({"mcp", "call", "one", "echo", R"({"text":"still here"})"});
  EXPECT_EQ(call.exit_code, 0) << call.out << call.err;
}

TEST_F(McpAdd, ASecretInConfigAndEnvNeverShows) {
  const std::string literal = "lit-secret-7f3a9c2e51";
  const std::string from_env = "env-secret-b81d0c6e44";
  ::setenv("OPPX_TEST_ADD_SECRET", from_env.c_str(), 1);
  std::vector<std::string> outputs;
  auto keep = [&](const Result& r) {
    outputs.push_back(r.out);
    outputs.push_back(r.err);
  };
  keep(oppx({"mcp", "add", "s1", "-e", "TOKEN=" + literal, "-e", "OTHER=${OPPX_TEST_ADD_SECRET}", "--", FAKE_MCP_SERVER,
             "ok"}));
  keep(oppx({"mcp", "add", "s2", "--json", "--url", "http://127.0.0.1:9/mcp", "-H", "Authorization: Bearer " + literal,
             "-H", "X-Key: ${OPPX_TEST_ADD_SECRET}"}));
  keep(oppx({"mcp", "add", "--project", "--json", "s3", "-e", "TOKEN=" + literal, "--", FAKE_MCP_SERVER, "ok"}));
  // In a URL's query and after a secret flag in the arguments, too.
  keep(oppx({"mcp", "add", "s4", "--url", "http://127.0.0.1:9/mcp?api_key=" + literal}));
  keep(oppx({"mcp", "add", "s5", "--", "no-such-program-oppx-secret", "--api-key", literal, "--header",
             "Authorization: Bearer " + literal}));
  keep(oppx({"mcp", "list"}));
  keep(oppx({"mcp", "list", "--json"}));
  for (const char* n : {"s1", "s2", "s3", "s4", "s5"}) {
    keep(oppx({"mcp", "get", n}));
    keep(oppx({"mcp", "get", n, "--json"}));
  }
  keep(oppx({"mcp", "tools", "s1", "--json"}));
  keep(oppx({"mcp", "reconnect", "--json"}));
  keep(oppx({"mcp", "remove", "s2", "--json"}));
  // Every file oppx keeps in its state folder: the daemon log, connector logs, the consent store.
  std::string state = home.root() + "/state/oppx";
  if (DIR* d = ::opendir(state.c_str())) {
    while (dirent* e = ::readdir(d)) outputs.push_back(read_file(state + "/" + e->d_name));
    ::closedir(d);
  }
  ASSERT_GT(outputs.size(), 20u);
  for (auto& out : outputs) {
    EXPECT_EQ(out.find(literal), std::string::npos) << out;
    EXPECT_EQ(out.find(from_env), std::string::npos) << out;
  }
  EXPECT_NE(outputs[0].find("Added s1"), std::string::npos) << outputs[0];
}

// The probe against a scripted model server.
struct Probe : McpAdd {
  std::optional<Process> server;
  void serve(const std::string& mode, int context, int tokenize_count = 0) {
    std::vector<std::string> argv{"node", std::string(OPPX_TEST_SUPPORT) + "/fake_model_server.js", mode,
                                  std::to_string(context)};
    if (tokenize_count) argv.push_back(std::to_string(tokenize_count));
    server.emplace(argv);
    ASSERT_TRUE(server->wait_for_stdout("\n")) << server->err();
    std::string port = server->out().substr(5, server->out().find('\n') - 5);
    ::setenv("OPPX_SERVER", ("http://127.0.0.1:" + port + "/v1").c_str(), 1);
  }
};

TEST_F(Probe, ASmallContextIsWarnedAboutWithTheCost) {
  serve("info", 32768);
  Result r = oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // "one.echo: Echoes\n" is 17 characters: about 5 tokens at 4 characters a token.
  EXPECT_NE(r.out.find("Running, 1 tool:\none.echo: Echoes\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Cost: about 5 tokens a request (an estimate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Share: 0.0% of the model's context of 32k tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SMALL_CONTEXT: the server's model has a small context window (32k tokens). This connector's "
                       "tool list takes about 5 tokens of every request (0.0%), and each tool result uses more. Keep "
                       "only the connectors you need"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("HEAVY_SHARE"), std::string::npos);
}

TEST_F(Probe, AHeavyListIsWarnedAboutWithTheServersOwnCount) {
  serve("models", 40000, 5000);  // no /v1/info: the context comes from /v1/models
  Result r = oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Cost: 5000 tokens a request (counted by the server's tokenizer)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Share: 12.5% of the model's context of 40k tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HEAVY_SHARE: the tool list takes a tenth or more of the server's model's context window "
                       "(40k tokens). This connector's tool list takes about 5000 tokens of every request (12.5%)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("SMALL_CONTEXT"), std::string::npos);
}

TEST_F(Probe, ASmallContextAndAHeavyShareAreBothWarnedAbout) {
  serve("info", 16000, 4000);
  Result r = oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("SMALL_CONTEXT: the server's model has a small context window (16k tokens)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("HEAVY_SHARE: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(25.0%)"), std::string::npos) << r.out;
}

TEST_F(Probe, AServerThatDoesNotAnswerCostsAtMostItsLimit) {
  serve("hang", 0);
  Result r = oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"}, 30s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Running, 1 tool:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Share of the model's context: unknown ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did not answer within 4 s"), std::string::npos) << r.out;
}

// The socket's mcp/add carries the probe's lines and count, for editors and the chat.
TEST_F(Probe, TheReplyOverTheSocketCarriesTheLinesAndTheirCount) {
  Result r = oppx({"mcp", "add", "one", "--json", "--", FAKE_MCP_SERVER, "ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json::value v = json::parse(r.out);
  const json::object& probe = v.at("probe").as_object();
  EXPECT_EQ(probe.at("lines"), json::parse(R"(["one.echo: Echoes"])"));
  EXPECT_EQ(probe.at("tokens"), 5);
  EXPECT_EQ(probe.at("estimated"), true);
}

// --json carries what the text says: the share of the context and the warnings. Token counts are
// exact below 10,000 (a 1,500-token context is not "2k"), in thousands from there.
TEST_F(Probe, TheJsonCarriesTheShareAndTheWarningsAsTheTextSaysThem) {
  serve("info", 1500, 400);
  Result text = oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Cost: 400 tokens a request (counted by the server's tokenizer)\nShare: 26.7% of the "
                          "model's context of 1500 tokens\nwarning: SMALL_CONTEXT: the server's model has a small "
                          "context window (1500 tokens). This connector's tool list takes about 400 tokens"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("warning: HEAVY_SHARE: the tool list takes a tenth or more of the server's model's context "
                          "window (1500 tokens)"),
            std::string::npos)
      << text.out;
  Result r = oppx({"mcp", "add", "two", "--json", "--", FAKE_MCP_SERVER, "ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json::object probe = json::parse(r.out).at("probe").as_object();
  EXPECT_EQ(probe.at("tokens"), 400);
  EXPECT_EQ(probe.at("estimated"), false);
  EXPECT_FALSE(probe.contains("estimate"));
  EXPECT_EQ(probe.at("context"), 1500);
  EXPECT_EQ(probe.at("share"), 26.7);
  const json::array& warnings = probe.at("warnings").as_array();
  ASSERT_EQ(warnings.size(), 2u) << r.out;
  EXPECT_EQ(warnings[0].at("kind"), "SMALL_CONTEXT");
  EXPECT_EQ(std::string_view(warnings[0].at("message").as_string())
                .find("the server's model has a small context window (1500 tokens). This connector's tool list takes "
                      "about 400 tokens of every request (26.7%)"),
            0u)
      << r.out;
  EXPECT_EQ(warnings[1].at("kind"), "HEAVY_SHARE");
  // Without a server: why the share is unknown, and no warnings.
  ::unsetenv("OPPX_SERVER");
  Result none = oppx({"mcp", "add", "three", "--json", "--", FAKE_MCP_SERVER, "ok"});
  json::object unknown = json::parse(none.out).at("probe").as_object();
  EXPECT_NE(std::string_view(unknown.at("context_note").as_string()).find("no model server is configured"),
            std::string::npos)
      << none.out;
  EXPECT_FALSE(unknown.contains("share"));
  EXPECT_EQ(unknown.at("warnings"), json::array());
  EXPECT_EQ(unknown.at("estimated"), true);
}

TEST(ToolLine, TheFirstSentenceAtMost140Characters) {
  json::object t{{"name", "read"}, {"description", "Reads a file. Then more.\nAnd more."}};
  EXPECT_EQ(tool_line("fs", t), "fs.read: Reads a file");
  t["description"] = "First line\nsecond line";
  EXPECT_EQ(tool_line("fs", t), "fs.read: First line");
  std::string long_text;
  for (int i = 0; i < 200; ++i) long_text += "é";  // two bytes each
  t["description"] = long_text;
  std::string line = tool_line("fs", t);
  std::string expect = "fs.read: ";
  for (int i = 0; i < 139; ++i) expect += "é";
  EXPECT_EQ(line, expect + "…");
  t["description"] = std::string(140, 'x');  // exactly the limit: not cut
  EXPECT_EQ(tool_line("fs", t), "fs.read: " + std::string(140, 'x'));
  t["name"] = "bad\x1b[2J";
  EXPECT_EQ(tool_line("fs", t).find('\x1b'), std::string::npos);
}

TEST_F(Probe, WithoutAServerTheShareIsUnknown) {
  Result r = oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Share of the model's context: unknown (no model server is configured"), std::string::npos)
      << r.out;
  ::setenv("OPPX_SERVER", "https://models.example/v1", 1);
  Result https = oppx({"mcp", "add", "two", "--", FAKE_MCP_SERVER, "ok"});
  EXPECT_NE(https.out.find("unknown (the host of https://models.example could not be resolved"), std::string::npos)
      << https.out;
  // The server in config.json is used when OPPX_SERVER is not set.
  ::unsetenv("OPPX_SERVER");
  std::ofstream(home.root() + "/config/oppx/config.json") << R"({"server":"http://127.0.0.1:9/v1"})";
  Result refused = oppx({"mcp", "add", "three", "--", FAKE_MCP_SERVER, "ok"});
  EXPECT_NE(refused.out.find("unknown (http://127.0.0.1:9 is unreachable"), std::string::npos) << refused.out;
}

// The probe speaks https through the one HTTP client, verifying the certificate.
TEST_F(Probe, AnHttpsServerIsAskedWithItsCertificateVerified) {
  LocalhostCert made = localhost_cert(home.root());
  ASSERT_EQ(made.made.exit_code, 0) << made.made.err;
  const std::string &cert = made.cert, &key = made.key;
  ::setenv("FAKE_TLS_CERT", cert.c_str(), 1);
  ::setenv("FAKE_TLS_KEY", key.c_str(), 1);
  serve("info", 16384);
  ::unsetenv("FAKE_TLS_CERT");
  ::unsetenv("FAKE_TLS_KEY");
  std::string url = std::getenv("OPPX_SERVER");
  url.replace(0, std::string("http://127.0.0.1").size(), "https://localhost");
  ::setenv("OPPX_SERVER", url.c_str(), 1);
  Result untrusted = oppx({"mcp", "add", "one", "--", FAKE_MCP_SERVER, "ok"});
  EXPECT_NE(untrusted.out.find("Share of the model's context: unknown (the TLS handshake with https://localhost:"),
            std::string::npos)
      << untrusted.out;
  ::setenv("SSL_CERT_FILE", cert.c_str(), 1);
  Result trusted = oppx({"mcp", "add", "two", "--", FAKE_MCP_SERVER, "ok"});
  ::unsetenv("SSL_CERT_FILE");
  EXPECT_NE(trusted.out.find("of the model's context of 16k tokens"), std::string::npos) << trusted.out;
}

}  // namespace
}  // namespace oppx::test
