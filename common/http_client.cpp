// The HTTP client: connect (TLS verified, SNI), write a request, read the answer's headers and
// body under the connect/headers/idle/total limits, follow redirects without carrying headers
// across origins, keep idle connections for reuse; and the blocking fetch built on it. Every
// wait is a coroutine on the caller's io_context; a Conn is touched only from that thread.
#include "common/http_client.h"

#include "common/budget.h"
#include "common/http_wire.h"
#include "common/log.h"
#include "common/text.h"
#include "proto/jsonrpc.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <poll.h>

namespace oppx::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
namespace urls = boost::urls;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using wire::kTuple;

boost::system::result<Url, std::string> parse_url(std::string_view text) {
  auto u = urls::parse_uri(text);
  if (!u) return std::string("it is not an absolute URL (like https://example.com/mcp)");
  std::string scheme = lower(u->scheme());
  if (scheme != "http" && scheme != "https")
    return "its scheme is \"" + escape_controls(scheme) + "\", not http or https";
  if (u->has_userinfo()) return std::string("it holds a user name or password; put credentials in \"headers\" instead");
  Url t;
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

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool iequals(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == lower(y); });
}

std::string origin_of(std::string_view url) {
  auto t = parse_url(url);
  return t ? t->origin : std::string();
}

std::string Response::header(std::string_view name) const {
  for (const auto& h : headers) {
    if (lower(h.name) == lower(name)) return h.value;
  }
  return {};
}

struct Conn {
  std::string origin;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  std::optional<wire::ResponseParser> parser;
  std::array<char, 16384> space{};
  bool reused = false;
  bool aborted = false;

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  void close() {
    error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().close();
  }
};

// The TLS client context with the system's roots (or SSL_CERT_FILE's / SSL_CERT_DIR's): loading
// them parses a bundle of some hundred certificates, so it is done once and shared by every
// client, and again only when those variables change (a test, a chat that sets them). `error`:
// why the roots could not be loaded, for the caller to log (this may run on any thread).
struct TlsRoots {
  std::shared_ptr<ssl::context> ctx;
  std::string error;
};

static TlsRoots tls_roots() {
  static std::mutex mutex;
  static TlsRoots loaded;
  static std::string loaded_for;
  auto var = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? "=" + std::string(v) : std::string("unset");
  };
  std::string key = var("SSL_CERT_FILE") + '\n' + var("SSL_CERT_DIR");
  std::lock_guard lock(mutex);
  if (loaded.ctx && key == loaded_for) return loaded;
  TlsRoots made{std::make_shared<ssl::context>(ssl::context::tls_client), {}};
  error_code ec;
  made.ctx->set_default_verify_paths(ec);
  if (ec) made.error = ec.message();
  made.ctx->set_verify_mode(ssl::verify_peer);
  SSL_CTX_set_min_proto_version(made.ctx->native_handle(), TLS1_2_VERSION);
  loaded = made;
  loaded_for = key;
  return made;
}

struct Shared {
  explicit Shared(asio::io_context& io, std::size_t max_idle) : io(io), max_idle(max_idle) {}
  // The roots on the first https exchange: a plain-http client (oppx -p to a model server on
  // the LAN) never parses the bundle.
  ssl::context& tls() {
    if (!ssl_ctx) {
      auto roots = tls_roots();
      ssl_ctx = roots.ctx;
      if (!roots.error.empty()) log::warn("http: the system's certificate roots could not be loaded: {}", roots.error);
    }
    return *ssl_ctx;
  }
  asio::io_context& io;
  std::shared_ptr<ssl::context> ssl_ctx;
  std::size_t max_idle;
  bool closed = false;
  std::map<std::string, std::vector<std::shared_ptr<Conn>>> idle;
  std::set<std::shared_ptr<Conn>> active;

  void drop(const std::shared_ptr<Conn>& c) {
    c->close();
    active.erase(c);
  }
};

namespace {

Failure fail(std::string_view kind, std::string message, unsigned status = 0) {
  return Failure{std::string(kind), std::move(message), status, false, false};
}

Clock::time_point soonest(Clock::time_point deadline, std::chrono::milliseconds within) {
  auto now = Clock::now();
  return within.count() <= 0 || deadline - now < within ? deadline : now + within;
}

std::string size_words(std::size_t n) {
  return n >= (1u << 20) && n % (1u << 20) == 0 ? fmt::format("{} MiB", n >> 20) : fmt::format("{} bytes", n);
}

std::string seconds(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? fmt::format("{} s", d.count() / 1000) : fmt::format("{:.1f} s", d.count() / 1000.0);
}

// Transport errors read as what happened to whom; never a header value.
Failure net_failure(const Timeouts& to, const Url& t, error_code ec, std::string_view phase, Clock::time_point deadline,
                    bool aborted) {
  if (aborted || ec == asio::error::operation_aborted)
    return fail(proto::kind::kCancelled, "the exchange with " + t.origin + " was cancelled");
  if (ec == beast::error::timeout) {
    if (Clock::now() >= deadline - std::chrono::milliseconds(5))
      return fail(proto::kind::kTimeout,
                  fmt::format("{} did not finish answering within {} (the limit on one exchange)", t.origin,
                              seconds(to.total)));
    // A connect that never completes is a host we cannot reach, not a slow call.
    if (phase == "connect")
      return fail(proto::kind::kUnreachable, fmt::format("{} did not accept a connection within {}; check the URL and "
                                                         "that the server runs",
                                                         t.origin, seconds(to.connect)));
    if (phase == "headers")
      return fail(proto::kind::kTimeout,
                  fmt::format("{} took over {} to send the headers of its answer", t.origin, seconds(to.headers)));
    return fail(proto::kind::kTimeout,
                fmt::format("{} sent nothing for {} in the middle of an answer", t.origin, seconds(to.idle)));
  }
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_value).category())
    return fail("protocol", fmt::format("{} sent a malformed HTTP answer ({})", t.origin, ec.message()));
  if (phase == "resolve")
    return fail(proto::kind::kUnreachable,
                fmt::format("the host of {} could not be resolved ({}); check the URL and the network", t.origin,
                            ec.message()));
  if (phase == "connect")
    return fail(proto::kind::kUnreachable,
                fmt::format("{} is unreachable: {}; check that the server runs and that the URL is right", t.origin,
                            ec.message()));
  return fail("protocol",
              fmt::format("{} closed the connection in the middle of an exchange ({})", t.origin, ec.message()));
}

awaitable<Outcome<std::shared_ptr<Conn>>> connect(std::shared_ptr<Shared> sh, Url t, Timeouts to,
                                                  Clock::time_point deadline) {
  auto c = std::make_shared<Conn>();
  c->origin = t.origin;
  auto resolver = std::make_shared<tcp::resolver>(sh->io);
  asio::steady_timer guard(sh->io, soonest(deadline, to.connect));
  // getaddrinfo runs on Asio's resolver thread and has no timeout of its own: cancel it.
  guard.async_wait([resolver](error_code ec) {
    if (!ec) resolver->cancel();
  });
  auto [rec, endpoints] = co_await resolver->async_resolve(t.host, t.port, kTuple);
  bool late = guard.expiry() <= Clock::now();
  guard.cancel();
  if (sh->closed) co_return fail(proto::kind::kCancelled, "the exchange with " + t.origin + " was cancelled");
  if (rec)
    co_return net_failure(to, t, late ? error_code(beast::error::timeout) : rec, late ? "connect" : "resolve", deadline,
                          false);
  if (t.tls) {
    c->tls.emplace(sh->io, sh->tls());
  } else {
    c->plain.emplace(sh->io);
  }
  sh->active.insert(c);  // so that close_all() can close it while it connects
  struct Forget {
    Shared& sh;
    std::shared_ptr<Conn> c;
    bool keep = false;
    ~Forget() {
      if (!keep) sh.active.erase(c);
    }
  } forget{*sh, c};
  c->lowest().expires_at(soonest(deadline, to.connect));
  auto [cec, ep] = co_await c->lowest().async_connect(endpoints, kTuple);
  if (cec) co_return net_failure(to, t, cec, "connect", deadline, c->aborted);
  if (t.tls) {
    // Fail closed: the chain must verify against the system's (or SSL_CERT_FILE's) roots and
    // name this host. SNI is sent for names only (RFC 6066 forbids IP literals in it).
    c->tls->set_verify_mode(ssl::verify_peer);
    c->tls->set_verify_callback(ssl::host_name_verification(t.host));
    error_code ip_ec;
    asio::ip::make_address(t.host, ip_ec);
    if (ip_ec && !SSL_set_tlsext_host_name(c->tls->native_handle(), t.host.c_str()))
      co_return fail(proto::kind::kUnreachable, "could not set the TLS server name for " + t.origin);
    auto [hec] = co_await c->tls->async_handshake(ssl::stream_base::client, kTuple);
    if (hec) {
      if (hec == beast::error::timeout || c->aborted)
        co_return net_failure(to, t, hec, "connect", deadline, c->aborted);
      // OpenSSL reads a plain HTTP answer ("HTTP/1.1 400") as a record of an unknown version:
      // the port speaks no TLS, which no certificate would fix.
      if (hec.category() == asio::error::get_ssl_category() &&
          ERR_GET_REASON(static_cast<unsigned long>(hec.value())) == SSL_R_WRONG_VERSION_NUMBER)
        co_return fail(proto::kind::kUnreachable,
                       fmt::format("{} does not speak TLS (it answered the TLS handshake "
                                   "in something else, likely plain HTTP); check whether the URL "
                                   "should start with http://",
                                   t.origin));
      long verify = SSL_get_verify_result(c->tls->native_handle());
      std::string why = verify != X509_V_OK ? X509_verify_cert_error_string(verify) : hec.message();
      co_return fail(proto::kind::kUnreachable,
                     fmt::format("the TLS handshake with {} failed: {}; oppx does not connect without a "
                                 "verified certificate (a private CA can be trusted with SSL_CERT_FILE)",
                                 t.origin, why));
    }
  }
  forget.keep = true;
  co_return c;
}

using WireRequest = bhttp::request<bhttp::string_body>;

awaitable<std::tuple<error_code, std::size_t>> write_request(std::shared_ptr<Conn> c,
                                                             std::shared_ptr<WireRequest> req) {
  if (c->tls) co_return co_await bhttp::async_write(*c->tls, *req, kTuple);
  co_return co_await bhttp::async_write(*c->plain, *req, kTuple);
}

awaitable<std::tuple<error_code, std::size_t>> read_first_bytes(std::shared_ptr<Conn> c) {
  auto space = c->buffer.prepare(4096);
  std::tuple<error_code, std::size_t> r =
      c->tls ? co_await c->tls->async_read_some(space, kTuple) : co_await c->plain->async_read_some(space, kTuple);
  c->buffer.commit(std::get<1>(r));
  co_return r;
}

awaitable<error_code> read_head(std::shared_ptr<Conn> c) {
  if (c->tls) co_return co_await wire::read_head(*c->tls, c->buffer, *c->parser);
  co_return co_await wire::read_head(*c->plain, c->buffer, *c->parser);
}

awaitable<error_code> read_piece(std::shared_ptr<Conn> c, std::string& out, bool& done) {
  if (c->tls) co_return co_await wire::read_piece(*c->tls, c->buffer, *c->parser, c->space, out, done);
  co_return co_await wire::read_piece(*c->plain, c->buffer, *c->parser, c->space, out, done);
}

// A kept-alive connection that the server closed while it sat in the pool is readable: EOF, an
// error, or bytes nobody asked for (a 408, a TLS close_notify). A request written on it races
// the close and may or may not be read, so it is not used. One that is not readable is open.
bool still_open(Conn& c) {
  auto& s = c.lowest().socket();
  if (!s.is_open() || c.buffer.size() > 0) return false;
  if (c.tls && SSL_pending(c.tls->native_handle()) > 0) return false;
  pollfd p{s.native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

// Writes the request and reads the answer's headers on one connection (a pooled one first).
awaitable<Outcome<std::shared_ptr<Conn>>> roundtrip(std::shared_ptr<Shared> sh, Url t, std::shared_ptr<WireRequest> req,
                                                    Timeouts to, Clock::time_point deadline, bool fresh,
                                                    bool repeatable, bool slow_first_byte) {
  std::shared_ptr<Conn> c;
  auto& pool = sh->idle[t.origin];
  while (!fresh && !c && !pool.empty()) {
    c = pool.back();
    pool.pop_back();
    if (!still_open(*c)) {
      log::debug("http: a kept-alive connection to {} was closed by the server; not reused", t.origin);
      c->close();
      c.reset();
    }
  }
  if (c) {
    c->reused = true;
    sh->active.insert(c);
  } else {
    auto made = co_await connect(sh, t, to, deadline);
    if (!made) co_return made.error();
    c = *made;
  }
  c->lowest().expires_at(soonest(deadline, to.idle));
  auto [wec, wn] = co_await write_request(c, req);
  if (wec) {
    // Not all of the request went out, so the server cannot have acted on it: a reused
    // connection that broke here is replaced, whatever the request.
    sh->drop(c);
    Failure f = net_failure(to, t, wec, "write", deadline, c->aborted);
    f.retry_fresh = c->reused && wec != beast::error::timeout && !c->aborted;
    co_return f;
  }
  // The headers limit counts from the request sent: a server that accepts and says nothing is
  // found out there. An answer that may rightly start late has its first byte bounded by the
  // total only.
  c->lowest().expires_at(slow_first_byte ? deadline : soonest(deadline, to.headers));
  auto [fec, fn] = co_await read_first_bytes(c);
  if (fec) {
    sh->drop(c);
    Failure f = net_failure(to, t, fec, slow_first_byte ? "first byte" : "headers", deadline, c->aborted);
    if (fec != beast::error::timeout && !c->aborted && !sh->closed) {
      // The request went out whole, so the server may have run it before it closed. Only what
      // is safe to run twice is sent again (the server had closed an idle connection).
      f.sent = true;
      f.retry_fresh = c->reused && repeatable;
      f.message = fmt::format("{} closed the connection without answering ({})", t.origin, fec.message());
    }
    co_return f;
  }
  if (slow_first_byte) c->lowest().expires_at(soonest(deadline, to.headers));
  c->parser.emplace();
  auto hec = co_await read_head(c);
  if (hec) {
    sh->drop(c);
    co_return net_failure(to, t, hec, "headers", deadline, c->aborted);
  }
  co_return c;
}

// Redirects: 307/308 keep the method and body. 301/302 would let a browser turn a POST into a
// GET, which cannot carry a JSON body, so they are treated as 307 (as most API clients do).
// 303 asks for a GET: not followed.
bool follows(unsigned status) { return status == 301 || status == 302 || status == 307 || status == 308; }

bool sends_body(const std::string& method) { return method != "GET" && method != "HEAD"; }

}  // namespace

Exchange::Exchange(Exchange&& o) noexcept
    : shared_(std::move(o.shared_)),
      conn_(std::move(o.conn_)),
      head_(std::move(o.head_)),
      timeouts_(o.timeouts_),
      deadline_(o.deadline_) {}

Exchange& Exchange::operator=(Exchange&& o) noexcept {
  if (this != &o) {
    release();
    shared_ = std::move(o.shared_);
    conn_ = std::move(o.conn_);
    head_ = std::move(o.head_);
    timeouts_ = o.timeouts_;
    deadline_ = o.deadline_;
  }
  return *this;
}

Exchange::~Exchange() { release(); }

awaitable<Outcome<Chunk>> Exchange::next_chunk(Clock::time_point by) {
  auto c = conn_;
  if (!c || c->aborted || !c->parser)
    co_return fail(proto::kind::kCancelled, "the exchange with " + head_.at.origin + " was cancelled");
  auto deadline = std::min(deadline_, by);
  c->lowest().expires_at(soonest(deadline, timeouts_.idle));
  Chunk out;
  auto ec = co_await read_piece(c, out.data, out.done);
  if (ec) co_return net_failure(timeouts_, head_.at, ec, "body", deadline, c->aborted);
  co_return out;
}

awaitable<Outcome<std::string>> Exchange::read_body(std::size_t cap) {
  std::string body;
  BudgetShare share;  // the body, while it is read (budget.h)
  for (;;) {
    auto ch = co_await next_chunk();
    if (!ch) co_return ch.error();
    if (!share.set(body.size() + ch->data.size())) {
      abort();
      co_return fail("too_large", over_budget_message(buffer_budget(), "the answer of " + head_.at.origin));
    }
    body += ch->data;
    if (body.size() > cap)
      co_return fail("protocol",
                     fmt::format("{} sent an answer over {}; it was cut off", head_.at.origin, size_words(cap)));
    if (ch->done) co_return Outcome<std::string>(boost::system::in_place_value, std::move(body));
  }
}

bool Exchange::finished() const { return conn_ && conn_->parser && conn_->parser->is_done(); }

void Exchange::abort() {
  if (!conn_) return;
  conn_->aborted = true;
  conn_->close();
}

void Exchange::release() {
  if (!conn_ || !shared_) return;
  auto c = std::move(conn_);
  shared_->active.erase(c);
  auto& pool = shared_->idle[c->origin];
  if (!shared_->closed && !c->aborted && c->parser && c->parser->is_done() && c->parser->keep_alive() &&
      pool.size() < shared_->max_idle) {
    c->parser.reset();
    c->reused = false;
    pool.push_back(c);
  } else {
    c->close();
  }
  shared_.reset();
}

void load_tls_roots() { (void)tls_roots(); }

Client::Client(asio::io_context& io, std::size_t max_idle_per_origin)
    : shared_(std::make_shared<Shared>(io, max_idle_per_origin)) {}

Client::~Client() { close_all(); }

void Client::close_all() {
  shared_->closed = true;
  for (auto& c : shared_->active) {
    c->aborted = true;
    c->close();
  }
  shared_->active.clear();
  for (auto& [o, list] : shared_->idle)
    for (auto& c : list) c->close();
  shared_->idle.clear();
  // A closed client may be used again: new exchanges open new connections.
  shared_->closed = false;
}

awaitable<Outcome<Exchange>> Client::open(Request req, Clock::time_point deadline) {
  auto sh = shared_;
  if (deadline == Clock::time_point::max()) deadline = soonest(deadline, req.timeouts.total);
  auto first = parse_url(req.url);
  if (!first) co_return fail("protocol", "the URL cannot be used: " + first.error());
  Url t = *first;
  const std::string home = t.origin;
  bool cross = false;  // once another origin was involved, the headers bound to none are not sent again
  for (int hop = 0;; ++hop) {
    auto wreq = std::make_shared<WireRequest>(bhttp::string_to_verb(req.method), t.path, 11);
    if (wreq->method() == bhttp::verb::unknown) wreq->method_string(req.method);
    for (const auto& h : req.headers) {
      if (h.origin == "*" || (h.origin.empty() ? !cross : h.origin == t.origin)) wreq->set(h.name, h.value);
    }
    wreq->set(bhttp::field::host, t.host_header);
    wreq->set(bhttp::field::user_agent, "oppx/" OPPX_VERSION);
    if (sends_body(req.method)) wreq->body() = req.body;
    wreq->prepare_payload();

    auto got = co_await roundtrip(sh, t, wreq, req.timeouts, deadline, false, req.repeatable, req.slow_first_byte);
    if (!got && got.error().retry_fresh) {
      bool sent = got.error().sent;
      log::info("http: {} closed a kept-alive connection ({}); sending again on a new one", t.origin,
                got.error().message);
      got = co_await roundtrip(sh, t, wreq, req.timeouts, deadline, true, req.repeatable, req.slow_first_byte);
      if (!got && sent) {
        // What the new connection met (even a refusal) must not read as if the request never
        // reached the server: it did, on the first one.
        Failure f = got.error();
        f.sent = true;
        co_return f;
      }
    }
    if (!got) co_return got.error();
    auto c = *got;
    auto& head = c->parser->get();
    unsigned status = head.result_int();
    if (follows(status) && head.count(bhttp::field::location)) {
      std::string location(head[bhttp::field::location]);
      sh->drop(c);
      if (hop + 1 > req.max_redirects)
        co_return fail("protocol", fmt::format("{} redirected more than {} times (a loop?); check the URL", home,
                                               req.max_redirects));
      auto ref = urls::parse_uri_reference(location);
      auto base = urls::parse_uri(t.url);
      urls::url next;
      if (!ref || !base || !urls::resolve(*base, *ref, next))
        co_return fail("protocol", t.origin + " redirected to an unusable Location");
      auto nt = parse_url(next.buffer());
      if (!nt) co_return fail("protocol", t.origin + " redirected to an unusable URL: " + nt.error());
      if (t.tls && !nt->tls)
        co_return fail("protocol", fmt::format("{} redirected from https to http ({}); refused, so that nothing goes "
                                               "out unencrypted",
                                               t.origin, nt->origin));
      if (nt->origin != home && !cross) {
        cross = true;
        log::info("http: {} redirected to {}; the request's own headers are not sent there", t.origin, nt->origin);
      }
      t = *nt;
      continue;
    }
    Exchange ex;
    ex.shared_ = sh;
    ex.conn_ = c;
    ex.head_ = wire::head_of(*c->parser);
    ex.head_.at = t;
    ex.timeouts_ = req.timeouts;
    ex.deadline_ = deadline;
    co_return ex;
  }
}

namespace {

// Runs one exchange on an io_context of its own, to its end.
Outcome<Response> run_blocking(const Request& req, const std::function<bool(std::string_view)>* on_chunk,
                               std::size_t max_body) {
  asio::io_context io;
  Client client(io);
  std::optional<Outcome<Response>> result;
  auto work = [&]() -> awaitable<void> {
    auto ex = co_await client.open(req);
    if (!ex) {
      result = ex.error();
      co_return;
    }
    Response r = ex->head();
    for (;;) {
      auto ch = co_await ex->next_chunk();
      if (!ch) {
        result = ch.error();
        co_return;
      }
      if (on_chunk) {
        if (!ch->data.empty() && !(*on_chunk)(ch->data)) {
          ex->abort();
          break;
        }
      } else {
        r.body += ch->data;
        if (r.body.size() > max_body) {
          result = fail("protocol",
                        fmt::format("{} sent an answer over {}; it was cut off", r.at.origin, size_words(max_body)));
          co_return;
        }
      }
      if (ch->done) break;
    }
    result = std::move(r);
  };
  asio::co_spawn(io, work(), [&](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      result = fail("protocol", std::string("the HTTP client failed: ") + x.what());
    }
  });
  io.run();
  if (!result) return fail("protocol", "the HTTP exchange ended without an answer");
  return std::move(*result);
}

}  // namespace

Outcome<Response> fetch(const Request& req, std::size_t max_body) { return run_blocking(req, nullptr, max_body); }

Outcome<Response> fetch(const Request& req, const std::function<bool(std::string_view)>& on_chunk) {
  return run_blocking(req, &on_chunk, 0);
}

}  // namespace oppx::http
