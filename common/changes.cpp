// changes.h: the listeners under a mutex (changed() may come from any thread), and a count read
// first so that the common case, nobody listening, takes no lock.
#include "common/changes.h"

#include <atomic>
#include <map>
#include <mutex>

namespace oppx::changes {

namespace {

struct Listeners {
  std::mutex mu;
  std::map<std::uint64_t, std::function<void()>> fns;
  std::uint64_t next = 1;
  std::atomic<std::size_t> count{0};
};

Listeners& listeners() {
  static Listeners l;
  return l;
}

}  // namespace

void changed() {
  Listeners& l = listeners();
  if (l.count.load(std::memory_order_acquire) == 0) return;
  std::lock_guard lock(l.mu);
  for (auto& [id, fn] : l.fns) fn();
}

Listener::Listener(std::function<void()> fn) {
  Listeners& l = listeners();
  std::lock_guard lock(l.mu);
  id_ = l.next++;
  l.fns.emplace(id_, std::move(fn));
  l.count.store(l.fns.size(), std::memory_order_release);
}

Listener::~Listener() {
  Listeners& l = listeners();
  std::lock_guard lock(l.mu);
  l.fns.erase(id_);
  l.count.store(l.fns.size(), std::memory_order_release);
}

}  // namespace oppx::changes
