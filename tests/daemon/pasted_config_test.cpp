// Connectors files as people paste and share them: one entry oppx cannot use (an SSE one, wrong
// types) is set aside as `unsupported` and the rest load; `"disabled": true` starts nothing; a
// stdio connector starts in its repository's root, in HOME for your own, or in its "cwd"; VS
// Code's "servers" form is explained; add-json takes a pasted block's one entry under the name
// given; and `oppx mcp add --project` keeps a shared .mcp.json's mode.
#include "tests/support/connector_fixture.h"

#include "daemon/mcp_config.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;
using daemon::parse_mcp_config;

constexpr std::string_view kSseStep = "oppx speaks streamable HTTP; if the server has one, use its /mcp URL";

TEST(McpConfigEntries, OneBadEntryIsSetAsideAndTheRestLoad) {
  auto cfg = parse_mcp_config(R"({"mcpServers":{"good":{"command":"x"},)"
                              R"("legacy":{"type":"sse","url":"http://127.0.0.1:1/sse"},)"
                              R"("args":{"command":"x","args":"-y"},"a b":{"command":"x"},"last":{"command":"y"}}})",
                              "m.json");
  ASSERT_TRUE(cfg) << cfg.error();
  ASSERT_EQ(cfg->connectors.size(), 5u);
  EXPECT_TRUE(cfg->connectors[0].unsupported.empty());
  EXPECT_TRUE(cfg->connectors[4].unsupported.empty());
  EXPECT_EQ(cfg->connectors[4].command, "y");
  const auto& legacy = cfg->connectors[1];
  EXPECT_NE(legacy.unsupported.find("older SSE transport is not supported"), std::string::npos) << legacy.unsupported;
  EXPECT_NE(legacy.fix.find(kSseStep), std::string::npos) << legacy.fix;
  EXPECT_EQ(legacy.url, "http://127.0.0.1:1/sse");  // shown in the list as written
  EXPECT_EQ(cfg->connectors[2].unsupported, "m.json:1:123: mcpServers.args.args: expected an array of strings");
  EXPECT_NE(cfg->connectors[3].unsupported.find("letters, digits"), std::string::npos);
  // Only a file that is not JSON (or not an object of entries) is an error of the whole file.
  EXPECT_FALSE(parse_mcp_config(R"({"mcpServers":{"good":{"command":"x"},)", "m.json"));
  EXPECT_FALSE(parse_mcp_config(R"({"mcpServers":[]})", "m.json"));
}

TEST(McpConfigEntries, DisabledAndCwdAreRead) {
  auto cfg = parse_mcp_config(R"({"mcpServers":{"off":{"command":"x","disabled":true},)"
                              R"("on":{"command":"x","disabled":false,"cwd":"tools"},)"
                              R"("odd":{"command":"x","disabled":"yes"},"where":{"command":"x","cwd":1}}})",
                              "m.json");
  ASSERT_TRUE(cfg) << cfg.error();
  ASSERT_EQ(cfg->connectors.size(), 4u);
  EXPECT_TRUE(cfg->connectors[0].disabled);
  EXPECT_FALSE(cfg->connectors[1].disabled);
  EXPECT_EQ(cfg->connectors[1].cwd, "tools");
  EXPECT_NE(cfg->connectors[2].unsupported.find("mcpServers.odd.disabled: expected true or false"), std::string::npos)
      << cfg->connectors[2].unsupported;
  EXPECT_NE(cfg->connectors[3].unsupported.find("mcpServers.where.cwd: expected a string"), std::string::npos)
      << cfg->connectors[3].unsupported;
  // A folder given with a variable is a variable the connector reads.
  auto var = parse_mcp_config(R"({"mcpServers":{"v":{"command":"x","cwd":"${OPPX_WORK}/tools"}}})", "m.json");
  ASSERT_TRUE(var);
  EXPECT_EQ(daemon::referenced_variables(var->connectors[0]), std::vector<std::string>{"OPPX_WORK"});
}

TEST(McpConfigEntries, AServersKeyIsExplained) {
  auto cfg = parse_mcp_config(R"({"servers":{"fs":{"type":"stdio","command":"npx"}},"inputs":[]})", "m.json");
  ASSERT_TRUE(cfg) << cfg.error();
  EXPECT_TRUE(cfg->connectors.empty());
  ASSERT_EQ(cfg->notes.size(), 1u);
  EXPECT_NE(cfg->notes[0].find("rename \"servers\" to \"mcpServers\""), std::string::npos) << cfg->notes[0];
  EXPECT_NE(cfg->notes[0].find("VS Code"), std::string::npos) << cfg->notes[0];
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

std::string real(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

void write_file(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  ::chmod(tmp.c_str(), mode);
  ::rename(tmp.c_str(), path.c_str());
}

// The user's connectors and a repository's, with the test run from inside the repository.
struct PastedConfig : ConnectorFixture {
  InRepository in_repo{home};
  const std::string& repo = in_repo.root();

  json::object list() {
    Result r = oppx({"mcp", "list", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out).as_object() : json::object{};
  }
  static json::object named(const json::object& list, const std::string& name) {
    for (auto& c : list.at("connectors").as_array()) {
      if (c.at("name") == json::value(name)) return c.as_object();
    }
    ADD_FAILURE() << name << " is not listed: " << json::serialize(list);
    return {};
  }
  // A script that writes the folder it runs in to `marker`, then serves MCP.
  std::string serve_script(const std::string& path) {
    write_file(path, "#!/bin/sh\npwd > \"$1\"\nexec " FAKE_MCP_SERVER " ok\n", 0700);
    return path;
  }
};

TEST_F(PastedConfig, OneUnusableEntryDoesNotEmptyTheFile) {
  write_config(stdio("one", FAKE_MCP_SERVER, {"ok", home.root()}) +
               R"(,"legacy":{"type":"sse","url":"http://127.0.0.1:1/sse"},)"
               R"("typo":{"command":"node","args":"server.js"},)" +
               stdio("two", FAKE_MCP_SERVER, {"ok", home.root() + "/two"}));
  EXPECT_EQ(entry("one").at("state"), json::value("running"));
  EXPECT_EQ(entry("two").at("state"), json::value("running"));
  json::object l = list();
  EXPECT_FALSE(l.contains("error")) << json::serialize(l);
  json::object legacy = named(l, "legacy");
  EXPECT_EQ(legacy.at("state"), json::value("unsupported"));
  EXPECT_EQ(legacy.at("reason_kind"), json::value("unsupported"));
  EXPECT_NE(json::serialize(legacy.at("steps")).find(kSseStep), std::string::npos) << json::serialize(legacy);
  json::object typo = named(l, "typo");
  EXPECT_EQ(typo.at("state"), json::value("unsupported"));
  EXPECT_NE(std::string(typo.at("reason").as_string()).find("mcpServers.typo.args: expected an array of strings"),
            std::string::npos)
      << json::serialize(typo);

  Result text = oppx({"mcp", "list"});
  EXPECT_NE(text.out.find("unsupported"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(kSseStep), std::string::npos) << text.out;
  Result call = oppx({"mcp", "call", "legacy", "echo"});
  EXPECT_EQ(call.exit_code, 1);
  EXPECT_NE(call.err.find("not running (unsupported)"), std::string::npos) << call.err;
  EXPECT_EQ(oppx({"mcp", "call", "one", "echo", R"({"message":"still here"})"}).exit_code, 0);

  // The same in a repository's .mcp.json: the rest waits for consent, the SSE entry is set aside.
  write_file(repo + "/.mcp.json",
             R"({"mcpServers":{"shared":{"command":"true"},"old":{"type":"sse","url":"http://127.0.0.1:1/sse"}}})");
  l = list();
  ASSERT_TRUE(l.contains("project"));
  EXPECT_FALSE(l.at("project").as_object().contains("error")) << json::serialize(l);
  EXPECT_EQ(named(l, "shared").at("state"), json::value("waiting"));
  json::object old = named(l, "old");
  EXPECT_EQ(old.at("state"), json::value("unsupported"));
  EXPECT_FALSE(old.contains("approve")) << "nothing to approve: it never runs";
}

TEST_F(PastedConfig, DisabledStartsNothing) {
  std::string marker = home.root() + "/ran";
  write_config(R"("off":{"command":"/bin/sh","args":["-c","touch )" + marker +
               "; exec " FAKE_MCP_SERVER R"( ok"],"disabled":true},)" +
               stdio("one", FAKE_MCP_SERVER, {"ok", home.root()}));
  EXPECT_EQ(entry("one").at("state"), json::value("running"));
  json::object off = named(list(), "off");
  EXPECT_EQ(off.at("state"), json::value("disabled"));
  EXPECT_NE(std::string(off.at("reason").as_string()).find("\"disabled\": true"), std::string::npos)
      << json::serialize(off);
  Result again = oppx({"mcp", "reconnect", "off"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.out.find("disabled"), std::string::npos) << again.out;
  EXPECT_EQ(oppx({"mcp", "reconnect"}).exit_code, 0);
  EXPECT_EQ(named(list(), "off").at("state"), json::value("disabled"));
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "a disabled connector ran";
}

TEST_F(PastedConfig, StdioConnectorsStartInTheirFolder) {
  ::mkdir((repo + "/tools").c_str(), 0700);
  ::mkdir((home.root() + "/work").c_str(), 0700);
  serve_script(repo + "/tools/serve.sh");
  serve_script(home.root() + "/serve-home.sh");
  std::string at = home.root() + "/at-";
  // A repository's: a relative script path, and a relative program in its "cwd".
  write_file(repo + "/.mcp.json",
             json::serialize(json::object{
                 {"mcpServers",
                  {{"rel", {{"command", "/bin/sh"}, {"args", json::array{"tools/serve.sh", at + "rel"}}}},
                   {"sub", {{"command", "./serve.sh"}, {"args", json::array{at + "sub"}}, {"cwd", "tools"}}}}}}));
  // Yours: HOME, and a "cwd" relative to the folder of mcp.json; a missing folder is explained.
  write_config(R"("mine":{"command":"/bin/sh","args":["serve-home.sh",")" + at + R"(mine"]},)" +
               R"("there":{"command":")" + home.root() + R"(/serve-home.sh","args":[")" + at +
               R"(there"],"cwd":"../../work"},)" + R"("nowhere":{"command":"/bin/sh","cwd":"no-such-folder"},)" +
               // A real server, its script named relative to the folder it is given.
               R"("everything":{"command":"node","cwd":")" + OPPX_NPM_DIR +
               R"(","args":["node_modules/@modelcontextprotocol/server-everything/dist/index.js","stdio"]})");
  EXPECT_EQ(entry("mine").at("state"), json::value("running"));
  EXPECT_EQ(read_file(at + "mine"), real(home.root()) + "\n");
  EXPECT_EQ(entry("there").at("state"), json::value("running"));
  EXPECT_EQ(read_file(at + "there"), real(home.root() + "/work") + "\n");
  json::object nowhere = entry("nowhere");
  EXPECT_EQ(nowhere.at("state"), json::value("failed"));
  EXPECT_EQ(nowhere.at("reason_kind"), json::value("config"));
  EXPECT_NE(std::string(nowhere.at("reason").as_string()).find("no-such-folder"), std::string::npos)
      << json::serialize(nowhere);
  Result everything = oppx({"mcp", "call", "everything", "echo", R"({"message":"from its folder"})"});
  EXPECT_EQ(everything.out, "Echo: from its folder\n") << everything.err;

  ASSERT_EQ(oppx({"mcp", "approve", "rel"}).exit_code, 0);
  EXPECT_EQ(read_file(at + "rel"), real(repo) + "\n");
  Result sub = oppx({"mcp", "approve", "sub"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  EXPECT_EQ(read_file(at + "sub"), real(repo + "/tools") + "\n");
}

TEST_F(PastedConfig, VsCodesServersFormIsExplained) {
  write_file(repo + "/.mcp.json", R"({"servers":{"fs":{"type":"stdio","command":"npx"}}})");
  Result r = oppx({"mcp", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("rename \"servers\" to \"mcpServers\""), std::string::npos) << r.err;
  json::object l = list();
  EXPECT_NE(json::serialize(l.at("project")).find("rename \\\"servers\\\""), std::string::npos) << json::serialize(l);
}

TEST_F(PastedConfig, AddJsonTakesTheOneEntryOfAPastedBlockUnderTheNameGiven) {
  std::string block = R"({"mcpServers":{"other":{"command":")" FAKE_MCP_SERVER R"(","args":["ok"]}}})";
  Result one = oppx({"mcp", "add-json", "mine", block});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.err.find("only entry is named other; adding it as mine"), std::string::npos) << one.err;
  std::string config = home.root() + "/config/oppx/mcp.json";
  json::object servers = json::parse(read_file(config)).at("mcpServers").as_object();
  EXPECT_TRUE(servers.contains("mine"));
  EXPECT_FALSE(servers.contains("other"));

  Result several = oppx({"mcp", "add-json", "x", R"({"mcpServers":{"a":{"command":"true"},"b":{"command":"true"}}})"});
  EXPECT_EQ(several.exit_code, 2);
  EXPECT_NE(several.err.find("has 2 entries (a, b) and none named x"), std::string::npos) << several.err;
}

TEST_F(PastedConfig, AProjectAddKeepsASharedFilesMode) {
  write_file(repo + "/.mcp.json", R"({"mcpServers":{"team":{"command":"true"}}})", 0644);
  Result r = oppx({"mcp", "add", "--project", "p1", "--", FAKE_MCP_SERVER, "ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("0600"), std::string::npos) << r.err;
  EXPECT_EQ(mode_of(repo + "/.mcp.json"), 0644u);
  ASSERT_EQ(oppx({"mcp", "remove", "--project", "team"}).exit_code, 0);
  EXPECT_EQ(mode_of(repo + "/.mcp.json"), 0644u);
  // Your own file stays 0600.
  ASSERT_EQ(oppx({"mcp", "add", "mine", "--", FAKE_MCP_SERVER, "ok"}).exit_code, 0);
  EXPECT_EQ(mode_of(home.root() + "/config/oppx/mcp.json"), 0600u);
}

}  // namespace
}  // namespace oppx::test
