// oppx mcp import: the readers of each client's file on realistic files written in the test's
// HOME (Claude Code, Claude Desktop, VS Code, Cursor, Codex's TOML), what they keep (${VAR}) and
// refuse (${input:…}, SSE), the TOML reader's grammar and errors; then the real oppx with its
// daemon: a dry run writes nothing, --yes adds, a second run refuses to overwrite, --project.
#include "tests/support/harness.h"

#include "cli/mcp_import.h"
#include "cli/toml_subset.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <sys/stat.h>

namespace oppx::test {
namespace {

namespace json = boost::json;
using namespace cli::mcp_import;

void write(const std::string& path, const std::string& text) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
    ::mkdir(path.substr(0, slash).c_str(), 0700);
  std::ofstream(path) << text;
}

struct McpImport : ::testing::Test {
  TempHome home;
  Places places{home.root(), home.root() + "/config", home.root() + "/codex", home.root() + "/repo/sub",
                home.root() + "/repo"};

  Scan read(std::optional<Client> only, bool project = false) { return scan(sources(places, only, project)); }
  static const Candidate* named(const Scan& s, const std::string& name) {
    for (const auto& c : s.candidates) {
      if (c.name == name) return &c;
    }
    return nullptr;
  }
};

TEST_F(McpImport, ClaudeCodeLocalScopeFirstThenUserThenProject) {
  write(home.root() + "/.claude.json", R"({
    "numStartups": 41, "tipsHistory": {"x": 1},
    "mcpServers": {
      "github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                 "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}},
      "shared": {"type": "http", "url": "https://user.example/mcp"}
    },
    "projects": {
      ")" + places.cwd + R"(": {"allowedTools": [], "mcpServers": {
        "shared": {"type": "http", "url": "${API_BASE:-https://api.example.com}/mcp",
                   "headers": {"Authorization": "Bearer ${API_KEY}"}, "oauth": {"clientId": "abc"}}}},
      "/elsewhere": {"mcpServers": {"other": {"command": "x"}}}
    }})");
  write(places.root + "/.mcp.json", R"({"mcpServers": {"team": {"command": "./tools/serve.sh", "args": []}}})");

  Scan s = read(Client::kClaudeCode);
  ASSERT_EQ(s.candidates.size(), 3u);
  EXPECT_EQ(s.candidates[0].name, "shared");
  EXPECT_EQ(s.candidates[0].source.scope, "local");
  // References kept as written, defaults too; oauth copied.
  EXPECT_EQ(s.candidates[0].definition, json::parse(R"({"url": "${API_BASE:-https://api.example.com}/mcp",
              "headers": {"Authorization": "Bearer ${API_KEY}"}, "oauth": {"clientId": "abc"}})"));
  EXPECT_EQ(named(s, "github")->definition,
            json::parse(R"({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}})"));
  EXPECT_EQ(s.candidates[2].source.scope, "user");
  EXPECT_EQ(named(s, "other"), nullptr);  // another folder's local scope is not this one's

  // The user's shared comes after the local one of the same name: a duplicate, not added twice.
  auto p = plan(s.candidates, {}, false);
  EXPECT_EQ(p[0].action, Action::kAdd);
  EXPECT_EQ(p[2].action, Action::kDuplicate);
  EXPECT_NE(p[2].why.find("comes first"), std::string::npos) << p[2].why;

  Scan project = read(Client::kClaudeCode, true);
  ASSERT_EQ(project.candidates.size(), 1u);
  EXPECT_EQ(project.candidates[0].definition, json::parse(R"({"command": "./tools/serve.sh"})"));
  EXPECT_EQ(project.candidates[0].source.scope, "project");
}

TEST_F(McpImport, ClaudeDesktopKeepsLiteralsButShowsThemMasked) {
  write(places.config_home + "/Claude/claude_desktop_config.json", R"({
    "mcpServers": {
      "brave": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-brave-search"],
                "env": {"BRAVE_API_KEY": "BSA-live-0123456789abcdef"}},
      "pg": {"command": "npx", "args": ["-y", "server-postgres", "postgresql://me:hunter2pass@db/app"]}
    },
    "globalShortcut": "Ctrl+Space"})");
  Scan s = read(Client::kClaudeDesktop);
  ASSERT_EQ(s.files.size(), 1u);
  EXPECT_TRUE(s.files[0].found);
  EXPECT_EQ(s.files[0].entries, 2u);
  const Candidate* brave = named(s, "brave");
  ASSERT_NE(brave, nullptr);
  EXPECT_EQ(brave->definition.at("env").at("BRAVE_API_KEY"), "BSA-live-0123456789abcdef");  // written as it is
  std::string shown = json::serialize(masked(brave->definition));
  EXPECT_EQ(shown.find("0123456789abcdef"), std::string::npos) << shown;
  std::string pg = json::serialize(masked(named(s, "pg")->definition));
  EXPECT_EQ(pg.find("hunter2pass"), std::string::npos) << pg;
}

TEST_F(McpImport, VsCodeRefusesInputsAndSseKeepsEnvReferencesInItsWords) {
  write(places.config_home + "/Code/User/mcp.json", R"(// user MCP servers
{
  "inputs": [{"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true}],
  "servers": {
    "perplexity": {"type": "stdio", "command": "npx", "args": ["-y", "server-perplexity-ask"],
                   "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}},
    "legacy": {"type": "sse", "url": "https://legacy.example/sse"},
    "gh": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
           "headers": {"Authorization": "Bearer ${env:GH_TOKEN}"}, "gallery": true, "version": "1.0.0"},
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${userHome}/src"],},
    "here": {"command": "node", "args": ["${workspaceFolder}/server.js"]},
  },
})");
  write(places.config_home + "/Code/User/settings.json", R"({
    "editor.fontSize": 13,
    /* servers in settings, the older place */
    "mcp": {"servers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}
  })");
  Scan s = read(Client::kVsCode);
  ASSERT_EQ(s.files.size(), 2u);
  EXPECT_TRUE(s.files[0].error.empty()) << s.files[0].error;
  EXPECT_EQ(s.candidates.size(), 6u);
  const Candidate* perplexity = named(s, "perplexity");
  EXPECT_NE(perplexity->refused.find("${input:perplexity-key}"), std::string::npos) << perplexity->refused;
  EXPECT_NE(perplexity->refused.find("environment variable"), std::string::npos) << perplexity->refused;
  EXPECT_TRUE(perplexity->definition.empty());
  EXPECT_NE(named(s, "legacy")->refused.find("SSE"), std::string::npos);
  EXPECT_EQ(named(s, "gh")->definition, json::parse(R"({"url": "https://api.githubcopilot.com/mcp/",
              "headers": {"Authorization": "Bearer ${GH_TOKEN}"}})"));
  EXPECT_EQ(named(s, "gh")->notes.size(), 2u);  // ${env:…} rewritten; gallery and version left out
  EXPECT_EQ(named(s, "fs")->definition.at("args").as_array().back(), "${HOME}/src");
  EXPECT_NE(named(s, "here")->refused.find("${workspaceFolder}"), std::string::npos);
  EXPECT_EQ(named(s, "memory")->source.scope, "user");
  EXPECT_NE(named(s, "memory")->source.label().find("(at mcp)"), std::string::npos);

  write(places.root + "/.vscode/mcp.json", R"({"servers": {"proj": {"type": "stdio", "command": "uvx",
                                               "args": ["mcp-server-git"], "envFile": "${workspaceFolder}/.env"}}})");
  Scan project = read(Client::kVsCode, true);
  ASSERT_EQ(project.candidates.size(), 1u);
  EXPECT_NE(project.candidates[0].refused.find("envFile"), std::string::npos) << project.candidates[0].refused;
}

TEST_F(McpImport, CursorUrlWithoutTypeIsHttp) {
  write(home.root() + "/.cursor/mcp.json", R"({"mcpServers": {
    "context7": {"url": "https://mcp.context7.com/mcp", "headers": {"CONTEXT7_API_KEY": "${env:CONTEXT7_API_KEY}"}},
    "playwright": {"command": "npx", "args": ["@playwright/mcp@latest"], "env": {"DEBUG": 1}},
    "bad name": {"command": "x"},
    "broken": {"command": "x", "args": "not-an-array"}}})");
  Scan s = read(Client::kCursor);
  EXPECT_EQ(named(s, "context7")->definition, json::parse(R"({"url": "https://mcp.context7.com/mcp",
                            "headers": {"CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"}})"));
  EXPECT_EQ(named(s, "playwright")->definition.at("env").at("DEBUG"), "1");
  EXPECT_NE(named(s, "bad name")->refused.find("letters, digits"), std::string::npos);
  EXPECT_NE(named(s, "broken")->refused.find("mcpServers.broken.args: expected an array of strings"), std::string::npos)
      << named(s, "broken")->refused;
}

TEST_F(McpImport, CodexTablesInlineEnvAndBearerTokenVariable) {
  write(places.codex_home + "/config.toml", R"(# Codex
model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
env_http_headers = { "X-Org" = "DOCS_ORG" }
http_headers.X-Team = 'platform'
startup_timeout_sec = 20.5
tool_timeout_sec = 60

[mcp_servers.sqlite]
command = "uvx"
args = [
  "mcp-server-sqlite",   # the server
  '--db-path', "C:\\data\\app.db",
]
env_vars = ["HOME_DB"]
enabled = false

[mcp_servers.sqlite.env]
LOG_LEVEL = "debug"
"API KEY" = "${MY_KEY}"

[mcp_servers."inline"]
command = "npx"
env = { TOKEN = "${TOKEN}", MODE = "ro" }

[mcp_servers.picky]
command = "npx"
enabled_tools = ["search"]

[mcp_servers.typo]
command = "npx"
args = "--stdio"

[profiles.fast]
model = "o4-mini"
)");
  Scan s = read(Client::kCodex);
  ASSERT_EQ(s.files.size(), 1u);
  ASSERT_TRUE(s.files[0].error.empty()) << s.files[0].error;
  ASSERT_EQ(s.candidates.size(), 5u);
  const Candidate* docs = named(s, "docs");
  EXPECT_EQ(docs->definition, json::parse(R"({"url": "https://docs.example.com/mcp", "headers": {
              "Authorization": "Bearer ${DOCS_TOKEN}", "X-Org": "${DOCS_ORG}", "X-Team": "platform"}})"));
  EXPECT_NE(docs->notes.at(0).find("startup_timeout_sec, tool_timeout_sec"), std::string::npos) << docs->notes[0];
  EXPECT_EQ(named(s, "sqlite")->definition,
            json::parse(R"({"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "C:\\data\\app.db"],
                            "disabled": true,
                            "env": {"HOME_DB": "${HOME_DB}", "LOG_LEVEL": "debug", "API KEY": "${MY_KEY}"}})"));
  EXPECT_EQ(named(s, "inline")->definition,
            json::parse(R"({"command": "npx", "env": {"TOKEN": "${TOKEN}", "MODE": "ro"}})"));
  EXPECT_NE(named(s, "picky")->refused.find("line 32: mcp_servers.picky.enabled_tools"), std::string::npos)
      << named(s, "picky")->refused;
  EXPECT_NE(named(s, "typo")->refused.find("line 36: mcp_servers.typo.args: expected an array of strings"),
            std::string::npos)
      << named(s, "typo")->refused;
}

TEST_F(McpImport, TomlSyntaxErrorNamesTheFileAndLine) {
  write(places.codex_home + "/config.toml",
        "model = \"x\"\n\n[mcp_servers.a]\ncommand = \"npx\"\nargs = [\"-y\",\n"
        "  \"pkg\"\n]\nenv = { A = \"unclosed }\n");
  Scan s = read(Client::kCodex);
  ASSERT_EQ(s.files.size(), 1u);
  EXPECT_EQ(s.files[0].error.rfind(places.codex_home + "/config.toml:8: a string is not closed", 0), 0u)
      << s.files[0].error;
  EXPECT_TRUE(s.candidates.empty());
}

TEST(TomlSubset, TheGrammarCodexFilesUse) {
  auto doc = cli::parse_toml(R"(
# comment
title = "a \"quoted\" \t tab \u00e9 \U0001F600"
path = 'C:\Users\me'
multi = """
line one
line two \
    joined"""
raw = '''
no \escape'''
n = 1_000
neg = -17
hex = 0xff
f = 6.5e-1
yes = true
a.b."c.d" = 1
list = [ 1, [2, 3], { x = "y" }, ]  # trailing comma
empty = {}
[t]
k = "v"
[[servers]]
name = "one"
[[servers]]
name = "two"
[servers.sub]
z = 1
)");
  ASSERT_TRUE(doc) << doc.error().line << ": " << doc.error().message;
  const json::object& r = doc->root;
  EXPECT_EQ(r.at("title"), "a \"quoted\" \t tab \u00e9 \U0001F600");
  EXPECT_EQ(r.at("path"), "C:\\Users\\me");
  EXPECT_EQ(r.at("multi"), "line one\nline two joined");
  EXPECT_EQ(r.at("raw"), "no \\escape");
  EXPECT_EQ(r.at("n"), 1000);
  EXPECT_EQ(r.at("neg"), -17);
  EXPECT_EQ(r.at("hex"), 255);
  EXPECT_DOUBLE_EQ(r.at("f").as_double(), 0.65);
  EXPECT_EQ(r.at("yes"), true);
  EXPECT_EQ(r.at("a").at("b").at("c.d"), 1);
  EXPECT_EQ(r.at("list"), json::parse(R"([1, [2, 3], {"x": "y"}])"));
  EXPECT_EQ(r.at("servers"), json::parse(R"([{"name": "one"}, {"name": "two", "sub": {"z": 1}}])"));
  EXPECT_EQ(doc->line_of({"t", "k"}), 20);
  EXPECT_EQ(doc->line_of({"t", "nothing"}), 19);  // its table's line

  auto error = [](std::string_view text) {
    auto d = cli::parse_toml(text);
    return d ? std::string("parsed") : std::to_string(d.error().line) + ": " + d.error().message;
  };
  EXPECT_EQ(error("a = 1\nb = 2\na = 3\n"), "3: a is given twice (first on line 1)");
  EXPECT_EQ(error("[t]\nx = 1\n[t]\n"), "3: [t] is given twice (first on line 1)");
  EXPECT_EQ(error("x = 1979-05-27\n").rfind("1: dates and times", 0), 0u);
  EXPECT_EQ(error("x = \"\\q\"\n").rfind("1: unknown escape", 0), 0u);
  EXPECT_EQ(error("\n\nx = [1, 2\n").rfind("3: an array is not closed", 0), 0u);
  EXPECT_EQ(error("x = 1 y = 2\n").rfind("1: expected the end of the line", 0), 0u);
  EXPECT_EQ(error("x = 07\n").rfind("1: a number may not start with 0", 0), 0u);
  EXPECT_EQ(error("x = bare\n").rfind("1: \"bare\" is not a number", 0), 0u);
  EXPECT_EQ(error("t = { a = 1 }\n[t]\n").rfind("2: t is already a value", 0), 0u);
}

TEST(McpImportPlan, ExistingNamesAreSkippedUnlessForced) {
  Candidate a{.name = "a", .source = {}, .definition = {{"command", "x"}}, .refused = {}, .notes = {}};
  Candidate b{.name = "b", .source = {}, .definition = {}, .refused = "why not", .notes = {}};
  std::vector<Candidate> all{a, b};
  auto kept = plan(all, {"a"}, false);
  EXPECT_EQ(kept[0].action, Action::kExists);
  EXPECT_NE(kept[0].why.find("--force"), std::string::npos);
  EXPECT_EQ(kept[1].action, Action::kRefused);
  EXPECT_EQ(kept[1].why, "why not");
  EXPECT_EQ(plan(all, {"a"}, true)[0].action, Action::kReplace);
  EXPECT_EQ(plan(all, {}, false)[0].action, Action::kAdd);
}

// ---- the real oppx and its daemon

struct McpImportCli : ::testing::Test {
  TempHome home;
  std::string config = home.root() + "/config/oppx/mcp.json";
  std::string desktop = home.root() + "/config/Claude/claude_desktop_config.json";

  void SetUp() override {
    ::setenv("CODEX_HOME", (home.root() + "/codex").c_str(), 1);
    ::setenv("MY_API_KEY", "key-for-the-echo-server", 1);
    // Two servers oppx can run, one that it cannot import, a secret that must not show.
    write(desktop, std::string(R"({"mcpServers": {
      "echo": {"command": ")") +
                       FAKE_MCP_SERVER + R"(", "args": ["ok"], "env": {"API_KEY": "${MY_API_KEY}"}},
      "echo2": {"command": ")" +
                       FAKE_MCP_SERVER + R"(", "args": ["ok"], "env": {"TOKEN": "tok-secret-0123456789"}},
      "old": {"type": "sse", "url": "https://old.example/sse"}}})");
  }
  void TearDown() override {
    oppx({"daemon", "stop"});
    ::unsetenv("CODEX_HOME");
    ::unsetenv("MY_API_KEY");
  }
  std::set<std::string> listed() {
    std::set<std::string> names;
    json::value v = json::parse(oppx({"mcp", "list", "--json"}).out);
    for (auto& c : v.at("connectors").as_array()) names.insert(std::string(c.at("name").as_string()));
    return names;
  }
};

TEST_F(McpImportCli, DryRunShowsThePlanAndWritesNothing) {
  Result r = oppx({"mcp", "import"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("Claude Desktop (user)  " + desktop + ": 3 servers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Nothing found in:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("env:     API_KEY=${MY_API_KEY}"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("tok-secret-0123456789"), std::string::npos) << r.out;  // masked
  EXPECT_NE(r.out.find("not importable: mcpServers.old: it uses the older SSE transport"), std::string::npos);
  std::string last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  EXPECT_EQ(last, "Nothing was written. To add them to " + config + ", run: oppx mcp import --yes\n");
  EXPECT_EQ(read_file(config), "");
  EXPECT_TRUE(listed().empty());

  Result j = oppx({"mcp", "import", "--from", "claude-desktop", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json::value plan = json::parse(j.out);
  EXPECT_EQ(plan.at("written"), false);
  EXPECT_EQ(plan.at("candidates").as_array().size(), 3u);
  EXPECT_EQ(plan.at("candidates").at(2).at("action"), "refused");
  EXPECT_EQ(j.out.find("tok-secret-0123456789"), std::string::npos) << j.out;

  EXPECT_EQ(oppx({"mcp", "import", "--from", "windsurf"}).exit_code, 2);
  Result none = oppx({"mcp", "import", "--from", "cursor"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("No Cursor MCP servers found"), std::string::npos) << none.out;
}

TEST_F(McpImportCli, YesAddsThemAndASecondRunRefusesToOverwriteWithoutForce) {
  Result r = oppx({"mcp", "import", "--yes"}, 60s);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("Added echo in " + config + ": running, "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("tok-secret-0123456789"), std::string::npos) << r.out;
  EXPECT_EQ(listed(), (std::set<std::string>{"echo", "echo2"}));
  json::value written = json::parse(read_file(config));
  EXPECT_EQ(written.at("mcpServers").at("echo").at("env"), json::parse(R"({"API_KEY": "${MY_API_KEY}"})"));
  std::string before = read_file(config);

  Result again = oppx({"mcp", "import", "--yes"}, 60s);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("skipped: oppx already has a connector named echo; --force replaces it"), std::string::npos)
      << again.out;
  EXPECT_EQ(again.out.find("Added"), std::string::npos) << again.out;
  EXPECT_EQ(read_file(config), before);

  Result forced = oppx({"mcp", "import", "--from", "claude-desktop", "--yes", "--force"}, 60s);
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.out.find("Replaced echo in " + config), std::string::npos) << forced.out;
}

TEST_F(McpImportCli, ProjectReadsTheRepositorysFilesAndWritesItsMcpJson) {
  InRepository repo(home);
  write(repo.root() + "/.cursor/mcp.json",
        std::string(R"({"mcpServers": {"team": {"command": ")") + FAKE_MCP_SERVER + R"(", "args": ["ok"]}}})");
  Result r = oppx({"mcp", "import", "--project", "--yes"}, 60s);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("Cursor (project)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Claude Desktop"), std::string::npos) << r.out;  // the user's files are not read
  json::value written = json::parse(read_file(repo.root() + "/.mcp.json"));
  EXPECT_EQ(written.at("mcpServers").at("team").at("args"), json::parse(R"(["ok"])"));
  EXPECT_EQ(read_file(config), "");
  EXPECT_EQ(listed(), (std::set<std::string>{"team"}));
  // The repository wrote it, and the preview masked its values: the import is no consent. It
  // waits for `oppx mcp approve`, which shows it in full, and nothing of it ran.
  EXPECT_NE(r.out.find("-> adding, to wait for `oppx mcp approve team`"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Added team in " + repo.root() + "/.mcp.json; it waits for `oppx mcp approve team`"),
            std::string::npos)
      << r.out;
  Result get = oppx({"mcp", "get", "team", "--json"});
  EXPECT_EQ(json::parse(get.out).at("state"), json::value("waiting")) << get.out;
  EXPECT_EQ(read_file(home.root() + "/state/oppx/mcp-approved.json").find("\"team\""), std::string::npos);

  // --force does not turn the waiting one into an approved one either.
  write(repo.root() + "/.cursor/mcp.json",
        std::string(R"({"mcpServers": {"team": {"command": ")") + FAKE_MCP_SERVER + R"(", "args": ["ok", "2"]}}})");
  Result forced = oppx({"mcp", "import", "--project", "--yes", "--force"}, 60s);
  ASSERT_EQ(forced.exit_code, 0) << forced.err << forced.out;
  EXPECT_NE(forced.out.find("Replaced team in " + repo.root() + "/.mcp.json; it waits for `oppx mcp approve team`"),
            std::string::npos)
      << forced.out;
  get = oppx({"mcp", "get", "team", "--json"});
  EXPECT_EQ(json::parse(get.out).at("state"), json::value("waiting")) << get.out;
  EXPECT_EQ(read_file(home.root() + "/state/oppx/mcp-approved.json").find("\"team\""), std::string::npos);
}

// What the daemon answers quotes the repository's file and folder (its path, its URL): what
// reaches the terminal is escaped, so that a repository cannot send escape sequences.
TEST_F(McpImportCli, TheDaemonsAnswersQuotingTheRepositoryAreEscaped) {
  std::string root = home.root() + "/r\x1b]0;owned\x07";
  std::filesystem::create_directories(root + "/.git");
  write(root + "/.cursor/mcp.json", std::string(R"({"mcpServers": {"team": {"command": ")") + FAKE_MCP_SERVER +
                                        R"(", "args": ["ok"]}, "web": {"type": "http", "url": "ftp://x\u001b[2J"}}})");
  std::string before = std::filesystem::current_path();
  std::filesystem::current_path(root);
  Result r = oppx({"mcp", "import", "--project", "--yes"}, 60s);
  std::filesystem::current_path(before);
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.out.find("Added team in " + home.root() + "/r\\x1b]0;owned\\x07/.mcp.json"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("web was not added: "), std::string::npos) << r.err;
  for (const std::string& s : {r.out, r.err}) {
    EXPECT_EQ(s.find('\x1b'), std::string::npos) << s;
    EXPECT_EQ(s.find('\x07'), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace oppx::test
