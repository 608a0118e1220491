// Connectors files as people paste and share them: add-json takes a pasted block's one entry under the name
// given; and `oppx mcp add --project` keeps a shared .mcp.json's mode.
#include "tests/support/connector_fixture.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
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
};

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
