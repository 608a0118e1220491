// The one HTTP client of oppx (library oppx_http): plain types for a request the caller fills and
// the answer it gets, and a blocking fetch for the CLI (the probe, the model client). The async
// client for an io_context is in common/http_client.h; Beast and OpenSSL stay in the .cpp files,
// so this header is light and a command that talks no HTTP loads nothing of it.
#pragma once

#include <boost/system/result.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::http {

using Clock = std::chrono::steady_clock;

struct Timeouts {
  std::chrono::milliseconds connect{10'000};  // resolve + TCP connect + TLS handshake
  // From the request sent to the answer's last header; with Request::slow_first_byte, from the
  // answer's first byte (a tool may work long before it answers: that wait is bounded by the total).
  std::chrono::milliseconds headers{15'000};
  std::chrono::milliseconds idle{300'000};     // no byte at all on a body or stream this long
  std::chrono::milliseconds total{1'800'000};  // one exchange, from connect to its last byte
};

// An absolute http(s) URL, split as the client needs it.
struct Url {
  bool tls = false;
  std::string url, host, port, path;  // path: the request target, with its query
  std::string origin;                 // "https://example.com:8443": what errors and logs name
  std::string host_header;            // the Host header's value
};
// Fails with why, in words for the user ("it has no host"); credentials in the URL are refused.
boost::system::result<Url, std::string> parse_url(std::string_view text);

struct Header {
  std::string name, value;
  // Sent only to this origin. Empty: to the request's own origin until a redirect involves any
  // other, and then never again, so a credential never leaves where it was meant to go. "*": to
  // every origin (Accept, Content-Type: what is no secret).
  std::string origin;
};

struct Request {
  std::string method = "GET";  // any HTTP method
  std::string url;
  std::vector<Header> headers;  // Host and User-Agent are the client's own
  std::string body;             // sent with Content-Length when the method is not GET/HEAD
  Timeouts timeouts;
  bool slow_first_byte = false;  // see Timeouts::headers
  // A kept-alive connection that the server closed without answering: the request is sent again
  // on a new one only when it is safe to run twice (else the failure says it was sent).
  bool repeatable = true;
  int max_redirects = 5;
};

// What went wrong, in words for the user, naming the origin and never a header value.
struct Failure {
  std::string kind;  // unreachable | timeout | protocol | cancelled | too_large (the daemon's buffer budget)
  std::string message;
  unsigned http_status = 0;
  bool sent = false;         // the request had gone out whole when its connection closed unanswered
  bool retry_fresh = false;  // (internal) a reused connection failed before any answer
};
template <class T>
using Outcome = boost::system::result<T, Failure>;

struct Response {
  unsigned status = 0;
  std::vector<Header> headers;  // as received (origin empty)
  std::string media_type;       // Content-Type in lower case, without parameters
  std::string body;             // the whole body (fetch), or empty (streamed)
  Url at;                       // where the answer came from, after redirects
  // The first header of this name (ignoring case), or empty.
  std::string header(std::string_view name) const;
};

// One exchange, blocking, on its own event loop: redirects followed, TLS verified against the
// system's roots (or SSL_CERT_FILE), every limit of req.timeouts held. A body over `max_body`
// bytes fails ("protocol").
Outcome<Response> fetch(const Request& req, std::size_t max_body = 16u << 20);

// The same, handing the body over chunk by chunk as it arrives; `on_chunk` returns false to stop
// reading (the connection is then closed, and the answer returned as it stands).
Outcome<Response> fetch(const Request& req, const std::function<bool(std::string_view chunk)>& on_chunk);

// "https://example.com:8443" of a URL (empty when it does not parse).
std::string origin_of(std::string_view url);

// A character of an RFC 9110 token (a header's name, an auth scheme, a challenge's parameter).
bool is_tchar(char c);
// ASCII case-insensitive equality, as header names and auth schemes compare.
bool iequals(std::string_view a, std::string_view b);

}  // namespace oppx::http
