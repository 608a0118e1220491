// The pinned npm servers users have, through `oppx mcp …` as a user runs it: server-filesystem on
// a temp folder (writes, reads, listings, a path outside the folder refused) and server-memory
// with MEMORY_FILE_PATH in the temp HOME (entities, relations, search, the file on disk). The
// expected texts are the ones the packages' dist code builds (build/npm/node_modules/…/dist).
#include "tests/support/harness.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

const std::string kModules = std::string(OPPX_NPM_DIR) + "/node_modules/@modelcontextprotocol";
const std::string kFilesystem = kModules + "/server-filesystem/dist/index.js";
const std::string kMemory = kModules + "/server-memory/dist/index.js";

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

struct RealServers : ::testing::Test {
  TempHome home;
  void TearDown() override { oppx({"daemon", "stop"}); }

  json::object tools_of(const std::string& name) {
    Result r = oppx({"mcp", "tools", name, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out).as_object() : json::object{};
  }
  static std::vector<std::string> tool_names(const json::object& entry) {
    std::vector<std::string> names;
    if (!entry.contains("tools")) return names;
    for (auto& t : entry.at("tools").as_array()) names.emplace_back(t.at("name").as_string());
    return names;
  }
  // `oppx mcp call <connector> <tool> <args> --json`, parsed; the exit status is checked by the caller.
  std::pair<int, json::object> call_json(const std::string& connector, const std::string& tool,
                                         const json::object& args) {
    Result r = oppx({"mcp", "call", connector, tool, json::serialize(args), "--json"});
    boost::system::error_code ec;
    json::value v = json::parse(r.out, ec);
    EXPECT_FALSE(ec) << r.out << r.err;
    return {r.exit_code, !ec && v.is_object() ? v.as_object() : json::object{}};
  }
};

TEST_F(RealServers, FilesystemWritesReadsListsAndRefusesPathsOutsideItsFolder) {
  ASSERT_EQ(::access(kFilesystem.c_str(), R_OK), 0) << kFilesystem << " is missing: run packaging/bootstrap.sh";
  const std::string dir = home.root() + "/files";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir + "/sub").c_str(), 0700), 0);
  write_file(dir + "/hello.txt", "hello from the test\n");
  write_file(home.root() + "/secret.txt", "outside the allowed folder\n");
  char real[PATH_MAX];
  ASSERT_NE(::realpath(dir.c_str(), real), nullptr);
  const std::string allowed = real;  // the server keeps its folders resolved (symlinks followed)
  home.write_mcp_config(stdio_entry("files", "node", {kFilesystem, dir}));

  Result tools = oppx({"mcp", "tools", "files"});
  ASSERT_EQ(tools.exit_code, 0) << tools.err;
  EXPECT_NE(tools.out.find("files.read_text_file: Read the complete contents of a file from the file system as text\n"),
            std::string::npos)
      << tools.out;
  EXPECT_NE(tools.out.find("files.list_directory: Get a detailed listing of all files and directories in a "
                           "specified path\n"),
            std::string::npos)
      << tools.out;
  auto names = tool_names(tools_of("files"));
  EXPECT_EQ(names, (std::vector<std::string>{"read_file", "read_text_file", "read_media_file", "read_multiple_files",
                                             "write_file", "edit_file", "create_directory", "list_directory",
                                             "list_directory_with_sizes", "directory_tree", "move_file", "search_files",
                                             "get_file_info", "list_allowed_directories"}));

  // write_file, then the file on disk and read_text_file agree.
  const std::string notes = dir + "/notes.txt";
  Result wrote = oppx({"mcp", "call", "files", "write_file",
                       json::serialize(json::object{{"path", notes}, {"content", "first line\nsecond line\n"}})});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  EXPECT_EQ(wrote.out, "Successfully wrote to " + notes + "\n");
  EXPECT_EQ(read_file(notes), "first line\nsecond line\n");
  Result read = oppx({"mcp", "call", "files", "read_text_file", json::serialize(json::object{{"path", notes}})});
  ASSERT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(read.out, "first line\nsecond line\n\n") << "the file's own newline, then the CLI's";
  auto [head_rc, head] = call_json("files", "read_text_file", {{"path", notes}, {"head", 1}});
  EXPECT_EQ(head_rc, 0);
  EXPECT_EQ(head["text"], json::value("first line"));
  EXPECT_EQ(head["isError"], json::value(false));
  EXPECT_EQ(head["arguments"], json::value(json::object{{"path", notes}, {"head", 1}}));
  // A relative path is taken inside the allowed folder.
  auto [rel_rc, rel] = call_json("files", "read_text_file", {{"path", "hello.txt"}});
  EXPECT_EQ(rel_rc, 0);
  EXPECT_EQ(rel["text"], json::value("hello from the test\n"));

  // list_directory: one line per entry, in the order the file system gives (not sorted).
  Result list = oppx({"mcp", "call", "files", "list_directory", json::serialize(json::object{{"path", dir}})});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::vector<std::string> lines;
  std::istringstream in(list.out);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"[DIR] sub", "[FILE] hello.txt", "[FILE] notes.txt"})) << list.out;

  Result allowed_dirs = oppx({"mcp", "call", "files", "list_allowed_directories"});
  EXPECT_EQ(allowed_dirs.exit_code, 0) << allowed_dirs.err;
  EXPECT_EQ(allowed_dirs.out, "Allowed directories:\n" + allowed + "\n");

  // Outside the folder, absolute or by "..": refused as a tool error (isError), exit status 1,
  // and the file is neither read nor written.
  const std::string secret = home.root() + "/secret.txt";
  Result outside = oppx({"mcp", "call", "files", "read_text_file", json::serialize(json::object{{"path", secret}})});
  EXPECT_EQ(outside.exit_code, 1);
  EXPECT_EQ(outside.out, "Access denied - path outside allowed directories: " + secret + " not in " + allowed + "\n");
  EXPECT_EQ(outside.out.find("outside the allowed folder"), std::string::npos);
  auto [up_rc, up] = call_json("files", "write_file", {{"path", "../secret.txt"}, {"content", "overwritten"}});
  EXPECT_EQ(up_rc, 1);
  EXPECT_EQ(up["isError"], json::value(true));
  EXPECT_NE(std::string(up["text"].as_string()).find("Access denied - path outside allowed directories"),
            std::string::npos)
      << up["text"];
  EXPECT_EQ(read_file(secret), "outside the allowed folder\n");

  // Arguments the tool's schema refuses, and an unknown tool, are tool errors too (SDK 1.32 turns
  // its own McpError into an isError result with "MCP error <code>: " before the message, not a
  // JSON-RPC error), and they do not take the connector down.
  auto [bad_rc, bad] = call_json("files", "write_file", {{"path", notes}});
  EXPECT_EQ(bad_rc, 1);
  EXPECT_EQ(bad["isError"], json::value(true));
  std::string bad_text(bad["text"].as_string());
  EXPECT_EQ(bad_text.rfind("MCP error -32602: Input validation error: Invalid arguments for tool write_file: ", 0), 0u)
      << bad_text;
  EXPECT_NE(bad_text.find("content"), std::string::npos) << bad_text;
  Result unknown = oppx({"mcp", "call", "files", "no_such_tool"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.out, "MCP error -32602: Tool no_such_tool not found\n");
  EXPECT_EQ(tools_of("files")["state"], json::value("running"));
}

TEST_F(RealServers, MemoryKeepsEntitiesAndRelationsInItsFile) {
  ASSERT_EQ(::access(kMemory.c_str(), R_OK), 0) << kMemory << " is missing: run packaging/bootstrap.sh";
  const std::string file = home.root() + "/memory.jsonl";
  // ${HOME} is expanded from the environment of the oppx command: the temp HOME.
  home.write_mcp_config(stdio_entry("memory", "node", {kMemory}, {{"MEMORY_FILE_PATH", "${HOME}/memory.jsonl"}}));

  auto names = tool_names(tools_of("memory"));
  EXPECT_EQ(names, (std::vector<std::string>{"create_entities", "create_relations", "add_observations",
                                             "delete_entities", "delete_observations", "delete_relations", "read_graph",
                                             "search_nodes", "open_nodes"}));

  json::array entities = json::parse(R"([
    {"name":"oppx","entityType":"project","observations":["a daemon that keeps MCP servers warm"]},
    {"name":"Boost","entityType":"library","observations":["Asio and JSON"]}])")
                             .as_array();
  auto [made_rc, made] = call_json("memory", "create_entities", {{"entities", entities}});
  ASSERT_EQ(made_rc, 0) << made;
  // The text is JSON.stringify(created, null, 2): the new entities, as given.
  EXPECT_EQ(json::parse(made["text"].as_string()), json::value(entities));
  EXPECT_EQ(made["text"].as_string().find("\n  {\n    \"name\": \"oppx\""), 1u) << made["text"];
  // Names already there are skipped: nothing new.
  auto [again_rc, again] = call_json("memory", "create_entities", {{"entities", json::array{entities[0]}}});
  EXPECT_EQ(again_rc, 0);
  EXPECT_EQ(again["text"], json::value("[]"));

  json::object relation{{"from", "oppx"}, {"to", "Boost"}, {"relationType", "is built with"}};
  auto [rel_rc, rel] = call_json("memory", "create_relations", {{"relations", json::array{relation}}});
  EXPECT_EQ(rel_rc, 0);
  EXPECT_EQ(json::parse(rel["text"].as_string()), json::value(json::array{relation}));

  // search_nodes matches observations case-insensitively, and brings the relations of a match.
  auto [found_rc, found] = call_json("memory", "search_nodes", {{"query", "WARM"}});
  EXPECT_EQ(found_rc, 0);
  EXPECT_EQ(json::parse(found["text"].as_string()),
            json::value(json::object{{"entities", json::array{entities[0]}}, {"relations", json::array{relation}}}));
  auto [none_rc, none] = call_json("memory", "search_nodes", {{"query", "nothing like this"}});
  EXPECT_EQ(none_rc, 0);
  EXPECT_EQ(json::parse(none["text"].as_string()),
            json::value(json::object{{"entities", json::array{}}, {"relations", json::array{}}}));

  // The file on disk holds what was written: JSON lines, entities then relations, each tagged with
  // its type (and no newline after the last line).
  std::string disk = read_file(file);
  ASSERT_FALSE(disk.empty()) << file << " was not written (MEMORY_FILE_PATH not honoured?)";
  EXPECT_NE(disk.back(), '\n');
  std::vector<json::value> lines;
  std::istringstream in(disk);
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  ASSERT_EQ(lines.size(), 3u) << disk;
  json::object first = entities[0].as_object(), second = entities[1].as_object(), third = relation;
  first["type"] = "entity";
  second["type"] = "entity";
  third["type"] = "relation";
  EXPECT_EQ(lines[0], json::value(first));
  EXPECT_EQ(lines[1], json::value(second));
  EXPECT_EQ(lines[2], json::value(third));

  // A new process of the server reads the same graph back from the file.
  ASSERT_EQ(oppx({"mcp", "reconnect", "memory"}).exit_code, 0);
  auto [graph_rc, graph] = call_json("memory", "read_graph", {});
  EXPECT_EQ(graph_rc, 0);
  EXPECT_EQ(json::parse(graph["text"].as_string()),
            json::value(json::object{{"entities", entities}, {"relations", json::array{relation}}}));
}

}  // namespace
}  // namespace oppx::test
