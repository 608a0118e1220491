// The streamable HTTP transport. One coroutine per message sent (a POST and its answer, read to
// the end), all on the daemon's io_context; a State shared by them holds the session, the idle
// connections and the remembered initialize. Every wait has a deadline; every body is capped.
// Spec: MCP 2025-11-25 "Transports" (also 2025-06-18 and 2025-03-26, whose HTTP rules agree).
#include "daemon/http_transport.h"

#include "common/log.h"
#include "common/text.h"
#include "daemon/sse.h"
#include "proto/jsonrpc.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

namespace oppx::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
namespace json = boost::json;
namespace urls = boost::urls;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;
template <class T>
using awaitable = asio::awaitable<T>;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

namespace {

constexpr const char* kAcceptedVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
constexpr std::size_t kMaxErrorBody = 64u << 10;  // an error page is read this far for its message
constexpr std::size_t kMaxInFlight = 32;          // exchanges at once; more wait their turn

struct Target {
  bool tls = false;
  std::string url, host, port, path, origin, host_header;
};

boost::system::result<Target, std::string> parse_target(std::string_view text) {
  auto u = urls::parse_uri(text);
  if (!u) return std::string("it is not an absolute URL (like https://example.com/mcp)");
  std::string scheme(u->scheme());
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme != "http" && scheme != "https")
    return "its scheme is \"" + escape_controls(scheme) + "\", not http or https";
  if (u->has_userinfo()) return std::string("it holds a user name or password; put credentials in \"headers\" instead");
  Target t;
  t.tls = scheme == "https";
  t.url = std::string(text);
  t.host = std::string(u->host_address());
  if (t.host.empty()) return std::string("it has no host");
  const char* default_port = t.tls ? "443" : "80";
  t.port = u->has_port() && !u->port().empty() ? std::string(u->port()) : default_port;
  t.path = std::string(u->encoded_target());
  if (t.path.empty() || t.path.front() != '/') t.path.insert(0, "/");
  bool v6 = u->host_type() == urls::host_type::ipv6;
  t.host_header = (v6 ? "[" + t.host + "]" : t.host) + (t.port == default_port ? "" : ":" + t.port);
  t.origin = scheme + "://" + t.host_header;
  return t;
}

struct Failure {
  std::string kind;  // login | unreachable | timeout | protocol | cancelled
  std::string message;
  unsigned http_status = 0;
  bool retry_fresh = false;  // a reused connection failed before any answer: try a new one once
};

template <class T>
using Outcome = boost::system::result<T, Failure>;

Failure fail(std::string kind, std::string message, unsigned status = 0) {
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
};

struct State : std::enable_shared_from_this<State> {
  State(asio::io_context& io, HttpOptions o, Target t)
      : io(io), opt(std::move(o)), target(std::move(t)), ssl_ctx(ssl::context::tls_client), reinit_done(io) {}
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

  void deliver(std::string line) {
    if (!stopped && handlers.on_line) handlers.on_line(std::move(line));
  }
  void finish(std::string kind, std::string message) {
    if (stopped) return;
    stopped = true;
    for (auto& c : active) c->close();
    for (auto& [o, list] : idle)
      for (auto& c : list) c->close();
    idle.clear();
    reinit_done.cancel();
    if (auto fn = std::move(handlers.on_closed)) {
      // Posted, so that a close() never re-enters its caller (as the NDJSON transport does).
      asio::post(io, [fn, e = TransportError{std::move(kind), std::move(message)}] { fn(e); });
    }
    handlers = {};
  }
};

auto logged(std::string what) {
  return [what](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      log::error("http transport: {} failed: {}", what, x.what());
    }
  };
}

Clock::time_point soonest(Clock::time_point deadline, std::chrono::milliseconds within) {
  return std::min(deadline, Clock::now() + within);
}

std::string seconds(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? fmt::format("{} s", d.count() / 1000) : fmt::format("{:.1f} s", d.count() / 1000.0);
}

// Transport errors read as what happened to whom; never a header value.
Failure net_failure(const State& st, const Target& t, error_code ec, std::string_view phase,
                    Clock::time_point deadline) {
  const HttpTimeouts& to = st.opt.timeouts;
  if (ec == beast::error::timeout) {
    if (Clock::now() >= deadline - std::chrono::milliseconds(5))
      return fail("timeout", fmt::format("{} did not finish answering within {} (the limit on one exchange)", t.origin,
                                         seconds(to.total)));
    // A connect that never completes is a host we cannot reach, not a slow call.
    if (phase == "connect")
      return fail("unreachable", fmt::format("{} did not accept a connection within {}; check the URL and "
                                             "that the server runs",
                                             t.origin, seconds(to.connect)));
    if (phase == "headers")
      return fail("timeout",
                  fmt::format("{} took over {} to send the headers of its answer", t.origin, seconds(to.headers)));
    return fail("timeout",
                fmt::format("{} sent nothing for {} in the middle of an answer", t.origin, seconds(to.idle)));
  }
  if (ec.category() == http::make_error_code(http::error::bad_value).category())
    return fail("protocol", fmt::format("{} sent a malformed HTTP answer ({})", t.origin, ec.message()));
  if (phase == "resolve")
    return fail("unreachable", fmt::format("the host of {} could not be resolved ({}); check the URL and the network",
                                           t.origin, ec.message()));
  if (phase == "connect")
    return fail("unreachable",
                fmt::format("{} is unreachable: {}; check that the server runs and that the URL is right", t.origin,
                            ec.message()));
  return fail("protocol",
              fmt::format("{} closed the connection in the middle of an exchange ({})", t.origin, ec.message()));
}

awaitable<Outcome<std::shared_ptr<Conn>>> connect(std::shared_ptr<State> st, Target t, Clock::time_point deadline) {
  auto c = std::make_shared<Conn>();
  c->origin = t.origin;
  auto resolver = std::make_shared<tcp::resolver>(st->io);
  asio::steady_timer guard(st->io, soonest(deadline, st->opt.timeouts.connect));
  // getaddrinfo runs on Asio's resolver thread and has no timeout of its own: cancel it.
  guard.async_wait([resolver](error_code ec) {
    if (!ec) resolver->cancel();
  });
  auto [rec, endpoints] = co_await resolver->async_resolve(t.host, t.port, kTuple);
  bool late = guard.expiry() <= Clock::now();
  guard.cancel();
  if (st->stopped) co_return fail("cancelled", "the connector was stopped");
  if (rec)
    co_return net_failure(*st, t, late ? error_code(beast::error::timeout) : rec, late ? "connect" : "resolve",
                          deadline);
  if (t.tls) {
    c->tls.emplace(st->io, st->ssl_ctx);
  } else {
    c->plain.emplace(st->io);
  }
  st->active.insert(c);
  c->lowest().expires_at(soonest(deadline, st->opt.timeouts.connect));
  auto [cec, ep] = co_await c->lowest().async_connect(endpoints, kTuple);
  if (cec) co_return net_failure(*st, t, cec, "connect", deadline);
  if (t.tls) {
    // Fail closed: the chain must verify against the system's (or SSL_CERT_FILE's) roots and
    // name this host. SNI is sent for names only (RFC 6066 forbids IP literals in it).
    c->tls->set_verify_mode(ssl::verify_peer);
    c->tls->set_verify_callback(ssl::host_name_verification(t.host));
    error_code ip_ec;
    asio::ip::make_address(t.host, ip_ec);
    if (ip_ec && !SSL_set_tlsext_host_name(c->tls->native_handle(), t.host.c_str()))
      co_return fail("unreachable", "could not set the TLS server name for " + t.origin);
    auto [hec] = co_await c->tls->async_handshake(ssl::stream_base::client, kTuple);
    if (hec) {
      if (hec == beast::error::timeout) co_return net_failure(*st, t, hec, "connect", deadline);
      long verify = SSL_get_verify_result(c->tls->native_handle());
      std::string why = verify != X509_V_OK ? X509_verify_cert_error_string(verify) : hec.message();
      co_return fail("unreachable", fmt::format("the TLS handshake with {} failed: {}; oppx does not connect without a "
                                                "verified certificate (a private CA can be trusted with SSL_CERT_FILE)",
                                                t.origin, why));
    }
  }
  co_return c;
}

awaitable<std::tuple<error_code, std::size_t>> write_request(std::shared_ptr<Conn> c, std::shared_ptr<Request> req) {
  if (c->tls) co_return co_await http::async_write(*c->tls, *req, kTuple);
  co_return co_await http::async_write(*c->plain, *req, kTuple);
}

awaitable<std::tuple<error_code, std::size_t>> read_first_bytes(std::shared_ptr<Conn> c) {
  auto space = c->buffer.prepare(4096);
  std::tuple<error_code, std::size_t> r =
      c->tls ? co_await c->tls->async_read_some(space, kTuple) : co_await c->plain->async_read_some(space, kTuple);
  c->buffer.commit(std::get<1>(r));
  co_return r;
}

awaitable<std::tuple<error_code, std::size_t>> read_header(std::shared_ptr<Conn> c) {
  if (c->tls) co_return co_await http::async_read_header(*c->tls, c->buffer, *c->parser, kTuple);
  co_return co_await http::async_read_header(*c->plain, c->buffer, *c->parser, kTuple);
}

awaitable<std::tuple<error_code, std::size_t>> read_body_some(std::shared_ptr<Conn> c) {
  if (c->tls) co_return co_await http::async_read_some(*c->tls, c->buffer, *c->parser, kTuple);
  co_return co_await http::async_read_some(*c->plain, c->buffer, *c->parser, kTuple);
}

// Writes the request and reads the answer's headers on one connection (a pooled one first).
awaitable<Outcome<std::shared_ptr<Conn>>> roundtrip(std::shared_ptr<State> st, Target t, std::shared_ptr<Request> req,
                                                    Clock::time_point deadline, bool fresh) {
  std::shared_ptr<Conn> c;
  auto& pool = st->idle[t.origin];
  while (!fresh && !c && !pool.empty()) {
    c = pool.back();
    pool.pop_back();
    if (!c->lowest().socket().is_open()) c.reset();
  }
  if (c) {
    c->reused = true;
    st->active.insert(c);
  } else {
    auto made = co_await connect(st, t, deadline);
    if (!made) co_return made.error();
    c = *made;
  }
  c->lowest().expires_at(soonest(deadline, st->opt.timeouts.idle));
  auto [wec, wn] = co_await write_request(c, req);
  if (!wec) {
    // Waiting for the first byte is bounded by the total only: a tool may work long before a
    // JSON answer starts. Once it starts, the headers must follow within the header limit.
    c->lowest().expires_at(deadline);
    auto [fec, fn] = co_await read_first_bytes(c);
    wec = fec;
  }
  if (wec) {
    c->close();
    st->active.erase(c);
    Failure f = net_failure(*st, t, wec, "first byte", deadline);
    f.retry_fresh = c->reused && wec != beast::error::timeout;  // the server had closed an idle connection
    co_return f;
  }
  c->parser.emplace();
  c->parser->body_limit(boost::none);  // bodies are capped by their readers: a stream may be long
  c->lowest().expires_at(soonest(deadline, st->opt.timeouts.headers));
  auto [hec, hn] = co_await read_header(c);
  if (hec) {
    c->close();
    st->active.erase(c);
    co_return net_failure(*st, t, hec, "headers", deadline);
  }
  co_return c;
}

bool valid_session_id(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 0x21 && ch <= 0x7E; });
}

// MCP 2025-11-25: redirects are not mentioned; HTTP semantics apply. 307/308 keep the method
// and body. 301/302 would let a browser turn a POST into a GET, which cannot carry a JSON-RPC
// message, so they are treated as 307 (as most MCP clients do). 303 asks for a GET: not followed.
bool follows(unsigned status) { return status == 301 || status == 302 || status == 307 || status == 308; }

// Opens one exchange: request out, answer's headers in, redirects followed. The body is left on
// the connection for the caller to read.
awaitable<Outcome<Answer>> open(std::shared_ptr<State> st, Ask ask, Clock::time_point deadline) {
  Target t = st->target;
  bool cross = false;  // once another origin was involved, nothing configured is sent again
  for (int hop = 0;; ++hop) {
    auto req = std::make_shared<Request>(ask.verb, t.path, 11);
    if (!cross) {
      for (auto& [k, v] : st->opt.headers) req->set(k, v);
    }
    req->set(http::field::host, t.host_header);
    req->set(http::field::user_agent, "oppx/" OPPX_VERSION);
    req->set(http::field::accept,
             ask.verb == http::verb::get ? "text/event-stream" : "application/json, text/event-stream");
    if (!ask.initialize && !st->session_id.empty() && t.origin == st->session_origin)
      req->set("Mcp-Session-Id", st->session_id);
    if (!ask.initialize && !st->protocol_version.empty()) req->set("MCP-Protocol-Version", st->protocol_version);
    if (!ask.last_event_id.empty()) req->set("Last-Event-ID", ask.last_event_id);
    if (ask.verb == http::verb::post) {
      req->set(http::field::content_type, "application/json");
      req->body() = ask.body;
    }
    req->prepare_payload();

    auto got = co_await roundtrip(st, t, req, deadline, false);
    if (!got && got.error().retry_fresh) got = co_await roundtrip(st, t, req, deadline, true);
    if (!got) co_return got.error();
    auto c = *got;
    if (!ask.request_key.empty()) st->by_request[ask.request_key] = c;
    auto& head = c->parser->get();
    unsigned status = head.result_int();
    if (follows(status) && head.count(http::field::location)) {
      std::string location(head[http::field::location]);
      c->close();
      st->active.erase(c);
      if (hop + 1 > st->opt.max_redirects)
        co_return fail("protocol", fmt::format("{} redirected more than {} times (a loop?); check the URL",
                                               st->target.origin, st->opt.max_redirects));
      auto ref = urls::parse_uri_reference(location);
      auto base = urls::parse_uri(t.url);
      urls::url next;
      if (!ref || !base || !urls::resolve(*base, *ref, next))
        co_return fail("protocol", t.origin + " redirected to an unusable Location");
      auto nt = parse_target(next.buffer());
      if (!nt) co_return fail("protocol", t.origin + " redirected to an unusable URL: " + nt.error());
      if (t.tls && !nt->tls)
        co_return fail("protocol", fmt::format("{} redirected from https to http ({}); refused, so that nothing goes "
                                               "out unencrypted",
                                               t.origin, nt->origin));
      if (nt->origin != st->target.origin && !cross) {
        cross = true;
        log::info("http transport: {} redirected to {}; the configured headers are not sent there", t.origin,
                  nt->origin);
      }
      t = *nt;
      continue;
    }
    Answer a;
    a.conn = c;
    a.status = status;
    a.at = t;
    std::string ct(head[http::field::content_type]);
    a.media_type = ct.substr(0, ct.find(';'));
    a.media_type.erase(a.media_type.find_last_not_of(" \t") + 1);
    std::transform(a.media_type.begin(), a.media_type.end(), a.media_type.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    if (auto it = head.find("Mcp-Session-Id"); it != head.end()) a.session_id = std::string(it->value());
    co_return a;
  }
}

// The next bytes of the body; empty with `done` at its end.
struct Chunk {
  std::string data;
  bool done = false;
};

awaitable<Outcome<Chunk>> next_chunk(std::shared_ptr<State> st, Answer a, Clock::time_point deadline) {
  auto& c = a.conn;
  if (c->parser->is_done()) co_return Chunk{{}, true};
  auto& body = c->parser->get().body();
  body.data = c->chunk.data();
  body.size = c->chunk.size();
  c->lowest().expires_at(soonest(deadline, st->opt.timeouts.idle));
  auto [ec, n] = co_await read_body_some(c);
  if (ec == http::error::need_buffer) ec = {};
  std::size_t got = c->chunk.size() - c->parser->get().body().size;
  if (ec && !(ec == http::error::end_of_stream && got > 0)) co_return net_failure(*st, a.at, ec, "body", deadline);
  co_return Chunk{std::string(c->chunk.data(), got), c->parser->is_done()};
}

// Done with an answer: its connection goes back to the pool when it can carry another.
void release(State& st, const Answer& a) {
  st.active.erase(a.conn);
  if (!st.stopped && a.conn->parser && a.conn->parser->is_done() && a.conn->parser->keep_alive() &&
      st.idle[a.conn->origin].size() < st.opt.max_idle_connections) {
    a.conn->parser.reset();
    st.idle[a.conn->origin].push_back(a.conn);
  } else {
    a.conn->close();
  }
}

awaitable<Outcome<std::string>> read_body(std::shared_ptr<State> st, Answer a, Clock::time_point deadline,
                                          std::size_t cap) {
  std::string body;
  for (;;) {
    auto ch = co_await next_chunk(st, a, deadline);
    if (!ch) co_return ch.error();
    body += ch->data;
    if (body.size() > cap)
      co_return fail("protocol", fmt::format("{} sent an answer over {} MiB; it was cut off", a.at.origin, cap >> 20));
    if (ch->done) co_return Outcome<std::string>(boost::system::in_place_value, std::move(body));
  }
}

// What to say about an error answer: the server's own message when it sent a JSON-RPC error.
std::string server_words(std::string_view body) {
  error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    if (auto* e = v.as_object().if_contains("error"); e && e->is_object()) {
      if (auto* m = e->as_object().if_contains("message"); m && m->is_string())
        return ": \"" + escape_controls(std::string_view(m->as_string()).substr(0, 200)) + "\"";
    }
  }
  return "";
}

struct Outgoing {
  bool request = false;
  json::value id;
  std::string method;
  std::string key;  // proto::id_key(id) for requests
};

Outgoing classify(std::string_view line) {
  Outgoing m;
  error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return m;
  auto& o = v.as_object();
  if (auto* meth = o.if_contains("method"); meth && meth->is_string()) m.method = std::string(meth->as_string());
  if (auto* id = o.if_contains("id");
      id && !m.method.empty() && (id->is_string() || id->is_int64() || id->is_uint64())) {
    m.request = true;
    m.id = *id;
    m.key = proto::id_key(*id);
  }
  return m;
}

// Sees each message of an answer: notes the response to `key` and the version it negotiated.
struct Watch {
  std::string key;
  bool initialize = false;
  bool answered = false;
  std::string version;
  void see(const json::value& v) {
    auto* o = v.if_object();
    if (!o || key.empty()) return;
    auto* id = o->if_contains("id");
    if (!id || o->contains("method") || proto::id_key(*id) != key) return;
    answered = true;
    if (!initialize) return;
    if (auto* r = o->if_contains("result"); r && r->is_object()) {
      if (auto* pv = r->as_object().if_contains("protocolVersion"); pv && pv->is_string()) {
        version = std::string(pv->as_string());
      }
    }
  }
};

// Hands on each message of a JSON body or an event's data; false when it is not JSON.
bool take_messages(State& st, std::string_view text, Watch& w, bool deliver) {
  error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return false;
  auto one = [&](const json::value& m) {
    w.see(m);
    // Known before the peer sees the answer: the messages it sends next carry the version.
    if (w.initialize && st.protocol_version != w.version &&
        std::find(std::begin(kAcceptedVersions), std::end(kAcceptedVersions), w.version) != std::end(kAcceptedVersions))
      st.protocol_version = w.version;
    if (deliver) st.deliver(json::serialize(m));
  };
  if (v.is_array()) {
    for (auto& m : v.as_array()) one(m);
  } else {
    one(v);
  }
  return true;
}

awaitable<Outcome<void>> exchange(std::shared_ptr<State> st, std::string line, Outgoing m, bool deliver,
                                  bool may_reinit);

void start_listening(const std::shared_ptr<State>& st);

// The session expired (HTTP 404, or server-everything's 400 naming the session): start a new one
// with the remembered initialize, once, however many calls noticed it at the same time.
awaitable<bool> reinitialize(std::shared_ptr<State> st, std::string stale) {
  if (st->session_id != stale) co_return !st->session_id.empty();  // someone else did it already
  if (st->reiniting) {
    (void)co_await st->reinit_done.async_wait(kTuple);  // woken by cancel() when it ends
    co_return !st->stopped && !st->session_id.empty();
  }
  if (st->init_line.empty()) co_return false;
  st->reiniting = true;
  st->reinit_done.expires_at(Clock::time_point::max());
  st->session_id.clear();
  log::info("http transport: {} forgot the session; initializing again", st->target.origin);
  auto r = co_await exchange(st, st->init_line, classify(st->init_line), false, false);
  if (r && !st->initialized_line.empty()) {
    auto n = co_await exchange(st, st->initialized_line, classify(st->initialized_line), false, false);
    if (!n) log::warn("http transport: notifications/initialized after a new session failed: {}", n.error().message);
    if (n) start_listening(st);
  }
  if (!r) log::warn("http transport: initializing again failed: {}", r.error().message);
  st->reiniting = false;
  st->reinit_done.cancel();
  co_return r && !st->session_id.empty();
}

// Reads an event stream, handing on its messages, resuming it with Last-Event-ID when it drops
// before the response to a request (MCP: "Resumability and Redelivery").
awaitable<Outcome<void>> read_stream(std::shared_ptr<State> st, Answer a, Watch* w, bool deliver,
                                     Clock::time_point deadline) {
  std::string last_id;
  std::optional<std::uint64_t> retry;
  int resumes = 0;
  for (;;) {
    sse::Parser parser(st->opt.max_body);
    std::vector<sse::Event> events;
    Outcome<void> ended;
    for (;;) {
      auto ch = co_await next_chunk(st, a, deadline);
      if (st->stopped) co_return fail("cancelled", "the connector was stopped");
      if (!ch) {
        ended = ch.error();
        break;
      }
      if (!parser.feed(ch->data, events)) {
        a.conn->close();
        st->active.erase(a.conn);
        co_return fail("protocol", fmt::format("{} sent an event over {} MiB; the stream was closed", a.at.origin,
                                               st->opt.max_body >> 20));
      }
      if (!events.empty()) resumes = 0;  // progress: the resume budget is for drops in a row
      for (auto& e : events) {
        // Events of another type, and the empty "priming" event that only carries an id, are not messages.
        if (e.type != "message" || e.data.find_first_not_of(" \t\r\n") == std::string::npos) continue;
        if (!take_messages(*st, e.data, *w, deliver))
          log::warn("http transport: {} sent an event that is not JSON; skipped", a.at.origin);
      }
      events.clear();
      last_id = parser.last_event_id();
      retry = parser.retry_ms() ? parser.retry_ms() : retry;
      if (ch->done) break;
      // Answered: the server should end the stream now; one that keeps it open is not waited for.
      if (w->answered) deadline = std::min(deadline, Clock::now() + std::chrono::seconds(2));
    }
    bool failed = ended.has_error();
    if (failed) {
      a.conn->close();
      st->active.erase(a.conn);
    } else {
      release(*st, a);
    }
    if (w->answered) co_return Outcome<void>{};  // a stream held open after the response is not waited for
    if (w->key.empty()) co_return ended;         // a notification's stream: nothing to wait for
    bool gave_up = st->closing || st->cancelled.count(w->key) || (failed && ended.error().kind == "timeout");
    if (gave_up && failed) co_return ended.error();
    if (gave_up || last_id.empty() || resumes >= st->opt.max_resumes) {
      co_return fail("protocol", fmt::format("{} ended the event stream before the response{}{}", a.at.origin,
                                             failed ? " (" + ended.error().message + ")" : "",
                                             last_id.empty() ? "; its events had no ids, so it cannot be resumed"
                                                             : fmt::format("; resumed {} times", resumes)));
    }
    ++resumes;
    auto wait = sse::clamp_retry(retry, std::chrono::milliseconds(1000));
    log::info("http transport: {} dropped a stream; resuming after {} ms from event {}", a.at.origin, wait.count(),
              escape_controls(last_id.substr(0, 100)));
    asio::steady_timer timer(st->io, wait);
    co_await timer.async_wait(kTuple);
    if (st->stopped) co_return fail("cancelled", "the connector was stopped");
    Ask ask;
    ask.verb = http::verb::get;
    ask.last_event_id = last_id;
    ask.request_key = w->key;
    auto got = co_await open(st, ask, deadline);
    if (!got) co_return got.error();
    a = *got;
    if (a.status != 200 || a.media_type != "text/event-stream") {
      release(*st, a);
      co_return fail("protocol", fmt::format("{} would not resume the dropped stream (HTTP {})", a.at.origin, a.status),
                     a.status);
    }
  }
}

// One message out and its whole answer in. `deliver` false: the answer is consumed here (the
// re-initialize that the peer never sees).
awaitable<Outcome<void>> exchange(std::shared_ptr<State> st, std::string line, Outgoing m, bool deliver,
                                  bool may_reinit) {
  auto deadline = Clock::now() + st->opt.timeouts.total;
  Ask ask;
  ask.body = line;
  ask.initialize = m.method == "initialize";
  ask.request_key = m.key;
  std::string session = st->session_id;
  auto got = co_await open(st, ask, deadline);
  if (st->stopped) co_return fail("cancelled", "the connector was stopped");
  if (!got) co_return got.error();
  Answer a = *got;
  const std::string& origin = a.at.origin;
  if (a.status >= 200 && a.status < 300 && ask.initialize && a.session_id) {
    // MCP: the session id is visible ASCII (0x21-0x7E). Anything else could split a header.
    if (!valid_session_id(*a.session_id)) {
      a.conn->close();
      st->active.erase(a.conn);
      co_return fail("protocol", origin +
                                     " sent an Mcp-Session-Id with characters outside visible ASCII (control "
                                     "characters, spaces or non-ASCII); oppx refuses that session");
    }
    st->session_id = *a.session_id;
    st->session_origin = a.at.origin;
  }
  if (a.status == 202 || a.status == 204 || ((a.status == 200) && a.conn->parser->is_done() && !m.request)) {
    release(*st, a);
    if (m.request)
      co_return fail("protocol", fmt::format("{} answered HTTP {} to a {} request, with no response in it", origin,
                                             a.status, m.method));
    co_return Outcome<void>{};
  }
  if (a.status < 200 || a.status >= 300) {
    auto body = co_await read_body(st, a, deadline, kMaxErrorBody);
    if (body) release(*st, a);
    std::string words = body ? server_words(*body) : "";
    bool lost_session =
        !session.empty() && (a.status == 404 || (a.status == 400 && body && body->find("ession") != std::string::npos));
    if (lost_session && may_reinit) {
      if (co_await reinitialize(st, session)) co_return co_await exchange(st, line, m, deliver, false);
      co_return fail("protocol",
                     fmt::format("{} forgot the session (HTTP {}) and starting a new one failed", origin, a.status),
                     a.status);
    }
    if (a.status == 401 || a.status == 403)
      co_return fail("login",
                     fmt::format("{} refused the credentials (HTTP {}{}){}; the token in the connector's "
                                 "headers is missing, wrong or expired",
                                 origin, a.status, a.status == 401 ? " Unauthorized" : " Forbidden", words),
                     a.status);
    co_return fail("protocol", fmt::format("{} answered HTTP {}{} to {}", origin, a.status, words, m.method), a.status);
  }
  Watch w{m.key, ask.initialize};
  if (a.media_type == "text/event-stream") {
    auto r = co_await read_stream(st, a, &w, deliver, deadline);
    if (!r) co_return r.error();
  } else if (a.media_type == "application/json") {
    auto body = co_await read_body(st, a, deadline, st->opt.max_body);
    if (!body) co_return body.error();
    release(*st, a);
    if (!body->empty() && !take_messages(*st, *body, w, deliver))
      co_return fail("protocol", origin + " answered with a body that is not valid JSON");
  } else {
    a.conn->close();
    st->active.erase(a.conn);
    std::string what = a.media_type.empty() ? "no Content-Type" : "Content-Type " + escape_controls(a.media_type);
    bool html = a.media_type == "text/html";
    co_return fail("protocol", fmt::format("{} answered with {}{}, not JSON or an event stream; is the URL the "
                                           "server's MCP endpoint?",
                                           origin, html ? "an HTML page" : what, html ? " (" + what + ")" : ""));
  }
  if (m.request && !w.answered)
    co_return fail("protocol", fmt::format("{} ended its answer to {} without a response in it", origin, m.method));
  co_return Outcome<void>{};
}

std::string error_line(const json::value& id, const Failure& f) {
  auto e = proto::RpcError::make(proto::ErrorCode::kInternal, f.kind, f.message);
  if (f.http_status) e.data["http_status"] = f.http_status;
  return proto::serialize_error(id, e);
}

// MCP "Listening for Messages from the Server": a GET opens a stream for what the server sends
// outside any POST (list_changed, log messages, its own requests). 405 means it offers none.
// It lives as long as the session; drops are resumed from the last event id, a few times in a
// row at most; a quiet stream (the idle limit) is simply opened again.
bool live(const State& st, std::uint64_t gen) { return !st.stopped && !st.closing && gen == st.listen_gen; }

awaitable<void> listen(std::shared_ptr<State> st, std::uint64_t gen) {
  std::string last_id;
  std::optional<std::uint64_t> retry;
  int failures = 0;
  while (live(*st, gen) && failures < st->opt.max_resumes) {
    Ask ask;
    ask.verb = http::verb::get;
    ask.last_event_id = last_id;
    auto deadline = Clock::now() + std::chrono::hours(24 * 365);
    auto got = co_await open(st, ask, deadline);
    if (!live(*st, gen)) {
      if (got) got->conn->close(), st->active.erase(got->conn);
      co_return;
    }
    bool progress = false;
    if (got) {
      Answer a = *got;
      if (a.status != 200 || a.media_type != "text/event-stream") {
        release(*st, a);
        log::debug("http transport: {} offers no stream of its own (HTTP {})", a.at.origin, a.status);
        co_return;
      }
      sse::Parser parser(st->opt.max_body);
      std::vector<sse::Event> events;
      for (;;) {
        auto ch = co_await next_chunk(st, a, deadline);
        if (!live(*st, gen)) break;
        if (!ch) {
          progress = progress || ch.error().kind == "timeout";  // quiet, not broken
          break;
        }
        if (!parser.feed(ch->data, events)) break;
        for (auto& e : events) {
          if (e.type != "message" || e.data.find_first_not_of(" \t\r\n") == std::string::npos) continue;
          Watch w;
          if (!take_messages(*st, e.data, w, true))
            log::warn("http transport: {} sent an event that is not JSON; skipped", a.at.origin);
          progress = true;
        }
        events.clear();
        last_id = parser.last_event_id();
        retry = parser.retry_ms() ? parser.retry_ms() : retry;
        if (ch->done) break;
      }
      a.conn->close();
      st->active.erase(a.conn);
    }
    failures = progress ? 0 : failures + 1;
    asio::steady_timer timer(st->io, sse::clamp_retry(retry, std::chrono::milliseconds(1000)));
    co_await timer.async_wait(kTuple);
  }
  if (live(*st, gen))
    log::info("http transport: the server stream of {} dropped {} times in a row; not reopened", st->target.origin,
              failures);
}

void start_listening(const std::shared_ptr<State>& st) {
  asio::co_spawn(st->io, listen(st, ++st->listen_gen), logged("the server stream of " + st->target.origin));
}

awaitable<void> post(std::shared_ptr<State> st, std::string line) {
  Outgoing m = classify(line);
  if (m.method == "initialize") st->init_line = line;
  if (m.method == "notifications/initialized") st->initialized_line = line;
  auto r = co_await exchange(st, line, m, true, true);
  if (r && m.method == "notifications/initialized" && !st->stopped && !st->closing) start_listening(st);
  st->by_request.erase(m.key);
  bool cancelled = !m.key.empty() && st->cancelled.erase(m.key);
  if (!r && !st->stopped) {
    if (m.request) {
      log::warn("http transport: {} failed: {}", m.method, r.error().message);
      st->deliver(
          error_line(m.id, cancelled ? fail("cancelled", m.method + " was cancelled by its caller") : r.error()));
    } else {
      log::warn("http transport: sending {} failed: {}", m.method.empty() ? "a response" : m.method, r.error().message);
    }
  }
}

awaitable<void> run_queue(std::shared_ptr<State> st, std::string line) {
  for (;;) {
    co_await post(st, std::move(line));
    if (st->waiting.empty() || st->stopped) break;
    line = std::move(st->waiting.front());
    st->waiting.pop_front();
  }
  --st->running;
}

// A caller gave up on a request: its exchange is ended, so no connection stays held for it.
void cancel_request(State& st, std::string_view line) {
  error_code ec;
  json::value v = json::parse(line, ec);
  const json::value* id = nullptr;
  if (!ec && v.is_object()) {
    if (auto* p = v.as_object().if_contains("params"); p && p->is_object())
      id = p->as_object().if_contains("requestId");
  }
  if (!id) return;
  std::string key = proto::id_key(*id);
  if (auto it = st.by_request.find(key); it != st.by_request.end()) {
    st.cancelled.insert(key);
    it->second->close();
  }
}

awaitable<void> end_session(std::shared_ptr<State> st) {
  if (!st->session_id.empty()) {
    Ask ask;
    ask.verb = http::verb::delete_;
    auto got = co_await open(st, ask, Clock::now() + st->opt.close_timeout);
    if (got) {
      // MCP: 405 means the server does not let clients end sessions; fine either way.
      log::debug("http transport: DELETE of the session at {}: HTTP {}", got->at.origin, got->status);
      got->conn->close();
      st->active.erase(got->conn);
    }
  }
  st->finish("closed", "closed");
}

class HttpTransport : public Transport {
 public:
  explicit HttpTransport(std::shared_ptr<State> st) : st_(std::move(st)) {}
  ~HttpTransport() override {
    // A close() in progress finishes its DELETE on its own (it holds the State); else end now.
    if (!st_->closing) st_->finish("closed", "closed");
  }
  void start(Handlers handlers) override { st_->handlers = std::move(handlers); }
  bool send(std::string message) override {
    if (st_->stopped || st_->closing) return false;
    if (message.find("\"notifications/cancelled\"") != std::string::npos) cancel_request(*st_, message);
    if (st_->running >= kMaxInFlight) {
      st_->waiting.push_back(std::move(message));
      return true;
    }
    ++st_->running;
    asio::co_spawn(st_->io, run_queue(st_, std::move(message)), logged("a POST to " + st_->target.origin));
    return true;
  }
  void close() override {
    if (st_->stopped || st_->closing) return;
    st_->closing = true;
    for (auto& c : st_->active) c->close();  // calls still in flight end now; their callers are told
    asio::co_spawn(st_->io, end_session(st_), logged("ending the session at " + st_->target.origin));
  }
  void abort() override { st_->finish("closed", "closed"); }

 private:
  std::shared_ptr<State> st_;
};

bool token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

std::string url_origin(std::string_view url) {
  auto t = parse_target(url);
  return t ? t->origin : "the configured URL";
}

boost::system::result<void, std::string> apply_timeout_spec(HttpTimeouts& t, std::string_view spec) {
  while (!spec.empty()) {
    auto comma = spec.find(',');
    std::string_view part = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    auto eq = part.find('=');
    std::string_view name = part.substr(0, eq);
    std::chrono::milliseconds* slot = name == "connect"   ? &t.connect
                                      : name == "headers" ? &t.headers
                                      : name == "idle"    ? &t.idle
                                      : name == "total"   ? &t.total
                                                          : nullptr;
    std::string_view num = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    if (!slot || num.empty() || num.size() > 9 ||
        !std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return "\"" + escape_controls(part) + "\" is not connect=MS, headers=MS, idle=MS or total=MS";
    *slot = std::chrono::milliseconds(std::stol(std::string(num)));
  }
  return {};
}

boost::system::result<std::unique_ptr<Transport>, std::string> make_http_transport(asio::io_context& io,
                                                                                   HttpOptions options) {
  auto target = parse_target(options.url);
  if (!target) return "the url is unusable: " + target.error();
  for (auto& [k, v] : options.headers) {
    if (k.empty() || !std::all_of(k.begin(), k.end(), token_char))
      return "the header name \"" + escape_controls(k) + "\" is not a valid HTTP header name";
    // The value is never shown: it is usually a secret.
    if (v.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
      return "the value of header \"" + k + "\" holds a line break or NUL; remove it";
  }
  auto st = std::make_shared<State>(io, std::move(options), std::move(*target));
  error_code ec;
  st->ssl_ctx.set_default_verify_paths(ec);  // honours SSL_CERT_FILE / SSL_CERT_DIR
  if (ec) log::warn("http transport: the system's CA certificates could not be loaded: {}", ec.message());
  st->ssl_ctx.set_verify_mode(ssl::verify_peer);
  SSL_CTX_set_min_proto_version(st->ssl_ctx.native_handle(), TLS1_2_VERSION);
  return std::unique_ptr<Transport>(new HttpTransport(std::move(st)));
}

}  // namespace oppx::daemon
