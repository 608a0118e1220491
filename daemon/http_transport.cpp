// The streamable HTTP transport. One coroutine per message sent (a POST and its answer, read to
// the end), all on the daemon's io_context; a State shared by them holds the session, the idle
// connections and the remembered initialize. Every wait has a deadline; every body is capped.
// Spec: MCP 2025-11-25 "Transports", also 2025-06-18 and 2025-03-26, which differ in the
// MCP-Protocol-Version header and in whether a server may end a stream early. The HTTP itself
// (connections, TLS, limits, redirects) is the one client of common/http_client.h; the MCP session
// (its id, version header, re-initialize, resumption) is here.
// Where callbacks end and coroutines begin: send(), close() and the Handlers are plain callbacks
// (the JSON-RPC peer's side); behind send() each message runs in its own coroutine (co_spawn
// with a logging completion handler), which reports back only through the Handlers.
#include "daemon/http_transport.h"

#include "daemon/mcp_headers.h"
#include "proto/mcp_versions.h"

#include "common/budget.h"
#include "common/http_client.h"
#include "common/log.h"
#include "common/sse.h"
#include "daemon/oauth_discovery.h"
#include "common/text.h"
#include "proto/jsonrpc.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>

// GCC 12 reports -Wmismatched-new-delete on some Asio coroutine frames here, which are allocated
// and freed by the same awaitable_frame_base operators: a known false positive of its coroutine
// lowering, silenced for this file only.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace oppx::daemon {

namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;
using http::awaitable;
using http::Clock;
using http::Failure;
using http::Outcome;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

Failure fail(std::string_view kind, std::string message, unsigned status = 0) {
  return Failure{std::string(kind), std::move(message), status, false, false};
}

// A co_spawn completion handler that logs what escaped a coroutine.
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

// MCP 2025-06-18 added the MCP-Protocol-Version header to every request after initialize;
// 2025-03-26 has none (its servers assume that version when it is missing), so it goes unsent.
bool sends_version_header(std::string_view version) {
  return !version.empty() && version != proto::mcp::kWithoutVersionHeader;
}

// MCP 2025-11-25 (SEP-1699): once it sent an event with an id, a server may end the connection
// of a stream before the response and the client polls (GET with Last-Event-ID after `retry`).
// Earlier versions say the server SHOULD NOT end it early: there every early end is a drop.
bool server_may_poll(std::string_view version) { return version == proto::mcp::kFirstWithPolling; }

// One answer of the server, its body still to read on `ex`.
struct Answer {
  std::shared_ptr<http::Exchange> ex;
  unsigned status = 0;
  std::string media_type;  // lower case, without parameters
  std::optional<std::string> session_id;
  http::Url at;
};

// One HTTP request of an exchange (a message's POST, a stream's GET, the session's DELETE).
struct HttpAsk {
  std::string method = "POST";
  std::string body;
  std::string last_event_id;
  bool initialize = false;  // no session id and no protocol version header on it
  std::string request_key;  // for cancellation: the request this exchange carries
  // Sent again on a new connection after one closed unanswered only when it is safe to run twice
  // (docs/protocol.md, `tools/call`: repeated only when unsent or read-only), as its Message says.
  bool repeatable = true;
  // The answer may rightly start late, so its first byte is not held to the headers limit: a
  // tools/call (the tool may work long first), the server stream's GET and a stream's resumption
  // (a server may send their headers only with the next event).
  bool slow_first_byte = false;
  std::string token;  // the OAuth token it carried (open() sets it)
  // MCP 2026-07-28 (the message's params._meta names it): its headers instead of the session's.
  std::string stateless_version, mcp_method, mcp_name;
  std::vector<std::pair<std::string, std::string>> headers;  // the message's own (Mcp-Param-*)
};

// The session, shared by every exchange of one connector.
struct State : std::enable_shared_from_this<State> {
  State(asio::io_context& io, HttpOptions o, http::Url t)
      : io(io),
        opt(std::move(o)),
        target(std::move(t)),
        client(io, opt.max_idle_connections),
        reinit_done(io),
        stream_answered(io) {}
  asio::io_context& io;
  HttpOptions opt;
  http::Url target;
  http::Client client;
  Transport::Handlers handlers;
  bool stopped = false, closing = false;
  bool stateless = false;  // it speaks MCP 2026-07-28: a cancel ends the exchange, with no notice
  std::string session_id, protocol_version;
  Message init_message, initialized_message;  // remembered for a re-initialize
  std::string session_origin;                 // the session id goes only where it came from (a redirect may move it)
  bool reiniting = false;
  asio::steady_timer reinit_done;  // cancelled when a re-initialize ends, waking who waits on it
  std::map<std::string, std::shared_ptr<http::Exchange>> by_request;
  std::set<std::string> cancelled;
  std::size_t running = 0;
  std::deque<Message> waiting;
  std::uint64_t listen_gen = 0;  // the server stream of the current session; older ones end
  // The server stream (GET) is opened before anything else goes out after notifications/initialized
  // (a server's list_changed right after it is lost otherwise): until its GET is answered, or
  // HttpTimeouts::stream passed, what the peer sends waits in `waiting`.
  bool holding = false;
  bool stream_asked = false;           // the current session's GET went out and is not answered yet
  bool stream_open = false;            // the current session's server stream is open
  bool went_ahead = false;             // messages went ahead before it opened: when it does, opt.on_late_stream
  asio::steady_timer stream_answered;  // cancelled when the GET is answered (any way), waking who waits

  // What the server sent.
  void deliver(std::string line) {
    if (!stopped && handlers.on_line) handlers.on_line(std::move(line));
  }
  // The error answer to a request it could not carry, made here: out of band, so that no
  // server's answer can pass for it.
  void request_failed(const json::value& id, const Failure& f) {
    if (stopped || !handlers.on_request_failed) return;
    auto e = proto::RpcError::make(proto::ErrorCode::kInternal, f.kind, f.message);
    if (f.http_status) e.data["http_status"] = static_cast<std::int64_t>(f.http_status);  // as it reads on a wire
    handlers.on_request_failed(id, std::move(e));
  }
  void finish(std::string kind, std::string message) {
    if (stopped) return;
    stopped = true;
    client.close_all();
    reinit_done.cancel();
    stream_answered.cancel();
    post_closed(io, std::exchange(handlers, {}), TransportError{std::move(kind), std::move(message)});
  }
};

// Opens one exchange with the MCP endpoint: the configured headers (to its origin only), the
// session's, and the answer's headers read; the body is left for the caller.
awaitable<Outcome<Answer>> open(std::shared_ptr<State> st, HttpAsk& ask, Clock::time_point deadline) {
  http::Request req;
  req.method = ask.method;
  req.url = st->target.url;
  for (auto& [k, v] : st->opt.headers) req.headers.push_back({k, v, {}});
  // A token goes only to the origin it was issued for: never after a redirect elsewhere.
  if (st->opt.auth) {
    ask.token = st->opt.auth->token();
    if (!ask.token.empty()) req.headers.push_back({"Authorization", "Bearer " + ask.token, st->target.origin});
  }
  req.headers.push_back(
      {"Accept", ask.method == "GET" ? "text/event-stream" : "application/json, text/event-stream", "*"});
  if (!ask.stateless_version.empty()) {
    // MCP 2026-07-28: no session; the version, the method and its name in headers of their own.
    req.headers.push_back({"MCP-Protocol-Version", ask.stateless_version, "*"});
    req.headers.push_back({"Mcp-Method", ask.mcp_method, "*"});
    if (!ask.mcp_name.empty()) req.headers.push_back({"Mcp-Name", mcp_headers::header_value(ask.mcp_name), "*"});
    for (auto& [k, v] : ask.headers) req.headers.push_back({k, v, "*"});
  } else {
    if (!ask.initialize && !st->session_id.empty())
      req.headers.push_back({"Mcp-Session-Id", st->session_id, st->session_origin});
    if (!ask.initialize && sends_version_header(st->protocol_version))
      req.headers.push_back({"MCP-Protocol-Version", st->protocol_version, "*"});
  }
  if (!ask.last_event_id.empty()) req.headers.push_back({"Last-Event-ID", ask.last_event_id, "*"});
  if (ask.method == "POST") {
    req.headers.push_back({"Content-Type", "application/json", "*"});
    req.body = std::move(ask.body);
  }
  req.timeouts = st->opt.timeouts;
  req.slow_first_byte = ask.slow_first_byte;
  req.repeatable = ask.repeatable;
  req.max_redirects = st->opt.max_redirects;
  auto got = co_await st->client.open(std::move(req), deadline);
  if (!got) co_return got.error();
  Answer a;
  a.ex = std::make_shared<http::Exchange>(std::move(*got));
  a.status = a.ex->status();
  a.media_type = a.ex->media_type();
  a.at = a.ex->head().at;
  for (const auto& h : a.ex->head().headers) {
    if (lower(h.name) == "mcp-session-id") {
      a.session_id = h.value;
      break;
    }
  }
  if (!ask.request_key.empty()) st->by_request[ask.request_key] = a.ex;
  co_return a;
}

constexpr std::size_t kMaxErrorBody = 64u << 10;  // an error page is read this far for its message
constexpr std::size_t kMaxInFlight = 32;          // exchanges at once; more wait their turn

bool valid_session_id(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 0x21 && ch <= 0x7E; });
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

// The key of a request's id (proto::id_key); empty for other messages.
std::string request_key(const Message& m) { return m.is_request() ? proto::id_key(m.id) : std::string(); }

// Sees each message of an answer: notes the response to `key` and the version it negotiated.
struct AnswerSeen {
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
bool take_messages(State& st, std::string_view text, AnswerSeen& w, bool deliver) {
  error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return false;
  auto one = [&](const json::value& m) {
    w.see(m);
    // Known before the peer sees the answer: the messages it sends next carry the version.
    if (w.initialize && st.protocol_version != w.version && proto::mcp::supported(w.version))
      st.protocol_version = w.version;
    if (deliver) st.deliver(proto::json_text(m));
  };
  if (v.is_array()) {
    for (auto& m : v.as_array()) one(m);
  } else {
    one(v);
  }
  return true;
}

awaitable<Outcome<void>> exchange(std::shared_ptr<State> st, Message m, bool deliver, bool may_reinit,
                                  bool may_reauth = true);

// What the connector's OAuth says of a 401 or 403: whether to send the request again (with a new
// token), and why not.
awaitable<std::pair<bool, std::string>> ask_auth(std::shared_ptr<State> st, const Answer& a, std::string sent) {
  HttpAuth::Refusal r{a.status, a.ex->head().header("WWW-Authenticate"), std::move(sent)};
  auto verdict = std::make_shared<std::optional<std::pair<bool, std::string>>>();
  auto woken = std::make_shared<asio::steady_timer>(st->io, Clock::time_point::max());
  st->opt.auth->refused(std::move(r), [verdict, woken](bool again, std::string why) {
    *verdict = std::make_pair(again, std::move(why));
    woken->cancel();
  });
  if (!*verdict) (void)co_await woken->async_wait(kTuple);
  if (st->stopped || !*verdict) co_return std::make_pair(false, std::string("the connector was stopped"));
  co_return **verdict;
}

// A request that went out before its connection closed unanswered may have run, and its
// error says so (whatever came after: a refused new connection reads as if it never arrived).
// One not safe to run twice was not sent again; the connector does not repeat it either.
Failure with_sent_note(Failure f, const Message& m) {
  if (!f.sent || !m.is_request()) return f;
  f.message += fmt::format("; {} had been sent, so it may or may not have run", m.label.empty() ? m.method : m.label);
  if (!m.repeatable) f.message += "; it was not sent again, since the tool is not marked read-only";
  return f;
}

void start_listening(const std::shared_ptr<State>& st);
awaitable<void> wait_for_stream(std::shared_ptr<State> st);

// The session expired (HTTP 404, or server-everything's 400 naming the session): start a new one
// with the remembered initialize, once, however many calls noticed it at the same time.
awaitable<bool> reinitialize(std::shared_ptr<State> st, std::string stale) {
  if (st->session_id != stale) co_return !st->session_id.empty();  // someone else did it already
  if (st->reiniting) {
    (void)co_await st->reinit_done.async_wait(kTuple);  // woken by cancel() when it ends
    co_return !st->stopped && !st->session_id.empty();
  }
  if (st->init_message.text.empty()) co_return false;
  st->reiniting = true;
  st->reinit_done.expires_at(Clock::time_point::max());
  st->session_id.clear();
  log::info("http transport: {} forgot the session; initializing again", st->target.origin);
  auto r = co_await exchange(st, st->init_message, false, false);
  if (r && !st->initialized_message.text.empty()) {
    auto n = co_await exchange(st, st->initialized_message, false, false);
    if (!n) log::warn("http transport: notifications/initialized after a new session failed: {}", n.error().message);
    if (n) {
      start_listening(st);
      co_await wait_for_stream(st);  // as after the first initialize: the stream opens first
    }
  }
  if (!r) log::warn("http transport: initializing again failed: {}", r.error().message);
  st->reiniting = false;
  st->reinit_done.cancel();
  co_return r && !st->session_id.empty();
}

// Reads an event stream, handing on its messages, resuming it with Last-Event-ID when it drops
// before the response to a request (MCP: "Resumability and Redelivery"). The resumptions are
// counted over the whole request, not in a row: a server that sends an event and drops, again
// and again, would otherwise be resumed until the total limit.
awaitable<Outcome<void>> read_stream(std::shared_ptr<State> st, Answer a, AnswerSeen* w, bool deliver,
                                     Clock::time_point deadline) {
  std::string last_id;
  std::optional<std::uint64_t> retry;
  int drops = 0, polls = 0;
  for (;;) {
    sse::Parser parser(st->opt.max_body);
    std::vector<sse::Event> events;
    Outcome<void> ended;
    for (;;) {
      auto ch = co_await a.ex->next_chunk(deadline);
      if (st->stopped) co_return fail(proto::kind::kCancelled, "the connector was stopped");
      if (!ch) {
        ended = ch.error();
        break;
      }
      if (!parser.feed(ch->data, events)) {
        a.ex->abort();
        if (parser.over_budget())
          co_return fail(proto::kind::kTooLarge, over_budget_message(buffer_budget(), "an event from " + a.at.origin));
        co_return fail("protocol", fmt::format("{} sent an event over {} MiB; the stream was closed", a.at.origin,
                                               st->opt.max_body >> 20));
      }
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
      a.ex->abort();
    } else {
      a.ex->release();
    }
    if (w->answered) co_return Outcome<void>{};  // a stream held open after the response is not waited for
    if (w->key.empty()) co_return ended;         // a notification's stream: nothing to wait for
    bool gave_up =
        st->closing || st->cancelled.count(w->key) || (failed && ended.error().kind == proto::kind::kTimeout);
    if (gave_up && failed) co_return ended.error();
    // A clean end after an event id is the server polling when the version allows it; any other
    // end before the response is a drop. Each has its own budget for the request.
    bool poll = !failed && server_may_poll(st->protocol_version);
    int& used = poll ? polls : drops;
    int limit = poll ? st->opt.max_polls : st->opt.max_resumes;
    if (gave_up || last_id.empty() || used >= limit || st->stateless) {
      std::string why;
      if (st->stateless)
        why = "; MCP 2026-07-28 has no resumption of a stream";
      else if (last_id.empty())
        why = "; its events had no ids, so it cannot be resumed";
      else if (used > 0 && poll)
        why = fmt::format("; it did so {} times already, the most oppx follows for one request", used);
      else if (used > 0)
        why = fmt::format("; it was resumed {} times already, the most oppx does for one request", used);
      co_return fail("protocol", fmt::format("{} ended the event stream before the response{}{}", a.at.origin,
                                             failed ? " (" + ended.error().message + ")" : "", why));
    }
    ++used;
    auto wait = sse::clamp_retry(retry, std::chrono::milliseconds(1000));
    log::info("http transport: {} {} a stream; resuming after {} ms from event {}", a.at.origin,
              poll ? "ended (polling)" : "dropped", wait.count(), escape_controls(last_id.substr(0, 100)));
    asio::steady_timer timer(st->io, wait);
    co_await timer.async_wait(kTuple);
    if (st->stopped) co_return fail(proto::kind::kCancelled, "the connector was stopped");
    HttpAsk ask;
    ask.method = "GET";
    ask.last_event_id = last_id;
    ask.request_key = w->key;
    ask.slow_first_byte = true;  // a server may send the headers only with the next event
    auto got = co_await open(st, ask, deadline);
    if (!got) co_return got.error();
    a = *got;
    if (a.status != 200 || a.media_type != "text/event-stream") {
      a.ex->release();
      co_return fail("protocol", fmt::format("{} would not resume the dropped stream (HTTP {})", a.at.origin, a.status),
                     a.status);
    }
  }
}

// One message out and its whole answer in. `deliver` false: the answer is consumed here (the
// re-initialize that the peer never sees).
awaitable<Outcome<void>> exchange(std::shared_ptr<State> st, Message m, bool deliver, bool may_reinit,
                                  bool may_reauth) {
  auto deadline = Clock::now() + st->opt.timeouts.total;
  HttpAsk ask;
  ask.body = m.text;
  ask.initialize = m.method == "initialize";
  ask.request_key = request_key(m);
  ask.slow_first_byte = m.slow_first_byte;
  ask.repeatable = m.repeatable;
  if (m.is_request()) {
    if (auto r = mcp_headers::stateless_request(m.text, m.method)) {
      ask.stateless_version = std::move(r->version);
      ask.mcp_method = m.method;
      ask.mcp_name = std::move(r->name);
    }
  }
  ask.headers = m.headers;
  if (ask.initialize) st->stateless = false;  // the probe found an older server
  std::string session = st->session_id;
  auto got = co_await open(st, ask, deadline);
  if (st->stopped) co_return fail(proto::kind::kCancelled, "the connector was stopped");
  if (!got) co_return with_sent_note(got.error(), m);
  Answer a = *got;
  const std::string& origin = a.at.origin;
  if (!ask.stateless_version.empty() && a.status >= 200 && a.status < 300) st->stateless = true;
  if (a.status >= 200 && a.status < 300 && ask.initialize && a.session_id) {
    // MCP: the session id is visible ASCII (0x21-0x7E). Anything else could split a header.
    if (!valid_session_id(*a.session_id)) {
      a.ex->abort();
      co_return fail("protocol", origin +
                                     " sent an Mcp-Session-Id with characters outside visible ASCII (control "
                                     "characters, spaces or non-ASCII); oppx refuses that session");
    }
    st->session_id = *a.session_id;
    st->session_origin = a.at.origin;
  }
  if (a.status == 202 || a.status == 204 || ((a.status == 200) && a.ex->finished() && !m.is_request())) {
    a.ex->release();
    if (m.is_request())
      co_return fail("protocol", fmt::format("{} answered HTTP {} to a {} request, with no response in it", origin,
                                             a.status, m.method));
    co_return Outcome<void>{};
  }
  if (a.status < 200 || a.status >= 300) {
    auto body = co_await a.ex->read_body(kMaxErrorBody);
    if (body) {
      a.ex->release();
    } else {
      a.ex->abort();
    }
    if (a.status == 400 && body && may_reinit && !ask.stateless_version.empty() &&
        mcp_headers::version_refused_but_listed(*body, ask.stateless_version))
      co_return co_await exchange(st, std::move(m), deliver, false, may_reauth);
    std::string words = body ? server_words(*body) : "";
    bool lost_session =
        !session.empty() && (a.status == 404 || (a.status == 400 && body && body->find("ession") != std::string::npos));
    if (lost_session && may_reinit) {
      if (co_await reinitialize(st, session)) co_return co_await exchange(st, std::move(m), deliver, false);
      co_return fail("protocol",
                     fmt::format("{} forgot the session (HTTP {}) and starting a new one failed", origin, a.status),
                     a.status);
    }
    if ((a.status == 401 || a.status == 403) && st->opt.auth) {
      auto verdict = co_await ask_auth(st, a, ask.token);
      if (verdict.first && may_reauth) co_return co_await exchange(st, std::move(m), deliver, may_reinit, false);
      auto challenge = oauth::parse_bearer_challenge(a.ex->head().header("WWW-Authenticate"));
      bool step_up = a.status == 403 && challenge && challenge->error == "insufficient_scope";
      co_return fail(step_up ? proto::kind::kStepUp : proto::kind::kLogin,
                     fmt::format("{} answered HTTP {}: {}", origin, a.status, verdict.second), a.status);
    }
    if (a.status == 401 || a.status == 403)
      co_return fail(proto::kind::kLogin,
                     fmt::format("{} refused the credentials (HTTP {}{}){}; the token in the connector's "
                                 "headers is missing, wrong or expired",
                                 origin, a.status, a.status == 401 ? " Unauthorized" : " Forbidden", words),
                     a.status);
    std::string hint = a.status == 404 ? "; check the path of the URL" : "";
    co_return fail("protocol", fmt::format("{} answered HTTP {}{} to {}{}", origin, a.status, words, m.method, hint),
                   a.status);
  }
  AnswerSeen w{ask.request_key, ask.initialize};
  if (a.media_type == "text/event-stream") {
    auto r = co_await read_stream(st, a, &w, deliver, deadline);
    if (!r) co_return r.error();
  } else if (a.media_type == "application/json") {
    auto body = co_await a.ex->read_body(st->opt.max_body);
    if (!body) co_return body.error();
    a.ex->release();
    if (!body->empty() && !take_messages(*st, *body, w, deliver))
      co_return fail("protocol", origin + " answered with a body that is not valid JSON");
  } else {
    a.ex->abort();
    std::string what = a.media_type.empty() ? "no Content-Type" : "Content-Type " + escape_controls(a.media_type);
    bool html = a.media_type == "text/html";
    co_return fail("protocol", fmt::format("{} answered with {}{}, not JSON or an event stream; is the URL the "
                                           "server's MCP endpoint?",
                                           origin, html ? "an HTML page" : what, html ? " (" + what + ")" : ""));
  }
  if (m.is_request() && !w.answered)
    co_return fail("protocol", fmt::format("{} ended its answer to {} without a response in it", origin, m.method));
  co_return Outcome<void>{};
}

// MCP "Listening for Messages from the Server": a GET opens a stream for what the server sends
// outside any POST (list_changed, log messages, its own requests). 405 means it offers none.
// It lives as long as the session; drops are resumed from the last event id, a few times in a
// row at most; a quiet stream (the idle limit) is simply opened again, and so is one that a
// 2025-11-25 server ended cleanly after an event id (polling, as for a request's stream).
bool live(const State& st, std::uint64_t gen) { return !st.stopped && !st.closing && gen == st.listen_gen; }

// The current session's GET was answered: whoever holds messages for it is woken. The first time
// the stream opens after messages went ahead without it, the connector hears of it (it fetches
// its tools again: a list_changed sent meanwhile went nowhere).
void note_stream_answer(State& st, bool opened) {
  st.stream_asked = false;
  st.stream_answered.cancel();
  if (!opened || st.stream_open) return;
  st.stream_open = true;
  if (st.went_ahead && st.opt.on_late_stream) {
    log::info("http transport: the server stream of {} opened late; what it announced before may be lost",
              st.target.origin);
    st.opt.on_late_stream();
  }
}

awaitable<void> listen(std::shared_ptr<State> st, std::uint64_t gen) {
  std::string last_id;
  std::optional<std::uint64_t> retry;
  int failures = 0;
  while (live(*st, gen) && failures < st->opt.max_resumes) {
    HttpAsk ask;
    ask.method = "GET";
    ask.last_event_id = last_id;
    ask.slow_first_byte = true;  // a server may send the headers only with its first event
    auto deadline = Clock::now() + std::chrono::hours(24 * 365);
    auto got = co_await open(st, ask, deadline);
    if (!live(*st, gen)) {
      if (got) got->ex->abort();
      co_return;
    }
    bool opened = got && got->status == 200 && got->media_type == "text/event-stream";
    note_stream_answer(*st, opened);
    bool progress = false;
    bool polled = false;
    if (got) {
      Answer a = *got;
      if (!opened) {
        a.ex->release();
        log::debug("http transport: {} offers no stream of its own (HTTP {})", a.at.origin, a.status);
        co_return;
      }
      sse::Parser parser(st->opt.max_body);
      std::vector<sse::Event> events;
      for (;;) {
        auto ch = co_await a.ex->next_chunk(deadline);
        if (!live(*st, gen)) break;
        if (!ch) {
          progress = progress || ch.error().kind == proto::kind::kTimeout;  // quiet, not broken
          break;
        }
        if (!parser.feed(ch->data, events)) {
          log::warn("http transport: the server stream of {} closed: {}", a.at.origin,
                    parser.over_budget() ? over_budget_message(buffer_budget(), "an event")
                                         : fmt::format("an event over {} MiB", st->opt.max_body >> 20));
          break;
        }
        for (auto& e : events) {
          if (e.type != "message" || e.data.find_first_not_of(" \t\r\n") == std::string::npos) continue;
          AnswerSeen w;
          if (!take_messages(*st, e.data, w, true))
            log::warn("http transport: {} sent an event that is not JSON; skipped", a.at.origin);
          progress = true;
        }
        events.clear();
        last_id = parser.last_event_id();
        retry = parser.retry_ms() ? parser.retry_ms() : retry;
        if (ch->done) {
          polled = !last_id.empty() && server_may_poll(st->protocol_version);
          break;
        }
      }
      a.ex->abort();
    }
    failures = progress || polled ? 0 : failures + 1;
    asio::steady_timer timer(st->io, sse::clamp_retry(retry, std::chrono::milliseconds(1000)));
    co_await timer.async_wait(kTuple);
  }
  if (live(*st, gen))
    log::info("http transport: the server stream of {} dropped {} times in a row; not reopened", st->target.origin,
              failures);
}

void start_listening(const std::shared_ptr<State>& st) {
  st->stream_asked = true;
  st->stream_open = st->went_ahead = false;
  asio::co_spawn(st->io, listen(st, ++st->listen_gen), logged("the server stream of " + st->target.origin));
}

// As the official TypeScript SDK does, the server stream's GET goes out right after
// notifications/initialized is accepted and before anything else: a server that announces a
// change right after initialized (server-everything registers tools then) says it on that
// stream. What is sent meanwhile waits here until the GET is answered (opened, refused or
// failed) or HttpTimeouts::stream passed; then it goes ahead, and a stream that opens later
// calls opt.on_late_stream (note_stream_answer).
awaitable<void> wait_for_stream(std::shared_ptr<State> st) {
  if (st->stream_asked) {
    st->stream_answered.expires_after(st->opt.timeouts.stream);
    (void)co_await st->stream_answered.async_wait(kTuple);
  }
  if (st->stream_open || st->stopped || st->closing) co_return;
  st->went_ahead = true;
  if (st->stream_asked)
    log::info("http transport: the server stream of {} did not open within {} ms; requests go ahead without it",
              st->target.origin, st->opt.timeouts.stream.count());
}

void run_waiting(const std::shared_ptr<State>& st);

awaitable<void> post(std::shared_ptr<State> st, Message m) {
  if (m.method == "initialize") st->init_message = m;
  if (m.method == "notifications/initialized") st->initialized_message = m;
  const std::string key = request_key(m);
  auto r = co_await exchange(st, m, true, true);
  if (m.method == "notifications/initialized") {
    if (r && !st->stopped && !st->closing) {
      start_listening(st);
      co_await wait_for_stream(st);
    }
    st->holding = false;  // what waited for the server stream goes now
    run_waiting(st);
  }
  st->by_request.erase(key);
  bool cancelled = !key.empty() && st->cancelled.erase(key);
  if (!r && !st->stopped) {
    if (m.is_request()) {
      log::warn("http transport: {} failed: {}", m.method, r.error().message);
      st->request_failed(m.id, cancelled ? fail("cancelled", m.method + " was cancelled by its caller") : r.error());
    } else {
      log::warn("http transport: sending {} failed: {}", m.method.empty() ? "a response" : m.method, r.error().message);
    }
  }
}

awaitable<void> run_queue(std::shared_ptr<State> st, Message m) {
  for (;;) {
    co_await post(st, std::move(m));
    if (st->waiting.empty() || st->holding || st->stopped || st->closing) break;
    m = std::move(st->waiting.front());
    st->waiting.pop_front();
  }
  --st->running;
}

void run(const std::shared_ptr<State>& st, Message m) {
  ++st->running;
  asio::co_spawn(st->io, run_queue(st, std::move(m)), logged("a POST to " + st->target.origin));
}

// Sends what waits, as many at once as kMaxInFlight allows.
void run_waiting(const std::shared_ptr<State>& st) {
  while (!st->waiting.empty() && st->running < kMaxInFlight && !st->stopped && !st->closing) {
    Message m = std::move(st->waiting.front());
    st->waiting.pop_front();
    run(st, std::move(m));
  }
}

// A caller gave up on a request: its exchange is ended, so no connection stays held for it.
void cancel_request(State& st, const json::value& id) {
  std::string key = proto::id_key(id);
  if (auto it = st.by_request.find(key); it != st.by_request.end()) {
    st.cancelled.insert(key);
    it->second->abort();
  }
}

awaitable<void> end_session(std::shared_ptr<State> st) {
  if (!st->session_id.empty()) {
    HttpAsk ask;
    ask.method = "DELETE";
    auto got = co_await open(st, ask, Clock::now() + st->opt.close_timeout);
    if (got) {
      // MCP: 405 means the server does not let clients end sessions; fine either way.
      log::debug("http transport: DELETE of the session at {}: HTTP {}", got->at.origin, got->status);
      got->ex->abort();
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
  bool send(Message message) override {
    if (st_->stopped || st_->closing) return false;
    if (!message.cancels.is_null()) {
      cancel_request(*st_, message.cancels);
      if (st_->stateless) return true;  // MCP 2026-07-28 over HTTP: closing the stream is the cancel
    }
    if (st_->holding || st_->running >= kMaxInFlight) {
      st_->waiting.push_back(std::move(message));
      return true;
    }
    // What follows notifications/initialized waits for the server stream (wait_for_stream).
    if (message.method == "notifications/initialized") st_->holding = true;
    run(st_, std::move(message));
    return true;
  }
  void close() override {
    if (st_->stopped || st_->closing) return;
    st_->closing = true;
    st_->client.close_all();  // calls still in flight end now; their callers are told
    asio::co_spawn(st_->io, end_session(st_), logged("ending the session at " + st_->target.origin));
  }
  void abort() override { st_->finish("closed", "closed"); }

 private:
  std::shared_ptr<State> st_;
};

}  // namespace

boost::system::result<std::unique_ptr<Transport>, std::string> make_http_transport(asio::io_context& io,
                                                                                   HttpOptions options) {
  auto target = http::parse_url(options.url);
  if (!target) return "the url is unusable: " + target.error();
  for (auto& [k, v] : options.headers) {
    if (k.empty() || !std::all_of(k.begin(), k.end(), http::is_tchar))
      return "the header name \"" + escape_controls(k) + "\" is not a valid HTTP header name";
    // The value is never shown: it is usually a secret.
    if (v.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
      return "the value of header \"" + k + "\" holds a line break or NUL; remove it";
  }
  auto st = std::make_shared<State>(io, std::move(options), std::move(*target));
  return std::unique_ptr<Transport>(new HttpTransport(std::move(st)));
}

}  // namespace oppx::daemon
