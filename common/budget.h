// The one memory budget for what the daemon buffers on behalf of its peers: the line a socket
// client or a stdio server has half sent, a client's unread replies, an HTTP body or an event
// being built. Each cap is per buffer; this bounds their sum, so many peers sending large
// messages at once cannot grow the daemon without limit. A buffer that cannot grow within it
// fails alone, with over_budget_message(); the others go on. Thread-safe (atomic), never blocks.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

namespace oppx {

class MemoryBudget {
 public:
  explicit MemoryBudget(std::size_t limit) : limit_(limit) {}
  std::size_t limit() const { return limit_; }
  std::size_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  // Takes `n` bytes if they fit under the limit; false (nothing taken) when not.
  bool take(std::size_t n);
  void give(std::size_t n);  // and tells common/changes.h: in_use() fell

 private:
  std::size_t limit_;
  std::atomic<std::size_t> in_use_{0};
};

// The process's budget: OPPX_BUFFER_BUDGET_MIB mebibytes when set (for tests), else 128 MiB.
MemoryBudget& buffer_budget();

// One buffer's share of a budget: set() it to the buffer's size after each growth; it gives
// back on shrinking and on destruction.
class BudgetShare {
 public:
  explicit BudgetShare(MemoryBudget& budget = buffer_budget()) : budget_(&budget) {}
  ~BudgetShare() { set(0); }
  BudgetShare(const BudgetShare&) = delete;
  BudgetShare& operator=(const BudgetShare&) = delete;

  // False, with the share unchanged, when growing to `bytes` does not fit in the budget.
  bool set(std::size_t bytes);
  std::size_t held() const { return held_; }

 private:
  MemoryBudget* budget_;
  std::size_t held_ = 0;
};

// "the daemon's buffers are full (… of … MiB in use by all its clients and servers); <what> was refused".
std::string over_budget_message(const MemoryBudget& budget, const std::string& what);

}  // namespace oppx
