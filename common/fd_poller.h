// FdPoller: one epoll set per io_context, which Asio waits on as a single descriptor, for the
// descriptors of which there may be thousands, mostly idle (the daemon's socket clients, through
// ndjson_transport). Asio keeps the state of every descriptor it registered (168 bytes each) in a
// pool that it never frees (detail/object_pool.hpp): after 10,000 clients at once, 10,000 of them
// stay, scattered among the pages the connections' other memory freed, which they keep from going
// back to the system. A descriptor here costs a hash-map entry, gone when it is removed. Level-triggered, loop thread
// only; a watcher's on_ready may add, change or remove any descriptor, its own included, but must
// not run the io_context itself (no nested loop: the next batch is posted after this one).
#pragma once

#include <cstdint>
#include <memory>

namespace boost::asio {
class io_context;
}

namespace oppx {

class FdPoller {
 public:
  class Watcher {
   public:
    // `events`: EPOLLIN, EPOLLOUT, and EPOLLHUP / EPOLLERR, which come whatever was asked.
    virtual void on_ready(std::uint32_t events) = 0;

   protected:
    ~Watcher() = default;
  };

  // The io_context's one, made on first use; it lives as long as the io_context.
  static FdPoller& of(boost::asio::io_context& io);

  // Watches `fd` for `events` (EPOLLIN, EPOLLOUT, not 0: a descriptor with nothing to wait for
  // is removed, else its hang-up would be reported again and again). Returns the key that
  // names it to modify() and remove(), or 0 when epoll refused it (errno says why).
  std::uint64_t add(int fd, std::uint32_t events, Watcher& watcher);
  bool modify(std::uint64_t key, int fd, std::uint32_t events);
  // Before `fd` is closed. No on_ready for it follows, not even for an event already read.
  void remove(std::uint64_t key, int fd);

  ~FdPoller();
  FdPoller(const FdPoller&) = delete;
  FdPoller& operator=(const FdPoller&) = delete;

 private:
  friend class FdPollerService;
  explicit FdPoller(boost::asio::io_context& io);
  void shutdown();  // the io_context is going: stop waiting

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oppx
