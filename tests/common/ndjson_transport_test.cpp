// common/ndjson_transport over a real socketpair: framing at any split, CRLF, the line cap, the
// write-queue cap, a stalled partial line, and close() flushing what is queued; and, for it and
// the in-memory pair, a handler that closes its own transport.
#include "common/ndjson_transport.h"
#include "tests/support/loop.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace oppx {
namespace {

using namespace std::chrono_literals;

struct Pair {
  Pair(NdjsonLimits limits = {}) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
    far = sv[1];
    transport = make_ndjson_transport(io, sv[0], sv[0], limits);
    transport->start(
        {[this](std::string l) { lines.push_back(std::move(l)); }, [this](const TransportError& e) { closed = e; }});
  }
  ~Pair() {
    if (far >= 0) ::close(far);
  }
  void write(std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(far, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        pollfd p{far, POLLOUT, 0};
        io.poll();  // let the transport drain while the socket buffer is full
        ::poll(&p, 1, 10);
        continue;
      }
      s.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  std::string read_far() {
    std::string got;
    char buf[65536];
    ssize_t n;
    while ((n = ::recv(far, buf, sizeof buf, MSG_DONTWAIT)) > 0) got.append(buf, static_cast<std::size_t>(n));
    return got;
  }
  boost::asio::io_context io;
  std::unique_ptr<Transport> transport;
  std::vector<std::string> lines;
  std::optional<TransportError> closed;
  int far = -1;
};

TEST(NdjsonTransport, SplitsLinesAtAnyByteAndStripsCr) {
  Pair p;
  std::string stream = "{\"a\":1}\r\n\n{\"b\":2}\n{\"c\":3}\n";
  for (char c : stream) {
    p.write(std::string_view(&c, 1));
    p.io.poll();
  }
  ASSERT_TRUE(test::run_until(p.io, [&] { return p.lines.size() == 3; }));
  EXPECT_EQ(p.lines[0], "{\"a\":1}");
  EXPECT_EQ(p.lines[1], "{\"b\":2}");
  EXPECT_EQ(p.lines[2], "{\"c\":3}");
  EXPECT_FALSE(p.closed);
}

TEST(NdjsonTransport, ALineOverTheCapClosesWithoutBufferingItAll) {
  Pair p(NdjsonLimits{.max_line = 1024});
  p.write("{\"ok\":1}\n");
  std::string big(4096, 'x');
  p.write(big);
  ASSERT_TRUE(test::run_until(p.io, [&] { return p.closed.has_value(); }));
  EXPECT_EQ(p.closed->kind, "too_large");
  ASSERT_EQ(p.lines.size(), 1u);
}

TEST(NdjsonTransport, APeerThatNeverReadsOverflowsTheQueue) {
  Pair p(NdjsonLimits{.max_queue_bytes = 256 * 1024});
  std::string msg(1000, 'y');
  bool refused = false;
  for (int i = 0; i < 10000 && !refused; ++i) {
    refused = !p.transport->send({.text = msg});
    p.io.poll();
  }
  EXPECT_TRUE(refused);
  ASSERT_TRUE(test::run_until(p.io, [&] { return p.closed.has_value(); }));
  EXPECT_EQ(p.closed->kind, "overflow");
}

TEST(NdjsonTransport, APartialLineThatStallsCloses) {
  Pair p(NdjsonLimits{.stall_timeout = 50ms});
  p.write("{\"half\":");
  ASSERT_TRUE(test::run_until(
      p.io, [&] { return p.closed.has_value(); }, 5s));
  EXPECT_EQ(p.closed->kind, "stalled");
}

TEST(NdjsonTransport, EndOfStreamIsReportedOnce) {
  Pair p;
  p.write("{\"a\":1}\n{\"partial");
  ::shutdown(p.far, SHUT_WR);
  ASSERT_TRUE(test::run_until(p.io, [&] { return p.closed.has_value(); }));
  EXPECT_EQ(p.closed->kind, "eof");
  EXPECT_EQ(p.lines.size(), 1u);  // the unterminated line is dropped
}

TEST(NdjsonTransport, CloseWritesWhatIsQueuedFirst) {
  Pair p;
  for (int i = 0; i < 100; ++i) p.transport->send({.text = "{\"n\":" + std::to_string(i) + "}"});
  p.transport->close();
  ASSERT_TRUE(test::run_until(p.io, [&] { return p.closed.has_value(); }));
  std::string got = p.read_far();
  EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 100);
  EXPECT_NE(got.find("{\"n\":99}\n"), std::string::npos);
  EXPECT_FALSE(p.transport->send({.text = "late"}));
}

// What handlers send while one read's lines are handled goes out in one write: the far end of
// a SOCK_SEQPACKET pair receives each write as one record, so the records show the writes.
TEST(NdjsonTransport, WhatABatchOfLinesSendsGoesOutInOneWrite) {
  boost::asio::io_context io;
  int in_pair[2], out_pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, out_pair), 0);
  auto out = make_ndjson_transport(io, out_pair[0], out_pair[0], {});
  out->start({[](std::string) {}, [](const TransportError&) {}});
  auto in = make_ndjson_transport(io, in_pair[0], in_pair[0], {});
  in->start({[&out](std::string l) { out->send({.text = "got " + l}); }, [](const TransportError&) {}});
  auto record = [&] {
    char buf[4096];
    for (int i = 0; i < 1000; ++i) {
      io.poll();
      ssize_t n = ::recv(out_pair[1], buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) return std::string(buf, static_cast<std::size_t>(n));
      pollfd p{in_pair[0], POLLIN, 0};
      ::poll(&p, 1, 10);
    }
    return std::string("(nothing)");
  };
  ASSERT_EQ(::send(in_pair[1], "1\n2\n3\n", 6, 0), 6);
  EXPECT_EQ(record(), "got 1\ngot 2\ngot 3\n");
  ASSERT_EQ(::send(in_pair[1], "4\n", 2, 0), 2);
  EXPECT_EQ(record(), "got 4\n");
  ::close(in_pair[1]);
  ::close(out_pair[1]);
}

// Sets a flag when the handler that holds it is destroyed.
struct FreedFlag {
  explicit FreedFlag(bool& freed) : freed(freed) {}
  ~FreedFlag() { freed = true; }
  bool& freed;
};

// A handler that closes its own transport (a refusal does) goes on running after close(): its
// captures must still be there until it returns. They are let go once the transport has ended.
void expect_a_closing_handler_outlives_its_close(boost::asio::io_context& io, Transport& t,
                                                 const std::function<void()>& send_a_line) {
  bool freed = false;
  bool freed_while_running = false;
  bool closed = false;
  auto flag = std::make_shared<FreedFlag>(freed);
  Transport::Handlers h;
  h.on_line = [&, flag](std::string) {
    t.close();
    freed_while_running = freed;
  };
  h.on_closed = [&](const TransportError&) { closed = true; };
  t.start(std::move(h));
  flag.reset();
  send_a_line();
  ASSERT_TRUE(test::run_until(io, [&] { return closed; }));
  EXPECT_FALSE(freed_while_running);
  io.poll();
  EXPECT_TRUE(freed);
}

TEST(NdjsonTransport, AHandlerThatClosesItsTransportIsNotFreedWhileItRuns) {
  boost::asio::io_context io;
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
  auto t = make_ndjson_transport(io, sv[0], sv[0], {});
  expect_a_closing_handler_outlives_its_close(io, *t, [&] { EXPECT_EQ(::send(sv[1], "{}\n", 3, 0), 3); });
  ::close(sv[1]);
}

TEST(MemoryTransport, AHandlerThatClosesItsTransportIsNotFreedWhileItRuns) {
  boost::asio::io_context io;
  auto [a, b] = make_memory_pair(io);
  b->start({[](std::string) {}, [](const TransportError&) {}});
  expect_a_closing_handler_outlives_its_close(io, *a, [&] { b->send({.text = "{}"}); });
}

}  // namespace
}  // namespace oppx
