// A message transport: lines in, lines out, one close. Implementations: NDJSON over file
// descriptors (the Unix socket, a child's pipes) and an in-memory pair for tests. Callbacks run
// on the owner's io_context thread; none of them may block.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace oppx {

struct TransportError {
  std::string kind;  // "eof", "io", "too_large", "overflow", "stalled", "closed" (closed by us)
  std::string message;
};

class Transport {
 public:
  struct Handlers {
    std::function<void(std::string line)> on_line;
    // Called once; no on_line follows it. The transport's handlers are dropped right after.
    std::function<void(const TransportError&)> on_closed;
    // Optional: a line went over the size cap. Whatever this sends is written before the
    // transport closes (on_closed then reports kind "too_large").
    std::function<void(const TransportError&)> on_oversize;
    // Optional: a line the transport made itself, out of band from what the far end sent (the
    // HTTP transport's error answer to a request it could not carry: login, unreachable,
    // timeout). Its error kind is the transport's own, which the far end cannot forge.
    std::function<void(std::string line)> on_own_line;
  };

  virtual ~Transport() = default;
  virtual void start(Handlers handlers) = 0;
  // Queues one message (without its newline). Over the queue limit the transport closes itself
  // with kind "overflow" and returns false.
  virtual bool send(std::string message) = 0;
  // Stops reading, writes what is queued (within a grace period), then closes.
  virtual void close() = 0;
  // Closes at once, dropping what is queued.
  virtual void abort() = 0;
};

}  // namespace oppx
