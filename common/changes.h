// A process-wide signal: "a figure that a daemon/status wait can name may have changed" (a buffer
// gave budget back, a call to a server ended, a client connection ended, the browser spare moved).
// Whoever changes such a figure calls changed(); the daemon's status waits listen while one is
// open (daemon/status_waits.h). Thread-safe: changed() may come from any thread, never blocks on
// a listener's work (listeners only post), and with no listener it is one atomic load.
#pragma once

#include <cstdint>
#include <functional>

namespace oppx::changes {

void changed();

// Calls `fn` on every changed() while it lives; `fn` must be quick and must not block (post).
class Listener {
 public:
  explicit Listener(std::function<void()> fn);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

 private:
  std::uint64_t id_;
};

}  // namespace oppx::changes
