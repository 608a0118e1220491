// The async face of the HTTP client (common/http.h has the types and a blocking fetch), for code
// on an io_context: the daemon's MCP-over-HTTP link, the chat's model client. A Client keeps the
// idle connections of its origins for reuse; an Exchange is one answer whose body is still on its
// connection, read chunk by chunk. Coroutines only (C++20 awaitables); nothing blocks. Beast and
// OpenSSL stay in http_client.cpp.
#pragma once

#include "common/http.h"

#include <boost/asio/awaitable.hpp>

#include <memory>

namespace boost::asio {
class io_context;
}

namespace oppx::http {

template <class T>
using awaitable = boost::asio::awaitable<T>;

struct Conn;    // one connection, plain or TLS (http_client.cpp)
struct Shared;  // the pool and the TLS context, shared with the exchanges in flight

// The next bytes of a body; `done` at its end (data may be empty then).
struct Chunk {
  std::string data;
  bool done = false;
};

class Exchange {
 public:
  Exchange() = default;
  Exchange(Exchange&&) noexcept;
  Exchange& operator=(Exchange&&) noexcept;
  ~Exchange();  // release()

  const Response& head() const { return head_; }
  unsigned status() const { return head_.status; }
  const std::string& media_type() const { return head_.media_type; }

  // The next bytes of the body, within the idle limit and the exchange's deadline (or `by`, when
  // that comes first).
  awaitable<Outcome<Chunk>> next_chunk(Clock::time_point by = Clock::time_point::max());
  // The rest of the body, failing ("protocol") once it is over `cap` bytes.
  awaitable<Outcome<std::string>> read_body(std::size_t cap);
  // The body has been read to its end (or there was none).
  bool finished() const;
  // Ends it now (the connection is closed): a read in progress fails with "cancelled".
  void abort();
  // Done with it: the connection goes back to the pool when the body was read whole and the
  // server keeps it alive; else it is closed.
  void release();

 private:
  friend class Client;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<Conn> conn_;
  Response head_;
  Timeouts timeouts_;
  Clock::time_point deadline_{};
};

// Loads the TLS roots every Client shares (once; again when SSL_CERT_FILE or SSL_CERT_DIR
// changed). Blocks on the disk: the daemon calls it on its worker thread at start, so that the
// first HTTPS connector does not load them on the loop.
void load_tls_roots();

class Client {
 public:
  explicit Client(boost::asio::io_context& io, std::size_t max_idle_per_origin = 4);
  ~Client();  // close_all()
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends the request and reads the answer's headers, following redirects (301/302/307/308,
  // method and body kept; https to http refused; headers dropped across origins as Header says).
  // The body is left on the connection for the Exchange. `deadline`: the whole exchange's; without
  // one, Request::timeouts.total from now.
  awaitable<Outcome<Exchange>> open(Request req, Clock::time_point deadline = Clock::time_point::max());

  // Ends every exchange in flight (their reads fail "cancelled") and drops the idle connections.
  void close_all();

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace oppx::http
