// A message transport: messages out (each one says what it is: a request, a notification or a
// response, as clangd's transport has call / notify / reply), lines in, one close. The sender
// says what a transport needs to know, so that none re-parses what it carries. Implementations:
// NDJSON over file descriptors (the Unix socket, a child's pipes), an in-memory pair for tests,
// and MCP's streamable HTTP (daemon/http_transport.h). Callbacks run on the owner's io_context
// thread; none of them may block.
#pragma once

#include "proto/jsonrpc.h"

#include <boost/json/value.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx {

// One outgoing JSON-RPC message, serialized, with what its sender knows about it.
struct Message {
  enum class Kind { kResponse, kRequest, kNotification };
  Kind kind = Kind::kResponse;
  std::string text;            // the whole message, without a newline
  std::string method;          // of a request or a notification
  boost::json::value id;       // of a request, or the request a response answers
  boost::json::value cancels;  // of a notification that cancels a request: that request's id
  // A request that may be sent again on a new connection after one closed before its answer (it
  // is safe to run twice: MCP's tools/call only for a tool marked read-only).
  bool repeatable = true;
  // A request whose answer may rightly start late (a tool that works long first): its first byte
  // is not held to a headers limit.
  bool slow_first_byte = false;
  std::string label;  // how errors name it ("the call to echo"); empty: by its method
  // HTTP headers of this request alone (MCP 2026-07-28's Mcp-Param-*); other transports have none.
  std::vector<std::pair<std::string, std::string>> headers;

  bool is_request() const { return kind == Kind::kRequest; }
};

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
    // Optional: the transport could not carry a request (the HTTP transport: login, unreachable,
    // timeout) and answers it itself, out of band from what the far end sent: the error is not a
    // line the far end could have forged, and its kind is the transport's own.
    std::function<void(const boost::json::value& id, proto::RpcError error)> on_request_failed;
  };

  virtual ~Transport() = default;
  virtual void start(Handlers handlers) = 0;
  // Queues one message. Over the queue limit the transport closes itself with kind "overflow"
  // and returns false.
  virtual bool send(Message message) = 0;
  // Stops reading, writes what is queued (within a grace period), then closes.
  virtual void close() = 0;
  // Closes at once, dropping what is queued.
  virtual void abort() = 0;
};

// How a transport lets go of its handlers when it ends: on_closed is posted (a close never
// re-enters its caller), and every handler lives until then, so that a handler that closed its
// own transport is not freed while it still runs.
void post_closed(boost::asio::io_context& io, Transport::Handlers handlers, TransportError error);

}  // namespace oppx
