// The MCP "streamable HTTP" transport (MCP 2025-11-25, Transports) as an oppx::Transport: each
// message sent is one POST; answers come back as JSON or as an event stream and are handed on
// as lines. A request whose POST failed is answered out of band (on_request_failed) with
// data.kind "login" | "unreachable" | "timeout" | "protocol" | "cancelled" and data.http_status
// when there was one. Whether a request may be sent again, and whether its answer may start
// late, is what its Message says. Beast and OpenSSL stay in http_transport.cpp; this header is light.
#pragma once

#include "common/http.h"
#include "common/transport.h"

#include <boost/system/result.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

// The OAuth side of a connector that logs in (daemon/oauth.h), as its transport sees it.
class HttpAuth {
 public:
  virtual ~HttpAuth() = default;
  // The access token to send now, as "Authorization: Bearer …" and to the connector's origin
  // only; empty before a login.
  virtual std::string token() = 0;
  // The server answered 401 or 403: `challenge` is its WWW-Authenticate, `sent` the token the
  // request carried (empty: none). `done(true, "")` when the request is worth sending again with
  // token() (a refresh gave a new one: this call's, or one already under way for another);
  // else `done(false, why)`, with why in words for the user.
  struct Refusal {
    unsigned status = 0;
    std::string challenge, sent;
  };
  virtual void refused(Refusal r, std::function<void(bool again, std::string why)> done) = 0;
};

// The connect/headers/idle/total limits of common/http.h (defaults 10 s, 15 s, 300 s, 30 min), and
// how long the messages after notifications/initialized wait for the server stream's GET to be
// answered (a server may send its headers only with its first event: they then go ahead).
struct HttpTimeouts : http::Timeouts {
  std::chrono::milliseconds stream{1'000};
};

struct HttpOptions {
  std::string url;                                           // http:// or https://
  std::vector<std::pair<std::string, std::string>> headers;  // values already ${VAR}-expanded
  HttpTimeouts timeouts;
  std::size_t max_body = 16u << 20;  // a JSON answer, and one event of a stream
  int max_redirects = 5;
  // Reconnections (GET with Last-Event-ID) of a request's stream that broke before its response,
  // per request however many events came; also the server stream's drops in a row.
  int max_resumes = 5;
  // Reconnections a 2025-11-25 server asks for by ending a stream cleanly before the response
  // (SEP-1699 polling, each after its `retry` wait), per request.
  int max_polls = 100;
  std::size_t max_idle_connections = 4;
  std::chrono::milliseconds close_timeout{2'000};  // the DELETE that ends the session
  // Called once when the server stream of a session opens after messages went ahead without it
  // (it was slow or failed first): what the server announced meanwhile (list_changed) was lost.
  std::function<void()> on_late_stream;
  // Set when the connector logs in with OAuth (it has no Authorization header of its own).
  std::shared_ptr<HttpAuth> auth;
};

// Fails when the URL is unusable (not http/https, no host); the message says how to fix it.
boost::system::result<std::unique_ptr<Transport>, std::string> make_http_transport(boost::asio::io_context& io,
                                                                                   HttpOptions options);

}  // namespace oppx::daemon
