// fake_mcp_server: an MCP server over stdio that misbehaves on purpose, for the fault tests.
//   fake_mcp_server <mode>
// modes: ok (initialize, tools/list, tools/call echo), crash_on_call (exits 3 on tools/call after
// a line on stderr), hang_call (never answers tools/call), junk (non-JSON lines, an unknown id and
// a notification around every answer), sampling (asks the client for sampling/createMessage and
// answers initialize only after the client's error comes back), no_init (never answers).
// Written with plain string handling on purpose: it must not share code with what it tests.
#include <cstdio>
#include <iostream>
#include <string>

namespace {

std::string field(const std::string& line, const std::string& key) {
  auto k = line.find("\"" + key + "\":");
  if (k == std::string::npos) return "";
  auto start = k + key.size() + 3;
  if (line[start] == '"') {
    auto end = line.find('"', start + 1);
    return line.substr(start, end - start + 1);
  }
  auto end = line.find_first_of(",}", start);
  return line.substr(start, end - start);
}

void send(const std::string& s) { std::cout << s << "\n" << std::flush; }

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "ok";
  std::string line;
  bool asked_sampling = false;
  std::string pending_init_id;
  while (std::getline(std::cin, line)) {
    std::string id = field(line, "id");
    std::string method = field(line, "method");
    if (mode == "no_init") continue;
    if (mode == "junk") {
      send("this is not json");
      send(R"({"jsonrpc":"2.0","id":987654,"result":{}})");
      send(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}})");
    }
    if (method == "\"initialize\"") {
      if (mode == "sampling" && !asked_sampling) {
        asked_sampling = true;
        pending_init_id = id;
        send(R"({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[]}})");
        continue;
      }
      send(
          R"({"jsonrpc":"2.0","id":)" + id +
          R"(,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}})");
    } else if (method == "\"tools/list\"") {
      send(
          R"({"jsonrpc":"2.0","id":)" + id +
          R"(,"result":{"tools":[{"name":"echo","description":"Echoes. Second sentence.","inputSchema":{"type":"object"}}]}})");
    } else if (method == "\"tools/call\"") {
      if (mode == "crash_on_call") {
        std::fprintf(stderr, "fake: crashing on purpose\n");
        return 3;
      }
      if (mode == "hang_call") continue;
      send(R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"content":[{"type":"text","text":"fake echo"}]}})");
    } else if (id == "\"s1\"" && !pending_init_id.empty()) {
      // The client's answer to our sampling request: it must be an error, and it came.
      bool refused = line.find("\"error\"") != std::string::npos;
      send(R"({"jsonrpc":"2.0","id":)" + pending_init_id +
           R"(,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":")" +
           (refused ? "sampling-refused" : "sampling-answered") + R"(","version":"1"}}})");
      pending_init_id.clear();
    }
  }
  return 0;
}
