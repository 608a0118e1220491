// Runs an io_context until a condition holds or a deadline passes: each turn waits for the next
// completion, so tests wait on events, never on time.
#pragma once

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>

namespace oppx::test {

inline bool run_until(boost::asio::io_context& io, const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  io.restart();
  while (!done()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    io.run_one_for(deadline - now);
  }
  return true;
}

}  // namespace oppx::test
