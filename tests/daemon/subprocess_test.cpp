// daemon/subprocess with real children (/bin/sh): the exit status and the last stderr lines once
// it finished, the log with the secrets hidden, a program that is not installed, and a stop that
// ends a child ignoring SIGTERM (its group gets SIGKILL) and reaps it.
#include "daemon/subprocess.h"

#include "tests/support/harness.h"
#include "tests/support/loop.h"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace oppx::daemon {
namespace {

using test::run_until;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Spawned {
  std::shared_ptr<Subprocess> process;
  std::optional<SpawnError> error;
  bool done = false;
};

Spawned spawn(boost::asio::io_context& io, const std::string& script, Subprocess::Options options) {
  SpawnSpec spec;
  spec.program = "/bin/sh";
  spec.args = {"-c", script};
  spec.env = {"PATH=/usr/bin:/bin"};
  Spawned s;
  Subprocess::spawn(io, spec, std::move(options), [&s](auto r) {
    s.done = true;
    if (r) {
      s.process = *r;
    } else {
      s.error = r.error();
    }
  });
  EXPECT_TRUE(run_until(io, [&] { return s.done; }));
  return s;
}

class SubprocessTest : public ::testing::Test {
 protected:
  test::TempHome home;
  boost::asio::io_context io;
  std::string log_path = home.root() + "/child.log";
};

TEST_F(SubprocessTest, FinishesWithItsStatusAndLastLinesAndLogsThemMasked) {
  auto s = spawn(io, "echo starting >&2; echo 'bad token s3cr3t-value' >&2; printf 'no newline' >&2; exit 3",
                 {"sh", log_path, {"s3cr3t-value"}});
  ASSERT_TRUE(s.process) << s.error->message;
  EXPECT_GT(s.process->pid(), 0);
  std::optional<Subprocess::Finished> finished;
  s.process->on_finished([&](Subprocess::Finished f) { finished = std::move(f); });
  ASSERT_TRUE(run_until(io, [&] { return finished.has_value(); }));
  ASSERT_TRUE(finished->status);
  EXPECT_FALSE(finished->status->signaled);
  EXPECT_EQ(finished->status->code, 3);
  ASSERT_EQ(finished->last_lines.size(), 3u);
  EXPECT_EQ(finished->last_lines[2], "no newline");  // the end of stderr, after the exit, counts
  EXPECT_EQ(s.process->pid(), 0);
  std::string log = read_all(log_path);
  EXPECT_NE(log.find("starting\n"), std::string::npos) << log;
  EXPECT_EQ(log.find("s3cr3t-value"), std::string::npos) << log;
  EXPECT_NE(log.find("no newline"), std::string::npos) << log;
}

TEST_F(SubprocessTest, AProgramNotOnThePathIsNotInstalled) {
  SpawnSpec spec;
  spec.program = "oppx-no-such-program";
  spec.env = {"PATH=/nonexistent"};
  std::optional<boost::system::result<std::shared_ptr<Subprocess>, SpawnError>> got;
  Subprocess::spawn(io, spec, {"missing", log_path, {}}, [&](auto r) { got = std::move(r); });
  ASSERT_TRUE(run_until(io, [&] { return got.has_value(); }));
  ASSERT_FALSE(*got);
  EXPECT_TRUE(got->error().not_installed);
}

TEST_F(SubprocessTest, StopEndsAChildThatIgnoresSigtermAndReapsIt) {
  // It says it is ready on stdout once the trap is set, then waits forever with SIGTERM still ignored.
  auto s = spawn(io, "trap '' TERM; echo ready; exec tail -f /dev/null", {"stubborn", log_path, {}});
  ASSERT_TRUE(s.process) << s.error->message;
  pid_t pid = static_cast<pid_t>(s.process->pid());
  int out = s.process->take_stdout();
  char c = 0;
  ASSERT_EQ(::read(out, &c, 1), 1);  // blocks until "ready": the trap is in place
  ::close(out);
  ::close(s.process->take_stdin());
  bool finished = false;
  s.process->on_finished([&](Subprocess::Finished) { finished = true; });
  s.process->stop();
  s.process.reset();
  EXPECT_EQ(s.process, nullptr);
  // Gone and reaped: kill(pid, 0) fails with ESRCH only once no zombie is left.
  ASSERT_TRUE(run_until(
      io, [&] { return ::kill(pid, 0) != 0 && errno == ESRCH; }, std::chrono::seconds(15)));
  EXPECT_FALSE(finished);  // never after stop()
}

}  // namespace
}  // namespace oppx::daemon
