// fake_mcp_server: an MCP server over stdio that misbehaves on purpose, for the fault tests.
//   fake_mcp_server <mode> [dir] [--log=<file>] [--hang-init-if=<file>]
// With a dir it appends its pid to dir/pids, each SIGTERM to dir/events (then ends, except in
// ignore_term), and what the mode counts to files there; the dir also marks the process as this
// test's. Modes, besides ok (initialize, tools/list, tools/call echo):
//   crash_on_call   exits 3 on tools/call after a line on stderr
//   hang_call       never answers tools/call          no_init     never answers at all
//   junk            non-JSON lines, an unknown id and a notification around every answer
//   messy           invalid UTF-8, CRLF endings, a notification before each answer, unknown and
//                   duplicate ids; tool "slow" is answered late, just before the next call's answer
//   sampling        asks for sampling/createMessage before answering initialize
//   stdin_eof       ends (exit 0, "eof" in dir/events) when its stdin closes
//   ignore_term     ignores SIGTERM and lives on after its stdin closes
//   usr1_stderr     on each SIGUSR1 writes a line to stderr, then "usr1" to dir/events; lives on
//                   after its stdin closes (SIGTERM ends it)
//   grandchild      starts a grandchild (pid in dir/grandchild.pid) that ignores SIGTERM
//   huge_line       answers tools/call with one 17 MiB line   endless_line: bytes, never a newline
//   stderr_flood    writes 3 MiB to stderr before each tools/call answer
//   never_read      never reads its stdin
//   cursor_repeat   tools/list always gives nextCursor "same"   endless_pages: a new cursor each time
//   storm           tools/call "storm" sends 500 list_changed, then lists echo2 too
//   ansi            a tool description with ANSI escapes and zero-width characters
//   die_at_start    appends the time (ms) to dir/starts and exits 1 at once
//   tools           "write" (no annotations) crashes after recording itself in dir/invocations;
//                   "read" (readOnlyHint) does the same the first time only
//   auth            tool "expired" fails with "401 Unauthorized: token expired", tool "field" with
//                   "the login field is required" (-32602), tool "forbidden" with "API error 403:
//                   resource not accessible" (-32603)
//   leak            says the value of $API_KEY back: on stderr at start, in the error of tool
//                   "refuse" (message and data) and in the text of tool "fail" (isError)
//   report          first writes its environment to dir/environ (one variable a line) and its open
//                   fds to dir/fds (one number a line), then is ok
//   discover_late   holds server/discover unanswered and answers it (an error) only when initialize
//                   comes, just before initialize's own answer
//   discover_exit   exits 1 on server/discover (some servers end on a request before initialize)
// A request of a method it does not know is answered -32601, as servers do.
// tools/list requests are recorded in dir/lists. Tools in every mode but crash/hang: echo ("fake
// echo", then the argument "message" if any); hang (answers only after the client cancels it: a
// late result); rendezvous (holds the first call until a second one comes, then answers the second
// first: only a client that multiplexes gets both); burst (sends five list_changed, adds the tool
// "added", then answers); claim (fails with data.kind taken from the argument "kind", default
// "disconnected": an error that claims a kind the client uses itself; each call is a line in
// dir/claims); ping_client (sends the client a ping and answers "ping answered" or "ping refused"
// once the client answered it). Options after the mode: --log=<file> appends every line received;
// --hang-init-if=<file> never answers initialize while <file> exists (a slow start on demand);
// --protocol=<version> answers initialize with that protocolVersion (default 2025-06-18).
// Written with plain string handling on purpose: it must not share code with what it tests.
#include <chrono>
#include <dirent.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace {

std::string dir;
bool ignore_term = false;

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

void send(const std::string& s, const char* end = "\n") { std::cout << s << end << std::flush; }

void append(const std::string& file, const std::string& text) {
  if (dir.empty()) return;
  std::ofstream(dir + "/" + file, std::ios::app) << text << "\n";
}

int count_lines(const std::string& file, const std::string& text) {
  std::ifstream f(dir + "/" + file);
  int n = 0;
  for (std::string l; std::getline(f, l);) n += l == text;
  return n;
}

void on_term(int) {
  if (!dir.empty()) {
    std::string path = dir + "/events";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      (void)!::write(fd, "SIGTERM\n", 8);
      ::close(fd);
    }
  }
  if (!ignore_term) ::_exit(143);
}

void on_usr1(int) {
  (void)!::write(2, "fake: usr1\n", 11);
  if (dir.empty()) return;
  std::string path = dir + "/events";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0) {
    (void)!::write(fd, "usr1\n", 5);
    ::close(fd);
  }
}

std::string result(const std::string& id, const std::string& text) {
  return R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"content":[{"type":"text","text":")" + text + R"("}]}})";
}

std::string error(const std::string& id, int code, const std::string& message) {
  return R"({"jsonrpc":"2.0","id":)" + id + R"(,"error":{"code":)" + std::to_string(code) + R"(,"message":")" +
         message + R"("}})";
}

std::string unquote(const std::string& s) { return s.size() >= 2 && s[0] == '"' ? s.substr(1, s.size() - 2) : s; }

// What the client gave it: its environment and its open file descriptors, read from /proc.
void report() {
  std::string all;
  {
    std::ifstream environ("/proc/self/environ", std::ios::binary);
    all.assign(std::istreambuf_iterator<char>(environ), std::istreambuf_iterator<char>());
  }  // closed before the fds are listed
  std::string vars;
  for (char c : all) vars += c == '\0' ? '\n' : c;
  std::ofstream(dir + "/environ") << vars;
  std::string fds;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    int own = ::dirfd(d);
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || name == std::to_string(own)) continue;
      fds += name + "\n";
    }
    ::closedir(d);
  }
  std::ofstream(dir + "/fds") << fds;
}

std::string tools_list(const std::string& mode, bool stormed, bool added, int page) {
  std::string tools = R"({"name":"echo","description":"Echoes. Second sentence.","inputSchema":{"type":"object"}})";
  if (mode == "ansi")
    tools = R"({"name":"echo","description":"\u001b[31mRed\u001b[0m and zero\u200bwidth\u202e","inputSchema":{}})";
  if (mode == "tools")
    tools = R"({"name":"write","inputSchema":{}},{"name":"read","inputSchema":{},"annotations":{"readOnlyHint":true}})";
  if (stormed) tools += R"(,{"name":"echo2","inputSchema":{}})";
  if (added) tools += R"(,{"name":"added","description":"Added by burst.","inputSchema":{"type":"object"}})";
  if (mode == "endless_pages") tools = R"({"name":"t)" + std::to_string(page) + R"(","inputSchema":{}})";
  std::string next;
  if (mode == "cursor_repeat") next = R"(,"nextCursor":"same")";
  if (mode == "endless_pages") next = R"(,"nextCursor":"p)" + std::to_string(page + 1) + "\"";
  return R"({"tools":[)" + tools + "]" + next + "}";
}

}  // namespace

// This process's pid as the tests see it: oppx runs connectors in a PID namespace of their own,
// where getpid() counts from 1, while /proc (and so /proc/self) is the tests'.
pid_t host_pid() {
  char buf[32] = {};
  if (::readlink("/proc/self", buf, sizeof buf - 1) <= 0) return ::getpid();
  return static_cast<pid_t>(std::atoi(buf));
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "ok";
  std::string log_path, hang_init_if, protocol = "2025-06-18";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--log=", 0) == 0) {
      log_path = a.substr(6);
    } else if (a.rfind("--hang-init-if=", 0) == 0) {
      hang_init_if = a.substr(15);
    } else if (a.rfind("--protocol=", 0) == 0) {
      protocol = a.substr(11);
    } else if (i == 2 && a.find('/') != std::string::npos) {
      dir = a;  // else a plain marker, not a folder
    }
  }
  ignore_term = mode == "ignore_term";
  std::signal(SIGTERM, on_term);
  if (mode == "usr1_stderr") std::signal(SIGUSR1, on_usr1);
  if (mode == "report" && !dir.empty()) report();  // first: before this program opens anything
  append("pids", std::to_string(host_pid()));
  const char* api_key = std::getenv("API_KEY");
  std::string key = api_key ? api_key : "";
  if (mode == "leak") std::fprintf(stderr, "fake: starting with key %s\n", key.c_str());
  if (mode == "die_at_start") {
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch());
    append("starts", std::to_string(ms.count()));
    std::fprintf(stderr, "fake: dying at start\n");
    return 1;
  }
  if (mode == "grandchild") {
    int told[2];
    if (::pipe(told) != 0) return 1;
    if (pid_t pid = ::fork(); pid == 0) {
      std::signal(SIGTERM, SIG_IGN);
      pid_t self = host_pid();
      (void)!::write(told[1], &self, sizeof self);
      ::close(0), ::close(1), ::close(told[0]), ::close(told[1]);
      while (true) ::pause();
    } else {
      ::close(told[1]);
      pid_t self = 0;
      if (pid < 0 || ::read(told[0], &self, sizeof self) != sizeof self) return 1;
      ::close(told[0]);
      append("grandchild.pid", std::to_string(self));
    }
  }
  if (mode == "never_read") {
    while (true) ::pause();
  }
  std::string line;
  bool asked_sampling = false, stormed = false, added = false;
  std::string pending_init_id, late_id, hanging_id, rendezvous_id, rendezvous_message, pinging_id, discover_id;
  int page = 0;
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
      send(result(hanging_id, "late result"));  // a server that answers anyway: the client must drop it
      hanging_id.clear();
      continue;
    }
    if (mode == "junk") {
      send("this is not json");
      send(R"({"jsonrpc":"2.0","id":987654,"result":{}})");
      send(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}})");
    }
    if (mode == "messy" && !id.empty()) {
      send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"bad \xff\xfe utf8\"}}");
      send(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}})", "\r\n");
      send(R"({"jsonrpc":"2.0","id":"nobody","result":{}})", "\r\n");
    }
    const char* end = mode == "messy" ? "\r\n" : "\n";
    if (method == "\"server/discover\"" && mode == "discover_exit") {
      std::fprintf(stderr, "fake: received a request before initialization\n");
      return 1;
    }
    if (method == "\"server/discover\"" && mode == "discover_late") {
      discover_id = id;
      continue;
    }
    if (method == "\"initialize\"" && !discover_id.empty()) {
      send(error(discover_id, -32601, "method not found"));
      discover_id.clear();
    }
    if (method == "\"initialize\"") {
      if (mode == "sampling" && !asked_sampling) {
        asked_sampling = true;
        pending_init_id = id;
        send(R"({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[]}})");
        continue;
      }
      send(R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"protocolVersion":")" + protocol +
               R"(","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"1"}}})",
           end);
    } else if (method == "\"tools/list\"") {
      append("lists", "list");
      send(R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":)" + tools_list(mode, stormed, added, page++) + "}", end);
    } else if (method == "\"tools/call\"") {
      std::string tool = field(line, "name");
      if (mode == "crash_on_call") {
        std::fprintf(stderr, "fake: crashing on purpose\n");
        return 3;
      }
      if (mode == "hang_call") continue;
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
        send(result(id, "rendezvous " + message));
        send(result(rendezvous_id, "rendezvous " + rendezvous_message));
        rendezvous_id.clear();
        continue;
      }
      if (tool == "\"claim\"") {
        std::string kind = unquote(field(line, "kind"));
        if (kind.empty()) kind = "disconnected";
        append("claims", kind);
        send(R"({"jsonrpc":"2.0","id":)" + id + R"(,"error":{"code":-32603,"message":"the server claims )" + kind +
             R"(","data":{"kind":")" + kind + R"("}}})");
        continue;
      }
      if (tool == "\"ping_client\"") {
        pinging_id = id;
        send(R"({"jsonrpc":"2.0","id":"p1","method":"ping"})");
        continue;
      }
      if (tool == "\"burst\"") {
        added = true;
        // In one write: the five arrive within the daemon's 200 ms debounce however loaded the machine.
        std::string five;
        for (int i = 0; i < 5; ++i)
          five += R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})"
                  "\n";
        send(five, "");
        send(result(id, "burst sent"));
        continue;
      }
      if (mode == "huge_line" || mode == "endless_line") {
        std::string chunk(1 << 20, 'a');
        std::cout << R"({"jsonrpc":"2.0","id":)" << id << R"(,"result":{"content":[{"type":"text","text":")";
        for (int i = 0; mode == "endless_line" || i < 17; ++i) std::cout << chunk << std::flush;
        send("\"}]}}");
        continue;
      }
      if (mode == "stderr_flood") {
        std::string chunk(64 << 10, 'e');
        chunk.back() = '\n';
        for (int i = 0; i < 48; ++i) std::cerr << chunk << std::flush;
      }
      if (mode == "storm" && tool == "\"storm\"") {
        for (int i = 0; i < 500; ++i) send(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
        stormed = true;
      }
      if (mode == "messy" && tool == "\"slow\"") {
        late_id = id;  // answered late, after the caller gave up
        continue;
      }
      if (mode == "messy" && !late_id.empty()) {
        send(result(late_id, "late answer"), end);
        late_id.clear();
      }
      if (mode == "tools") {
        std::string name = tool.substr(1, tool.size() - 2);
        append("invocations", name);
        if (name == "write" || count_lines("invocations", "read") == 1) {
          std::fprintf(stderr, "fake: crashing in %s\n", name.c_str());
          return 3;
        }
      }
      if (mode == "leak" && tool == "\"refuse\"") {
        send(R"({"jsonrpc":"2.0","id":)" + id + R"(,"error":{"code":-32603,"message":"upstream refused the key )" +
             key + R"(","data":{"sent":")" + key + R"("}}})");
        continue;
      }
      if (mode == "leak" && tool == "\"show\"") {  // a result that is no error repeats the key
        send(R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"content":[{"type":"text","text":"API_KEY=)" + key +
             R"("}],"structuredContent":{"env":{"API_KEY":")" + key + R"("}}}})");
        continue;
      }
      if (mode == "leak" && tool == "\"fail\"") {
        send(R"({"jsonrpc":"2.0","id":)" + id +
             R"(,"result":{"isError":true,"content":[{"type":"text","text":"invalid key )" + key + R"("}]}})");
        continue;
      }
      if (mode == "auth" && tool == "\"expired\"") {
        send(error(id, -32603, "401 Unauthorized: token expired"));
        continue;
      }
      if (mode == "auth" && tool == "\"forbidden\"") {
        send(error(id, -32603, "API error 403: resource not accessible"));
        continue;
      }
      if (mode == "auth" && tool == "\"field\"") {
        send(error(id, -32602, "the login field is required"));
        continue;
      }
      std::string message = unquote(field(line, "message"));
      std::string echo = message.empty() ? "fake echo" : "fake echo " + message;
      send(result(id, mode == "tools" ? tool.substr(1, tool.size() - 2) + " ok" : echo), end);
      if (mode == "messy") send(result(id, "duplicate"), end);
    } else if (id == "\"p1\"" && method.empty() && !pinging_id.empty()) {
      // The client's answer to our ping: MCP says it answers promptly, with an empty result.
      bool answered = line.find("\"result\"") != std::string::npos;
      send(result(pinging_id, answered ? "ping answered" : "ping refused"));
      pinging_id.clear();
    } else if (!id.empty() && !method.empty() && method != "\"ping\"") {
      send(error(id, -32601, "method not found"));
    } else if (id == "\"s1\"" && !pending_init_id.empty()) {
      // The client's answer to our sampling request: it must be an error, and it came.
      bool refused = line.find("\"error\"") != std::string::npos;
      send(R"({"jsonrpc":"2.0","id":)" + pending_init_id +
           R"(,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":")" +
           (refused ? "sampling-refused" : "sampling-answered") + R"(","version":"1"}}})");
      pending_init_id.clear();
    }
  }
  append("events", "eof");
  if (mode == "ignore_term" || mode == "usr1_stderr") {
    while (true) ::pause();
  }
  return 0;
}
