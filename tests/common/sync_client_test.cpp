// SyncClient's reads against a real Unix socket served by the test itself.
#include "common/sync_client.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace oppx {
namespace {

// A listening socket in a folder of its own; removed with it.
struct Listener {
  std::string dir, path;
  int fd = -1;
  Listener() {
    char tmpl[] = "/tmp/oppx-sync-XXXXXX";
    if (!::mkdtemp(tmpl)) return;
    dir = tmpl;
    path = dir + "/s.sock";
    fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path.copy(a.sun_path, sizeof a.sun_path - 1);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0) fd = -1;
  }
  ~Listener() {
    if (fd >= 0) ::close(fd);
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }
};

TEST(SyncClient, AOneMillisecondReadTakesALineThatIsAlreadyThere) {
  Listener l;
  ASSERT_GE(l.fd, 0);
  auto c = SyncClient::connect(l.path);
  ASSERT_TRUE(c) << c.error().message;
  int peer = ::accept(l.fd, nullptr, nullptr);
  ASSERT_GE(peer, 0);
  ASSERT_EQ(::write(peer, "first\nsecond\n", 13), 13);
  // A deadline shorter than a millisecond still reads what is ready (it was once cut to 0 ms and
  // never read, so that a caller polling many connections spun forever).
  auto one = c->read_line(std::chrono::milliseconds(1));
  ASSERT_TRUE(one);
  EXPECT_EQ(*one, "first");
  auto two = c->read_line(std::chrono::milliseconds(1));
  ASSERT_TRUE(two);
  EXPECT_EQ(*two, "second");
  auto none = c->read_line(std::chrono::milliseconds(1));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error(), SyncClient::ReadFailure::kTimeout);
  ::close(peer);
  auto eof = c->read_line(std::chrono::milliseconds(1000));
  ASSERT_FALSE(eof);
  EXPECT_EQ(eof.error(), SyncClient::ReadFailure::kEof);
}

}  // namespace
}  // namespace oppx
