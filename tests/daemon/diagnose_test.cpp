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
  Diagnosis d = diagnose(proto::kind::kTimeout, "it did not finish starting within 30 s", def, "/s/mcp-linear.log");
  EXPECT_EQ(d.kind, "login");
  EXPECT_NE(d.reason.find("needs a new login"), std::string::npos);
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_NE(d.steps[0].find("`oppx mcp reconnect linear`"), std::string::npos);
  EXPECT_NE(d.steps[0].find("3 minutes"), std::string::npos);
  EXPECT_NE(d.steps[1].find("~/.mcp-auth"), std::string::npos);
  // The same timeout without mcp-remote is a plain timeout.
  auto plain =
      diagnose(proto::kind::kTimeout, "it did not finish starting within 30 s", command("slow", "node"), "/s/l.log");
  EXPECT_EQ(plain.kind, "timeout");
  EXPECT_NE(joined(plain).find("/s/l.log"), std::string::npos);
}

// The definition stays as it is: a new token in the variable and a reconnect, never an add line
// that would replace its other headers.
TEST(Diagnose, ATokenInAVariableIsRenewedInTheShellAndTheDefinitionKept) {
  auto def = http("lin3", "http://127.0.0.1:8080/mcp",
                  {{"X-Org", "acme"}, {"Authorization", "Bearer ${LINEAR_API_KEY}"}, {"X-Other", "v"}});
  Diagnosis d = diagnose(proto::kind::kLogin, "HTTP 401 from http://127.0.0.1:8080/mcp", def, "/s/l.log");
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
  Diagnosis d = diagnose(proto::kind::kLogin, "HTTP 401", def, "/s/l.log");
  ASSERT_EQ(d.steps.size(), 1u) << joined(d);
  EXPECT_EQ(d.steps[0],
            "Get a new token and save it in its definition: `oppx mcp add lin --url "
            "'https://mcp.linear.app/mcp?team=${TEAM}' -H 'X-Org: ${ORG}' -H 'Authorization: Bearer <new token>' "
            "-H 'X-Who: ${WHO}' --force`.");
  EXPECT_EQ(joined(d).find("lin_api"), std::string::npos);
  // A repository's connector is replaced in its own file.
  def.file = "/src/app/.mcp.json";
  EXPECT_NE(joined(diagnose(proto::kind::kLogin, "HTTP 401", def, "/l")).find("`oppx mcp add lin --project --url "),
            std::string::npos);
  // No header yet: the line adds one and keeps the URL.
  Diagnosis none = diagnose(proto::kind::kLogin, "HTTP 401", http("h", "https://h.example/mcp", {}), "/l");
  ASSERT_EQ(none.steps.size(), 2u) << joined(none);
  EXPECT_EQ(none.steps[0],
            "Log in: run `oppx mcp login h` (in the chat: /mcp auth h); it opens the server's login page in your "
            "browser and waits 3 minutes for you to log in.");
  EXPECT_EQ(none.steps[1],
            "Or, if its service gives you a token instead, add it with `oppx mcp add h --url "
            "https://h.example/mcp -H 'Authorization: Bearer <new token>' --force`.");
}

// A literal value of another header, or a secret in the URL, would be printed masked: running that
// line would lose it, so the step is to edit the one header in the file, and no value is shown.
TEST(Diagnose, WithAnotherLiteralValueTheStepEditsTheFileInstead) {
  auto def = http("gh", "https://api.example.com/mcp",
                  {{"X-Org", "acme-secret-org-id"}, {"Authorization", "Bearer sk-secret-value-1234"}});
  def.file = "/home/u/.config/oppx/mcp.json";
  Diagnosis d = diagnose(proto::kind::kLogin, "HTTP 401", def, "/s/l.log");
  ASSERT_EQ(d.steps.size(), 1u) << joined(d);
  EXPECT_EQ(d.steps[0],
            "Get a new token and put it in the header Authorization of gh in /home/u/.config/oppx/mcp.json in place "
            "of the old one (edit only that value; the rest stays as it is), then run `oppx mcp reconnect gh`.");
  auto query = http("q", "https://api.example.com/mcp?api_key=abcdef0123456789", {});
  Diagnosis q = diagnose(proto::kind::kLogin, "HTTP 401", query, "/l");
  std::string s = joined(q);
  EXPECT_EQ(s.find("--force"), std::string::npos) << s;
  EXPECT_EQ(s.find("abcdef"), std::string::npos) << s;
  EXPECT_NE(s.find("add it as the header Authorization of q in your mcp.json"), std::string::npos) << s;
}

TEST(Diagnose, ALiteralTokenIsNeverRepeated) {
  auto def = http("gh", "https://api.example.com/mcp", {{"X-Api-Key", "sk-secret-value-1234"}});
  Diagnosis d = diagnose(proto::kind::kLogin, "401", def, "/s/l.log");
  std::string s = joined(d) + d.reason;
  EXPECT_EQ(s.find("sk-secret"), std::string::npos) << s;
  EXPECT_NE(s.find("-H 'X-Api-Key: <new token>'"), std::string::npos) << s;
}

TEST(Diagnose, AStoppedProgramWhoseLastStderrLineIsUnauthorizedNeedsALogin) {
  auto def = command("api", "node", {"server.js"});
  def.env = {{"API_TOKEN", "${MY_API_TOKEN}"}};
  Diagnosis d =
      diagnose(proto::kind::kStopped, "its program stopped (exit status 1): Error: 401 Unauthorized", def, "/l");
  EXPECT_EQ(d.kind, "login");
  EXPECT_NE(joined(d).find("environment variable MY_API_TOKEN"), std::string::npos) << joined(d);
  Diagnosis other =
      diagnose(proto::kind::kStopped, "its program stopped (exit status 1): the login field is required", def, "/l");
  EXPECT_EQ(other.kind, "stopped");
}

TEST(Diagnose, AMissingProgramSaysWhatToInstall) {
  EXPECT_NE(diagnose(proto::kind::kNotInstalled, "npx is not installed", command("fs", "npx"), "/l")
                .steps[0]
                .find("Install Node.js 18 or newer"),
            std::string::npos);
  EXPECT_NE(diagnose(proto::kind::kNotInstalled, "uvx is not installed", command("git", "uvx"), "/l")
                .steps[0]
                .find("Install uv"),
            std::string::npos);
  auto d = diagnose(proto::kind::kNotInstalled, "x", command("tool", "/opt/bin/frobnicate"), "/l");
  EXPECT_EQ(d.steps[0], "Install frobnicate, or correct the command of tool in your mcp.json.");
  EXPECT_EQ(d.steps[1], "Then run `oppx mcp reconnect tool`.");
  // A repository's connector: the step names its own file.
  auto def = command("tool", "/opt/bin/frobnicate");
  def.file = "/src/app/.mcp.json";
  EXPECT_EQ(diagnose(proto::kind::kNotInstalled, "x", def, "/l").steps[0],
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
  Diagnosis d = diagnose(proto::kind::kNotInstalled,
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
  auto stopped =
      diagnose(proto::kind::kStopped, "its program stopped (exit status 3)", command("a", "node"), "/s/a.log");
  EXPECT_EQ(stopped.kind, "stopped");
  EXPECT_EQ(stopped.steps[0], "Look at its log for why: /s/a.log");
  EXPECT_EQ(stopped.steps[1], "Run `oppx mcp reconnect a` to start it again.");
  auto far = diagnose(proto::kind::kUnreachable, "connection refused", http("h", "https://h.example/mcp", {}), "/l");
  EXPECT_NE(far.steps[0].find("https://h.example/mcp"), std::string::npos);
  auto config = diagnose(proto::kind::kConfig, "it needs ${X}", command("c", "node"), "/l");
  EXPECT_NE(config.steps[1].find("oppx mcp reconnect c"), std::string::npos);
  EXPECT_EQ(config.reason, "it needs ${X}");
}

// An HTTP connector has no program and no log of its own: its steps name the daemon's log (what
// Connectors gives it as its log path), and say so.
TEST(Diagnose, AnHttpConnectorsLogStepNamesTheDaemonsLog) {
  auto d = diagnose(proto::kind::kStopped, "initialize failed: http://h.example answered HTTP 500 to initialize",
                    http("h", "https://h.example/mcp", {}), "/s/oppxd.log");
  EXPECT_EQ(d.kind, "stopped");
  EXPECT_EQ(d.steps[0], "Look at the daemon's log for why (its lines with `connector h:`): /s/oppxd.log");
  EXPECT_EQ(d.steps[1], "Run `oppx mcp reconnect h` to start it again.");
}

// Over HTTP nothing is downloaded at a start: a timeout is a server that did not answer in time.
TEST(Diagnose, AnHttpTimeoutIsAboutTheServerNotADownload) {
  auto d = diagnose(proto::kind::kTimeout, "it did not finish starting within 30 s",
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
  auto h = diagnose(proto::kind::kTimeout, "http://h.example took over 15 s to send the headers",
                    http("slow", "https://h.example/mcp", {}), "/s/oppxd.log");
  EXPECT_NE(h.steps[0].find("OPPX_HTTP_TIMEOUTS"), std::string::npos) << h.steps[0];
  // A program's timeout keeps its own steps.
  auto p =
      diagnose(proto::kind::kTimeout, "it did not finish starting within 30 s", command("p", "npx"), "/s/mcp-p.log");
  EXPECT_NE(joined(p).find("npx or uvx downloads it"), std::string::npos) << joined(p);
}

// A URL the server answers 404/405/410 to initialize: the add line with the right URL, every
// header kept as written; a literal value that would be masked makes it an edit of the file.
TEST(Diagnose, AWrongUrlIsCorrectedWithTheAddLineOrInTheFile) {
  EXPECT_TRUE(url_is_wrong(404) && url_is_wrong(405) && url_is_wrong(410));
  EXPECT_FALSE(url_is_wrong(400) || url_is_wrong(500) || url_is_wrong(0));
  auto def = http("nf", "https://h.example/wrong", {{"Authorization", "Bearer ${TOK}"}, {"X-Org", "${ORG}"}});
  Diagnosis d = diagnose(proto::kind::kConfig, "its URL is not the server's MCP endpoint: …", def, "/s/oppxd.log", 404);
  EXPECT_EQ(d.kind, "config");
  ASSERT_EQ(d.steps.size(), 1u) << joined(d);
  EXPECT_EQ(d.steps[0],
            "Find the server's MCP endpoint (its documentation names it; it often ends in /mcp) in place of "
            "https://h.example/wrong, and save it: `oppx mcp add nf --url '<right url>' -H 'Authorization: Bearer "
            "${TOK}' -H 'X-Org: ${ORG}' --force` (its headers as they are written).");
  def.file = "/src/app/.mcp.json";
  EXPECT_NE(diagnose(proto::kind::kConfig, "x", def, "/l", 405).steps[0].find("`oppx mcp add nf --project --url "),
            std::string::npos);
  auto secret = http("s", "https://h.example/wrong", {{"Authorization", "Bearer sk-literal-secret-1234"}});
  secret.file = "/home/u/.config/oppx/mcp.json";
  Diagnosis e = diagnose(proto::kind::kConfig, "x", secret, "/l", 404);
  ASSERT_EQ(e.steps.size(), 2u) << joined(e);
  EXPECT_EQ(joined(e).find("sk-literal"), std::string::npos) << joined(e);
  EXPECT_NE(e.steps[0].find("put it in \"url\" of s in /home/u/.config/oppx/mcp.json in place of "
                            "https://h.example/wrong"),
            std::string::npos)
      << e.steps[0];
  EXPECT_EQ(e.steps[1], "Then run `oppx mcp reconnect s`.");
  // Without such a status, config keeps its general steps.
  EXPECT_NE(diagnose(proto::kind::kConfig, "it needs ${X}", def, "/l").steps[0].find("Correct what the reason names"),
            std::string::npos);
}

// npx for a package the registry does not have, as npm 11 prints it (captured): the log pointer
// at the end is a notice; the code line says what happened.
TEST(Diagnose, NpmsErrorCodeIsTheTellingLineAndE404IsNotInstalled) {
  std::deque<std::string> npm = {
      "npm error code E404",
      "npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-doesnotexist-zzz",
      "npm error 404",
      "npm error 404  The requested resource '@modelcontextprotocol/server-doesnotexist-zzz@*' could not be found or "
      "you do not have permission to access it.",
      "npm error 404",
      "npm error 404 Note that you can also install from a",
      "npm error 404 tarball, folder, http url, or git url.",
      "npm error A complete log of this run can be found in: "
      "/home/ana/.npm/_logs/2026-12-03T23_11_18_662Z-debug-0.log"};
  auto def = command("zzz", "npx", {"-y", "@modelcontextprotocol/server-doesnotexist-zzz"});
  EXPECT_EQ(telling_line(npm, false), "npm error code E404");
  StderrReading w = read_stderr_lines(npm, def, false);
  EXPECT_EQ(w.line, "npm error code E404");
  EXPECT_EQ(w.kind, proto::kind::kNotInstalled);
  EXPECT_EQ(w.meaning, "the package does not exist on the registry: check its name");
  // npm before version 10 wrote "npm ERR!".
  EXPECT_EQ(
      read_stderr_lines({"npm ERR! code E404", "npm ERR! 404 Not Found - GET https://r.example/x"}, def, false).kind,
      proto::kind::kNotInstalled);
  // Its steps correct the name; installing Node.js would not help.
  Diagnosis d = diagnose(proto::kind::kNotInstalled,
                         "its program stopped (exit status 1): npm error code E404: the package does not exist on the "
                         "registry: check its name; its log is /l",
                         def, "/l");
  ASSERT_EQ(d.steps.size(), 2u) << joined(d);
  EXPECT_EQ(d.steps[0],
            "Correct the package name (or version) in the command of zzz in your mcp.json: the registry has no such "
            "package.");
  EXPECT_EQ(d.steps[1], "Then run `oppx mcp reconnect zzz`.");
  // Another code names itself, and decides nothing.
  StderrReading net =
      read_stderr_lines({"npm error code ENOTFOUND", "npm error syscall getaddrinfo", "npm error errno ENOTFOUND",
                         "npm error A complete log of this run can be found in: /home/ana/.npm/_logs/x-debug-0.log"},
                        def, false);
  EXPECT_EQ(net.line, "npm error code ENOTFOUND");
  EXPECT_EQ(net.kind, "");
}

// mcp-remote whose server answers 401 and then refuses its client registration (captured from
// mcp-remote 0.15.1): the last lines are the dump of the metadata it sent; its "Fatal error" line
// says what happened, and it is a login to do again, not a program that stopped.
TEST(Diagnose, AnMcpRemoteWhoseLoginFailedNeedsALoginNotTheLastLineOfItsDump) {
  std::deque<std::string> err;
  auto dump = [&](std::string_view head) {
    err.emplace_back(head);
    for (const char* l :
         {"    at registerClient (file:///home/ana/.npm/_npx/705d23756ff7dacc/node_modules/mcp-remote/dist/"
          "chunk-KJCT2FXL.js:28409:27)",
          "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
          "    at async authInternal (file:///home/ana/.npm/_npx/705d23756ff7dacc/node_modules/mcp-remote/dist/"
          "chunk-KJCT2FXL.js:28047:12)",
          "    at async auth (file:///home/ana/.npm/_npx/705d23756ff7dacc/node_modules/mcp-remote/dist/"
          "chunk-KJCT2FXL.js:27940:12)",
          "    at async handleOAuthUnauthorized (file:///home/ana/.npm/_npx/705d23756ff7dacc/node_modules/mcp-remote/"
          "dist/chunk-KJCT2FXL.js:27758:7)",
          "    at async StreamableHTTPClientTransport._send (file:///home/ana/.npm/_npx/705d23756ff7dacc/node_modules/"
          "mcp-remote/dist/chunk-KJCT2FXL.js:31421:15) {",
          "  status: 400,",
          "  body: '{\"error\":\"invalid_client_metadata\",\"error_description\":\"redirect_uris not allowed\"}',",
          "  submittedMetadata: {",
          "    redirect_uris: [ 'http://localhost:19866/oauth/callback' ],",
          "    token_endpoint_auth_method: 'none',",
          "    grant_types: [ 'authorization_code', 'refresh_token' ],",
          "    response_types: [ 'code' ],",
          "    client_name: 'MCP CLI Proxy',",
          "    client_uri: 'https://github.com/modelcontextprotocol/mcp-cli',",
          "    software_id: '2e6dc280-f3c3-4e01-99a7-8181dbd1d23d',",
          "    software_version: '0.15.1',",
          "    scope: 'openid email profile',",
          "    application_type: 'native'",
          "  }",
          "}"})
      err.emplace_back(l);
  };
  for (const char* l : {"[20330] Using callback port derived from the server URL: 19866",
                        "[20330] Discovering OAuth server configuration...",
                        "[20330] Discovered authorization server: https://mcp.example.com",
                        "[20330] Initializing auth coordination on-demand",
                        "[20330] OAuth callback server running at http://127.0.0.1:19866",
                        "[20330] This instance is running the sign-in for this server (callback port 19866)",
                        "[20330] [20330] Connecting to remote server: https://mcp.example.com/mcp",
                        "[20330] Using transport strategy: http-first"})
    err.emplace_back(l);
  const std::string rejected =
      "RegistrationRejectedError: Dynamic Client Registration rejected (HTTP 400): "
      "{\"error\":\"invalid_client_metadata\",\"error_description\":\"redirect_uris not allowed\"}";
  dump("[20330] Connection error: " + rejected);
  dump("[20330] Fatal error: " + rejected);
  while (err.size() > kKeptStderrLines) err.pop_front();
  auto def = command("linear", "npx", {"-y", "mcp-remote", "https://mcp.example.com/mcp"});
  StderrReading w = read_stderr_lines(err, def, false);
  EXPECT_EQ(w.line, "[20330] Fatal error: " + rejected);
  EXPECT_EQ(w.kind, proto::kind::kLogin);
  Diagnosis d = diagnose(w.kind, "its program stopped (exit status 1): " + w.line, def, "/l");
  EXPECT_EQ(d.kind, "login");
  EXPECT_NE(joined(d).find("rm -rf ~/.mcp-auth"), std::string::npos) << joined(d);
  // mcp-remote's own words after a 401, alone, say the same.
  EXPECT_EQ(
      read_stderr_lines({"[1] Authentication required. Initializing auth...", "[1] Fatal error: aborted"}, def, false)
          .kind,
      proto::kind::kLogin);
  // The same lines from a program that is not mcp-remote decide nothing (narrow).
  EXPECT_EQ(read_stderr_lines(err, command("x", "node", {"server.js"}), false).kind, "");
  // mcp-remote's start words are no login trouble.
  EXPECT_EQ(
      read_stderr_lines({"[1] Discovering OAuth server configuration...", "[1] Error: spawn ENOENT"}, def, false).kind,
      "");
}

// Python's traceback: its exception line, not the asyncio noise printed after it at shutdown
// ("Exception ignored in: …" and its own traceback).
TEST(Diagnose, PythonsExceptionLineIsTellingAndShutdownNoiseIsNot) {
  std::deque<std::string> py = {
      "Traceback (most recent call last):",
      "  File \"/home/ana/mcp/weather/server.py\", line 52, in <module>",
      "    asyncio.run(main())",
      "  File \"/usr/lib/python3.12/asyncio/runners.py\", line 194, in run",
      "    return runner.run(main)",
      "           ^^^^^^^^^^^^^^^^",
      "  File \"/usr/lib/python3.12/asyncio/base_events.py\", line 687, in run_until_complete",
      "    return future.result()",
      "           ^^^^^^^^^^^^^^^",
      "  File \"/home/ana/mcp/weather/server.py\", line 47, in main",
      "    key = os.environ[\"WEATHER_API_KEY\"]",
      "          ~~~~~~~~~~^^^^^^^^^^^^^^^^^^^",
      "  File \"<frozen os>\", line 714, in __getitem__",
      "KeyError: 'WEATHER_API_KEY'",
      "Exception ignored in: <function BaseSubprocessTransport.__del__ at 0x7f3a2c1e5e40>",
      "Traceback (most recent call last):",
      "  File \"/usr/lib/python3.12/asyncio/base_subprocess.py\", line 126, in __del__",
      "    self.close()",
      "  File \"/usr/lib/python3.12/asyncio/base_events.py\", line 795, in call_soon",
      "    self._check_closed()",
      "  File \"/usr/lib/python3.12/asyncio/base_events.py\", line 541, in _check_closed",
      "    raise RuntimeError('Event loop is closed')",
      "RuntimeError: Event loop is closed"};
  EXPECT_EQ(telling_line(py, false), "KeyError: 'WEATHER_API_KEY'");
  // An exception without "Error" in its name, in an exception group (anyio), with a line after it.
  std::deque<std::string> group = {
      "  + Exception Group Traceback (most recent call last):",
      "  |   File \"/app/server.py\", line 88, in <module>",
      "  |     mcp.run()",
      "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
      "  +-+---------------- 1 ----------------",
      "    | Traceback (most recent call last):",
      "    |   File \"/app/.venv/lib/python3.12/site-packages/httpx/_transports/default.py\", line 118, in "
      "map_httpcore_exceptions",
      "    |     raise mapped_exc(message) from exc",
      "    | httpx.ConnectTimeout: timed out",
      "    +------------------------------------",
      "error: process exited"};
  EXPECT_EQ(telling_line(group, false), "httpx.ConnectTimeout: timed out");
}

}  // namespace
}  // namespace oppx::daemon
