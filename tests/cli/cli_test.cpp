// The oppx CLI as a user runs it: help that is true for every command, exit codes, starting the
// daemon when none answers (also several at once, and after a kill -9), stop/restart/logs.
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "tests/support/browser_support.h"
#include "tests/support/harness.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

TEST(Cli, VersionAndHelp) {
  TempHome home;
  Result v = oppx({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out, std::string("oppx ") + OPPX_VERSION + " (build " + kBuildId + ")\n");

  Result bare = oppx({"help"});
  EXPECT_EQ(bare.exit_code, 0);
  EXPECT_NE(bare.out.find("usage: oppx"), std::string::npos);
  EXPECT_NE(bare.out.find("daemon status"), std::string::npos);
  EXPECT_NE(bare.out.find("Exit codes"), std::string::npos);
  EXPECT_EQ(oppx({"--help"}).out, bare.out);
  // Alone without a terminal, oppx reads one message from stdin, as oppx -p: none is a usage error.
  Result alone = oppx({});
  EXPECT_EQ(alone.exit_code, 2) << alone.out << alone.err;
  EXPECT_NE(alone.err.find("the message on stdin is empty"), std::string::npos) << alone.err;
  EXPECT_FALSE(daemon_pid(home.socket())) << "help must not start a daemon";
}

TEST(Cli, EveryCommandHasTrueHelp) {
  TempHome home;
  for (const cli::Command& c : cli::command_table()) {
    std::vector<std::string> args;
    if (!c.group.empty()) args.emplace_back(c.group);
    args.emplace_back(c.name);
    args.emplace_back("--help");
    Result r = oppx(args);
    EXPECT_EQ(r.exit_code, 0) << c.name;
    EXPECT_NE(r.out.find(std::string(c.summary)), std::string::npos) << c.name;
    EXPECT_NE(r.out.find(std::string(c.usage)), std::string::npos) << c.name;
    // The flags the help names are the flags the command takes: each one is accepted.
    if (c.group == "daemon" && c.name == "status") {
      EXPECT_NE(r.out.find("--json"), std::string::npos);
      EXPECT_NE(r.out.find("--no-start"), std::string::npos);
    }
  }
  Result group = oppx({"daemon"});
  EXPECT_EQ(group.exit_code, 0);
  for (const char* sub : {"status", "start", "stop", "restart", "logs"})
    EXPECT_NE(group.out.find(sub), std::string::npos);
  EXPECT_EQ(oppx({"help", "daemon", "logs"}).out, oppx({"daemon", "logs", "--help"}).out);
  EXPECT_FALSE(daemon_pid(home.socket()));
}

TEST(Cli, UsageErrorsExitWith2) {
  TempHome home;
  Result unknown = oppx({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown command `frobnicate`"), std::string::npos);
  EXPECT_EQ(oppx({"daemon", "bogus"}).exit_code, 2);
  EXPECT_EQ(oppx({"daemon", "status", "--bogus"}).exit_code, 2);
  EXPECT_EQ(oppx({"--bogus"}).exit_code, 2);
  Result n = oppx({"daemon", "logs", "-n", "many"});
  EXPECT_EQ(n.exit_code, 2);
  EXPECT_NE(n.err.find("-n takes a number"), std::string::npos);
  EXPECT_FALSE(daemon_pid(home.socket()));
}

TEST(Cli, StatusStartsTheDaemonWhenNoneAnswers) {
  TempHome home;
  Result none = oppx({"daemon", "status", "--no-start"});
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_NE(none.err.find("oppx daemon start"), std::string::npos) << none.err;

  Result first = oppx({"daemon", "status"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("started oppxd"), std::string::npos);
  EXPECT_NE(first.out.find("is running"), std::string::npos);
  auto pid = daemon_pid(home.socket());
  ASSERT_TRUE(pid);
  EXPECT_NE(first.out.find(std::to_string(*pid)), std::string::npos);

  Result second = oppx({"daemon", "status", "--json"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.err, "");
  auto j = json::parse(second.out);
  EXPECT_EQ(j.at("pid").as_int64(), *pid);
  EXPECT_EQ(j.at("socket"), json::value(home.socket()));
  EXPECT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
}

TEST(Cli, CommandsStartedAtOnceShareOneDaemon) {
  TempHome home;
  std::vector<Process> ps;
  for (int i = 0; i < 6; ++i) ps.emplace_back(std::vector<std::string>{OPPX_BIN, "daemon", "status", "--json"});
  std::set<std::int64_t> pids;
  for (auto& p : ps) {
    Result r = p.wait();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    pids.insert(json::parse(r.out).at("pid").as_int64());
  }
  EXPECT_EQ(pids.size(), 1u);
  EXPECT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
}

TEST(Cli, AfterKill9TheNextCommandStartsANewDaemon) {
  TempHome home;
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  auto old = daemon_pid(home.socket());
  ASSERT_TRUE(old);
  ::kill(static_cast<pid_t>(*old), SIGKILL);
  ASSERT_TRUE(cli::wait_for_exit(*old, 10s));
  Result r = oppx({"daemon", "status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto now = json::parse(r.out).at("pid").as_int64();
  EXPECT_NE(now, *old);
  EXPECT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
}

TEST(Cli, StopRestartAndStart) {
  TempHome home;
  Result not_running = oppx({"daemon", "stop"});
  EXPECT_EQ(not_running.exit_code, 0);
  EXPECT_NE(not_running.out.find("not running"), std::string::npos);

  Result start = oppx({"daemon", "start"});
  ASSERT_EQ(start.exit_code, 0) << start.err;
  EXPECT_NE(start.out.find("started oppxd"), std::string::npos);
  auto first = daemon_pid(home.socket());
  ASSERT_TRUE(first);
  Result again = oppx({"daemon", "start"});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.out.find("already running"), std::string::npos);

  Result restart = oppx({"daemon", "restart"});
  ASSERT_EQ(restart.exit_code, 0) << restart.err;
  auto second = daemon_pid(home.socket());
  ASSERT_TRUE(second);
  EXPECT_NE(*first, *second);
  EXPECT_FALSE(process_alive(static_cast<pid_t>(*first)));

  Result stop = oppx({"daemon", "stop"});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_NE(stop.out.find("stopped oppxd (pid " + std::to_string(*second) + ")"), std::string::npos);
  // stop returns once the process is gone and its socket removed.
  EXPECT_FALSE(process_alive(static_cast<pid_t>(*second)));
  EXPECT_NE(::access(home.socket().c_str(), F_OK), 0);
}

// A daemon started, then stopped by kill -STOP. It is the test's own child (the CLI's would be
// detached), because only a parent is told when a process has stopped; the CLI finds it on the
// socket as it would one it started. Still running at the test's end, it is ended and reaped.
struct FrozenDaemon {
  ForegroundDaemon daemon;
  pid_t pid = -1;
  std::string its;  // "(pid N)"
  explicit FrozenDaemon(const TempHome& home) : daemon(home) {
    if (daemon.ready()) pid = daemon.pid();
    its = "(pid " + std::to_string(pid) + ")";
    EXPECT_GT(pid, 0);
    if (pid <= 0) return;
    EXPECT_EQ(::kill(pid, SIGSTOP), 0);
    EXPECT_TRUE(wait_for_stop(pid));
    EXPECT_TRUE(process_stopped(pid));
  }
};

// A frozen daemon holds its lock and its socket takes connections, but it answers nothing: stop
// says so, with its pid, and ends it (SIGTERM, with SIGCONT so that a stopped one acts on it).
TEST(Cli, StopEndsAFrozenDaemonAndSaysSo) {
  TempHome home;
  FrozenDaemon frozen(home);
  ASSERT_GT(frozen.pid, 0);
  Result status = oppx({"daemon", "status", "--no-start"}, 30s);
  EXPECT_EQ(status.exit_code, 3);
  EXPECT_NE(status.err.find("oppxd " + frozen.its + " is frozen"), std::string::npos) << status.err;
  EXPECT_NE(status.err.find("oppx daemon restart"), std::string::npos) << status.err;
  Result stop = oppx({"daemon", "stop"}, 30s);
  EXPECT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  EXPECT_NE(stop.err.find("oppxd " + frozen.its + " is frozen"), std::string::npos) << stop.err;
  EXPECT_NE(stop.out.find("stopped oppxd " + frozen.its), std::string::npos) << stop.out;
  EXPECT_FALSE(process_alive(frozen.pid)) << "stop returns once it is gone";
}

TEST(Cli, RestartReplacesAFrozenDaemon) {
  TempHome home;
  FrozenDaemon frozen(home);
  ASSERT_GT(frozen.pid, 0);
  Result restart = oppx({"daemon", "restart"}, 40s);
  ASSERT_EQ(restart.exit_code, 0) << restart.out << restart.err;
  EXPECT_NE(restart.err.find("oppxd " + frozen.its + " is frozen"), std::string::npos) << restart.err;
  EXPECT_NE(restart.out.find("started oppxd"), std::string::npos) << restart.out;
  EXPECT_FALSE(process_alive(frozen.pid));
  auto now = daemon_pid(home.socket());
  ASSERT_TRUE(now) << "the new daemon answers";
  EXPECT_NE(*now, frozen.pid);
  EXPECT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
}

// One that holds the lock and ignores SIGTERM (and has no socket at all) gets SIGKILL after the
// grace. It stands in for an oppxd stuck where SIGTERM cannot reach its loop.
TEST(Cli, StopKillsAFrozenDaemonThatIgnoresSigterm) {
  TempHome home;
  ASSERT_EQ(::mkdir((home.root() + "/run/oppx").c_str(), 0700), 0);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    std::signal(SIGTERM, SIG_IGN);
    int fd = ::open((home.socket() + ".lock").c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
    std::string me = std::to_string(::getpid()) + "\n";
    if (::write(fd, me.data(), me.size()) < 0 || ::write(ready[1], "x", 1) != 1) ::_exit(1);
    while (true) ::pause();
  }
  ::close(ready[1]);
  struct Reap {
    pid_t pid;
    ~Reap() {
      if (pid <= 0) return;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{holder};
  char x;
  ASSERT_EQ(::read(ready[0], &x, 1), 1) << "the stand-in holds the lock";
  ::close(ready[0]);
  Result stop = oppx({"daemon", "stop"}, 30s);
  EXPECT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  std::string its = "(pid " + std::to_string(holder) + ")";
  EXPECT_NE(stop.err.find("oppxd " + its + " is frozen"), std::string::npos) << stop.err;
  EXPECT_NE(stop.err.find("sending SIGKILL"), std::string::npos) << stop.err;
  EXPECT_NE(stop.out.find("stopped oppxd " + its), std::string::npos) << stop.out;
  int st = 0;
  ASSERT_EQ(::waitpid(holder, &st, WNOHANG), holder) << "it was gone when stop returned";
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  reap.pid = -1;
}

TEST(Cli, LogsShowTheEndOfTheDaemonLog) {
  TempHome home;
  Result missing = oppx({"daemon", "logs"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no daemon log"), std::string::npos);
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
  Result one = oppx({"daemon", "logs", "-n", "1"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(std::count(one.out.begin(), one.out.end(), '\n'), 1);
  EXPECT_NE(one.out.find("stopped"), std::string::npos) << one.out;
  Result all = oppx({"daemon", "logs"});
  EXPECT_NE(all.out.find("listening on"), std::string::npos);
  EXPECT_NE(all.out.find("shutting down"), std::string::npos);
}

TEST(Cli, AnUnsafeSocketFolderIsExplained) {
  TempHome home;
  std::string dir = home.root() + "/open";
  ::mkdir(dir.c_str(), 0777);
  ::chmod(dir.c_str(), 0777);
  Result r = oppx({"--socket", dir + "/oppxd.sock", "daemon", "status"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("refusing folder " + dir), std::string::npos) << r.err;
}

TEST(Cli, ABuildMismatchIsAWarningWithTheFix) {
  proto::HelloResult same{1, "0.1.0", kBuildId, 42};
  EXPECT_FALSE(cli::build_mismatch_warning(same, kBuildId));
  proto::HelloResult other{1, "0.1.0", "0.0.9-abc", 42};
  auto w = cli::build_mismatch_warning(other, kBuildId);
  ASSERT_TRUE(w);
  EXPECT_NE(w->find("0.0.9-abc"), std::string::npos);
  EXPECT_NE(w->find("oppx daemon restart"), std::string::npos);
}

TEST(Cli, DemoRunsAgainstARealDaemon) {
  TempHome home;
  link_engine(home);  // the browser as the bootstrap installed it
  // Run as the README says, by a relative path from the folder above build/.
  std::string bin_dir = std::string(OPPX_BIN).substr(0, std::string(OPPX_BIN).rfind('/'));
  Result r = run({"/bin/sh", "-c", "cd \"$1\" && ./oppx demo", "sh", bin_dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto pid = daemon_pid(home.socket());
  ASSERT_TRUE(pid);
  EXPECT_NE(r.out.find("pid " + std::to_string(*pid)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("started"), std::string::npos);
  EXPECT_NE(r.out.find("The CLI is ready"), std::string::npos);
  // The tour's real connector: server-everything where bootstrap put it beside this oppx.
  if (::access((bin_dir + "/npm/node_modules/@modelcontextprotocol/server-everything").c_str(), F_OK) == 0) {
    EXPECT_NE(r.out.find("→ Echo: hello from the oppx demo"), std::string::npos) << r.out;
    // Added through mcp/add, with its probe: tools in the model's form and their cost.
    EXPECT_NE(r.out.find("Added everything in " + home.root() + "/config/oppx/mcp.json"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("everything.echo: Echoes back the input string\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tokens a request (an estimate"), std::string::npos) << r.out;
    // A repository connector it made waits for consent, and nothing of it ran.
    EXPECT_NE(r.out.find("`demo-notes`; oppx mcp list there shows it waiting"), std::string::npos) << r.out;
    // The line it prints to allow it works as printed, from wherever the shell is.
    auto at = r.out.find("To allow it:  ");
    ASSERT_NE(at, std::string::npos) << r.out;
    std::string line = r.out.substr(at + 14, r.out.find('\n', at) - at - 14);
    EXPECT_NE(line.find("mcp approve demo-notes"), std::string::npos) << line;
    Result approve = run({"/bin/sh", "-c", "cd / && " + line});
    EXPECT_EQ(approve.exit_code, 0) << line << "\n" << approve.out << approve.err;
    // The browser opened the demo's own page and printed what the model would read of it.
    EXPECT_NE(r.out.find("- heading \"Hello from oppx\" [level=1]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("a warning the browser tools can read"), std::string::npos) << r.out;
    Result again = oppx({"demo"});
    EXPECT_NE(again.out.find("`everything` is already in"), std::string::npos) << again.out;
  } else {
    EXPECT_NE(r.out.find("not installed next to this oppx; run packaging/bootstrap.sh"), std::string::npos) << r.out;
  }
  EXPECT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
}

}  // namespace
}  // namespace oppx::test

namespace oppx::test {
namespace {

TEST(Cli, RefusesToTalkThroughAnUnsafeFolderEvenWhenADaemonAnswers) {
  TempHome home;
  DaemonProcess d(home);
  ASSERT_GT(d.pid(), 0);
  std::string dir = home.root() + "/run/oppx";
  ::chmod(dir.c_str(), 0777);
  Result r = oppx({"daemon", "status"});
  ::chmod(dir.c_str(), 0700);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("others can reach it"), std::string::npos) << r.err;
}

TEST(Cli, ARelativeSocketPathWorksFromTheFolderItWasGivenIn) {
  TempHome home;
  std::string dir = home.root() + "/rel";
  ::mkdir(dir.c_str(), 0700);
  ASSERT_EQ(::chdir(dir.c_str()), 0);
  Result r = oppx({"--socket", "oppxd.sock", "daemon", "status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("socket"), json::value(dir + "/oppxd.sock"));
  EXPECT_EQ(oppx({"--socket", "oppxd.sock", "daemon", "stop"}).exit_code, 0);
  ASSERT_EQ(::chdir("/"), 0);
}

}  // namespace
}  // namespace oppx::test

namespace oppx::test {
namespace {

TEST(Cli, LogsFollowPrintsWhatIsAppended) {
  TempHome home;
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  Process follow({OPPX_BIN, "daemon", "logs", "-f", "-n", "1"});
  ASSERT_TRUE(follow.wait_for_stdout("listening on")) << follow.out();
  ASSERT_EQ(oppx({"daemon", "stop"}).exit_code, 0);
  EXPECT_TRUE(follow.wait_for_stdout("shutting down")) << follow.out();
}

}  // namespace
}  // namespace oppx::test
