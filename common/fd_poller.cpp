// FdPoller: the epoll set is waited on with Asio's async_wait only while it holds a descriptor,
// so that an io_context with nothing else to do returns from run(), as it would with no reads
// pending. Each round takes a bounded batch of events, so other handlers run between batches.
// The poller is an io_context service: registered after Asio's reactor (which its own descriptor
// brings in), it is shut down and destroyed before the reactor.
#include "common/fd_poller.h"

#include "common/log.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sys/epoll.h>
#include <unistd.h>
#include <unordered_map>

namespace oppx {

namespace asio = boost::asio;

class FdPollerService : public asio::io_context::service {
 public:
  static asio::io_context::id id;
  explicit FdPollerService(asio::io_context& io) : service(io), poller(io) {}
  void shutdown() override { poller.shutdown(); }
  FdPoller poller;
};

asio::io_context::id FdPollerService::id;

struct FdPoller::Impl {
  explicit Impl(asio::io_context& io) : epoll_fd(::epoll_create1(EPOLL_CLOEXEC)) {
    if (epoll_fd < 0) {
      log::error("epoll_create1 failed: {}", std::strerror(errno));
      return;
    }
    // Asio waits on the set itself, not on a dup: near the descriptor limit each one counts.
    // shutdown() takes it back from Asio; ~Impl closes it.
    waiter.emplace(io, epoll_fd);
  }

  ~Impl() {
    if (waiter) (void)waiter->release();  // not shut down: the set is closed here, once
    if (epoll_fd >= 0) ::close(epoll_fd);
  }

  // Asio watches the set edge-triggered, so an edge it reports while no wait is queued, or
  // descriptors still ready after a batch (level-triggered here: a read that took 64 KiB of more)
  // would be lost: the set is waited on only once a poll found nothing ready, and until then
  // each batch posts the next. A new descriptor already ready wakes the set as it is added.
  // `now`: from the wait's own handler, which is a turn of its own, so the batch is taken at once
  // (a post would cost the loop one more epoll_wait on every wake-up, twice per relayed call).
  void arm(bool now = false) {
    if (waiting || polling || dispatching || shut || watchers.empty() || !waiter) return;
    if (now) return poll();
    polling = true;
    asio::post(waiter->get_executor(), [this] { poll(); });
  }

  void poll() {
    polling = false;
    if (shut || watchers.empty()) return;
    std::array<epoll_event, 64> events{};
    int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), 0);
    if (n <= 0) {
      if (n < 0 && errno != EINTR) log::error("epoll_wait failed: {}", std::strerror(errno));
      waiting = true;
      waiter->async_wait(asio::posix::stream_descriptor::wait_read,
                         [this](boost::system::error_code ec) { on_wait(ec); });
      return;
    }
    dispatching = true;
    for (int i = 0; i < n; ++i) {
      // Copied out first: epoll_event is packed on x86-64, so its fields are not aligned.
      std::uint64_t const key = events[i].data.u64;
      std::uint32_t const ready = events[i].events;
      // Looked up each time: an earlier watcher of this batch may have removed this one.
      auto it = watchers.find(key);
      if (it != watchers.end()) it->second->on_ready(ready);
    }
    dispatching = false;
    // Posted after the batch: what its handlers posted runs before the next reads, as it did
    // when each read was an Asio operation (a reply's consequences before the peer's answer).
    arm();
  }

  void on_wait(boost::system::error_code ec) {
    waiting = false;
    if (ec && ec != asio::error::operation_aborted) log::error("waiting on the epoll set failed: {}", ec.message());
    arm(/*now=*/true);
  }

  // The wait keeps the io_context running: with nothing left to watch, it ends.
  void disarm_if_idle() {
    if (!waiting || !watchers.empty() || !waiter) return;
    boost::system::error_code ec;
    waiter->cancel(ec);
  }

  int epoll_fd = -1;
  std::optional<asio::posix::stream_descriptor> waiter;
  std::unordered_map<std::uint64_t, Watcher*> watchers;
  std::uint64_t next_key = 1;
  bool waiting = false;      // an async_wait is queued
  bool polling = false;      // a poll() is posted
  bool dispatching = false;  // poll() is handing out a batch; it posts the next one after
  bool shut = false;
};

FdPoller::FdPoller(asio::io_context& io) : impl_(std::make_unique<Impl>(io)) {}
FdPoller::~FdPoller() = default;

FdPoller& FdPoller::of(asio::io_context& io) { return asio::use_service<FdPollerService>(io).poller; }

std::uint64_t FdPoller::add(int fd, std::uint32_t events, Watcher& watcher) {
  if (impl_->epoll_fd < 0) {
    errno = EBADF;
    return 0;
  }
  std::uint64_t key = impl_->next_key++;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = key;
  if (::epoll_ctl(impl_->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) return 0;
  impl_->watchers.emplace(key, &watcher);
  impl_->arm();
  return key;
}

bool FdPoller::modify(std::uint64_t key, int fd, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = key;
  return ::epoll_ctl(impl_->epoll_fd, EPOLL_CTL_MOD, fd, &ev) == 0;
}

void FdPoller::remove(std::uint64_t key, int fd) {
  if (!impl_->watchers.erase(key)) return;
  epoll_event ev{};
  (void)::epoll_ctl(impl_->epoll_fd, EPOLL_CTL_DEL, fd, &ev);
  // An unordered_map keeps its buckets as it empties: after a burst of connections, let them go
  // (rehash(0) shrinks them to fit; at most a few times as they fall off, like the growth).
  auto& w = impl_->watchers;
  if (w.bucket_count() > 64 && w.size() * 8 < w.bucket_count()) w.rehash(0);
  impl_->disarm_if_idle();
}

void FdPoller::shutdown() {
  impl_->shut = true;
  impl_->waiting = impl_->polling = false;
  // While Asio's reactor, shut down after us, is still there; released, not closed: transports
  // destroyed later still remove their descriptors from the set, which ~Impl closes.
  if (impl_->waiter) {
    boost::system::error_code ec;
    impl_->waiter->cancel(ec);
    (void)impl_->waiter->release();
  }
  impl_->waiter.reset();
}

}  // namespace oppx
