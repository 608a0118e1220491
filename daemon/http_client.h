// Internal to the HTTP transport (only daemon/http_*.cpp include it: it pulls in Beast and
// OpenSSL). The HTTP side: URLs, connections (plain or TLS) with their deadlines, a pool of idle
// ones, one exchange opened with redirects followed, and its body read in chunks. The State is
// shared with the MCP side (daemon/http_transport.cpp), which owns the session in it.
#pragma once

#include "common/transport.h"
#include "daemon/http_transport.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <array>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace oppx::daemon::http_detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;
template <class T>
using awaitable = asio::awaitable<T>;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

struct Target {
  bool tls = false;
  std::string url, host, port, path, origin, host_header;
};

boost::system::result<Target, std::string> parse_target(std::string_view text);

struct Failure {
  std::string kind;  // login | unreachable | timeout | protocol | cancelled
  std::string message;
  unsigned http_status = 0;
  bool retry_fresh = false;  // a reused connection failed before any answer: try a new one once
  bool sent = false;         // the request had gone out whole when its connection closed unanswered
};

template <class T>
using Outcome = boost::system::result<T, Failure>;

inline Failure fail(std::string kind, std::string message, unsigned status = 0) {
  return Failure{std::move(kind), std::move(message), status, false};
}

// One connection, plain or TLS, with the parser of the answer being read on it.
struct Conn {
  std::string origin;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::buffer_body>> parser;
  std::array<char, 16384> chunk{};
  bool reused = false;

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  void close() {
    error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().close();
  }
};

using Request = http::request<http::string_body>;

struct Answer {
  std::shared_ptr<Conn> conn;
  unsigned status = 0;
  std::string media_type;  // lower case, without parameters
  std::optional<std::string> session_id;
  Target at;
};

struct Ask {
  http::verb verb = http::verb::post;
  std::string body;
  std::string last_event_id;
  bool initialize = false;  // no session id and no protocol version header on it
  std::string request_key;  // for cancellation: the request this exchange carries
  // SPEC §3: sent again on a new connection after one closed unanswered only when it is safe to
  // run twice (everything but a tools/call of a tool not marked read-only).
  bool repeatable = true;
  // The answer may rightly start late, so its first byte is not held to the headers limit: a
  // tools/call (the tool may work long first), the server stream's GET and a stream's resumption
  // (a server may send their headers only with the next event).
  bool slow_first_byte = false;
};

struct State : std::enable_shared_from_this<State> {
  State(asio::io_context& io, HttpOptions o, Target t)
      : io(io),
        opt(std::move(o)),
        target(std::move(t)),
        ssl_ctx(ssl::context::tls_client),
        reinit_done(io),
        stream_answered(io) {}
  asio::io_context& io;
  HttpOptions opt;
  Target target;
  ssl::context ssl_ctx;
  Transport::Handlers handlers;
  bool stopped = false, closing = false;
  std::string session_id, protocol_version, init_line, initialized_line;
  std::string session_origin;  // the session id goes only where it came from (a redirect may move it)
  bool reiniting = false;
  asio::steady_timer reinit_done;  // cancelled when a re-initialize ends, waking who waits on it
  std::map<std::string, std::vector<std::shared_ptr<Conn>>> idle;
  std::set<std::shared_ptr<Conn>> active;
  std::map<std::string, std::shared_ptr<Conn>> by_request;
  std::set<std::string> cancelled;
  std::size_t running = 0;
  std::deque<std::string> waiting;
  std::uint64_t listen_gen = 0;  // the server stream of the current session; older ones end
  // The server stream (GET) is opened before anything else goes out after notifications/initialized
  // (a server's list_changed right after it is lost otherwise): until its GET is answered, or
  // HttpTimeouts::stream passed, what the peer sends waits in `waiting`.
  bool holding = false;
  bool stream_asked = false;           // the current session's GET went out and is not answered yet
  bool stream_open = false;            // the current session's server stream is open
  bool went_ahead = false;             // messages went ahead before it opened: when it does, opt.on_late_stream
  asio::steady_timer stream_answered;  // cancelled when the GET is answered (any way), waking who waits

  // A connection that is not kept: closed and forgotten.
  void drop(const std::shared_ptr<Conn>& c) {
    c->close();
    active.erase(c);
  }
  // What the server sent.
  void deliver(std::string line) {
    if (!stopped && handlers.on_line) handlers.on_line(std::move(line));
  }
  // What the transport made itself (the error answer to a request it could not carry): out of
  // band, so that no server's answer can pass for it.
  void deliver_own(std::string line) {
    if (!stopped && handlers.on_own_line) handlers.on_own_line(std::move(line));
  }
  void finish(std::string kind, std::string message) {
    if (stopped) return;
    stopped = true;
    for (auto& c : active) c->close();
    for (auto& [o, list] : idle)
      for (auto& c : list) c->close();
    idle.clear();
    reinit_done.cancel();
    stream_answered.cancel();
    if (auto fn = std::move(handlers.on_closed)) {
      // Posted, so that a close() never re-enters its caller (as the NDJSON transport does).
      asio::post(io, [fn, e = TransportError{std::move(kind), std::move(message)}] { fn(e); });
    }
    handlers = {};
  }
};

// MCP 2025-06-18 added the MCP-Protocol-Version header to every request after initialize;
// 2025-03-26 has none (its servers assume that version when it is missing), so it goes unsent.
inline bool sends_version_header(std::string_view version) { return !version.empty() && version != "2025-03-26"; }

// MCP 2025-11-25 (SEP-1699): once it sent an event with an id, a server may end the connection
// of a stream before the response and the client polls (GET with Last-Event-ID after `retry`).
// Earlier versions say the server SHOULD NOT end it early: there every early end is a drop.
inline bool server_may_poll(std::string_view version) { return version == "2025-11-25"; }

// The next bytes of the body; empty with `done` at its end.
struct Chunk {
  std::string data;
  bool done = false;
};

// A co_spawn completion handler that logs what escaped a coroutine.
std::function<void(std::exception_ptr)> logged(std::string what);

// Opens one exchange: request out, answer's headers in, redirects followed. The body is left on
// the connection for the caller to read (next_chunk, read_body), then release() it.
awaitable<Outcome<Answer>> open(std::shared_ptr<State> st, Ask ask, Clock::time_point deadline);
awaitable<Outcome<Chunk>> next_chunk(std::shared_ptr<State> st, Answer a, Clock::time_point deadline);
// Done with an answer: its connection goes back to the pool when it can carry another.
void release(State& st, const Answer& a);
awaitable<Outcome<std::string>> read_body(std::shared_ptr<State> st, Answer a, Clock::time_point deadline,
                                          std::size_t cap);

}  // namespace oppx::daemon::http_detail
