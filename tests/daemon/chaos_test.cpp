// The chaos suite (issue 17): kill -9 at random points under load. Each round runs calls from a
// few clients, one writer (consent decisions on a repository's connector, or `oppx mcp add` and
// `remove` against a multi-MB mcp.json) and sometimes a long call, then kills a connector's
// process or the daemon. Afterwards every call has ended with a result or a clean error, both
// files parse and hold the old or the new content, no process of the dead daemon is left, the CLI
// brings the daemon back and a killed connector answers the next call. Every random choice comes
// from one generator whose seed is printed (OPPX_CHAOS_SEED replays it; OPPX_CHAOS_ROUNDS runs
// more rounds). Waits are on events with deadlines; only the moment of a fault is random.
#include "proto/daemon_api.h"
#include "tests/support/browser_support.h"
#include "tests/support/harness.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>

extern char** environ;

namespace oppx::test {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

constexpr int kEchoes = 3;       // stdio echo connectors, the targets of connector kills
constexpr int kLoadThreads = 3;  // clients calling in a loop
constexpr int kBallastEntries = 320;
constexpr auto kCallLimit = 20s;  // a call that takes longer is a hang

std::uint64_t chaos_seed() {
  if (const char* s = std::getenv("OPPX_CHAOS_SEED"); s && *s) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) | rd();
}

// 10 rounds by default; 5 under AddressSanitizer, where each is two to three times slower, so
// that the test stays well inside its 120 s.
int chaos_rounds() {
#if defined(__SANITIZE_ADDRESS__)
  constexpr long kDefault = 5;
#else
  constexpr long kDefault = 10;
#endif
  const char* s = std::getenv("OPPX_CHAOS_ROUNDS");
  long n = s && *s ? std::strtol(s, nullptr, 10) : kDefault;
  return static_cast<int>(std::clamp(n, 1L, 10000L));
}

// What the threads of a round found wrong, reported by the test's thread (with its traces).
class Problems {
 public:
  void add(std::string p) {
    std::lock_guard l(mu_);
    if (list_.size() < 20) list_.push_back(std::move(p));
  }
  std::vector<std::string> take() {
    std::lock_guard l(mu_);
    return std::exchange(list_, {});
  }

 private:
  std::mutex mu_;
  std::vector<std::string> list_;
};

// A client that said hello with this process's environment and `cwd` (the repository).
std::optional<SyncClient> client_in(const std::string& socket, const std::string& cwd) {
  auto c = SyncClient::connect(socket);
  if (!c) return std::nullopt;
  json::object env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!c->call("hello", json::object{{"protocol", proto::kProtocolVersion}, {"env", env}, {"cwd", cwd}}, 10s)) {
    return std::nullopt;
  }
  return std::move(*c);
}

// The live (not zombie) processes with `arg` as one of their arguments: a connector's own folder
// names its fake server, whether or not it runs in a PID namespace of its own.
std::set<pid_t> processes_with_arg(const std::string& arg) {
  std::set<pid_t> out;
  std::string needle = '\0' + arg + '\0';
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      if (pid <= 0) continue;
      std::string cmd = read_file("/proc/" + std::to_string(pid) + "/cmdline");
      if (cmd.find(needle) != std::string::npos && process_alive(pid)) out.insert(pid);
    }
    ::closedir(d);
  }
  return out;
}

// Calls in a loop from kLoadThreads clients, round robin over `targets` (name → the text its echo
// answers with before the message). Before faults() an error is a problem; after it, the killed
// connector may be down, and a closed connection (the daemon killed) ends the thread.
class Load {
 public:
  Load(std::string socket, std::string cwd, std::vector<std::pair<std::string, std::string>> targets,
       Problems& problems)
      : socket_(std::move(socket)), cwd_(std::move(cwd)), targets_(std::move(targets)), problems_(problems) {
    for (int t = 0; t < kLoadThreads; ++t) threads_.emplace_back([this, t] { run(t); });
  }
  ~Load() { stop(); }
  bool wait_for_calls(int n, std::chrono::milliseconds timeout) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, timeout, [&] { return answered_ >= n; });
  }
  // From now on `victim` (a connector's name; "": the daemon) may be killed at any moment.
  void faults(const std::string& victim) {
    victim_ = victim;
    faults_ = true;  // after victim_: a thread that sees it sees the name
  }
  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void run(int t) {
    auto c = client_in(socket_, cwd_);
    if (!c) return problems_.add("load client " + std::to_string(t) + " could not connect and say hello");
    for (std::size_t i = 0; !stop_; ++i) {
      const auto& [name, prefix] = targets_[(static_cast<std::size_t>(t) + i) % targets_.size()];
      std::string token = "t" + std::to_string(t) + "-" + std::to_string(i);
      auto r =
          c->call("tools/call",
                  json::object{{"connector", name}, {"tool", "echo"}, {"arguments", {{"message", token}}}}, kCallLimit);
      if (r) {
        const json::value* text = r->is_object() ? r->as_object().if_contains("text") : nullptr;
        if (!text || *text != json::value(prefix + token)) {
          return problems_.add("call " + token + " to " + name + ": a wrong result " + json::serialize(*r));
        }
        std::lock_guard l(mu_);
        ++answered_;
        cv_.notify_all();
        continue;
      }
      const std::string& kind = r.error().kind;
      bool after = faults_;
      if (after && victim_.empty() && kind == proto::kind::kDisconnected) return;
      if (after && name == victim_ && kind == "connector_down") continue;
      return problems_.add("call " + token + " to " + name + (after ? " after" : " before") + " the kill: " + kind +
                           ": " + r.error().message);
    }
  }

  std::string socket_, cwd_, victim_;
  std::vector<std::pair<std::string, std::string>> targets_;
  Problems& problems_;
  std::atomic<bool> stop_{false}, faults_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int answered_ = 0;
  std::vector<std::thread> threads_;
};

// A call that never ends by itself (the fake's tool "hang"): it ends with the kill (its connector
// down, the connection closed) or is cancelled at the end of the round. The request is written
// before the constructor returns, so that it is in flight whenever finish() cancels it; its
// reply is read on a thread of its own, which tells finish() through a condition variable.
class LongCall {
 public:
  LongCall(const std::string& socket, const std::string& cwd, const std::string& connector)
      : client_(client_in(socket, cwd)) {
    if (!client_) return;
    json::object params{{"connector", connector}, {"tool", "hang"}, {"timeout_ms", 60000}};
    if (!client_->write_raw(proto::serialize_request(kId, "tools/call", params) + "\n")) {
      kind_ = "not sent";
      done_ = true;
      return;
    }
    thread_ = std::thread([this] { read_reply(); });
  }
  ~LongCall() {
    if (thread_.joinable()) finish();
  }
  // The kind it ended with: cancelled when neither the kill nor anything else ended it.
  std::string finish() {
    if (!client_) return "no client";
    std::unique_lock l(mu_);
    if (!done_) {
      l.unlock();
      client_->write_raw(proto::serialize_notification(proto::kCancelRequest, json::object{{"id", kId}}) + "\n");
      l.lock();
    }
    if (!cv_.wait_for(l, 10s, [&] { return done_; })) {
      kind_ = "no reply 10 s after its cancel";
      done_ = true;
      ::shutdown(client_->fd(), SHUT_RDWR);  // ends the reader's wait
    }
    l.unlock();
    if (thread_.joinable()) thread_.join();
    return kind_;
  }

 private:
  static constexpr const char* kId = "long-call";

  void read_reply() {
    std::string kind;
    for (;;) {
      auto line = client_->read_line(70s);
      if (!line) {
        kind = line.error() == SyncClient::ReadFailure::kTimeout ? proto::kind::kTimeout : proto::kind::kDisconnected;
        break;
      }
      auto msg = proto::parse_message(*line);
      auto* resp = msg ? std::get_if<proto::Response>(&*msg) : nullptr;
      if (!resp || resp->id != json::value(kId)) continue;  // notifications
      kind = resp->ok ? "a result" : resp->error.kind;
      break;
    }
    std::lock_guard l(mu_);
    if (!done_) kind_ = kind;
    done_ = true;
    cv_.notify_all();
  }

  std::optional<SyncClient> client_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string kind_;
};

// One write that sets a file's state (approved or not; "extra" in mcp.json or not): "" once done,
// "lost: …" when the daemon went away before it answered (the file may hold either state), else
// what went wrong.
using WriteOp = std::function<std::string(bool state)>;

// Writes in a loop, each the opposite of the last, from `state` (what the file holds now).
class Writer {
 public:
  Writer(bool state, WriteOp op, Problems& problems) : op_(std::move(op)), problems_(problems), acked_(state) {
    thread_ = std::thread([this] { run(); });
  }
  ~Writer() { stop(); }
  bool wait_for_writes(int n, std::chrono::milliseconds timeout) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, timeout, [&] { return done_ >= n || ended_; });
  }
  // From now on the daemon may be killed (`daemon`), or only a connector that no write uses.
  void faults(bool daemon) { faults_ = daemon; }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool cut() const { return lost_; }  // after stop(): the kill cut a write short
  // After stop(): what the file may hold.
  std::set<bool> possible() const { return lost_ ? std::set<bool>{true, false} : std::set<bool>{acked_}; }

 private:
  void run() {
    while (!stop_) {
      std::string e = op_(!acked_);
      std::lock_guard l(mu_);
      if (e.empty()) {
        acked_ = !acked_;
        ++done_;
      } else {
        if (faults_ && e.starts_with("lost: ")) {
          lost_ = true;
        } else {
          problems_.add("a write failed: " + e);
        }
        ended_ = true;
      }
      cv_.notify_all();
      if (ended_) return;
    }
  }

  WriteOp op_;
  Problems& problems_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, faults_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool acked_, lost_ = false, ended_ = false;
  int done_ = 0;
};

struct Chaos : ::testing::Test {
  TempHome home;
  InRepository repository{home};
  const std::string repo = repository.root();
  const std::string config = home.root() + "/config/oppx/mcp.json";
  const std::string store = home.root() + "/state/oppx/mcp-approved.json";
  json::value base_config, base_store;  // without "extra", without the repository's decisions
  std::string root, sha;                // the repository as the daemon keys it; proj's sha256
  std::unique_ptr<Process> http;
  std::vector<std::pair<std::string, std::string>> targets;  // connector → its echo's prefix
  std::map<std::string, int> kills;                          // of each connector by this daemon

  std::string dir(const std::string& name) const { return home.root() + "/c-" + name; }
  static std::string echo(int i) { return "echo" + std::to_string(i); }

  // Each connector's state as mcp/list gives it (the repository's too); empty when none answers.
  std::map<std::string, std::string> states() {
    std::map<std::string, std::string> out;
    auto c = client_in(home.socket(), repo);
    if (!c) return out;
    auto l = c->call("mcp/list", json::object{}, 10s);
    if (!l) return out;
    for (auto& e : l->at("connectors").as_array()) {
      out[std::string(e.at("name").as_string())] = std::string(e.at("state").as_string());
    }
    return out;
  }
  bool all_running() {
    auto s = states();
    for (auto& [name, prefix] : targets) {
      if (s[name] != "running") return false;
    }
    return true;
  }

  void SetUp() override {
    for (auto name : {echo(0), echo(1), echo(2), std::string("proj"), std::string("extra")}) {
      ASSERT_EQ(::mkdir(dir(name).c_str(), 0700), 0);
    }
    http = std::make_unique<Process>(std::vector<std::string>{"node", FAKE_HTTP_MCP, "plain"});
    ASSERT_TRUE(http->wait_for_stdout(" ready\n")) << http->err();
    int port = 0;
    std::sscanf(http->out().c_str(), "ports %d", &port);
    ASSERT_GT(port, 0) << http->out();
    std::string servers;
    for (int i = 0; i < kEchoes; ++i) {
      servers += stdio_entry(echo(i), FAKE_MCP_SERVER, {"ok", dir(echo(i))}) + ",";
      targets.emplace_back(echo(i), "fake echo ");
    }
    servers += "\"http0\":" + json::serialize(json::object{
                                  {"type", "http"}, {"url", "http://127.0.0.1:" + std::to_string(port) + "/mcp"}});
    targets.emplace_back("http0", "echo: ");
    // The ballast that makes mcp.json multi-MB: entries that never start, 10 KB of arguments each.
    const std::string arg(1000, 'b');
    for (int i = 0; i < kBallastEntries; ++i) {
      json::array args;
      for (int j = 0; j < 10; ++j) args.emplace_back(arg);
      servers += ",\"ballast" + std::to_string(i) +
                 "\":" + json::serialize(json::object{{"command", "/bin/true"}, {"args", args}, {"disabled", true}});
    }
    home.write_mcp_config(servers);
    base_config = json::parse(read_file(config));
    ASSERT_GT(read_file(config).size(), 3u << 20) << "a multi-MB mcp.json";
    std::ofstream(repo + "/.mcp.json") << json::serialize(
        json::object{{"mcpServers", {{"proj", {{"command", FAKE_MCP_SERVER}, {"args", {"ok", dir("proj")}}}}}}});
    // A consent store of about 1 MB: other repositories' decisions and a key of a later version.
    json::object repos;
    for (int i = 0; i < 4000; ++i) {
      repos["/nonexistent/clone-" + std::to_string(i)] = {
          {"tool", {{"sha256", std::string(64, 'a')}, {"decision", "deny"}, {"at", "2026-01-01T00:00:00Z"}}}};
    }
    base_store = json::object{{"future_key", {{"notes", std::string(500000, 'n')}}}, {"repositories", repos}};
    ::mkdir((home.root() + "/state").c_str(), 0700);
    ::mkdir((home.root() + "/state/oppx").c_str(), 0700);
    std::ofstream(store) << json::serialize(base_store);
    ASSERT_EQ(::chmod(store.c_str(), 0600), 0);

    Result list = oppx({"mcp", "list", "--json"}, 60s);  // starts the daemon
    ASSERT_EQ(list.exit_code, 0) << list.err;
    ASSERT_TRUE(when_connectors_change(
        home.socket(), [&] { return all_running(); }, 30s));
    auto c = client_in(home.socket(), repo);
    ASSERT_TRUE(c);
    auto proj = c->call("mcp/get", json::object{{"name", "proj"}}, 10s);
    ASSERT_TRUE(proj) << proj.error().message;
    root = std::string(proj->at("root").as_string());
    sha = std::string(proj->at("sha256").as_string());
  }

  bool config_has_extra() {
    boost::system::error_code ec;
    json::value doc = json::parse(read_file(config), ec);
    return !ec && doc.at("mcpServers").as_object().contains("extra");
  }
  bool store_approves() {
    boost::system::error_code ec;
    json::value doc = json::parse(read_file(store), ec);
    if (ec) return false;
    auto* r = doc.at("repositories").as_object().if_contains(root);
    auto* p = r && r->is_object() ? r->as_object().if_contains("proj") : nullptr;
    return p && p->is_object() && p->as_object().if_contains("decision") &&
           p->as_object().at("decision") == json::value("approve");
  }

  // mcp.json parses, holds "extra" or not as `possible` allows, and is otherwise the file written.
  void check_config(const std::set<bool>& possible) {
    std::string text = read_file(config);
    boost::system::error_code ec;
    json::value doc = json::parse(text, ec);
    ASSERT_FALSE(ec) << "a torn mcp.json (" << text.size() << " bytes): " << ec.message();
    json::object& servers = doc.at("mcpServers").as_object();
    bool has = servers.contains("extra");
    EXPECT_TRUE(possible.count(has)) << "mcp.json " << (has ? "has" : "has no") << " extra";
    if (has) {
      EXPECT_EQ(servers.at("extra").at("command"), json::value(FAKE_MCP_SERVER));
      EXPECT_EQ(servers.at("extra").at("args"), json::value({"ok", dir("extra")}));
      servers.erase("extra");
    }
    EXPECT_TRUE(doc == base_config) << "mcp.json lost or changed what it held besides extra";
  }

  // The consent store parses, approves proj or not as `possible` allows, and keeps the rest.
  void check_store(const std::set<bool>& possible) {
    std::string text = read_file(store);
    boost::system::error_code ec;
    json::value doc = json::parse(text, ec);
    ASSERT_FALSE(ec) << "a torn consent store (" << text.size() << " bytes): " << ec.message();
    bool approved = store_approves();
    EXPECT_TRUE(possible.count(approved)) << "the store " << (approved ? "approves" : "does not approve") << " proj";
    json::object& repos = doc.at("repositories").as_object();
    if (auto* r = repos.if_contains(root)) {
      EXPECT_EQ(r->as_object().size(), 1u) << json::serialize(*r);
      EXPECT_EQ(r->at("proj").at("sha256"), json::value(sha));
      repos.erase(root);
    }
    EXPECT_TRUE(doc == base_store) << "the consent store lost or changed what it held besides proj";
  }

  WriteOp consent_op() {
    auto c = std::make_shared<std::optional<SyncClient>>(client_in(home.socket(), repo));
    return [c, this](bool approve) -> std::string {
      if (!*c) return "no client";
      auto r = (*c)->call(approve ? "consent/approve" : "consent/deny", json::object{{"name", "proj"}, {"sha256", sha}},
                          kCallLimit);
      if (r) return "";
      return (r.error().kind == proto::kind::kDisconnected ? "lost: " : "") + r.error().kind + ": " + r.error().message;
    };
  }
  WriteOp config_op() {
    return [this](bool add) -> std::string {
      Result r = add ? oppx({"mcp", "add", "extra", "--", FAKE_MCP_SERVER, "ok", dir("extra")}, kCallLimit + 10s)
                     : oppx({"mcp", "remove", "extra"}, kCallLimit + 10s);
      if (r.exit_code == 0) return "";
      // 1: the command failed (its connection closed); 3: no daemon could be reached or started.
      bool clean = (r.exit_code == 1 || r.exit_code == 3) && !r.err.empty();
      return (clean ? "lost: " : "") + std::string("oppx mcp ") + (add ? "add" : "remove") + " exited " +
             std::to_string(r.exit_code) + ": " + r.err;
    };
  }

  void check_daemon_kill(pid_t old, const std::set<pid_t>& tree) {
    EXPECT_TRUE(wait_for_exit(old, 10s)) << "the daemon outlived kill -9";
    EXPECT_TRUE(wait_for_exits(tree, 10s)) << "a process of the killed daemon lives on";
    Result list = oppx({"mcp", "list", "--json"}, 60s);
    ASSERT_EQ(list.exit_code, 0) << "the CLI did not bring the daemon back: " << list.err;
    boost::system::error_code ec;
    json::value listing = json::parse(list.out, ec);
    ASSERT_TRUE(!ec && listing.is_object() && listing.as_object().contains("connectors")) << list.out.substr(0, 2000);
    std::set<std::string> listed;
    for (auto& e : listing.at("connectors").as_array()) listed.insert(std::string(e.at("name").as_string()));
    for (auto& [name, prefix] : targets) EXPECT_TRUE(listed.count(name)) << name << " is not listed";
    EXPECT_TRUE(listed.count("proj"));
    auto now = daemon_pid(home.socket());
    ASSERT_TRUE(now);
    EXPECT_NE(*now, old);
    EXPECT_TRUE(when_connectors_change(
        home.socket(), [&] { return all_running(); }, 30s));
    // No connector runs outside the new daemon's tree: none of the old one's was missed.
    auto outside = [&] {
      std::set<pid_t> mine = descendants(static_cast<pid_t>(*now)), out;
      for (auto name : {echo(0), echo(1), echo(2), std::string("proj"), std::string("extra")}) {
        for (pid_t p : processes_with_arg(dir(name))) {
          if (!mine.count(p)) out.insert(p);
        }
      }
      return out;
    };
    std::set<pid_t> orphans = outside();
    EXPECT_TRUE(wait_for_exits(orphans, 10s)) << orphans.size() << " orphans";
    EXPECT_TRUE(outside().empty()) << outside().size() << " orphans";
    kills.clear();
  }

  void check_connector_kill(const std::string& name, pid_t pid) {
    EXPECT_TRUE(wait_for_exit(pid, 10s)) << name << " outlived kill -9";
    // The daemon saw it stop: its state left running, or another process runs it by now.
    EXPECT_TRUE(when_connectors_change(
        home.socket(),
        [&] {
          auto ps = processes_with_arg(dir(name));
          return states()[name] != "running" || (!ps.empty() && !ps.count(pid));
        },
        20s));
    auto c = client_in(home.socket(), repo);
    ASSERT_TRUE(c);
    auto r =
        c->call("tools/call",
                json::object{{"connector", name}, {"tool", "echo"}, {"arguments", {{"message", "again"}}}}, kCallLimit);
    ASSERT_TRUE(r) << "the call after the kill of " << name << ": " << r.error().kind << ": " << r.error().message;
    EXPECT_EQ(r->at("text"), json::value("fake echo again"));
    ++kills[name];
    EXPECT_TRUE(when_connectors_change(
        home.socket(), [&] { return all_running(); }, 30s));
  }

  // "<file>.<pid>.tmp" beside the two files: what a killed writer left.
  std::vector<std::string> temps() const {
    std::vector<std::string> out;
    for (auto file : {config, store}) {
      std::string folder = file.substr(0, file.rfind('/')), prefix = file.substr(file.rfind('/') + 1) + ".";
      if (DIR* d = ::opendir(folder.c_str())) {
        while (dirent* e = ::readdir(d)) {
          std::string n = e->d_name;
          if (n.starts_with(prefix) && n.ends_with(".tmp")) out.push_back(n);
        }
        ::closedir(d);
      }
    }
    return out;
  }
};

TEST_F(Chaos, KillNineAtRandomPointsUnderLoadLeavesNothingTornOrOrphaned) {
  const std::uint64_t seed = chaos_seed();
  const std::string replay = "OPPX_CHAOS_SEED=" + std::to_string(seed) + " ctest -R Chaos";
  std::cout << "chaos seed: " << seed << " (replay: " << replay << ")" << std::endl;
  SCOPED_TRACE("chaos seed " + std::to_string(seed) + " (replay: " + replay + ")");
  std::mt19937_64 rng(seed);
  const int rounds = chaos_rounds();
  for (int round = 1; round <= rounds; ++round) {
    // Every choice is drawn here, in the same order whatever happens: the seed replays them all.
    std::vector<std::string> victims;
    for (int i = 0; i < kEchoes; ++i) {
      if (kills[echo(i)] < 3) victims.push_back(echo(i));  // a 4th stop in a minute is a crash loop
    }
    const bool kill_daemon = rng() % 5 < 2 || victims.empty();
    const std::string victim = kill_daemon ? "" : victims[rng() % victims.size()];
    const int calls = 1 + static_cast<int>(rng() % 60);
    const int writes = static_cast<int>(rng() % 3);
    const bool consent = rng() % 2 == 0;
    const bool long_call = rng() % 2 == 0;
    std::string what = "round " + std::to_string(round) + ": kill -9 of " + (kill_daemon ? "the daemon" : victim) +
                       " after " + std::to_string(calls) + " calls and " + std::to_string(writes) + " " +
                       (consent ? "consent decisions" : "mcp add/remove") + (long_call ? ", a long call open" : "");
    SCOPED_TRACE(what);
    std::cout << what << std::endl;

    auto daemon = daemon_pid(home.socket());
    ASSERT_TRUE(daemon);
    const bool had_extra = config_has_extra(), approved = store_approves();
    Problems problems;
    std::optional<LongCall> open_call;
    if (long_call) open_call.emplace(home.socket(), repo, echo(0));
    Load load(home.socket(), repo, targets, problems);
    Writer writer(consent ? approved : had_extra, consent ? consent_op() : config_op(), problems);
    EXPECT_TRUE(load.wait_for_calls(calls, 30s)) << "the load did not make its calls";
    EXPECT_TRUE(writer.wait_for_writes(writes, 30s)) << "the writer did not make its writes";
    load.faults(victim);
    writer.faults(kill_daemon);
    std::set<pid_t> tree;
    pid_t killed = static_cast<pid_t>(*daemon);
    if (kill_daemon) {
      tree = descendants(killed);
    } else {
      auto ps = processes_with_arg(dir(victim));
      ASSERT_EQ(ps.size(), 1u) << victim << " is not one process";
      killed = *ps.begin();
    }
    ASSERT_EQ(::kill(killed, SIGKILL), 0);
    writer.stop();
    load.stop();
    if (open_call) {
      std::string kind = open_call->finish();
      std::set<std::string> ok{std::string(kill_daemon ? proto::kind::kDisconnected : proto::kind::kCancelled)};
      if (victim == echo(0)) ok.insert("connector_down");
      EXPECT_TRUE(ok.count(kind)) << "the long call ended with " << kind;
    }
    for (auto& p : problems.take()) ADD_FAILURE() << p;
    if (writer.cut()) std::cout << "  the kill cut a write short" << std::endl;
    check_config(consent ? std::set<bool>{had_extra} : writer.possible());
    check_store(consent ? writer.possible() : std::set<bool>{approved});
    if (kill_daemon) {
      check_daemon_kill(killed, tree);
    } else {
      check_connector_kill(victim, killed);
    }
    if (HasFatalFailure()) return;
  }
  // The next write of each file removes what a killed writer left beside it.
  EXPECT_EQ(consent_op()(!store_approves()), "");
  EXPECT_EQ(config_op()(!config_has_extra()), "");
  EXPECT_EQ(temps(), std::vector<std::string>{});
}

}  // namespace
}  // namespace oppx::test
