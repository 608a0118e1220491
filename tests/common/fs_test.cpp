// common/fs and common/paths: the socket folder checks and where each file goes.
#include "common/fs.h"
#include "common/paths.h"
#include "tests/support/harness.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx {
namespace {

mode_t mode_of(const std::string& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st.st_mode & 07777;
}

TEST(PrivateDir, CreatesMissingFoldersWith0700) {
  test::TempHome home;
  std::string dir = home.root() + "/a/b/c";
  ASSERT_TRUE(ensure_private_dir(dir));
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_EQ(mode_of(home.root() + "/a/b"), 0700u);
}

TEST(PrivateDir, RefusesGroupOrOtherBitsAndNeverChmods) {
  test::TempHome home;
  std::string dir = home.root() + "/open";
  ::mkdir(dir.c_str(), 0700);
  ::chmod(dir.c_str(), 0755);
  auto r = check_private_dir(dir);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find(dir), std::string::npos);
  EXPECT_NE(r.error().find("mode 0755"), std::string::npos);
  EXPECT_NE(r.error().find("chmod 700"), std::string::npos);
  EXPECT_EQ(mode_of(dir), 0755u);
}

TEST(PrivateDir, RefusesSymlinkFileAndForeignOwner) {
  test::TempHome home;
  std::string real = home.root() + "/real";
  std::string link = home.root() + "/link";
  ::mkdir(real.c_str(), 0700);
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  auto l = check_private_dir(link);
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().find("symbolic link"), std::string::npos);

  std::string file = home.root() + "/file";
  ::close(::open(file.c_str(), O_CREAT | O_WRONLY, 0600));
  auto f = check_private_dir(file);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().find("not a folder"), std::string::npos);

  if (::geteuid() == 0) {
    std::string theirs = home.root() + "/theirs";
    ::mkdir(theirs.c_str(), 0700);
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    auto t = check_private_dir(theirs);
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().find("belongs to uid 65534"), std::string::npos);
  }
}

TEST(Paths, SocketFollowsOverridesInOrder) {
  test::TempHome home;
  EXPECT_EQ(paths::socket_path(), home.root() + "/run/oppx/oppxd.sock");
  ::setenv("OPPX_SOCKET", "/x/y.sock", 1);
  EXPECT_EQ(paths::socket_path(), "/x/y.sock");
  EXPECT_EQ(paths::socket_path("/explicit.sock"), "/explicit.sock");
  ::unsetenv("OPPX_SOCKET");
  ::setenv("XDG_RUNTIME_DIR", "relative/ignored", 1);
  EXPECT_EQ(paths::socket_path(), "/tmp/oppx-" + std::to_string(::geteuid()) + "/oppxd.sock");
  EXPECT_EQ(paths::daemon_log(), home.root() + "/state/oppx/oppxd.log");
  ::unsetenv("XDG_STATE_HOME");
  EXPECT_EQ(paths::daemon_log(), home.root() + "/.local/state/oppx/oppxd.log");
}

}  // namespace
}  // namespace oppx
