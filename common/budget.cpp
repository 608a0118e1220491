// MemoryBudget: a compare-and-swap on the bytes in use, so a take that would pass the limit
// takes nothing.
#include "common/budget.h"

#include "common/changes.h"

#include <fmt/format.h>

#include <cstdlib>

namespace oppx {

bool MemoryBudget::take(std::size_t n) {
  std::size_t now = in_use_.load(std::memory_order_relaxed);
  do {
    if (n > limit_ || now > limit_ - n) return false;
  } while (!in_use_.compare_exchange_weak(now, now + n, std::memory_order_relaxed));
  return true;
}

void MemoryBudget::give(std::size_t n) {
  if (n == 0) return;
  in_use_.fetch_sub(n, std::memory_order_relaxed);
  changes::changed();
}

MemoryBudget& buffer_budget() {
  static MemoryBudget budget([] {
    std::size_t mib = 128;
    if (const char* v = std::getenv("OPPX_BUFFER_BUDGET_MIB")) {
      char* end = nullptr;
      unsigned long n = std::strtoul(v, &end, 10);
      if (end != v && *end == '\0' && n > 0 && n < (1ul << 20)) mib = n;
    }
    return mib << 20;
  }());
  return budget;
}

bool BudgetShare::set(std::size_t bytes) {
  if (bytes > held_) {
    if (!budget_->take(bytes - held_)) return false;
  } else {
    budget_->give(held_ - bytes);
  }
  held_ = bytes;
  return true;
}

std::string over_budget_message(const MemoryBudget& budget, const std::string& what) {
  return fmt::format(
      "{} was refused: the daemon's buffers for all its clients and servers are full ({:.1f} of {} MiB in use); "
      "try again when other large messages are done",
      what, static_cast<double>(budget.in_use()) / (1 << 20), budget.limit() >> 20);
}

}  // namespace oppx
