// Disk faults on purpose (issue 17): a full disk (a small tmpfs as the config and state folders,
// filled up) and a failed fsync (tests/support/fail_fsync.c preloaded into the daemon). Either way
// the command that writes says what happened and what to do, the file it would have replaced is
// the one it was (byte for byte, no temp file left), the daemon goes on, and the same command
// works once the fault is gone. The tmpfs lives in this test process's own mount namespace (the
// daemon it starts inherits it): nobody else sees it, and it goes with the process.
#include "tests/support/harness.h"
#include "tests/support/waits.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

// A mount namespace of this process's own, with no mount propagated back out.
bool private_mounts() {
  return ::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
}

// A tmpfs of `size` on `dir` (made 0700 for oppx's folder checks), taken off at the end.
struct SmallDisk {
  std::string dir;
  bool mounted = false;
  SmallDisk(std::string d, const char* size) : dir(std::move(d)) {
    ::mkdir(dir.c_str(), 0700);
    std::string options = std::string("size=") + size + ",mode=0700";
    mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
  }
  // Writes a filler file until the disk refuses more; true when it did (ENOSPC).
  bool fill() const {
    int fd = ::open((dir + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    std::string block(4096, 'x');
    bool full = false;
    for (int i = 0; i < 1 << 20 && !full; ++i) full = ::write(fd, block.data(), block.size()) < 0 && errno == ENOSPC;
    // The last partial block: byte by byte until not one more fits.
    while (full && ::write(fd, "x", 1) == 1) {
    }
    ::close(fd);
    return full;
  }
  void empty() const { ::unlink((dir + "/filler").c_str()); }
};

// The names of the files in `dir` that end in .tmp (a write's leftovers).
std::vector<std::string> temp_files(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.ends_with(".tmp")) out.push_back(n);
    }
    ::closedir(d);
  }
  return out;
}

bool parses(const std::string& text) {
  boost::system::error_code ec;
  (void)json::parse(text, ec);
  return !ec && !text.empty();
}

TEST(DiskFaults, AFullDiskIsSaidWithWhatToDoAndLeavesEveryFileAsItWas) {
  TempHome home;
  if (!private_mounts()) GTEST_SKIP() << "no mount namespace of its own here (it needs CAP_SYS_ADMIN)";
  SmallDisk config(home.root() + "/config", "256k"), state(home.root() + "/state", "256k");
  ASSERT_TRUE(config.mounted && state.mounted) << "tmpfs: " << std::strerror(errno);
  home.write_mcp_config(stdio_entry("one", FAKE_MCP_SERVER, {"echo"}));
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  // Connector one running and its tool list saved before the disks fill: no write of the daemon's
  // own is under way when the folders are read for temporary files.
  ASSERT_EQ(oppx({"mcp", "tools", "one"}).exit_code, 0);
  auto settled = status_until(home.socket(), json::object{{"worker_jobs", 0}});
  ASSERT_TRUE(settled) << settled.describe();
  auto allowed = oppx({"permissions", "allow", "one.echo"});
  ASSERT_EQ(allowed.exit_code, 0) << allowed.err;
  const std::string mcp_json = home.root() + "/config/oppx/mcp.json";
  const std::string permissions_json = home.root() + "/state/oppx/permissions.json";
  const std::string mcp_before = read_file(mcp_json), permissions_before = read_file(permissions_json);
  ASSERT_TRUE(parses(mcp_before) && parses(permissions_before));

  ASSERT_TRUE(config.fill() && state.fill()) << "the tmpfs did not fill up";
  auto add = oppx({"mcp", "add", "two", "--", "echo", "hi"});
  EXPECT_NE(add.exit_code, 0);
  EXPECT_NE(add.err.find("the disk is full"), std::string::npos) << add.err;
  EXPECT_NE(add.err.find("unchanged: free some space"), std::string::npos) << add.err;
  auto allow = oppx({"permissions", "allow", "one.other"});
  EXPECT_NE(allow.exit_code, 0);
  EXPECT_NE(allow.err.find("the disk is full"), std::string::npos) << allow.err;
  EXPECT_EQ(read_file(mcp_json), mcp_before);
  EXPECT_EQ(read_file(permissions_json), permissions_before);
  EXPECT_TRUE(temp_files(home.root() + "/config/oppx").empty());
  EXPECT_TRUE(temp_files(home.root() + "/state/oppx").empty());
  auto list = oppx({"mcp", "list"});
  EXPECT_EQ(list.exit_code, 0) << "the daemon did not go on: " << list.err;

  config.empty();
  state.empty();
  auto again = oppx({"mcp", "add", "two", "--", "echo", "hi"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(read_file(mcp_json).find("\"two\""), std::string::npos);
  EXPECT_EQ(oppx({"permissions", "allow", "one.other"}).exit_code, 0);
  EXPECT_NE(read_file(permissions_json).find("one.other"), std::string::npos);
}

TEST(DiskFaults, AFailedFsyncIsSaidAndTheFileIsTheOneItWas) {
  TempHome home;
  home.write_mcp_config(stdio_entry("one", FAKE_MCP_SERVER, {"echo"}));
  const std::string mcp_json = home.root() + "/config/oppx/mcp.json";
  const std::string before = read_file(mcp_json);
  // The daemon the CLI starts gets the preload; the test process and the later commands do not.
  ::setenv("LD_PRELOAD", FAIL_FSYNC_LIB, 1);
  ::setenv("OPPX_FAIL_FSYNC_MATCH", "/config/oppx/mcp.json", 1);
  std::string asan = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
  ::setenv("ASAN_OPTIONS", (asan + (asan.empty() ? "" : ":") + "verify_asan_link_order=0").c_str(), 1);
  auto started = oppx({"daemon", "start"});
  ::unsetenv("LD_PRELOAD");
  ::unsetenv("OPPX_FAIL_FSYNC_MATCH");
  ASSERT_EQ(started.exit_code, 0) << started.err;

  auto add = oppx({"mcp", "add", "two", "--", "echo", "hi"});
  EXPECT_NE(add.exit_code, 0);
  EXPECT_NE(add.err.find("fsync: Input/output error"), std::string::npos) << add.err;
  EXPECT_NE(add.err.find("the file is unchanged"), std::string::npos) << add.err;
  EXPECT_EQ(read_file(mcp_json), before);
  EXPECT_TRUE(temp_files(home.root() + "/config/oppx").empty());
  // Other files are written as usual, and the daemon goes on.
  EXPECT_EQ(oppx({"permissions", "allow", "one.echo"}).exit_code, 0);
  EXPECT_EQ(oppx({"mcp", "list"}).exit_code, 0);
}

}  // namespace
}  // namespace oppx::test
