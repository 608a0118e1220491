// daemon/tools_cache: the last tool list per definition hash, kept across restarts in a 0600
// file written atomically; an edited definition never finds the old list; a damaged file is an
// empty cache, and the oldest entries go past the cap.
#include "daemon/tools_cache.h"

#include "tests/support/harness.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>

namespace oppx::daemon {
namespace {

namespace json = boost::json;

json::array tools(std::initializer_list<const char*> names) {
  json::array a;
  for (const char* n : names) a.push_back(json::object{{"name", n}, {"inputSchema", json::object{{"type", "object"}}}});
  return a;
}

TEST(ToolsCache, TheHashIsStableAndFollowsTheDefinitionAsWritten) {
  EXPECT_EQ(definition_hash(""), "cbf29ce484222325");  // FNV-1a 64 of nothing: its offset basis
  EXPECT_EQ(definition_hash(R"({"command":"a"})"), definition_hash(R"({"command":"a"})"));
  EXPECT_NE(definition_hash(R"({"command":"a"})"), definition_hash(R"({"command":"b"})"));
  EXPECT_EQ(definition_hash("x").size(), 16u);
}

TEST(ToolsCache, AListAndItsEraSavedAreFoundAfterARestartOnlyForTheSameDefinition) {
  test::TempHome home;
  std::string path = home.root() + "/mcp-tools-cache.json";
  {
    ToolsCache cache(path);
    EXPECT_EQ(cache.find(R"({"command":"a"})"), nullptr);
    cache.store("a", R"({"command":"a"})", tools({"echo", "add"}), "2025-11-25");
  }
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ToolsCache again(path);
  const json::array* found = again.find(R"({"command":"a"})");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(*found, tools({"echo", "add"}));
  EXPECT_EQ(again.find(R"({"command":"a","args":["x"]})"), nullptr);
  // The era its server spoke is kept with it, for its next start.
  EXPECT_EQ(again.era(R"({"command":"a"})"), "2025-11-25");
  EXPECT_EQ(again.era(R"({"command":"a","args":["x"]})"), "");
}

TEST(ToolsCache, ADamagedFileIsAnEmptyCacheAndIsReplaced) {
  test::TempHome home;
  std::string path = home.root() + "/mcp-tools-cache.json";
  std::ofstream(path) << "{\"entries\": [not json";
  ToolsCache cache(path);
  EXPECT_EQ(cache.find("{}"), nullptr);
  cache.store("x", "{}", tools({"t"}), "");
  EXPECT_NE(test::read_file(path).find("\"tools\""), std::string::npos);
  EXPECT_NE(ToolsCache(path).find("{}"), nullptr);
}

TEST(ToolsCache, KeepsAtMostItsCapOfEntries) {
  test::TempHome home;
  std::string path = home.root() + "/mcp-tools-cache.json";
  ToolsCache cache(path);
  for (std::size_t i = 0; i < ToolsCache::kMaxEntries + 5; ++i) {
    cache.store("c", "{\"n\":" + std::to_string(i) + "}", tools({"t"}), "");
  }
  json::value saved = json::parse(test::read_file(path));
  EXPECT_EQ(saved.at("entries").as_object().size(), ToolsCache::kMaxEntries);
  EXPECT_NE(cache.find("{\"n\":" + std::to_string(ToolsCache::kMaxEntries + 4) + "}"), nullptr)
      << "the newest entry stays";
}

}  // namespace
}  // namespace oppx::daemon
