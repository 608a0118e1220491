// BenchHome, run_ms and summarize: see bench_support.h.
#include "bench/bench_support.h"

#include "common/sync_client.h"
#include "proto/daemon_api.h"
#include "proto/mcp_api.h"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace oppx::bench {

using Clock = std::chrono::steady_clock;

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string s(buf);
  return s.substr(0, s.find_last_of('/'));
}

BenchHome::BenchHome() {
  char tmpl[] = "/tmp/oppx-bench-XXXXXX";
  if (!::mkdtemp(tmpl)) return;
  root_ = tmpl;
  ::setenv("HOME", root_.c_str(), 1);
  ::setenv("XDG_RUNTIME_DIR", (root_ + "/run").c_str(), 1);
  ::setenv("XDG_STATE_HOME", (root_ + "/state").c_str(), 1);
  ::setenv("XDG_CONFIG_HOME", (root_ + "/config").c_str(), 1);
  ::unsetenv("OPPX_SOCKET");
  ::unsetenv("OPPX_MCP_CONFIG");
  ::mkdir((root_ + "/run").c_str(), 0700);
}

BenchHome::~BenchHome() {
  if (root_.empty()) return;
  std::string rm = "rm -rf '" + root_ + "'";
  (void)!std::system(rm.c_str());
}

std::vector<char*> c_argv(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

double run_ms(const std::vector<std::string>& args) {
  std::vector<char*> argv = c_argv(args);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  auto start = Clock::now();
  pid_t pid;
  int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int st = 0;
  ::waitpid(pid, &st, 0);
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? ms : -1;
}

Stats summarize(std::vector<double> t, int failures) {
  Stats s;
  s.failures = failures;
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  auto at = [&t](double q) { return t[std::min(t.size() - 1, static_cast<std::size_t>(q * t.size()))]; };
  s.median = at(0.5);
  s.p90 = at(0.9);
  s.p99 = at(0.99);
  s.min = t.front();
  return s;
}

Stats measure(const std::vector<std::string>& args, int runs) {
  std::vector<double> t;
  int failures = 0;
  for (int i = 0; i < runs; ++i) {
    double ms = run_ms(args);
    if (ms < 0) {
      ++failures;
    } else {
      t.push_back(ms);
    }
  }
  return summarize(std::move(t), failures);
}

std::string capture(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "";
  std::vector<char*> argv = c_argv(args);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  std::string out;
  if (rc == 0) {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (rc != 0) return "";
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? out : "";
}

int running_connectors(const std::string& oppx, const std::string& socket) {
  if (run_ms({oppx, "daemon", "start"}) < 0) return -1;
  auto c = SyncClient::connect(socket);
  if (!c) return -1;
  if (!c->call(proto::kHello, boost::json::object{{"protocol", proto::kProtocolVersion}}, std::chrono::seconds(5)))
    return -1;
  auto r = c->call(proto::kMcpList, boost::json::object{{"wait", true}}, std::chrono::seconds(120));
  if (!r) return -1;
  int running = 0;
  for (const auto& conn : r->at("connectors").as_array()) running += conn.at("state") == "running";
  return running;
}

namespace {

boost::json::object client_env() {
  boost::json::object env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (auto eq = kv.find('='); eq != std::string_view::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace

void write_config(const BenchHome& home, const boost::json::object& servers) {
  std::string dir = home.root() + "/config/oppx";
  ::mkdir((home.root() + "/config").c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  std::string path = dir + "/mcp.json", tmp = path + ".tmp";
  std::ofstream(tmp) << boost::json::serialize(boost::json::object{{"mcpServers", servers}});
  ::rename(tmp.c_str(), path.c_str());
}

boost::json::object echo_servers(int count) {
  boost::json::object servers;
  std::string echo = self_dir() + "/bench_echo_server";
  for (int i = 1; i <= count; ++i) {
    servers[i == 1 ? std::string("echo") : "echo" + std::to_string(i)] =
        boost::json::object{{"command", echo}, {"args", boost::json::array{}}};
  }
  return servers;
}

std::optional<SyncClient> daemon_client(const std::string& socket, const std::string& client) {
  auto c = SyncClient::connect(socket);
  if (!c) return std::nullopt;
  auto r =
      c->call(proto::kHello,
              boost::json::object{{"protocol", proto::kProtocolVersion}, {"client", client}, {"env", client_env()}},
              std::chrono::seconds(5));
  if (!r) return std::nullopt;
  return std::move(*c);
}

void report(const ReportRow& row) {
  const char* path = std::getenv("OPPX_BENCH_REPORT");
  if (!path || !*path) return;
  boost::json::object o{
      {"bench", row.bench},   {"what", row.what},     {"unit", row.unit},     {"median", row.stats.median},
      {"min", row.stats.min}, {"p90", row.stats.p90}, {"p99", row.stats.p99}, {"failures", row.stats.failures}};
  if (!row.anchor.empty()) {
    o["anchor"] = row.anchor;
    o["anchor_median"] = row.anchor_median;
    if (row.anchor_median > 0) o["ratio"] = row.stats.median / row.anchor_median;
  }
  if (!row.note.empty()) o["note"] = row.note;
  std::ofstream(path, std::ios::app) << boost::json::serialize(o) << "\n";
}

}  // namespace oppx::bench
