// fake_mcp_server: an MCP server over stdio that misbehaves on purpose, for the fault tests.
//   fake_mcp_server <mode>
// modes: ok (initialize, tools/list, tools/call echo), crash_on_call (exits 3 on tools/call after
// a line on stderr), hang_call (never answers tools/call), junk (non-JSON lines, an unknown id and
// a notification around every answer), sampling (asks the client for sampling/createMessage and
// answers initialize only after the client's error comes back), no_init (never answers).
// Tools in every mode but crash/hang: echo ("fake echo", then the argument "message" if any); hang (answers only after
// the client cancels it: a late result); rendezvous (holds the first call until a second one comes, then answers the
// second first: only a client that multiplexes gets both); burst (sends five list_changed, adds
// the tool "added", then answers).
// Options after the mode: --log=<file> appends every line received (requests and notifications);
// --hang-init-if=<file> never answers initialize while <file> exists (a slow start on demand).
// Written with plain string handling on purpose: it must not share code with what it tests.
#include <cstdio>
#include <iostream>
#include <string>
#include <sys/stat.h>

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

std::string unquote(const std::string& s) { return s.size() >= 2 && s[0] == '"' ? s.substr(1, s.size() - 2) : s; }

void answer_text(const std::string& id, const std::string& text) {
  send(R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"content":[{"type":"text","text":")" + text + R"("}]}})");
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "ok";
  std::string log_path, hang_init_if;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--log=", 0) == 0) log_path = a.substr(6);
    if (a.rfind("--hang-init-if=", 0) == 0) hang_init_if = a.substr(15);
  }
  std::string line;
  bool asked_sampling = false, added = false;
  std::string pending_init_id, hanging_id, rendezvous_id, rendezvous_message;
  while (std::getline(std::cin, line)) {
    if (!log_path.empty()) {
      if (FILE* f = std::fopen(log_path.c_str(), "a")) {
        std::fprintf(f, "%s\n", line.c_str());
        std::fclose(f);
      }
    }
    std::string id = field(line, "id");
    std::string method = field(line, "method");
    if (mode == "no_init") continue;
    struct stat st {};
    if (method == "\"initialize\"" && !hang_init_if.empty() && ::stat(hang_init_if.c_str(), &st) == 0) continue;
    if (method == "\"notifications/cancelled\"" && field(line, "requestId") == hanging_id && !hanging_id.empty()) {
      answer_text(hanging_id, "late result");  // a server that answers anyway: the client must drop it
      hanging_id.clear();
      continue;
    }
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
          R"(,"result":{"tools":[{"name":"echo","description":"Echoes. Second sentence.","inputSchema":{"type":"object"}})" +
          (added ? R"(,{"name":"added","description":"Added by burst.","inputSchema":{"type":"object"}})" : "") +
          "]}}");
    } else if (method == "\"tools/call\"") {
      if (mode == "crash_on_call") {
        std::fprintf(stderr, "fake: crashing on purpose\n");
        return 3;
      }
      if (mode == "hang_call") continue;
      std::string tool = field(line, "name");
      if (tool == "\"hang\"") {
        hanging_id = id;
        continue;
      }
      if (tool == "\"rendezvous\"") {
        std::string message = unquote(field(line, "message"));
        if (rendezvous_id.empty()) {
          rendezvous_id = id;
          rendezvous_message = message;
          continue;
        }
        answer_text(id, "rendezvous " + message);
        answer_text(rendezvous_id, "rendezvous " + rendezvous_message);
        rendezvous_id.clear();
        continue;
      }
      if (tool == "\"burst\"") {
        added = true;
        for (int i = 0; i < 5; ++i) send(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
        answer_text(id, "burst sent");
        continue;
      }
      std::string message = unquote(field(line, "message"));
      answer_text(id, message.empty() ? "fake echo" : "fake echo " + message);
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
