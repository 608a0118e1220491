// NdjsonTransport: waits for input through the io_context's FdPoller (fd_poller.h), reads it
// into a buffer on the stack and splits lines itself (so a line over the cap is refused before
// it is buffered whole): an idle connection holds no buffer at all, and a line's buffer goes
// with the line once it is handled. The public handle owns a shared Impl; a callback in
// progress or a timer keeps the Impl alive until it returns.
// A send writes at once, with a plain non-blocking writev (no completion to dispatch), unless a
// batch of input is being handled (several lines from one read, e.g. 8 calls arriving
// together): then what every transport is sent meanwhile waits for the end of the batch and goes
// out in one writev each. What the peer does not take at once waits in the queue for the poller
// to say it can take more; the queue's memory goes back once it is empty.
#include "common/ndjson_transport.h"

#include "common/budget.h"
#include "common/fd_poller.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace oppx {

namespace asio = boost::asio;

namespace {

class Impl;
// The daemon has one thread; these are per thread for the tests that run transports on several.
thread_local int batch_depth = 0;                      // > 0 while lines of one read are handled
thread_local std::vector<std::shared_ptr<Impl>> held;  // sent to during the batch, to flush after

constexpr std::size_t kReadSize = 64 * 1024;  // one read, on the stack: no connection keeps it

// Memory given back after many transports closed. glibc keeps what a burst of connections freed
// in its heap (a page still holding one live allocation pins it, so the top is rarely free) until
// malloc_trim, which returns every free page. Trimming walks the heap, so it runs only once the
// open transports have halved since the last trim and at least kTrimAfter have closed: a burst of
// N closing is trimmed about log2(N) times, the last with at most 2 * kTrimAfter still open.
constexpr std::size_t kTrimAfter = 32;
thread_local std::size_t open_count = 0;
thread_local std::size_t open_peak = 0;  // the most open since the last trim

void opened() { open_peak = std::max(open_peak, ++open_count); }

void closed() {
  if (open_count == 0) return;  // made on another thread
  --open_count;
  if (open_peak - open_count < kTrimAfter || open_count > open_peak / 2) return;
  open_peak = open_count;
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

class Impl final : public std::enable_shared_from_this<Impl>, public FdPoller::Watcher {
 public:
  // One descriptor (a socket) is read and written as one, not through a dup: a dup costs a
  // second fd, which at the process's limit fails after the connection was accepted.
  Impl(asio::io_context& io, int read_fd, int write_fd, NdjsonLimits limits)
      : io_(io),
        poller_(FdPoller::of(io)),
        in_fd_(read_fd),
        out_fd_(write_fd),
        stall_timer_(io),
        close_timer_(io),
        limits_(limits) {
    opened();
    set_non_blocking(in_fd_);   // a read woken for nothing must not block the loop
    set_non_blocking(out_fd_);  // nor must write_now
  }

  ~Impl() {
    unwatch();
    closed();
  }

  void start(Transport::Handlers h) {
    handlers_ = std::move(h);
    if (closed_) return;
    reading_ = true;
    watch();
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
    reading_ = false;
    watch();
    if (!writing_ && !queue_empty()) write_now();  // held for a batch, not written yet
    if (!writing_) return finish(close_kind_, close_message_);
    close_timer_.expires_after(limits_.close_grace);
    close_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->finish(self->close_kind_, self->close_message_ + " (before the queue was written)");
    });
  }

  void abort() { finish("closed", "closed"); }

  // The owner is going away: end without telling it.
  void detach() {
    handlers_ = {};
    finish("closed", "closed");
  }

  void on_ready(std::uint32_t events) override {
    auto self = shared_from_this();  // a handler may drop the last handle
    if (writing_ && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
      writing_ = false;
      write_now();  // waits again for what the peer does not take yet
      watch();
    }
    if (reading_ && !closed_ && !closing_ && (events & (EPOLLIN | EPOLLERR | EPOLLHUP))) on_readable();
  }

 private:
  static void set_non_blocking(int fd) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0 && !(flags & O_NONBLOCK)) (void)::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  }

  // Tells the poller what this transport waits for now: input while reading, room to write
  // while the peer has not taken the queue.
  void watch() {
    if (closed_) return;
    std::uint32_t in = reading_ ? std::uint32_t{EPOLLIN} : 0, out = writing_ ? std::uint32_t{EPOLLOUT} : 0;
    if (in_fd_ == out_fd_) return set_watch(in_key_, in_events_, in_fd_, in | out);
    set_watch(in_key_, in_events_, in_fd_, in);
    set_watch(out_key_, out_events_, out_fd_, out);
  }

  void set_watch(std::uint64_t& key, std::uint32_t& now, int fd, std::uint32_t events) {
    if (events == now) return;
    if (events == 0) {
      poller_.remove(key, fd);
      key = 0;
    } else if (key == 0) {
      key = poller_.add(fd, events, *this);
      if (key == 0) return fail("io", std::string("cannot wait for the descriptor: ") + std::strerror(errno));
    } else if (!poller_.modify(key, fd, events)) {
      return fail("io", std::string("cannot wait for the descriptor: ") + std::strerror(errno));
    }
    now = events;
  }

  void unwatch() {
    if (in_key_) poller_.remove(in_key_, in_fd_);
    if (out_key_) poller_.remove(out_key_, out_fd_);
    in_key_ = out_key_ = 0;
    in_events_ = out_events_ = 0;
  }

  void on_readable() {
    std::array<char, kReadSize> buffer;  // not value-initialised: read() fills what is used
    ssize_t n;
    do {
      n = ::read(in_fd_, buffer.data(), buffer.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // woken for nothing
    if (n < 0) return fail("io", std::strerror(errno));
    if (n == 0) return fail("eof", partial_.empty() ? "end of stream" : "end of stream in the middle of a line");
    on_read(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
  }

  void on_read(std::string_view data) {
    // More than one line in this read: what the handlers send is held until all are handled.
    bool batch = data.find('\n') != data.rfind('\n');
    if (batch) ++batch_depth;
    deliver(data);
    if (batch && --batch_depth == 0) flush_held();
    if (closed_ || closing_) return;
    if (partial_.empty()) stall_timer_.cancel();
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

  // A plain non-blocking writev of the queue; what the peer does not take yet waits for the
  // poller to say there is room (on_ready).
  void write_now() {
    while (!queue_empty() && !closed_) {
      std::array<iovec, 64> iov{};
      std::size_t count = 0;
      for (std::size_t i = head_; i < queue_.size() && count < iov.size(); ++i, ++count)
        iov[count] = {queue_[i].data(), queue_[i].size()};
      ssize_t w = ::writev(out_fd_, iov.data(), static_cast<int>(count));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        return fail("io", std::string("write failed: ") + std::strerror(errno));
      }
      if (w <= 0) break;  // the peer's buffer is full
      auto left = static_cast<std::size_t>(w);
      while (left > 0 && left >= queue_[head_].size()) {
        left -= queue_[head_].size();
        pop_front();
      }
      if (left > 0) {  // part of a message went: keep the rest
        queue_[head_].erase(0, left);
        queued_bytes_ -= left;
        break;
      }
    }
    if (closed_) return;
    queue_share_.set(queued_bytes_);
    if (!queue_empty()) {
      writing_ = true;
      return watch();
    }
    if (closing_) finish(close_kind_, close_message_);
  }

  bool queue_empty() const { return head_ == queue_.size(); }

  void pop_front() {
    queued_bytes_ -= queue_[head_].size();
    std::string().swap(queue_[head_++]);
    if (queue_empty()) {
      std::vector<std::string>().swap(queue_);  // an idle connection holds no queue
      head_ = 0;
    } else if (head_ >= 64 && head_ * 2 >= queue_.size()) {
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  void fail(const char* kind, std::string message) { finish(kind, std::move(message)); }

  void finish(const char* kind, std::string message) {
    if (closed_) return;
    unwatch();
    closed_ = true;
    reading_ = writing_ = false;
    stall_timer_.cancel();
    close_timer_.cancel();
    ::close(in_fd_);
    if (out_fd_ != in_fd_) ::close(out_fd_);
    std::vector<std::string>().swap(queue_);
    head_ = 0;
    queued_bytes_ = 0;
    queue_share_.set(0);
    std::string().swap(partial_);
    line_share_.set(0);
    post_closed(io_, std::exchange(handlers_, {}), TransportError{kind, std::move(message)});
  }

  asio::io_context& io_;
  FdPoller& poller_;
  int in_fd_;
  int out_fd_;                                    // the same as in_fd_ for a socket
  std::uint64_t in_key_ = 0, out_key_ = 0;        // in the poller; 0: not watched
  std::uint32_t in_events_ = 0, out_events_ = 0;  // what the poller watches them for
  asio::steady_timer stall_timer_;
  asio::steady_timer close_timer_;
  NdjsonLimits limits_;
  Transport::Handlers handlers_;
  std::string partial_;             // the unfinished line; handed over with it when it ends
  std::vector<std::string> queue_;  // from head_ on: to write; released when it empties
  std::size_t head_ = 0;
  std::size_t queued_bytes_ = 0;
  BudgetShare line_share_;   // partial_'s allocation
  BudgetShare queue_share_;  // queued_bytes_
  const char* close_kind_ = "closed";
  std::string close_message_;
  bool reading_ = false;  // started, and not closing
  bool writing_ = false;  // the peer has not taken the whole queue: waiting for room
  bool held_ = false;     // in `held`, to be written at the end of a batch
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

void post_closed(asio::io_context& io, Transport::Handlers handlers, TransportError error) {
  asio::post(io, [h = std::move(handlers), e = std::move(error)] {
    if (h.on_closed) h.on_closed(e);
  });
}

}  // namespace oppx
