// daemon/socket_activation and `oppx daemon install-service`: the real oppxd started as systemd
// starts a socket-activated service (the listening socket as descriptor 3, LISTEN_PID its own pid),
// the socket it refuses, what its children see; the units written, printed and verified.
#include "tests/support/harness.h"

#include "cli/daemon_client.h"
#include "cli/daemon_service.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oppx::test {
namespace {

struct stat stat_of(const std::string& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st;
}

// A listening socket made as systemd makes oppxd.socket's (0600, in a 0700 folder); closed at the
// end. It must end before the TempHome: a socket that accepts with no daemon behind it would make
// the TempHome's check for a daemon wait for an answer.
class PassedSocket {
 public:
  explicit PassedSocket(const std::string& path, mode_t folder_mode = 0700) {
    std::string dir = path.substr(0, path.rfind('/'));
    ::mkdir(dir.c_str(), folder_mode);
    ::chmod(dir.c_str(), folder_mode);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    mode_t old = ::umask(0177);
    bool ok = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd_, 16) == 0;
    ::umask(old);
    if (!ok) ADD_FAILURE() << "cannot listen on " << path << ": " << std::strerror(errno);
  }
  ~PassedSocket() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

struct Started {
  int exit_code = -1;
  std::string output;  // its stdout and stderr
};

// oppxd as oppxd.service runs it under oppxd.socket: `listening` as descriptor 3, LISTEN_PID its
// own pid, LISTEN_FDS=1, detached (Type=forking). Returns once its first process has exited: ready,
// or refused.
Started start_activated(const TempHome& home, int listening) {
  std::string out = home.root() + "/activated.out";
  int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(out_fd, STDERR_FILENO);
    if (listening == 3) {
      ::fcntl(3, F_SETFD, 0);
    } else {
      ::dup2(listening, 3);  // the copy is not close-on-exec
    }
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("LISTEN_FDS", "1", 1);
    ::setenv("LISTEN_FDNAMES", "oppxd.socket", 1);
    ::execl(OPPXD_BIN, OPPXD_BIN, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out_fd);
  Started s;
  if (pid < 0 || !wait_for_exit(pid, 20s)) {
    ADD_FAILURE() << "oppxd did not finish starting within 20 s";
    if (pid > 0) ::kill(pid, SIGKILL);
  }
  int st = 0;
  if (pid > 0 && ::waitpid(pid, &st, 0) == pid && WIFEXITED(st)) s.exit_code = WEXITSTATUS(st);
  s.output = read_file(out);
  return s;
}

TEST(SocketActivation, ServesThePassedSocketTakesTheLockAndLeavesItOnStop) {
  TempHome home;
  {
    PassedSocket passed(home.socket());
    const ino_t ino = stat_of(home.socket()).st_ino;
    Started s = start_activated(home, passed.fd());
    ASSERT_EQ(s.exit_code, 0) << s.output << home.read_log();

    Result status = oppx({"daemon", "status", "--no-start"});
    EXPECT_EQ(status.exit_code, 0) << status.err;
    EXPECT_NE(status.out.find("is running"), std::string::npos) << status.out;
    EXPECT_EQ(stat_of(home.socket()).st_ino, ino) << "oppxd bound a socket of its own instead of the one passed";
    EXPECT_NE(home.read_log().find("socket passed by systemd"), std::string::npos) << home.read_log();

    // The lock is held: a second oppxd on the same path refuses to start.
    Result second = run({OPPXD_BIN});
    EXPECT_EQ(second.exit_code, 4) << second.err;

    Result stop = oppx({"daemon", "stop"});
    EXPECT_EQ(stop.exit_code, 0) << stop.err;
    EXPECT_NE(stop.out.find("stopped oppxd"), std::string::npos) << stop.out;
    // systemd's socket stays for the next start; a daemon of our own would have removed its socket.
    EXPECT_TRUE(S_ISSOCK(stat_of(home.socket()).st_mode)) << "the passed socket was unlinked at stop";
    EXPECT_EQ(stat_of(home.socket()).st_ino, ino);

    // The next connection's oppxd (systemd starts one again) takes the same socket.
    Started again = start_activated(home, passed.fd());
    ASSERT_EQ(again.exit_code, 0) << again.output << home.read_log();
    EXPECT_EQ(oppx({"daemon", "status", "--no-start"}).exit_code, 0);
    home.stop_daemon();
  }
}

TEST(SocketActivation, RefusesASocketBoundToAnotherPath) {
  TempHome home;
  {
    std::string elsewhere = home.root() + "/run/oppx/other.sock";
    PassedSocket passed(elsewhere);
    Started s = start_activated(home, passed.fd());
    EXPECT_EQ(s.exit_code, 3) << s.output;
    EXPECT_NE(s.output.find("bound to " + elsewhere), std::string::npos) << s.output;
    EXPECT_NE(s.output.find(home.socket()), std::string::npos) << s.output;
    EXPECT_NE(home.read_log().find("bound to " + elsewhere), std::string::npos) << home.read_log();
    EXPECT_FALSE(S_ISSOCK(stat_of(home.socket()).st_mode)) << "it bound the expected path itself";
  }
}

TEST(SocketActivation, StillRefusesAnOpenSocketFolder) {
  TempHome home;
  {
    PassedSocket passed(home.socket(), 0777);
    Started s = start_activated(home, passed.fd());
    EXPECT_EQ(s.exit_code, 3) << s.output;
    EXPECT_NE(s.output.find("refusing the socket passed by systemd"), std::string::npos) << s.output;
    EXPECT_NE(s.output.find("mode 0777"), std::string::npos) << s.output;
    EXPECT_NE(home.read_log().find("mode 0777"), std::string::npos) << home.read_log();
  }
}

// The environment that named the socket is not handed on: not to a connector's own environment,
// and not to what a definition expands from the environment oppxd started with.
TEST(SocketActivation, ConnectorsDoNotInheritTheListenVariables) {
  TempHome home;
  std::string dir = home.root() + "/report";
  ::mkdir(dir.c_str(), 0700);
  home.write_mcp_config(stdio_entry("report", FAKE_MCP_SERVER, {"report", dir},
                                    {{"SEEN", "${LISTEN_FDS:-none} ${LISTEN_PID:-none} ${LISTEN_FDNAMES:-none}"}}));
  {
    PassedSocket passed(home.socket());
    Started s = start_activated(home, passed.fd());
    ASSERT_EQ(s.exit_code, 0) << s.output << home.read_log();
    // fds is written after environ: once it exists, environ is whole.
    ASSERT_TRUE(when_files_change(
        dir, [&] { return !read_file(dir + "/fds").empty(); }, 20s))
        << home.read_log();
    std::string env = read_file(dir + "/environ");
    EXPECT_NE(env.find("SEEN=none none none\n"), std::string::npos) << env;
    EXPECT_EQ(env.find("LISTEN_"), std::string::npos) << env;
    home.stop_daemon();
  }
}

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}

std::string unit_dir(const TempHome& home) { return home.root() + "/config/systemd/user"; }

TEST(InstallService, NoEnableWritesBothUnitsWithExecStartBesideOppx) {
  TempHome home;
  Result r = oppx({"daemon", "install-service", "--no-enable"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string dir = unit_dir(home);
  std::string socket = read_file(dir + "/oppxd.socket"), service = read_file(dir + "/oppxd.service");
  EXPECT_NE(socket.find("\nListenStream=%t/oppx/oppxd.sock\n"), std::string::npos) << socket;
  EXPECT_NE(socket.find("\nSocketMode=0600\n"), std::string::npos) << socket;
  EXPECT_NE(socket.find("\nDirectoryMode=0700\n"), std::string::npos) << socket;
  EXPECT_NE(service.find("\nExecStart=" + real_path(OPPXD_BIN) + "\n"), std::string::npos) << service;
  EXPECT_NE(service.find("\nType=forking\n"), std::string::npos) << service;
  EXPECT_EQ(stat_of(dir + "/oppxd.socket").st_mode & 07777, 0644u);
  EXPECT_EQ(stat_of(dir + "/oppxd.service").st_mode & 07777, 0644u);
  EXPECT_NE(r.out.find("systemctl --user enable --now oppxd.socket"), std::string::npos) << r.out;
  EXPECT_FALSE(daemon_pid(home.socket())) << "install-service started a daemon";
}

TEST(InstallService, PrintShowsTheUnitsAndWritesNothing) {
  TempHome home;
  Result r = oppx({"daemon", "install-service", "--print"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# " + unit_dir(home) + "/oppxd.socket\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ListenStream=%t/oppx/oppxd.sock"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ExecStart=" + real_path(OPPXD_BIN) + "\n"), std::string::npos) << r.out;
  EXPECT_NE(::access((home.root() + "/config/systemd").c_str(), F_OK), 0) << "--print wrote something";
}

TEST(InstallService, WithoutSystemctlTheUnitsStayAndItSaysWhatToRun) {
  TempHome home;
  std::string empty = home.root() + "/no-bin";
  ::mkdir(empty.c_str(), 0700);
  Result r = run({"/usr/bin/env", "PATH=" + empty, OPPX_BIN, "daemon", "install-service"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("systemctl was not found"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("systemctl --user daemon-reload && systemctl --user enable --now oppxd.socket"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(read_file(unit_dir(home) + "/oppxd.service").empty());
  EXPECT_FALSE(read_file(unit_dir(home) + "/oppxd.socket").empty());
}

// A fake systemctl, only to make the fault happen: no user bus, as in a shell without a login session.
TEST(InstallService, WithoutAUserBusItSaysSoAndWhatToRun) {
  TempHome home;
  std::string bin = home.root() + "/fake-bin";
  ::mkdir(bin.c_str(), 0700);
  std::string asked = home.root() + "/systemctl-args";
  int fd = ::open((bin + "/systemctl").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0700);
  std::string script =
      "#!/bin/sh\necho \"$@\" >> '" + asked + "'\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n";
  ASSERT_EQ(::write(fd, script.data(), script.size()), static_cast<ssize_t>(script.size()));
  ::close(fd);
  Result r = run({"/usr/bin/env", "PATH=" + bin + ":/usr/bin:/bin", OPPX_BIN, "daemon", "install-service"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no systemd user bus"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Failed to connect to bus"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("systemctl --user enable --now oppxd.socket"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(asked), "--user daemon-reload\n") << "nothing is enabled after daemon-reload failed";
  EXPECT_FALSE(read_file(unit_dir(home) + "/oppxd.service").empty());
}

TEST(InstallService, ExecStartIsQuotedAsSystemdReadsIt) {
  auto exec_start = [](const std::string& path) {
    cli::ServiceUnits u = cli::service_units(path);
    auto at = u.service.find("\nExecStart=");
    return at == std::string::npos ? u.error : u.service.substr(at + 1, u.service.find('\n', at + 1) - at - 1);
  };
  EXPECT_EQ(exec_start("/usr/local/bin/oppxd"), "ExecStart=/usr/local/bin/oppxd");
  EXPECT_EQ(exec_start("/opt/my apps/oppxd"), "ExecStart=\"/opt/my apps/oppxd\"");
  EXPECT_EQ(exec_start("/opt/100%/$HOME/oppxd"), "ExecStart=\"/opt/100%%/$HOME/oppxd\"");
  for (const char* refused : {"/opt/a\"b/oppxd", "/opt/a\\b/oppxd", "/opt/it's/oppxd", "/opt/new\nline/oppxd"})
    EXPECT_NE(exec_start(refused).find("a character systemd refuses"), std::string::npos) << refused;
}

TEST(InstallService, UnitsPassSystemdAnalyzeVerify) {
  TempHome home;
  if (run({"/bin/sh", "-c", "command -v systemd-analyze"}).exit_code != 0)
    GTEST_SKIP() << "systemd-analyze is not installed here: the units are not verified";
  ASSERT_EQ(oppx({"daemon", "install-service", "--no-enable"}).exit_code, 0);
  std::string dir = unit_dir(home);
  // --user resolves %t from XDG_RUNTIME_DIR (the TempHome's); no manager or bus is needed.
  Result v = run({"systemd-analyze", "--user", "verify", dir + "/oppxd.socket", dir + "/oppxd.service"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(v.err, "") << "systemd-analyze warned about the units";

  // An install folder whose name needs quoting in ExecStart= (systemd checks that the program exists).
  std::string odd = home.root() + "/my 100% $apps";
  std::string units = home.root() + "/odd-units";
  ASSERT_EQ(::mkdir(odd.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(units.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(OPPXD_BIN, (odd + "/oppxd").c_str()), 0);
  cli::ServiceUnits u = cli::service_units(odd + "/oppxd");
  ASSERT_EQ(u.error, "");
  for (auto [name, text] : {std::pair{"/oppxd.socket", u.socket}, std::pair{"/oppxd.service", u.service}}) {
    int fd = ::open((units + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  Result q = run({"systemd-analyze", "--user", "verify", units + "/oppxd.socket", units + "/oppxd.service"});
  EXPECT_EQ(q.exit_code, 0) << u.service << q.out << q.err;
  EXPECT_EQ(q.err, "") << u.service;
}

}  // namespace
}  // namespace oppx::test
