// common/ndjson_transport's memory and readiness: an idle transport holds no read buffer and its
// memory goes back when it closes; what one read cannot take (a line longer than a read, more
// descriptors ready than one batch of the poller) is still read with nothing more arriving; a
// handler may destroy another transport ready in the same batch; a long reply is written whole to
// a peer that reads slowly.
#include "common/ndjson_transport.h"
#include "tests/support/loop.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <malloc.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace oppx {
namespace {

struct End {
  std::unique_ptr<Transport> transport;
  int far = -1;
};

// `count` transports over socketpairs, each counting the lines it gets.
struct Many {
  Many(int count, std::function<void(int, std::string)> on_line) {
    for (int i = 0; i < count; ++i) {
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) break;
      auto& e = ends.emplace_back();
      e.far = sv[1];
      e.transport = make_ndjson_transport(io, sv[0], sv[0], {});
      e.transport->start({[on_line, i](std::string l) { on_line(i, std::move(l)); }, [](const TransportError&) {}});
    }
  }
  ~Many() {
    for (auto& e : ends)
      if (e.far >= 0) ::close(e.far);
  }
  boost::asio::io_context io;
  std::vector<End> ends;
};

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kGlibcHeap = false;  // the sanitizers' allocator: mallinfo2 does not see it
#else
constexpr bool kGlibcHeap = true;
#endif

long heap_in_use() { return static_cast<long>(::mallinfo2().uordblks); }

TEST(NdjsonMemory, AnIdleTransportHoldsNoReadBufferAndItsMemoryGoesBackWhenItCloses) {
  if (!kGlibcHeap) GTEST_SKIP() << "mallinfo2 does not count the sanitizer's heap";
  constexpr int kCount = 300;  // 600 descriptors: under the usual soft limit of 1024
  long before = heap_in_use();
  {
    int lines = 0;
    Many m(kCount, [&](int, std::string) { ++lines; });
    ASSERT_EQ(m.ends.size(), std::size_t{kCount});
    for (auto& e : m.ends) ASSERT_EQ(::send(e.far, "{\"hello\":1}\n", 12, MSG_NOSIGNAL), 12);
    ASSERT_TRUE(test::run_until(m.io, [&] { return lines == kCount; }));
    // Each has read a line and waits for the next: what it holds now is what an idle client
    // costs (a 64 KiB read buffer each was 19 MiB here).
    long per_transport = (heap_in_use() - before) / kCount;
    EXPECT_LT(per_transport, 4096) << "bytes of heap per idle transport";
    for (auto& e : m.ends) e.transport.reset();
    m.io.poll();
  }
  long after = heap_in_use();
  EXPECT_LT(after, before + 64 * 1024) << "heap in use before " << before << ", after " << after;
}

// A line of 1 MiB sent at once: the socket holds more than one read takes, and nothing arrives
// after the last byte to wake the transport again.
TEST(NdjsonMemory, ALineLongerThanOneReadArrivesWithNothingAfterIt) {
  std::vector<std::string> got;
  Many m(1, [&](int, std::string l) { got.push_back(std::move(l)); });
  std::string line = "\"" + std::string(1 << 20, 'x') + "\"\n";
  std::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = ::send(m.ends[0].far, rest.data(), rest.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) rest.remove_prefix(static_cast<std::size_t>(n));
    m.io.poll();
  }
  ASSERT_TRUE(test::run_until(m.io, [&] { return !got.empty(); }));
  EXPECT_EQ(got[0].size(), line.size() - 1);
}

// More transports ready at once than the poller takes in one batch (64).
TEST(NdjsonMemory, EveryOneOfManyReadyAtOnceIsRead) {
  constexpr int kCount = 200;
  std::vector<int> lines(kCount);
  Many m(kCount, [&](int i, std::string) { ++lines[static_cast<std::size_t>(i)]; });
  ASSERT_EQ(m.ends.size(), std::size_t{kCount});
  for (auto& e : m.ends) ASSERT_EQ(::send(e.far, "1\n2\n", 4, MSG_NOSIGNAL), 4);
  ASSERT_TRUE(
      test::run_until(m.io, [&] { return std::all_of(lines.begin(), lines.end(), [](int n) { return n == 2; }); }));
}

// Whichever of the two the poller hands its line first destroys the other, whose own readiness
// is in the same batch: it must get no line after that.
TEST(NdjsonMemory, AHandlerMayDestroyAnotherTransportReadyInTheSameBatch) {
  int delivered = 0;
  Many* many = nullptr;
  Many m(2, [&](int i, std::string) {
    ++delivered;
    many->ends[static_cast<std::size_t>(1 - i)].transport.reset();
  });
  many = &m;
  for (auto& e : m.ends) ASSERT_EQ(::send(e.far, "x\n", 2, MSG_NOSIGNAL), 2);
  ASSERT_TRUE(test::run_until(m.io, [&] { return delivered > 0; }));
  m.io.poll();
  EXPECT_EQ(delivered, 1);
}

// 4 MiB sent to a peer that reads 4 KiB at a time: the writes the socket refuses wait for room.
TEST(NdjsonMemory, ALongReplyReachesASlowReaderWhole) {
  Many m(1, [](int, std::string) {});
  std::string text = "\"" + std::string(4 << 20, 'y') + "\"";
  ASSERT_TRUE(m.ends[0].transport->send({.text = text}));
  std::string got;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (got.size() < text.size() + 1 && std::chrono::steady_clock::now() < deadline) {
    m.io.poll();
    pollfd p{m.ends[0].far, POLLIN, 0};
    if (::poll(&p, 1, 10) <= 0) continue;
    ssize_t n = ::recv(m.ends[0].far, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) got.append(buf, static_cast<std::size_t>(n));
  }
  ASSERT_EQ(got.size(), text.size() + 1);
  EXPECT_EQ(got.back(), '\n');
}

}  // namespace
}  // namespace oppx
