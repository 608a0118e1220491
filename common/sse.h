// An incremental parser for text/event-stream (WHATWG HTML, "Server-sent events", §9.2.6): bytes
// in, whole events out, in chunks split anywhere. Pure: no I/O, no clock, no allocation beyond
// the event being built, which is capped so that a stream without a blank line cannot grow it
// without bound, and charged to the shared buffer budget (budget.h) before it grows, so that many
// such streams at once cannot either. The HTTP transport owns one per stream and clamps `retry`.
#pragma once

#include "common/budget.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::sse {

struct Event {
  std::string type = "message";  // the `event` field, "message" when absent
  std::string data;              // `data` lines joined with '\n'
  std::string last_event_id;     // the stream's last event id when this event was dispatched
};

inline constexpr std::size_t kMaxEventBytes = 16u << 20;

class Parser {
 public:
  explicit Parser(std::size_t max_event_bytes = kMaxEventBytes, MemoryBudget& budget = buffer_budget())
      : max_event_(max_event_bytes), share_(budget) {}

  // Parses `chunk`, appending each complete event to `out`. Returns false once an event (its
  // pending line plus its data) went over the cap, or the budget had no room for it; the parser
  // then stays failed.
  bool feed(std::string_view chunk, std::vector<Event>& out);

  bool failed() const { return failed_; }
  bool over_budget() const { return over_budget_; }  // failed for the budget, not the cap
  // The last event id seen in a dispatched event (persists across events, as the spec says).
  const std::string& last_event_id() const { return last_event_id_; }
  // The last valid `retry` value in milliseconds, unclamped (saturates instead of overflowing).
  std::optional<std::uint64_t> retry_ms() const { return retry_ms_; }

 private:
  void line(std::string_view l, std::vector<Event>& out);
  void dispatch(std::vector<Event>& out);
  bool append(std::string& to, std::string_view bytes);

  std::size_t max_event_;
  std::string pending_;  // the current line's bytes so far
  std::string data_, type_, id_buffer_, last_event_id_;
  std::optional<std::uint64_t> retry_ms_;
  BudgetShare share_;      // the capacity of pending_ and data_
  bool after_cr_ = false;  // the previous chunk ended with CR: a leading LF belongs to it
  bool failed_ = false;
  bool over_budget_ = false;
  int bom_state_ = 0;  // bytes of a leading UTF-8 BOM matched so far; -1 once past the start
};

// The server's retry hint as a delay the client waits: unset → `fallback`, then within [lo, hi].
std::chrono::milliseconds clamp_retry(std::optional<std::uint64_t> retry_ms, std::chrono::milliseconds fallback,
                                      std::chrono::milliseconds lo = std::chrono::milliseconds(100),
                                      std::chrono::milliseconds hi = std::chrono::milliseconds(60'000));

}  // namespace oppx::sse
