// The HTTP side of the streamable HTTP transport: connect (TLS verified, SNI), write a request,
// read the answer's headers and body under the connect/header/idle/total limits, follow
// redirects without carrying headers across origins, and keep idle connections for reuse.
#include "daemon/http_client.h"

#include "common/log.h"
#include "common/text.h"

#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>

#include <poll.h>

namespace oppx::daemon::http_detail {

namespace urls = boost::urls;

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

std::function<void(std::exception_ptr)> logged(std::string what) {
  return [what](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      log::error("http transport: {} failed: {}", what, x.what());
    }
  };
}

namespace {

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
  st->active.insert(c);  // so that an abort can close it while it connects
  struct Forget {
    State& st;
    std::shared_ptr<Conn> c;
    bool keep = false;
    ~Forget() {
      if (!keep) st.active.erase(c);
    }
  } forget{*st, c};
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
      // OpenSSL reads a plain HTTP answer ("HTTP/1.1 400") as a record of an unknown version:
      // the port speaks no TLS, which no certificate would fix.
      if (hec.category() == asio::error::get_ssl_category() &&
          ERR_GET_REASON(static_cast<unsigned long>(hec.value())) == SSL_R_WRONG_VERSION_NUMBER)
        co_return fail("unreachable", fmt::format("{} does not speak TLS (it answered the TLS handshake "
                                                  "in something else, likely plain HTTP); check whether the URL "
                                                  "should start with http://",
                                                  t.origin));
      long verify = SSL_get_verify_result(c->tls->native_handle());
      std::string why = verify != X509_V_OK ? X509_verify_cert_error_string(verify) : hec.message();
      co_return fail("unreachable", fmt::format("the TLS handshake with {} failed: {}; oppx does not connect without a "
                                                "verified certificate (a private CA can be trusted with SSL_CERT_FILE)",
                                                t.origin, why));
    }
  }
  forget.keep = true;
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
awaitable<Outcome<std::shared_ptr<Conn>>> roundtrip(std::shared_ptr<State> st, Target t, std::shared_ptr<Request> req,
                                                    Clock::time_point deadline, bool fresh, bool repeatable,
                                                    bool slow_first_byte) {
  std::shared_ptr<Conn> c;
  auto& pool = st->idle[t.origin];
  while (!fresh && !c && !pool.empty()) {
    c = pool.back();
    pool.pop_back();
    if (!still_open(*c)) {
      log::debug("http transport: a kept-alive connection to {} was closed by the server; not reused", t.origin);
      c->close();
      c.reset();
    }
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
  if (wec) {
    // Not all of the request went out, so the server cannot have acted on it: a reused
    // connection that broke here is replaced, whatever the request.
    st->drop(c);
    Failure f = net_failure(*st, t, wec, "write", deadline);
    f.retry_fresh = c->reused && wec != beast::error::timeout;
    co_return f;
  }
  // The headers limit counts from the request sent: a server that accepts and says nothing is
  // found out there. An answer that may rightly start late (Ask::slow_first_byte) has its first
  // byte bounded by the total only (and by the caller's limit on the call).
  c->lowest().expires_at(slow_first_byte ? deadline : soonest(deadline, st->opt.timeouts.headers));
  auto [fec, fn] = co_await read_first_bytes(c);
  if (fec) {
    st->drop(c);
    Failure f = net_failure(*st, t, fec, slow_first_byte ? "first byte" : "headers", deadline);
    if (fec != beast::error::timeout && !st->stopped && !st->closing) {
      // SPEC §3: the request went out whole, so the server may have run it before it closed.
      // Only what is safe to run twice is sent again (the server had closed an idle connection).
      f.sent = true;
      f.retry_fresh = c->reused && repeatable;
      f.message = fmt::format("{} closed the connection without answering ({})", t.origin, fec.message());
    }
    co_return f;
  }
  if (slow_first_byte) c->lowest().expires_at(soonest(deadline, st->opt.timeouts.headers));
  c->parser.emplace();
  c->parser->body_limit(boost::none);  // bodies are capped by their readers: a stream may be long
  auto [hec, hn] = co_await read_header(c);
  if (hec) {
    st->drop(c);
    co_return net_failure(*st, t, hec, "headers", deadline);
  }
  co_return c;
}

// MCP 2025-11-25: redirects are not mentioned; HTTP semantics apply. 307/308 keep the method
// and body. 301/302 would let a browser turn a POST into a GET, which cannot carry a JSON-RPC
// message, so they are treated as 307 (as most MCP clients do). 303 asks for a GET: not followed.
bool follows(unsigned status) { return status == 301 || status == 302 || status == 307 || status == 308; }

}  // namespace

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
    if (!ask.initialize && sends_version_header(st->protocol_version))
      req->set("MCP-Protocol-Version", st->protocol_version);
    if (!ask.last_event_id.empty()) req->set("Last-Event-ID", ask.last_event_id);
    if (ask.verb == http::verb::post) {
      req->set(http::field::content_type, "application/json");
      req->body() = ask.body;
    }
    req->prepare_payload();

    auto got = co_await roundtrip(st, t, req, deadline, false, ask.repeatable, ask.slow_first_byte);
    if (!got && got.error().retry_fresh) {
      bool sent = got.error().sent;
      log::info("http transport: {} closed a kept-alive connection ({}); sending again on a new one", t.origin,
                got.error().message);
      got = co_await roundtrip(st, t, req, deadline, true, ask.repeatable, ask.slow_first_byte);
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
    if (!ask.request_key.empty()) st->by_request[ask.request_key] = c;
    auto& head = c->parser->get();
    unsigned status = head.result_int();
    if (follows(status) && head.count(http::field::location)) {
      std::string location(head[http::field::location]);
      st->drop(c);
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

}  // namespace oppx::daemon::http_detail
