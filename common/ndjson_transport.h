// NDJSON (one message per line) over a pair of file descriptors, driven by Asio. Bounded in
// every direction: a line over max_line, a write queue over max_queue_bytes, or a line still
// incomplete stall_timeout after its first byte (a trickle cannot hold it open) closes it. The
// unfinished line and the write queue are also charged to the shared buffer budget (budget.h).
#pragma once

#include "common/transport.h"

#include <chrono>
#include <cstddef>

namespace boost::asio {
class io_context;
}

namespace oppx {

struct NdjsonLimits {
  std::size_t max_line = 16u << 20;
  std::size_t max_queue_bytes = 32u << 20;
  std::chrono::milliseconds stall_timeout{60'000};  // a line must be complete this long after its first byte
  std::chrono::milliseconds close_grace{5'000};     // flushing on close() at most this long
};

// Takes ownership of both descriptors; they may be the same (a socket), then one object reads
// and writes it (no dup, so no second fd).
std::unique_ptr<Transport> make_ndjson_transport(boost::asio::io_context& io, int read_fd, int write_fd,
                                                 NdjsonLimits limits = {});

// Two transports joined in memory: tests of whatever speaks over a Transport, and the daemon's
// MCP servers, which connect to the daemon itself without a socket.
std::pair<std::unique_ptr<Transport>, std::unique_ptr<Transport>> make_memory_pair(boost::asio::io_context& io);

}  // namespace oppx
