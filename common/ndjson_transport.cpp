// NdjsonTransport: reads with one outstanding async_read_some, splits lines itself (so a line
// over the cap is refused before it is buffered whole), and writes the queue in batches. The
// public handle owns a shared Impl; pending operations keep the Impl alive until they return.
// A send writes at once, with a plain non-blocking writev (no completion to dispatch), unless a
// batch of input is being handled (several lines from one read, e.g. 8 calls arriving
// together): then what every transport is sent meanwhile waits for the end of the batch and goes
// out in one writev each. What the peer does not take at once is written asynchronously.
#include "common/ndjson_transport.h"

#include "common/budget.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <sys/uio.h>
#include <unistd.h>

namespace oppx {

namespace asio = boost::asio;

namespace {

class Impl;
// The daemon has one thread; these are per thread for the tests that run transports on several.
thread_local int batch_depth = 0;                      // > 0 while lines of one read are handled
thread_local std::vector<std::shared_ptr<Impl>> held;  // sent to during the batch, to flush after

class Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& io, int read_fd, int write_fd, NdjsonLimits limits)
      : in_(io, read_fd), stall_timer_(io), close_timer_(io), limits_(limits) {
    // One descriptor (a socket) is read and written through the same object, not a dup: a dup
    // costs a second fd, which at the process's limit fails after the connection was accepted.
    if (write_fd != read_fd) out_.emplace(io, write_fd);
    boost::system::error_code ec;
    out().non_blocking(true, ec);  // write_now must never block the daemon
  }

  void start(Transport::Handlers h) {
    handlers_ = std::move(h);
    read_more();
  }

  bool send(std::string message) {
    if (closed_ || closing_) return false;
    if (queued_bytes_ + message.size() + 1 > limits_.max_queue_bytes) {
      fail("overflow", "the peer does not read its replies; its write queue is full");
      return false;
    }
    if (!queue_share_.set(queued_bytes_ + message.size() + 1)) {
      fail("overflow", over_budget_message(buffer_budget(), fmt::format("a message of {} bytes", message.size())));
      return false;
    }
    message.push_back('\n');
    queued_bytes_ += message.size();
    queue_.push_back(std::move(message));
    if (writing_ || held_) return true;
    if (batch_depth > 0) {
      held_ = true;
      held.push_back(shared_from_this());
      return true;
    }
    write_now();
    return true;
  }

  void close() { close_with("closed", "closed"); }

  // Graceful: stop reading, write the queue (within close_grace), then end with this reason.
  void close_with(const char* kind, std::string message) {
    if (closed_ || closing_) return;
    closing_ = true;
    close_kind_ = kind;
    close_message_ = std::move(message);
    boost::system::error_code ec;
    // With one descriptor a cancel would end the write too; a read that completes later is
    // dropped by on_read, and finish() closes the descriptor.
    if (out_) in_.cancel(ec);
    if (!writing_ && !queue_.empty()) write_now();  // held for a batch, not written yet
    if (!writing_) return finish(close_kind_, close_message_);
    close_timer_.expires_after(limits_.close_grace);
    close_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->finish(self->close_kind_, self->close_message_ + " (before the queue was written)");
    });
  }

  void abort() { finish("closed", "closed"); }

 private:
  void read_more() {
    in_.async_read_some(asio::buffer(chunk_), [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
      self->on_read(ec, n);
    });
  }

  void on_read(boost::system::error_code ec, std::size_t n) {
    if (closed_ || closing_) return;
    if (ec) {
      if (ec == asio::error::eof)
        return fail("eof", partial_.empty() ? "end of stream" : "end of stream in the middle of a line");
      return fail("io", ec.message());
    }
    std::string_view data(chunk_.data(), n);
    // More than one line in this read: what the handlers send is held until all are handled.
    bool batch = data.find('\n') != data.rfind('\n');
    if (batch) ++batch_depth;
    deliver(data);
    if (batch && --batch_depth == 0) flush_held();
    if (closed_ || closing_) return;
    if (partial_.empty()) stall_timer_.cancel();
    read_more();
  }

  static void flush_held() {
    auto all = std::move(held);
    held.clear();
    for (auto& t : all) {
      t->held_ = false;
      if (!t->writing_ && !t->closed_) t->write_now();
    }
  }

  void deliver(std::string_view data) {
    while (!data.empty()) {
      auto nl = data.find('\n');
      if (nl == std::string_view::npos) {
        if (partial_.size() + data.size() > limits_.max_line) return too_large();
        if (!make_room(data.size())) return over_budget();
        if (partial_.empty()) arm_stall_timer();
        partial_.append(data);
        break;
      }
      if (partial_.size() + nl > limits_.max_line) return too_large();
      std::string line = std::move(partial_);
      partial_.clear();
      line_share_.set(0);  // the line is handled now and freed after
      line.append(data.substr(0, nl));
      data.remove_prefix(nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      if (handlers_.on_line) handlers_.on_line(std::move(line));
      if (closed_ || closing_) return;  // the handler closed us
    }
  }

  // Grows the unfinished line to take `more` bytes, its allocation charged to the budget first.
  bool make_room(std::size_t more) {
    std::size_t need = partial_.size() + more;
    if (need <= partial_.capacity()) return true;
    std::size_t cap = std::max(need, std::min(partial_.capacity() * 2, limits_.max_line));
    if (!line_share_.set(cap)) return false;
    partial_.reserve(cap);
    return true;
  }

  void over_budget() {
    too_large(over_budget_message(buffer_budget(), fmt::format("a message of {} bytes so far", partial_.size())));
  }

  void too_large(std::string message = {}) {
    if (message.empty())
      message = "a message is longer than the limit of " + std::to_string(limits_.max_line) + " bytes";
    TransportError e{"too_large", std::move(message)};
    partial_.clear();
    partial_.shrink_to_fit();
    line_share_.set(0);
    if (!handlers_.on_oversize) return fail(e.kind.c_str(), e.message);
    handlers_.on_oversize(e);
    close_with("too_large", e.message);
  }

  void arm_stall_timer() {
    stall_timer_.expires_after(limits_.stall_timeout);
    stall_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && !self->partial_.empty()) self->fail("stalled", "the peer sent part of a line and then nothing");
    });
  }

  // A plain non-blocking writev of the queue; what is left goes to an asynchronous write.
  void write_now() {
    while (!queue_.empty() && !closed_) {
      std::array<iovec, 64> iov{};
      std::size_t count = 0;
      for (std::size_t i = 0; i < queue_.size() && count < iov.size(); ++i, ++count)
        iov[count] = {queue_[i].data(), queue_[i].size()};
      ssize_t w = ::writev(out().native_handle(), iov.data(), static_cast<int>(count));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        return fail("io", std::string("write failed: ") + std::strerror(errno));
      }
      if (w <= 0) break;  // the peer's buffer is full: wait for it asynchronously
      auto left = static_cast<std::size_t>(w);
      while (left > 0 && left >= queue_.front().size()) {
        left -= queue_.front().size();
        queued_bytes_ -= queue_.front().size();
        queue_.pop_front();
      }
      if (left > 0) {  // part of a message went: keep the rest
        queue_.front().erase(0, left);
        queued_bytes_ -= left;
        break;
      }
    }
    queue_share_.set(queued_bytes_);
    if (!queue_.empty() && !closed_) return write_more();
    if (closing_ && !closed_) finish(close_kind_, close_message_);
  }

  void write_more() {
    if (writing_ || queue_.empty() || closed_) return;
    writing_ = true;
    batch_.clear();
    for (std::size_t i = 0; i < queue_.size() && batch_.size() < 64; ++i) batch_.push_back(asio::buffer(queue_[i]));
    asio::async_write(out(), batch_,
                      [self = shared_from_this()](boost::system::error_code ec, std::size_t) { self->on_written(ec); });
  }

  void on_written(boost::system::error_code ec) {
    writing_ = false;
    if (closed_) return;
    if (ec) return fail("io", "write failed: " + ec.message());
    for (std::size_t i = 0; i < batch_.size(); ++i) {
      queued_bytes_ -= queue_.front().size();
      queue_.pop_front();
    }
    queue_share_.set(queued_bytes_);
    if (!queue_.empty()) return write_more();
    if (closing_) finish(close_kind_, close_message_);
  }

  void fail(const char* kind, std::string message) { finish(kind, std::move(message)); }

  void finish(const char* kind, std::string message) {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    stall_timer_.cancel();
    close_timer_.cancel();
    in_.close(ec);
    if (out_) out_->close(ec);
    queue_.clear();
    queued_bytes_ = 0;
    queue_share_.set(0);
    partial_.clear();
    partial_.shrink_to_fit();
    line_share_.set(0);
    auto on_closed = std::move(handlers_.on_closed);
    handlers_ = {};
    // Posted, so that a send() or close() that ends the transport never re-enters its caller.
    if (on_closed) {
      asio::post(in_.get_executor(),
                 [on_closed = std::move(on_closed), e = TransportError{kind, std::move(message)}] { on_closed(e); });
    }
  }

 public:
  // The owner is going away: end without telling it.
  void detach() {
    handlers_ = {};
    finish("closed", "closed");
  }

 private:
  asio::posix::stream_descriptor& out() { return out_ ? *out_ : in_; }

  asio::posix::stream_descriptor in_;
  std::optional<asio::posix::stream_descriptor> out_;  // empty when one descriptor does both
  asio::steady_timer stall_timer_;
  asio::steady_timer close_timer_;
  NdjsonLimits limits_;
  Transport::Handlers handlers_;
  std::array<char, 64 * 1024> chunk_{};
  std::string partial_;
  std::deque<std::string> queue_;
  std::vector<asio::const_buffer> batch_;
  std::size_t queued_bytes_ = 0;
  BudgetShare line_share_;   // partial_'s allocation
  BudgetShare queue_share_;  // queued_bytes_
  const char* close_kind_ = "closed";
  std::string close_message_;
  bool writing_ = false;
  bool held_ = false;  // in `held`, to be written at the end of a batch
  bool closing_ = false;
  bool closed_ = false;
};

class NdjsonTransport final : public Transport {
 public:
  explicit NdjsonTransport(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  ~NdjsonTransport() override { impl_->detach(); }
  void start(Handlers h) override { impl_->start(std::move(h)); }
  bool send(Message m) override { return impl_->send(std::move(m.text)); }
  void close() override { impl_->close(); }
  void abort() override { impl_->abort(); }

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace

std::unique_ptr<Transport> make_ndjson_transport(asio::io_context& io, int read_fd, int write_fd, NdjsonLimits limits) {
  return std::make_unique<NdjsonTransport>(std::make_shared<Impl>(io, read_fd, write_fd, limits));
}

}  // namespace oppx
