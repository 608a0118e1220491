// An in-memory transport pair (for tests, and for the daemon's MCP servers, which connect to the
// daemon without a socket): what one end sends arrives at the other as a line, delivered through
// the io_context (never inside send()), as a real transport would.
#include "common/ndjson_transport.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <utility>

namespace oppx {

namespace {

struct End : std::enable_shared_from_this<End> {
  explicit End(boost::asio::io_context& io) : io(io) {}
  boost::asio::io_context& io;
  Transport::Handlers handlers;
  std::weak_ptr<End> other;
  bool closed = false;

  void deliver(std::string line) {
    boost::asio::post(io, [self = shared_from_this(), line = std::move(line)]() mutable {
      if (!self->closed && self->handlers.on_line) self->handlers.on_line(std::move(line));
    });
  }
  void end(const char* kind) {
    if (closed) return;
    closed = true;
    post_closed(io, std::exchange(handlers, {}), TransportError{kind, kind});
  }
};

class MemoryTransport final : public Transport {
 public:
  explicit MemoryTransport(std::shared_ptr<End> end) : end_(std::move(end)) {}
  ~MemoryTransport() override {
    end_->handlers = {};
    abort();
  }
  void start(Handlers h) override { end_->handlers = std::move(h); }
  bool send(Message message) override {
    if (end_->closed) return false;
    if (auto other = end_->other.lock()) other->deliver(std::move(message.text));
    return true;
  }
  void close() override { abort(); }
  void abort() override {
    if (end_->closed) return;
    end_->end("closed");
    if (auto other = end_->other.lock()) {
      // The far end sees the stream end after everything already sent to it.
      boost::asio::post(end_->io, [other] { other->end("eof"); });
    }
  }

 private:
  std::shared_ptr<End> end_;
};

}  // namespace

std::pair<std::unique_ptr<Transport>, std::unique_ptr<Transport>> make_memory_pair(boost::asio::io_context& io) {
  auto a = std::make_shared<End>(io);
  auto b = std::make_shared<End>(io);
  a->other = b;
  b->other = a;
  return {std::make_unique<MemoryTransport>(a), std::make_unique<MemoryTransport>(b)};
}

}  // namespace oppx
