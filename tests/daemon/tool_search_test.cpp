// Tool search (tools/search): the index's words, an exact name first, the share of requests whose
// needed tool it finds over the tool lists of fourteen real servers (tests/data/tool_lists: two
// request sets, one written while the search was tuned and one written apart from it and never
// tuned on), and the method through the daemon on real servers, a deny rule's tools left out.
#include "daemon/tool_search.h"
#include "tests/support/harness.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

namespace oppx::test {
namespace {

namespace json = boost::json;
using daemon::ToolIndex;

const std::string kLists = std::string(OPPX_TEST_DATA) + "/tool_lists";

ToolIndex stored_lists() {
  ToolIndex index;
  for (const auto& e : std::filesystem::directory_iterator(kLists)) {
    std::string name = e.path().filename().string();
    if (name == "requests.json" || name == "heldout.json") continue;
    json::value v = json::parse(read_file(e.path().string()));
    index.add(v.at("connector").as_string(), v.at("tools").as_array());
  }
  return index;
}

struct HitRate {
  int found = 0, first = 0, total = 0;
  double share() const { return total ? 100.0 * found / total : 0; }
};

// The agent's search: the model's query with the user's message as context, the first 6 kept.
HitRate hit_rate(const ToolIndex& index, const std::string& set, bool with_context) {
  HitRate r;
  json::value requests = json::parse(read_file(kLists + "/" + set));
  for (const json::value& v : requests.as_array()) {
    const json::object& o = v.as_object();
    std::string needs(o.at("needs").as_string());
    auto hits = index.search(o.at("query").as_string(), 6, with_context ? o.at("request").as_string() : "");
    for (std::size_t i = 0; i < hits.size(); ++i) {
      if (hits[i].connector + "." + hits[i].name != needs) continue;
      ++r.found;
      r.first += i == 0;
    }
    ++r.total;
  }
  return r;
}

TEST(ToolSearch, WordsAreSplitAtCaseAndPunctuationLowerCasedAndCutToTheirStem) {
  EXPECT_EQ(daemon::search_terms("listPullRequests"), (std::vector<std::string>{"list", "pull", "request"}));
  EXPECT_EQ(daemon::search_terms("get_file-contents of the HTTPServer"),
            (std::vector<std::string>{"get", "fil", "content", "http", "server"}));
  // Forms of one word meet: plural, -ies, -ing, -ed, a final e.
  EXPECT_EQ(daemon::search_terms("repositories repository"), (std::vector<std::string>{"repository", "repository"}));
  EXPECT_EQ(daemon::search_terms("resolve resolved resolving"),
            (std::vector<std::string>{"resolv", "resolv", "resolv"}));
  EXPECT_EQ(daemon::search_terms("running runs"), (std::vector<std::string>{"run", "run"}));
  EXPECT_TRUE(daemon::search_terms("the of and to").empty());
}

TEST(ToolSearch, AnExactNameComesFirstAndAQueryOfNoKnownWordFindsNothing) {
  ToolIndex index = stored_lists();
  EXPECT_EQ(index.size(), 186u);
  auto hits = index.search("github.create_issue", 5);
  ASSERT_FALSE(hits.empty());
  EXPECT_TRUE(hits[0].exact);
  EXPECT_EQ(hits[0].connector + "." + hits[0].name, "github.create_issue");
  // A bare name another connector has too: both exact ones lead.
  hits = index.search("create_issue", 5);
  ASSERT_GE(hits.size(), 2u);
  EXPECT_TRUE(hits[0].exact && hits[1].exact);
  EXPECT_NE(hits[0].connector, hits[1].connector);
  EXPECT_FALSE(hits[2].exact);
  // Any spelling of a name: dashes, spaces and case.
  hits = index.search("Get Sum", 1);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].name, "get-sum");
  EXPECT_TRUE(index.search("zzqx wvvy", 5).empty());
  EXPECT_TRUE(index.search("", 5).empty());
}

// The figure of issue 29: a needed tool offered after at most one search in at least 95% of the
// requests, on both sets. The query alone is printed beside it.
TEST(ToolSearch, FindsTheNeededToolAmongTheFirstSixForNineteenRequestsInTwenty) {
  ToolIndex index = stored_lists();
  for (std::string set : {"requests.json", "heldout.json"}) {
    HitRate both = hit_rate(index, set, true);
    HitRate alone = hit_rate(index, set, false);
    std::printf("%s: %d of %d found (%.1f%%), %d first; the query alone: %d (%.1f%%)\n", set.c_str(), both.found,
                both.total, both.share(), both.first, alone.found, alone.share());
    EXPECT_GE(both.total, 140) << set;
    EXPECT_GE(both.share(), 95.0) << set;
  }
}

// Through the daemon, on real servers: the best tools of this folder's running connectors, a
// deny rule's left out, an exact name first, and the params checked.
TEST(ToolSearch, TheDaemonSearchesTheRunningConnectorsAndLeavesADenyRulesToolsOut) {
  TempHome home;
  InRepository repo(home);
  std::string memory = std::string(OPPX_NPM_DIR) + "/node_modules/@modelcontextprotocol/server-memory/dist/index.js";
  home.write_mcp_config(stdio_entry("everything", "node", {kEverything, "stdio"}) + "," +
                        stdio_entry("memory", "node", {memory}, {{"MEMORY_FILE_PATH", home.root() + "/memory.jsonl"}}));
  connectors_settled(home, repo.root());
  auto client = hello_client(home);
  ASSERT_TRUE(client);
  auto search = [&](json::object params) {
    params["cwd"] = repo.root();
    return client->call("tools/search", params, 10s);
  };
  auto r = search({{"query", "add two numbers"}});
  ASSERT_TRUE(r) << r.error().message;
  // Every tool of both (server-everything lists one more to a client that can be asked: oppxd).
  std::int64_t all = r->at("searched").as_int64();
  EXPECT_GE(all, 14 + 9);
  const json::array& tools = r->at("tools").as_array();
  ASSERT_FALSE(tools.empty());
  EXPECT_EQ(tools[0].at("connector"), "everything");
  EXPECT_EQ(tools[0].at("name"), "get-sum");
  EXPECT_NE(std::string(tools[0].at("line").as_string()).find("everything.get-sum: "), std::string::npos);

  r = search({{"query", "recall what is stored"}, {"context", "what do you remember about Bob?"}, {"limit", 3}});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_LE(r->at("tools").as_array().size(), 3u);
  EXPECT_EQ(r->at("tools").as_array().at(0).at("connector"), "memory");

  ASSERT_EQ(oppx({"permissions", "deny", "everything.get-sum"}).exit_code, 0);
  r = search({{"query", "get-sum"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->at("searched").as_int64(), all - 1);
  for (const auto& t : r->at("tools").as_array()) EXPECT_NE(t.at("name"), "get-sum");

  r = search({{"query", "x"}, {"limit", 0}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, -32602);
  EXPECT_NE(r.error().message.find("limit"), std::string::npos);
  r = client->call("tools/search", json::object{}, 10s);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("query"), std::string::npos);
}

}  // namespace
}  // namespace oppx::test
