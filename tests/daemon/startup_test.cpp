// daemon/startup and daemon/main with real oppxd processes: unsafe folders refused, one daemon
// per socket, stale sockets replaced, a live one never displaced, a deleted socket restored,
// signals shutting down cleanly.
#include "tests/support/harness.h"

#include "cli/daemon_client.h"

#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

mode_t mode_of(const std::string& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st.st_mode & 07777;
}

Result start_daemon(const std::string& socket) { return run({OPPXD_BIN, "--socket", socket}); }

TEST(Startup, DetachesAndMakesPrivateFiles) {
  TempHome home;
  DaemonProcess d(home);
  ASSERT_EQ(d.start_result().exit_code, 0) << d.start_result().err;
  ASSERT_GT(d.pid(), 0);
  EXPECT_EQ(mode_of(home.root() + "/run/oppx"), 0700u);
  EXPECT_EQ(mode_of(home.socket()) & 0777, 0600u);
  EXPECT_EQ(mode_of(home.log()), 0600u);
  EXPECT_EQ(mode_of(home.root() + "/state/oppx"), 0700u);
  EXPECT_NE(home.read_log().find("listening on " + home.socket()), std::string::npos);
  // Detached: its own session, not the test's.
  EXPECT_EQ(::getsid(static_cast<pid_t>(d.pid())), d.pid());
}

TEST(Startup, RefusesAnOpenSocketFolderAndLeavesItAsItIs) {
  TempHome home;
  std::string dir = home.root() + "/run/oppx";
  ::mkdir(dir.c_str(), 0755);
  ::chmod(dir.c_str(), 0755);
  Result r = start_daemon(home.socket());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find(dir), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mode 0755"), std::string::npos) << r.err;
  EXPECT_EQ(mode_of(dir), 0755u);
  EXPECT_FALSE(daemon_pid(home.socket()));
}

TEST(Startup, RefusesASymlinkedOrForeignFolder) {
  TempHome home;
  std::string real = home.root() + "/elsewhere";
  ::mkdir(real.c_str(), 0700);
  ASSERT_EQ(::symlink(real.c_str(), (home.root() + "/run/oppx").c_str()), 0);
  Result r = start_daemon(home.socket());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;

  if (::geteuid() == 0) {
    std::string theirs = home.root() + "/theirs";
    ::mkdir(theirs.c_str(), 0700);
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    Result t = start_daemon(theirs + "/oppxd.sock");
    EXPECT_EQ(t.exit_code, 3);
    EXPECT_NE(t.err.find("belongs to uid 65534"), std::string::npos) << t.err;
  }
}

TEST(Startup, RefusesASocketPathThatIsARegularFile) {
  TempHome home;
  ::mkdir((home.root() + "/run/oppx").c_str(), 0700);
  int fd = ::open(home.socket().c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "keep me", 7), 7);
  ::close(fd);
  Result r = start_daemon(home.socket());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("not a socket"), std::string::npos) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(home.socket().c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, 7);
}

TEST(Startup, AStaleSocketAfterKill9IsReplaced) {
  TempHome home;
  Process first({OPPXD_BIN, "--foreground", "--socket", home.socket()});
  ASSERT_TRUE(first.wait_for_stderr("ready on")) << first.err();
  ::kill(first.pid(), SIGKILL);
  first.wait();
  struct stat st {};
  ASSERT_EQ(::lstat(home.socket().c_str(), &st), 0) << "the killed daemon's socket should still be there";
  EXPECT_FALSE(daemon_pid(home.socket()));

  DaemonProcess second(home);
  ASSERT_EQ(second.start_result().exit_code, 0) << second.start_result().err;
  EXPECT_NE(second.pid(), first.pid());
}

TEST(Startup, ALiveDaemonIsNeverDisplaced) {
  TempHome home;
  DaemonProcess first(home);
  ASSERT_GT(first.pid(), 0);
  Result again = start_daemon(home.socket());
  EXPECT_EQ(again.exit_code, 4);
  EXPECT_NE(again.err.find("already serves"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find(std::to_string(first.pid())), std::string::npos) << again.err;
  EXPECT_EQ(daemon_pid(home.socket()), first.pid());
}

TEST(Startup, TwoDaemonsStartedAtOnceGiveExactlyOne) {
  TempHome home;
  std::vector<Process> starters;
  for (int i = 0; i < 4; ++i) starters.emplace_back(std::vector<std::string>{OPPXD_BIN, "--socket", home.socket()});
  int ok = 0, busy = 0;
  for (auto& p : starters) {
    Result r = p.wait();
    ok += r.exit_code == 0;
    busy += r.exit_code == 4;
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(busy, 3);
  auto pid = daemon_pid(home.socket());
  ASSERT_TRUE(pid);
  // Exactly one oppxd process for this socket.
  Result ps = run({"pgrep", "-f", "--", "oppxd --socket " + home.socket()});
  EXPECT_EQ(std::count(ps.out.begin(), ps.out.end(), '\n'), 1) << ps.out;
  ::kill(static_cast<pid_t>(*pid), SIGTERM);
  EXPECT_TRUE(cli::wait_for_exit(*pid, 10s));
}

TEST(Startup, ADeletedSocketComesBack) {
  TempHome home;
  DaemonProcess d(home);
  ASSERT_GT(d.pid(), 0);
  ASSERT_EQ(::unlink(home.socket().c_str()), 0);
  // The daemon logs this once the new socket listens.
  EXPECT_TRUE(when_file_changes(
      home.log(), [&] { return home.read_log().find("was deleted; made it again") != std::string::npos; }));
  EXPECT_EQ(daemon_pid(home.socket()), d.pid());
}

TEST(Startup, SigtermAndSigintShutDownCleanly) {
  for (int sig : {SIGTERM, SIGINT}) {
    TempHome home;
    Process d({OPPXD_BIN, "--foreground", "--socket", home.socket()});
    ASSERT_TRUE(d.wait_for_stderr("ready on")) << d.err();
    auto other = SyncClient::connect(home.socket());
    ASSERT_TRUE(other);
    ::kill(d.pid(), sig);
    Result r = d.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(sig == SIGTERM ? "shutting down: SIGTERM" : "shutting down: SIGINT"), std::string::npos);
    EXPECT_NE(::access(home.socket().c_str(), F_OK), 0) << "its own socket is removed";
    auto line = other->read_line(5s);
    EXPECT_FALSE(line);  // the connected client sees the end of the stream
  }
}

TEST(Startup, ShutdownRemovesOnlyItsOwnSocket) {
  TempHome home;
  Process d({OPPXD_BIN, "--foreground", "--socket", home.socket()});
  ASSERT_TRUE(d.wait_for_stderr("ready on")) << d.err();
  // Someone puts a file in place of our socket: the daemon must neither replace nor delete it.
  std::string tmp = home.root() + "/run/oppx/other";
  ::close(::open(tmp.c_str(), O_CREAT | O_WRONLY, 0600));
  ASSERT_EQ(::rename(tmp.c_str(), home.socket().c_str()), 0);
  ASSERT_TRUE(when_file_changes(
      home.log(), [&] { return home.read_log().find("replaced by something else") != std::string::npos; }));
  ::kill(d.pid(), SIGTERM);
  EXPECT_EQ(d.wait().exit_code, 0);
  struct stat st {};
  ASSERT_EQ(::lstat(home.socket().c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

}  // namespace
}  // namespace oppx::test
