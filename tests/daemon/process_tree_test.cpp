// A connector's whole process tree ends with it (RELIABILITY.md "MCP servers over stdio"): also a
// grandchild that left its process group with setsid, after `oppx mcp remove`, after kill -9 of
// the daemon, and after kill -9 of every oppxd process at once (the daemon and its helpers, as
// `pkill -9 oppxd` would). Where PID namespaces are turned off, the group reaper is the fallback:
// when it dies it is started again and still knows every group.
#include "tests/support/connector_fixture.h"

#include "cli/daemon_client.h"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <map>
#include <sstream>

namespace oppx::test {
namespace {

namespace json = boost::json;

std::vector<std::string> cmdline_of(pid_t pid) {
  std::string raw = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> argv;
  std::istringstream in(raw);
  for (std::string a; std::getline(in, a, '\0');) argv.push_back(a);
  return argv;
}

std::string comm_of(pid_t pid) {
  std::string c = read_file("/proc/" + std::to_string(pid) + "/comm");
  if (!c.empty() && c.back() == '\n') c.pop_back();
  return c;
}

pid_t parent_of(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  char state;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> pids;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      char* end;
      long v = std::strtol(e->d_name, &end, 10);
      if (*end == '\0' && v > 0) pids.push_back(static_cast<pid_t>(v));
    }
    ::closedir(d);
  }
  return pids;
}

struct ProcessTree : ConnectorFixture {
  // A sleep argument no other test uses, so that tests running beside this one never match.
  std::string sleep_arg(int n) { return "7772" + std::to_string(::getpid()) + std::to_string(n); }
  std::vector<std::string> sleepers;  // the arguments of the sleeps this test started

  // Connector `name`: a shell that starts `setsid sh -c '…; exec sleep ARG' &` (a grandchild in a
  // session and group of its own), then becomes the fake server. The grandchild announces its
  // pid in dir/sleeper.pid (written whole: a rename) once it has left the group, before its exec
  // of sleep: the pid is the sleep's, and the test waits on the file, not on /proc.
  std::string escaping(const std::string& name, const std::string& arg, const std::string& dir) {
    sleepers.push_back(arg);
    // Its pid as the test sees it: $$ would be the one in its PID namespace, but /proc is the
    // daemon's, and `read` is the shell's own (no fork), so /proc/self/stat is the shell's.
    std::string announce = "read -r pid rest < /proc/self/stat && echo $pid > " + dir + "/sleeper.tmp && mv " + dir +
                           "/sleeper.tmp " + dir + "/sleeper.pid";
    return stdio(name, "/bin/sh",
                 {"-c", "setsid sh -c '" + announce + " && exec sleep " + arg + "' & exec " +
                            std::string(FAKE_MCP_SERVER) + " ok " + dir});
  }
  // The escaped grandchild of escaping(…, dir), once it announced itself; -1 at the deadline.
  // Alive then: it sleeps until something ends it.
  pid_t sleeper(const std::string& dir) {
    std::string file = dir + "/sleeper.pid";
    pid_t found = -1;
    when_file_changes(file, [&] {
      auto l = lines(file);
      if (!l.empty()) found = static_cast<pid_t>(std::stol(l[0]));
      return found > 0;
    });
    EXPECT_TRUE(found <= 0 || process_alive(found)) << "the sleeper " << found << " ended before the test ended it";
    return found;
  }
  bool ends(pid_t pid) { return wait_for_exit(pid, 10s); }
  // The daemon and every process under it whose name starts with "oppxd": what `pkill oppxd` hits.
  std::vector<pid_t> oppxd_processes(pid_t daemon) {
    std::map<pid_t, pid_t> parent;
    for (pid_t p : all_pids()) parent[p] = parent_of(p);
    std::vector<pid_t> out{daemon};
    for (auto [p, pp] : parent) {
      bool under = false;
      for (pid_t a = pp; a > 1 && !under; a = parent.count(a) ? parent[a] : 0) under = a == daemon;
      if (under && comm_of(p).rfind("oppxd", 0) == 0) out.push_back(p);
    }
    return out;
  }
  json::object daemon_status() {
    Result r = oppx({"daemon", "status", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out).as_object() : json::object{};
  }
  void TearDown() override {
    ConnectorFixture::TearDown();
    ::unsetenv("OPPX_NO_PID_NAMESPACES");
    for (const std::string& arg : sleepers) {  // a failed test leaves none behind
      for (pid_t p : all_pids()) {
        if (cmdline_of(p) == std::vector<std::string>{"sleep", arg}) ::kill(p, SIGKILL);
      }
    }
  }
};

TEST_F(ProcessTree, RemoveEndsAGrandchildThatLeftTheGroup) {
  std::string arg = sleep_arg(1);
  std::string dir = fake_dir("esc");
  write_config(escaping("esc", arg, dir));
  ASSERT_EQ(entry("esc").at("state"), json::value("running"));
  pid_t sleep = sleeper(dir);
  ASSERT_GT(sleep, 0);
  auto s = daemon_status();
  EXPECT_EQ(s["isolation"], json::value("pid_namespace")) << json::serialize(s);
  Result text = oppx({"daemon", "status"});
  EXPECT_NE(text.out.find("  isolation   a PID namespace per connector"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  requests    0 sent to connectors"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(fmt::format("  processes   {} started by the daemon", s["children"].as_int64())),
            std::string::npos)
      << text.out;
  EXPECT_GE(s["children"].as_int64(), 2) << "the connector and the init of its namespace";
  EXPECT_NE(text.out.find("  browser     the spare is off"), std::string::npos) << text.out;
  write_config("");
  ASSERT_EQ(oppx({"mcp", "list"}).exit_code, 0);
  EXPECT_TRUE(ends(sleep)) << "sleep " << arg << " outlived its connector";
  auto daemon = daemon_pid(home.socket());
  ASSERT_TRUE(daemon);
  // The namespace's init is ended and reaped: no child of the daemon is left, as it says and as
  // /proc shows (the daemon and nothing under it).
  auto w = status_until(home.socket(), {{"children", 0}}, 10s);
  EXPECT_TRUE(w) << w.describe();
  EXPECT_EQ(oppxd_processes(static_cast<pid_t>(*daemon)).size(), 1u);
}

TEST_F(ProcessTree, KillNineOfTheDaemonEndsAGrandchildThatLeftTheGroup) {
  std::string arg = sleep_arg(2);
  std::string dir = fake_dir("esc");
  write_config(escaping("esc", arg, dir));
  ASSERT_EQ(entry("esc").at("state"), json::value("running"));
  pid_t sleep = sleeper(dir), child = last_pid(dir);
  ASSERT_GT(sleep, 0);
  auto daemon = daemon_pid(home.socket());
  ASSERT_TRUE(daemon);
  ASSERT_EQ(::kill(static_cast<pid_t>(*daemon), SIGKILL), 0);
  EXPECT_TRUE(cli::wait_for_exit(child, 10s));
  EXPECT_TRUE(ends(sleep)) << "sleep " << arg << " outlived the daemon";
}

TEST_F(ProcessTree, KillNineOfEveryOppxdProcessAtOnceEndsAGrandchildThatLeftTheGroup) {
  std::string arg = sleep_arg(3);
  std::string dir = fake_dir("esc");
  write_config(escaping("esc", arg, dir) + "," + stdio("plain", FAKE_MCP_SERVER, {"grandchild", fake_dir("plain")}));
  ASSERT_EQ(entry("esc").at("state"), json::value("running"));
  ASSERT_EQ(entry("plain").at("state"), json::value("running"));
  pid_t sleep = sleeper(dir);
  ASSERT_GT(sleep, 0);
  auto daemon = daemon_pid(home.socket());
  ASSERT_TRUE(daemon);
  auto everyone = oppxd_processes(static_cast<pid_t>(*daemon));
  for (pid_t p : everyone) ::kill(p, SIGKILL);
  for (pid_t p : everyone) EXPECT_TRUE(cli::wait_for_exit(p, 10s)) << p;
  EXPECT_TRUE(ends(sleep)) << "sleep " << arg << " outlived every oppxd process";
}

TEST_F(ProcessTree, TheGroupReaperIsStartedAgainWhenItDiesAndStillKnowsEveryGroup) {
  ::setenv("OPPX_NO_PID_NAMESPACES", "1", 1);
  std::string dir = fake_dir("parent");
  write_config(stdio("parent", FAKE_MCP_SERVER, {"grandchild", dir}));
  ASSERT_EQ(entry("parent").at("state"), json::value("running"));
  auto g = lines(dir + "/grandchild.pid");
  ASSERT_EQ(g.size(), 1u);
  pid_t grandchild = static_cast<pid_t>(std::stol(g[0]));
  auto s = daemon_status();
  EXPECT_EQ(s["isolation"], json::value("process_group")) << json::serialize(s);
  EXPECT_NE(json::serialize(s["isolation_reason"]).find("OPPX_NO_PID_NAMESPACES"), std::string::npos)
      << json::serialize(s);
  Result text = oppx({"daemon", "status"});
  EXPECT_NE(text.out.find("  isolation   process groups and a reaper"), std::string::npos) << text.out;
  ASSERT_TRUE(s["reaper_pid"].is_int64()) << json::serialize(s);
  pid_t reaper = static_cast<pid_t>(s["reaper_pid"].as_int64());
  ASSERT_GT(reaper, 0);
  ASSERT_EQ(::kill(reaper, SIGKILL), 0);
  pid_t again = 0;
  EXPECT_TRUE(when_file_changes(
      home.log(),
      [&] {
        again = static_cast<pid_t>(daemon_status()["reaper_pid"].as_int64());
        return again > 0 && again != reaper && process_alive(again);
      },
      10s));
  EXPECT_NE(home.read_log().find(
                fmt::format("the group reaper (pid {}) ended (signal 9); started it again as pid {}", reaper, again)),
            std::string::npos)
      << home.read_log();
  // The new one was told the group of the running connector: it ends the grandchild when the
  // daemon is killed.
  auto daemon = daemon_pid(home.socket());
  ASSERT_TRUE(daemon);
  ASSERT_EQ(::kill(static_cast<pid_t>(*daemon), SIGKILL), 0);
  EXPECT_TRUE(cli::wait_for_exit(grandchild, 10s)) << "the restarted reaper ends the grandchild";
}

}  // namespace
}  // namespace oppx::test
