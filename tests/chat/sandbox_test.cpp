// chat/sandbox and the agent's `run` (chat/builtins.h) with the real bubblewrap and real children:
// what a command may write, see and reach, the variables it keeps, and that the time limit, a
// cancel and the command's own exit leave no process behind (`setsid -f` and closed output too).
#include "chat/builtins.h"
#include "chat/sandbox.h"
#include "proto/session_api.h"

#include "tests/support/harness.h"
#include "tests/support/waits.h"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace oppx::chat {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

void write_file(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// Processes whose command line holds `marker` (an argument no other process has).
int processes_with(const std::string& marker) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmdline.find(marker) != std::string::npos && std::stoi(name) != ::getpid()) ++n;
  }
  return n;
}

// A marker unique to this run: sleep takes it as a number of seconds.
std::string marker(int base) { return fmt::format("{}.{}", base, ::getpid()); }

class Sandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(sandbox_support().available) << sandbox_support().reason << " (the bootstrap installs bubblewrap)";
    ws_ = home_.root() + "/ws";
    fs::create_directories(ws_);
  }
  BuiltinResult run(const std::string& command, SandboxPolicy policy = {}, std::chrono::milliseconds limit = 20s,
                    const RunControl* control = nullptr, std::size_t cap = 100'000) {
    return run_action(ws_, command, limit, cap, std::move(policy), control);
  }
  test::TempHome home_;
  std::string ws_;
};

TEST_F(Sandbox, TheWorkspaceIsWritableAndNothingElseIs) {
  char tmpl[] = "/var/tmp/oppx-sandbox-XXXXXX";
  ASSERT_TRUE(::mkdtemp(tmpl));
  std::string outside = tmpl;
  BuiltinResult r =
      run("echo in > inside.txt && echo private > /tmp/oppx-private-" + std::to_string(::getpid()) +
          " && cat /tmp/oppx-private-" + std::to_string(::getpid()) + "; echo out > " + outside + "/f || echo REFUSED");
  EXPECT_TRUE(r.sandboxed);
  EXPECT_NE(r.text.find("private"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("REFUSED"), std::string::npos) << r.text;
  EXPECT_TRUE(fs::exists(ws_ + "/inside.txt"));
  EXPECT_FALSE(fs::exists(outside + "/f")) << "a write outside the workspace went through";
  EXPECT_FALSE(fs::exists("/tmp/oppx-private-" + std::to_string(::getpid()))) << "/tmp is the sandbox's own";
  fs::remove_all(outside);

  BuiltinResult ro = run("echo x > ro.txt || echo REFUSED", {SandboxMode::kReadOnly});
  EXPECT_NE(ro.text.find("REFUSED"), std::string::npos) << ro.text;
  EXPECT_FALSE(fs::exists(ws_ + "/ro.txt"));
}

TEST_F(Sandbox, SecretsAndOppxStateAreNotVisibleEvenInsideTheWorkspace) {
  // The workspace is HOME itself, so ~/.ssh lies inside the writable bind: it must still be hidden.
  std::string home = home_.root();
  write_file(home + "/.ssh/id_rsa", "KEY-MATERIAL");
  write_file(home + "/.netrc", "machine x password NETRC-SECRET");
  write_file(home + "/config/oppx/mcp.json", "MCP-TOKEN");
  write_file(home + "/state/oppx/permissions.json", "STATE-DATA");
  std::string cmd = "cat ~/.ssh/id_rsa ~/.netrc " + home + "/config/oppx/mcp.json " + home +
                    "/state/oppx/permissions.json; echo mine > ~/.ssh/planted; echo DONE";
  SandboxPolicy policy{SandboxMode::kWorkspaceWrite, false, home};
  for (SandboxMode mode : {SandboxMode::kWorkspaceWrite, SandboxMode::kReadOnly}) {
    policy.mode = mode;
    BuiltinResult r = run_action(home, cmd, 20s, 100'000, policy);
    EXPECT_NE(r.text.find("DONE"), std::string::npos) << r.text;
    for (const char* secret : {"KEY-MATERIAL", "NETRC-SECRET", "MCP-TOKEN", "STATE-DATA"})
      EXPECT_EQ(r.text.find(secret), std::string::npos) << sandbox_mode_name(mode) << " shows " << secret;
    EXPECT_FALSE(fs::exists(home + "/.ssh/planted"));
    std::string listed = run_action(home, "ls -A ~/.ssh " + home + "/config/oppx", 20s, 1000, policy).text;
    EXPECT_EQ(listed.find("id_rsa"), std::string::npos) << listed;
    EXPECT_EQ(listed.find("mcp.json"), std::string::npos) << listed;
  }
  // The same command unconfined sees them: the test can tell.
  policy.mode = SandboxMode::kOff;
  BuiltinResult off = run_action(home, cmd, 20s, 100'000, policy);
  EXPECT_NE(off.text.find("KEY-MATERIAL"), std::string::npos) << off.text;
  EXPECT_FALSE(off.sandboxed);
}

TEST_F(Sandbox, NoNetworkUnlessAllowed) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(s, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  std::string cmd = fmt::format("bash -c 'echo hi > /dev/tcp/127.0.0.1/{}' 2>/dev/null && echo CONNECTED || echo NO",
                                ntohs(a.sin_port));
  BuiltinResult closed = run(cmd);
  EXPECT_NE(closed.text.find("NO"), std::string::npos) << closed.text;
  BuiltinResult open = run(cmd, {SandboxMode::kWorkspaceWrite, true});
  EXPECT_NE(open.text.find("CONNECTED"), std::string::npos) << open.text;
  ::close(s);
}

TEST_F(Sandbox, OnlyTheAllowedVariablesReachTheCommand) {
  ::setenv("OPPX_TEST_API_TOKEN", "tok-7d1e", 1);
  ::setenv("LC_TIME", "C.UTF-8", 1);
  for (SandboxMode mode : {SandboxMode::kWorkspaceWrite, SandboxMode::kOff}) {
    BuiltinResult r = run("env", {mode});
    EXPECT_EQ(r.text.find("tok-7d1e"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("PATH="), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("LC_TIME=C.UTF-8"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("PWD=" + ws_), std::string::npos) << r.text;
  }
  ::unsetenv("OPPX_TEST_API_TOKEN");
}

TEST_F(Sandbox, TheLimitHoldsForACommandThatClosesItsOutput) {
  std::string m = marker(100);
  for (SandboxMode mode : {SandboxMode::kWorkspaceWrite, SandboxMode::kOff}) {
    auto start = Clock::now();
    BuiltinResult r = run("exec >&- 2>&-; sleep " + m, {mode}, 1s);
    auto took = Clock::now() - start;
    EXPECT_LT(took, 6s) << sandbox_mode_name(mode);
    EXPECT_GE(took, 900ms);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.text.find("stopped: it ran longer than 1 s"), std::string::npos) << r.text;
    EXPECT_EQ(processes_with(m), 0) << "the command outlived its limit";
  }
}

TEST_F(Sandbox, NothingOutlivesTheCommand) {
  std::string m = marker(1000);
  for (SandboxMode mode : {SandboxMode::kWorkspaceWrite, SandboxMode::kReadOnly, SandboxMode::kOff}) {
    BuiltinResult r = run("setsid -f sleep " + m + " >/dev/null 2>&1; (sleep " + m + " &); echo started", {mode});
    EXPECT_TRUE(r.ok) << r.text;
    EXPECT_NE(r.text.find("started"), std::string::npos);
    EXPECT_EQ(processes_with(m), 0) << sandbox_mode_name(mode) << ": a setsid child outlived the call";
  }
}

TEST_F(Sandbox, CancelFromAnotherThreadStopsTheCommandAtOnce) {
  std::string m = marker(200);
  RunControl control;
  std::string started = ws_ + "/started";
  std::chrono::steady_clock::time_point cancelled_at;
  std::thread canceller([&] {
    test::when_file_changes(
        started, [&] { return fs::exists(started); }, 20s);
    cancelled_at = Clock::now();
    control.cancel();
  });
  auto start = Clock::now();
  BuiltinResult r = run("touch started; sleep " + m, {}, 60s, &control);
  auto returned = Clock::now();
  canceller.join();
  EXPECT_LT(returned - start, 20s);
  EXPECT_LT(returned - cancelled_at, 2s);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.text.find("stopped: cancelled by the user"), std::string::npos) << r.text;
  EXPECT_EQ(processes_with(m), 0);
  // Cancelled stays cancelled until reset: the next run does not start.
  EXPECT_NE(run("echo again", {}, 5s, &control).text.find("cancelled"), std::string::npos);
  control.reset();
  EXPECT_TRUE(run("echo again", {}, 5s, &control).ok);
}

TEST_F(Sandbox, OutputIsBoundedAndDrained) {
  auto start = Clock::now();
  BuiltinResult r = run("head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END", {}, 20s, nullptr, 1000);
  EXPECT_LT(Clock::now() - start, 15s);
  EXPECT_TRUE(r.ok) << r.text.substr(0, 200);
  EXPECT_LT(r.text.size(), 1200u);
  EXPECT_NE(r.text.find("5000005 bytes in all"), std::string::npos) << r.text.substr(900);
}

TEST(SandboxSupport, AMissingOrBrokenBubblewrapIsSaidWithWhatToDo) {
  SandboxSupport missing = probe_sandbox("/nonexistent/bwrap");
  EXPECT_FALSE(missing.available);
  EXPECT_NE(missing.reason.find("apt-get install bubblewrap"), std::string::npos) << missing.reason;
  SandboxSupport broken = probe_sandbox("false");
  EXPECT_FALSE(broken.available);
  EXPECT_NE(broken.reason.find("user namespaces"), std::string::npos) << broken.reason;
  EXPECT_EQ(sandbox_mode_from("workspace-write"), SandboxMode::kWorkspaceWrite);
  EXPECT_EQ(sandbox_mode_from("danger"), std::nullopt);
}

TEST(SandboxSupport, NetworkIsAllowedByTheRuleSandboxNetwork) {
  EXPECT_FALSE(proto::rule_problem("sandbox:network"));
  EXPECT_TRUE(proto::rule_problem("sandbox:everything"));
}

}  // namespace
}  // namespace oppx::chat
