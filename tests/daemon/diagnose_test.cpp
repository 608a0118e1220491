// daemon/diagnose: each kind, each way a connector is added (mcp-remote, a token in a header, a
// command), and the narrow login matching (a tool refusing its arguments is not a lost login).
#include "daemon/diagnose.h"

#include "daemon/connector.h"

#include <gtest/gtest.h>

namespace oppx::daemon {
namespace {

ConnectorDef command(std::string name, std::string cmd, std::vector<std::string> args = {}) {
  ConnectorDef d;
  d.name = std::move(name);
  d.command = std::move(cmd);
  d.args = std::move(args);
  return d;
}

ConnectorDef http(std::string name, std::string url, Pairs headers) {
  ConnectorDef d;
  d.name = std::move(name);
  d.kind = ConnectorDef::Kind::kHttp;
  d.url = std::move(url);
  d.headers = std::move(headers);
  return d;
}

std::string joined(const Diagnosis& d) {
  std::string s;
  for (auto& step : d.steps) s += step + "\n";
  return s;
}

TEST(Diagnose, LoginMatchingIsNarrow) {
  EXPECT_TRUE(looks_like_login("HTTP 401 Unauthorized"));
  EXPECT_TRUE(looks_like_login("Error: token expired"));
  EXPECT_TRUE(looks_like_login("request failed with status 403"));
  EXPECT_TRUE(looks_like_login("invalid_token: the access token expired"));
  EXPECT_TRUE(looks_like_login("anything", 401));
  EXPECT_FALSE(looks_like_login("the login field is required"));
  EXPECT_FALSE(looks_like_login("invalid arguments: password must be 8 characters"));
  EXPECT_FALSE(looks_like_login("read 4013 bytes at line 401"));
  EXPECT_FALSE(looks_like_login("issue OPS-401 not found"));
  EXPECT_FALSE(looks_like_login("anything", 404));
}

// A tool's own error names the statuses of whatever it talks to: only the words count there.
TEST(Diagnose, InAToolsErrorANumberIsNotALostLogin) {
  EXPECT_FALSE(tool_error_looks_like_login("API error 403: resource not accessible"));
  EXPECT_FALSE(tool_error_looks_like_login("request failed with status 401"));
  EXPECT_FALSE(tool_error_looks_like_login("the login field is required"));
  EXPECT_TRUE(tool_error_looks_like_login("401 Unauthorized: token expired"));
  EXPECT_TRUE(tool_error_looks_like_login("Error: the token has expired"));
  EXPECT_TRUE(tool_error_looks_like_login("invalid_token"));
}

TEST(Diagnose, McpRemoteIsRecognisedInCommandOrArgs) {
  EXPECT_TRUE(uses_mcp_remote(command("linear", "npx", {"-y", "mcp-remote", "https://mcp.linear.app/sse"})));
  EXPECT_TRUE(uses_mcp_remote(command("x", "/usr/local/bin/mcp-remote")));
  EXPECT_FALSE(uses_mcp_remote(command("fs", "npx", {"-y", "@modelcontextprotocol/server-filesystem"})));
}

TEST(Diagnose, AnMcpRemoteThatTimesOutNeedsABrowserLogin) {
  auto def = command("linear", "npx", {"-y", "mcp-remote", "https://mcp.linear.app/sse"});
  Diagnosis d = diagnose(down::kTimeout, "it did not finish starting within 30 s", def, "/s/mcp-linear.log");
  EXPECT_EQ(d.kind, "login");
  EXPECT_NE(d.reason.find("needs a new login"), std::string::npos);
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_NE(d.steps[0].find("`oppx mcp reconnect linear`"), std::string::npos);
  EXPECT_NE(d.steps[0].find("3 minutes"), std::string::npos);
  EXPECT_NE(d.steps[1].find("~/.mcp-auth"), std::string::npos);
  // The same timeout without mcp-remote is a plain timeout.
  auto plain = diagnose(down::kTimeout, "it did not finish starting within 30 s", command("slow", "node"), "/s/l.log");
  EXPECT_EQ(plain.kind, "timeout");
  EXPECT_NE(joined(plain).find("/s/l.log"), std::string::npos);
}

// The definition stays as it is: a new token in the variable and a reconnect, never an add line
// that would replace its other headers.
TEST(Diagnose, ATokenInAVariableIsRenewedInTheShellAndTheDefinitionKept) {
  auto def = http("lin3", "http://127.0.0.1:8080/mcp",
                  {{"X-Org", "acme"}, {"Authorization", "Bearer ${LINEAR_API_KEY}"}, {"X-Other", "v"}});
  Diagnosis d = diagnose(down::kLogin, "HTTP 401 from http://127.0.0.1:8080/mcp", def, "/s/l.log");
  EXPECT_EQ(d.kind, "login");
  ASSERT_EQ(d.steps.size(), 1u) << joined(d);
  EXPECT_EQ(d.steps[0],
            "Its token is read from the environment variable LINEAR_API_KEY (header Authorization): put a new token "
            "in LINEAR_API_KEY in the shell you run oppx from, then run `oppx mcp reconnect lin3` from that shell.");
  EXPECT_EQ(joined(d).find("--force"), std::string::npos) << joined(d);
}

// `oppx mcp add --force` replaces the whole entry: the line repeats every other header as written.
TEST(Diagnose, TheAddLineForALiteralTokenKeepsEveryOtherHeader) {
  auto def = http("lin", "https://mcp.linear.app/mcp?team=${TEAM}",
                  {{"X-Org", "${ORG}"}, {"Authorization", "Bearer lin_api_0123456789abcdef"}, {"X-Who", "${WHO}"}});
  Diagnosis d = diagnose(down::kLogin, "HTTP 401", def, "/s/l.log");
  ASSERT_EQ(d.steps.size(), 1u) << joined(d);
  EXPECT_EQ(d.steps[0],
            "Get a new token and save it in its definition: `oppx mcp add lin --url "
            "'https://mcp.linear.app/mcp?team=${TEAM}' -H 'X-Org: ${ORG}' -H 'Authorization: Bearer <new token>' "
            "-H 'X-Who: ${WHO}' --force`.");
  EXPECT_EQ(joined(d).find("lin_api"), std::string::npos);
  // A repository's connector is replaced in its own file.
  def.file = "/src/app/.mcp.json";
  EXPECT_NE(joined(diagnose(down::kLogin, "HTTP 401", def, "/l")).find("`oppx mcp add lin --project --url "),
            std::string::npos);
  // No header yet: the line adds one and keeps the URL.
  Diagnosis none = diagnose(down::kLogin, "HTTP 401", http("h", "https://h.example/mcp", {}), "/l");
  EXPECT_EQ(none.steps[0],
            "It asks for a login but sends no token: get one from its service and add it with `oppx mcp add h --url "
            "https://h.example/mcp -H 'Authorization: Bearer <new token>' --force`.");
}

// A literal value of another header, or a secret in the URL, would be printed masked: running that
// line would lose it, so the step is to edit the one header in the file, and no value is shown.
TEST(Diagnose, WithAnotherLiteralValueTheStepEditsTheFileInstead) {
  auto def = http("gh", "https://api.example.com/mcp",
                  {{"X-Org", "acme-secret-org-id"}, {"Authorization", "Bearer sk-secret-value-1234"}});
  def.file = "/home/u/.config/oppx/mcp.json";
  Diagnosis d = diagnose(down::kLogin, "HTTP 401", def, "/s/l.log");
  ASSERT_EQ(d.steps.size(), 1u) << joined(d);
  EXPECT_EQ(d.steps[0],
            "Get a new token and put it in the header Authorization of gh in /home/u/.config/oppx/mcp.json in place "
            "of the old one (edit only that value; the rest stays as it is), then run `oppx mcp reconnect gh`.");
  auto query = http("q", "https://api.example.com/mcp?api_key=abcdef0123456789", {});
  Diagnosis q = diagnose(down::kLogin, "HTTP 401", query, "/l");
  std::string s = joined(q);
  EXPECT_EQ(s.find("--force"), std::string::npos) << s;
  EXPECT_EQ(s.find("abcdef"), std::string::npos) << s;
  EXPECT_NE(s.find("add it as the header Authorization of q in your mcp.json"), std::string::npos) << s;
}

TEST(Diagnose, ALiteralTokenIsNeverRepeated) {
  auto def = http("gh", "https://api.example.com/mcp", {{"X-Api-Key", "sk-secret-value-1234"}});
  Diagnosis d = diagnose(down::kLogin, "401", def, "/s/l.log");
  std::string s = joined(d) + d.reason;
  EXPECT_EQ(s.find("sk-secret"), std::string::npos) << s;
  EXPECT_NE(s.find("-H 'X-Api-Key: <new token>'"), std::string::npos) << s;
}

TEST(Diagnose, AStoppedProgramWhoseLastWordsAreUnauthorizedNeedsALogin) {
  auto def = command("api", "node", {"server.js"});
  def.env = {{"API_TOKEN", "${MY_API_TOKEN}"}};
  Diagnosis d = diagnose(down::kStopped, "its program stopped (exit status 1): Error: 401 Unauthorized", def, "/l");
  EXPECT_EQ(d.kind, "login");
  EXPECT_NE(joined(d).find("environment variable MY_API_TOKEN"), std::string::npos) << joined(d);
  Diagnosis other =
      diagnose(down::kStopped, "its program stopped (exit status 1): the login field is required", def, "/l");
  EXPECT_EQ(other.kind, "stopped");
}

TEST(Diagnose, AMissingProgramSaysWhatToInstall) {
  EXPECT_NE(diagnose(down::kNotInstalled, "npx is not installed", command("fs", "npx"), "/l")
                .steps[0]
                .find("Install Node.js 18 or newer"),
            std::string::npos);
  EXPECT_NE(
      diagnose(down::kNotInstalled, "uvx is not installed", command("git", "uvx"), "/l").steps[0].find("Install uv"),
      std::string::npos);
  auto d = diagnose(down::kNotInstalled, "x", command("tool", "/opt/bin/frobnicate"), "/l");
  EXPECT_EQ(d.steps[0], "Install frobnicate, or correct the command of tool in your mcp.json.");
  EXPECT_EQ(d.steps[1], "Then run `oppx mcp reconnect tool`.");
  // A repository's connector: the step names its own file.
  auto def = command("tool", "/opt/bin/frobnicate");
  def.file = "/src/app/.mcp.json";
  EXPECT_EQ(diagnose(down::kNotInstalled, "x", def, "/l").steps[0],
            "Install frobnicate, or correct the command of tool in /src/app/.mcp.json.");
}

TEST(Diagnose, TheTellingStderrLineIsTheLastErrorNotTheBanner) {
  // node's own words for a missing script, as it prints them (blank lines are not kept).
  std::deque<std::string> node = {"node:internal/modules/cjs/loader:1210",
                                  "  throw err;",
                                  "  ^",
                                  "Error: Cannot find module '/tmp/nope.js'",
                                  "    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)",
                                  "    at handleMainError (node:internal/modules/run_main:164:12)",
                                  "  code: 'MODULE_NOT_FOUND',",
                                  "  requireStack: []",
                                  "}",
                                  "Node.js v20.20.2"};
  EXPECT_EQ(telling_line(node, false), "Error: Cannot find module '/tmp/nope.js'");
  std::deque<std::string> python = {"Traceback (most recent call last):", "  File \"<string>\", line 1, in <module>",
                                    "ModuleNotFoundError: No module named 'mcp'"};
  EXPECT_EQ(telling_line(python, false), "ModuleNotFoundError: No module named 'mcp'");
  // Without an error: the last line, a version banner and a lone brace skipped.
  std::deque<std::string> plain = {"listening on stdio", "shutting down", "}", "Node.js v22.1.0"};
  EXPECT_EQ(telling_line(plain, false), "shutting down");
  // Stopped by a signal: a start banner is not a reason.
  std::deque<std::string> banner = {"Starting default (STDIO) server..."};
  EXPECT_EQ(telling_line(banner, true), "");
  EXPECT_EQ(telling_line(banner, false), "Starting default (STDIO) server...");
  EXPECT_EQ(telling_line({}, false), "");
}

// The connector decides (says_script_missing on the stop's telling line); its steps follow.
TEST(Diagnose, AScriptItsRuntimeCannotFindIsNotInstalled) {
  auto def = command("nx", "node", {"/tmp/nope.js"});
  EXPECT_TRUE(says_script_missing("Error: Cannot find module '/tmp/nope.js'", def));
  Diagnosis d = diagnose(down::kNotInstalled,
                         "its program stopped (exit status 1): Error: Cannot find module '/tmp/nope.js'; its log is /l",
                         def, "/l");
  EXPECT_EQ(d.kind, "not_installed");
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_EQ(d.steps[0],
            "node runs, but cannot find the script or module it was given: install it, or correct the command of nx "
            "in your mcp.json.");
  EXPECT_EQ(d.steps[1], "Then run `oppx mcp reconnect nx`.");
  for (std::string_view words : {"/usr/bin/python3: can't open file '/x.py': [Errno 2] No such file or directory",
                                 "ModuleNotFoundError: No module named 'mcp'"}) {
    EXPECT_TRUE(says_script_missing(words, command("py", "python3", {"/x.py"}))) << words;
  }
  EXPECT_TRUE(says_script_missing("bash: /x.sh: No such file or directory", command("sh", "/bin/bash", {"/x.sh"})));
  // A server's own missing file (its config) is its own trouble, not a missing install.
  EXPECT_FALSE(says_script_missing("open config.yaml: No such file or directory", command("srv", "/opt/srv")));
}

TEST(Diagnose, StoppedUnreachableAndConfigGiveTheirSteps) {
  auto stopped = diagnose(down::kStopped, "its program stopped (exit status 3)", command("a", "node"), "/s/a.log");
  EXPECT_EQ(stopped.kind, "stopped");
  EXPECT_EQ(stopped.steps[0], "Look at its log for why: /s/a.log");
  EXPECT_EQ(stopped.steps[1], "Run `oppx mcp reconnect a` to start it again.");
  auto far = diagnose(down::kUnreachable, "connection refused", http("h", "https://h.example/mcp", {}), "/l");
  EXPECT_NE(far.steps[0].find("https://h.example/mcp"), std::string::npos);
  auto config = diagnose(down::kConfig, "it needs ${X}", command("c", "node"), "/l");
  EXPECT_NE(config.steps[1].find("oppx mcp reconnect c"), std::string::npos);
  EXPECT_EQ(config.reason, "it needs ${X}");
}

// An HTTP connector has no program and no log of its own: its steps name the daemon's log (what
// Connectors gives it as its log path), and say so.
TEST(Diagnose, AnHttpConnectorsLogStepNamesTheDaemonsLog) {
  auto d = diagnose(down::kStopped, "initialize failed: http://h.example answered HTTP 500 to initialize",
                    http("h", "https://h.example/mcp", {}), "/s/oppxd.log");
  EXPECT_EQ(d.kind, "stopped");
  EXPECT_EQ(d.steps[0], "Look at the daemon's log for why (its lines with `connector h:`): /s/oppxd.log");
  EXPECT_EQ(d.steps[1], "Run `oppx mcp reconnect h` to start it again.");
}

// Over HTTP nothing is downloaded at a start: a timeout is a server that did not answer in time.
TEST(Diagnose, AnHttpTimeoutIsAboutTheServerNotADownload) {
  auto d = diagnose(down::kTimeout, "it did not finish starting within 30 s",
                    http("slow", "https://h.example/mcp?key=secret-in-query", {}), "/s/oppxd.log");
  EXPECT_EQ(d.kind, "timeout");
  ASSERT_EQ(d.steps.size(), 2u) << joined(d);
  EXPECT_EQ(joined(d).find("npx"), std::string::npos) << joined(d);
  EXPECT_EQ(joined(d).find("secret-in-query"), std::string::npos) << joined(d);
  EXPECT_NE(d.steps[0].find("Check that the server is up and that https://h.example/mcp"), std::string::npos)
      << d.steps[0];
  EXPECT_NE(d.steps[0].find("OPPX_MCP_START_TIMEOUT_MS"), std::string::npos) << d.steps[0];
  EXPECT_EQ(d.steps[1], "Then run `oppx mcp reconnect slow`.");
  // An HTTP limit that ended it has its own variable.
  auto h = diagnose(down::kTimeout, "http://h.example took over 15 s to send the headers",
                    http("slow", "https://h.example/mcp", {}), "/s/oppxd.log");
  EXPECT_NE(h.steps[0].find("OPPX_HTTP_TIMEOUTS"), std::string::npos) << h.steps[0];
  // A program's timeout keeps its own steps.
  auto p = diagnose(down::kTimeout, "it did not finish starting within 30 s", command("p", "npx"), "/s/mcp-p.log");
  EXPECT_NE(joined(p).find("npx or uvx downloads it"), std::string::npos) << joined(p);
}

// A URL the server answers 404/405/410 to initialize: the add line with the right URL, every
// header kept as written; a literal value that would be masked makes it an edit of the file.
TEST(Diagnose, AWrongUrlIsCorrectedWithTheAddLineOrInTheFile) {
  EXPECT_TRUE(url_is_wrong(404) && url_is_wrong(405) && url_is_wrong(410));
  EXPECT_FALSE(url_is_wrong(400) || url_is_wrong(500) || url_is_wrong(0));
  auto def = http("nf", "https://h.example/wrong", {{"Authorization", "Bearer ${TOK}"}, {"X-Org", "${ORG}"}});
  Diagnosis d = diagnose(down::kConfig, "its URL is not the server's MCP endpoint: …", def, "/s/oppxd.log", 404);
  EXPECT_EQ(d.kind, "config");
  ASSERT_EQ(d.steps.size(), 1u) << joined(d);
  EXPECT_EQ(d.steps[0],
            "Find the server's MCP endpoint (its documentation names it; it often ends in /mcp) in place of "
            "https://h.example/wrong, and save it: `oppx mcp add nf --url '<right url>' -H 'Authorization: Bearer "
            "${TOK}' -H 'X-Org: ${ORG}' --force` (its headers as they are written).");
  def.file = "/src/app/.mcp.json";
  EXPECT_NE(diagnose(down::kConfig, "x", def, "/l", 405).steps[0].find("`oppx mcp add nf --project --url "),
            std::string::npos);
  auto secret = http("s", "https://h.example/wrong", {{"Authorization", "Bearer sk-literal-secret-1234"}});
  secret.file = "/home/u/.config/oppx/mcp.json";
  Diagnosis e = diagnose(down::kConfig, "x", secret, "/l", 404);
  ASSERT_EQ(e.steps.size(), 2u) << joined(e);
  EXPECT_EQ(joined(e).find("sk-literal"), std::string::npos) << joined(e);
  EXPECT_NE(e.steps[0].find("put it in \"url\" of s in /home/u/.config/oppx/mcp.json in place of "
                            "https://h.example/wrong"),
            std::string::npos)
      << e.steps[0];
  EXPECT_EQ(e.steps[1], "Then run `oppx mcp reconnect s`.");
  // Without such a status, config keeps its general steps.
  EXPECT_NE(diagnose(down::kConfig, "it needs ${X}", def, "/l").steps[0].find("Correct what the reason names"),
            std::string::npos);
}

}  // namespace
}  // namespace oppx::daemon
