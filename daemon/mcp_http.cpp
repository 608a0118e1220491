// McpHttp: an acceptor on the MCP socket, one coroutine per connection reading HTTP/1.1 requests
// with Beast, and per MCP session a Transport (SessionLink) that routes what the session's server
// sends: a response to the event stream of the POST that carried its request (which it ends); a
// progress notification to the stream of the request that gave its token; a request (a question
// asked while a call runs) to the newest POST stream still open, else the GET stream; any other
// notification to the GET stream, else the newest POST stream, else kept (at most kMaxKept) until
// a GET stream opens. A stream owns its socket and writes in order, its head first, as chunked
// event stream; one whose client stops reading (kMaxQueued) is ended.
#include "daemon/mcp_http.h"

#include "common/log.h"
#include "common/mcp_serve.h"
#include "common/paths.h"
#include "daemon/mcp_stdio.h"
#include "daemon/server.h"
#include "proto/daemon_api.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include <fmt/format.h>

#include <openssl/rand.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>

// As in http_transport.cpp: GCC 12's false positive on Asio's coroutine frames.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace oppx::daemon {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
using unix_socket = asio::local::stream_protocol;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kMaxBody = 4u << 20;
constexpr std::size_t kMaxKept = 256;  // messages waiting for a stream
constexpr std::size_t kMaxSessions = 64;

// A session with no request for this long and no stream open ends (its client, back, gets 404 and
// opens a new one, as MCP says): 30 minutes, or OPPX_TEST_MCP_SESSION_IDLE_MS from the daemon's
// environment, so that a test sees it end without waiting half an hour.
std::chrono::milliseconds session_idle_limit() {
  static const std::chrono::milliseconds limit = [] {
    const char* v = std::getenv("OPPX_TEST_MCP_SESSION_IDLE_MS");
    return std::chrono::milliseconds(v && *v ? std::max(1L, std::strtol(v, nullptr, 10)) : 30L * 60 * 1000);
  }();
  return limit;
}
constexpr std::size_t kMaxQueued = 8u << 20;  // bytes waiting on one stream

// One event stream of a response, written in order (its head first); `done` is cancelled once it
// has ended (its last chunk written, or a write failed), which wakes the connection's coroutine.
struct Stream : std::enable_shared_from_this<Stream> {
  using Socket = std::shared_ptr<unix_socket::socket>;
  Stream(Socket sock, asio::io_context& io) : sock(std::move(sock)), done(io) {
    done.expires_at(asio::steady_timer::time_point::max());
  }
  Socket sock;
  asio::steady_timer done;
  std::deque<std::string> queue;
  std::size_t queued = 0;
  bool writing = false, finishing = false, ended = false, failed = false;

  void head(std::string text) { enqueue(std::move(text)); }
  void push(std::string_view message) {
    if (finishing || ended) return;
    std::string event = fmt::format("event: message\ndata: {}\n\n", message);
    enqueue(fmt::format("{:x}\r\n{}\r\n", event.size(), event));
  }
  void finish() {
    if (finishing || ended) return;
    finishing = true;
    enqueue("0\r\n\r\n");
  }
  bool open() const { return !finishing && !ended; }

 private:
  void enqueue(std::string text) {
    if (ended) return;
    queued += text.size();
    queue.push_back(std::move(text));
    if (queued > kMaxQueued) {
      log::warn("MCP over HTTP: a client stopped reading its stream ({} bytes waiting); the stream is ended", queued);
      return end(true);
    }
    pump();
  }
  void pump() {
    if (writing || queue.empty() || ended) return;
    writing = true;
    asio::async_write(*sock, asio::buffer(queue.front()),
                      [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                        self->writing = false;
                        if (self->ended) return;
                        self->queued -= self->queue.front().size();
                        self->queue.pop_front();
                        if (ec) return self->end(true);
                        if (self->finishing && self->queue.empty()) return self->end(false);
                        self->pump();
                      });
  }
  void end(bool failure) {
    ended = true;
    failed = failure;
    queue.clear();
    done.cancel();
  }
};

// The session's side of the client: what the HTTP requests deliver, and the streams its server's
// messages go to.
struct SessionState {
  std::string id;
  Transport::Handlers handlers;
  bool started = false, closed = false;
  std::map<std::string, std::shared_ptr<Stream>> by_request;  // proto::id_key -> its POST's stream
  std::map<std::string, std::weak_ptr<Stream>> by_progress;   // a request's progressToken (id_key form)
  std::vector<std::weak_ptr<Stream>> posts;                   // POST streams, oldest first
  std::weak_ptr<Stream> standalone;                           // the GET stream
  std::deque<std::string> kept;
  std::shared_ptr<McpServe> serve;
  std::chrono::steady_clock::time_point last_used = std::chrono::steady_clock::now();

  std::shared_ptr<Stream> newest_post() {
    std::erase_if(posts, [](const std::weak_ptr<Stream>& w) {
      auto s = w.lock();
      return !s || !s->open();
    });
    return posts.empty() ? nullptr : posts.back().lock();
  }
  std::shared_ptr<Stream> get_stream() {
    auto s = standalone.lock();
    return s && s->open() ? s : nullptr;
  }
  bool idle() { return by_request.empty() && !get_stream(); }
  void route(const Message& m) {
    if (m.kind == Message::Kind::kResponse) {
      auto it = by_request.find(proto::id_key(m.id));
      if (it == by_request.end()) return;
      it->second->push(m.text);
      it->second->finish();
      by_request.erase(it);
      std::erase_if(by_progress, [](auto& p) {
        auto s = p.second.lock();
        return !s || !s->open();
      });
      return;
    }
    if (m.kind == Message::Kind::kNotification && m.method == "notifications/progress") {
      boost::system::error_code ec;
      json::value v = json::parse(m.text, ec);
      const json::value* token = ec ? nullptr : v.find_pointer("/params/progressToken", ec);
      auto it = token ? by_progress.find(proto::id_key(*token)) : by_progress.end();
      if (it != by_progress.end())
        if (auto s = it->second.lock(); s && s->open()) return s->push(m.text);
    }
    // A question asked while a call runs belongs with the newest call; the rest with the session.
    bool question = m.kind == Message::Kind::kRequest;
    std::shared_ptr<Stream> first = question ? newest_post() : get_stream();
    std::shared_ptr<Stream> second = question ? get_stream() : newest_post();
    if (first) return first->push(m.text);
    if (second) return second->push(m.text);
    if (kept.size() < kMaxKept) kept.push_back(m.text);
  }
  void end_streams() {
    for (auto& [id, s] : by_request) s->finish();
    by_request.clear();
    if (auto s = standalone.lock()) s->finish();
  }
  // The client ended the session (DELETE) or the daemon stops: the server hears the client close.
  void hang_up() {
    if (closed) return;
    closed = true;
    end_streams();
    if (handlers.on_closed) {
      auto on_closed = std::move(handlers.on_closed);
      handlers = {};
      on_closed(TransportError{"eof", "the MCP session ended"});
    }
  }
};

class SessionLink : public Transport {
 public:
  explicit SessionLink(std::shared_ptr<SessionState> state, asio::io_context& io) : state_(std::move(state)), io_(io) {}
  void start(Handlers handlers) override {
    state_->handlers = std::move(handlers);
    state_->started = true;
  }
  bool send(Message message) override {
    if (!state_->closed) state_->route(message);
    return true;
  }
  void close() override { end(); }
  void abort() override { end(); }

 private:
  void end() {
    asio::post(io_, [s = state_] { s->hang_up(); });
  }
  std::shared_ptr<SessionState> state_;
  asio::io_context& io_;
};

std::string session_id() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return {};
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

std::string plain_response(int status, std::string_view reason, std::string_view body,
                           std::string_view content_type = "text/plain; charset=utf-8", std::string_view extra = "") {
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}\r\n{}", status, reason,
                     content_type, body.size(), extra, body);
}

std::string rpc_error(std::string_view message, int code = -32600) {
  return proto::json_text(
      json::object{{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", json::object{{"code", code}, {"message", message}}}});
}

}  // namespace

struct McpHttp::Impl : std::enable_shared_from_this<Impl> {
  using Socket = std::shared_ptr<unix_socket::socket>;
  using Sessions = std::map<std::string, std::shared_ptr<SessionState>>;
  Impl(Server& server) : server(server), io(server.io()), acceptor(io), retry(io), idle_sweep(io), stdio(server) {}
  Server& server;
  asio::io_context& io;
  unix_socket::acceptor acceptor;
  asio::steady_timer retry;
  asio::steady_timer idle_sweep;  // due when the idle session unused the longest reaches the limit
  bool sweep_armed = false;
  std::string path;
  bool stopping = false;
  Sessions sessions;
  McpStdio stdio;  // `oppx mcp serve`'s handed-over clients (a connection's first byte a NUL)
  std::vector<std::weak_ptr<unix_socket::socket>> connections;  // closed by stop()

  void accept_next() {
    acceptor.async_accept([self = shared_from_this()](boost::system::error_code ec, unix_socket::socket sock) {
      if (self->stopping || ec == asio::error::operation_aborted) return;
      if (!ec) {
        self->on_accept(std::move(sock));
        return self->accept_next();
      }
      // Out of descriptors and the like: back off instead of spinning on an error that repeats.
      log::warn("MCP over HTTP: accept failed: {}; retrying in 100 ms", ec.message());
      self->retry.expires_after(std::chrono::milliseconds(100));
      self->retry.async_wait([self](boost::system::error_code e) {
        if (!e && !self->stopping) self->accept_next();
      });
    });
  }

  void on_accept(unix_socket::socket sock) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(sock.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid()) {
      log::warn("refused an MCP connection from uid {} (pid {}): only uid {} may use it", cred.uid, cred.pid,
                ::geteuid());
      return;
    }
    auto shared = std::make_shared<unix_socket::socket>(std::move(sock));
    std::erase_if(connections, [](const auto& w) { return w.expired(); });
    connections.push_back(shared);
    asio::co_spawn(io, connection(shared), [](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        log::error("MCP over HTTP: a connection failed: {}", x.what());
      }
    });
  }

  asio::awaitable<void> connection(Socket sock) {
    auto self = shared_from_this();
    auto [wait_ec] = co_await sock->async_wait(unix_socket::socket::wait_read, kTuple);
    if (wait_ec || stopping) co_return;
    char first = 1;
    if (::recv(sock->native_handle(), &first, 1, MSG_PEEK | MSG_DONTWAIT) == 1 && first == 0) {
      boost::system::error_code ec;
      int fd = sock->release(ec);
      if (!ec) stdio.take(fd);
      co_return;
    }
    boost::beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(kMaxBody);
      auto [ec, n] = co_await http::async_read(*sock, buffer, parser, kTuple);
      if (ec || stopping) co_return;
      if (!co_await answer(sock, parser.release())) co_return;
    }
  }

  // One HTTP request; false when the connection is to close after it.
  asio::awaitable<bool> answer(Socket sock, http::request<http::string_body> req) {
    auto reply = [this, sock](int status, std::string_view reason, std::string body,
                              bool as_json = true) -> asio::awaitable<bool> {
      co_return co_await write(
          *sock, plain_response(status, reason, body, as_json ? "application/json" : "text/plain; charset=utf-8"));
    };
    auto target = boost::urls::parse_origin_form(req.target());
    if (!target || (target->path() != "/mcp" && target->path() != "/"))
      co_return co_await reply(404, "Not Found", "The MCP endpoint is /mcp\n", false);
    std::string cwd = paths::home();
    if (auto it = target->params().find("cwd"); it != target->params().end() && (*it).has_value) cwd = (*it).value;
    std::string sid(req["Mcp-Session-Id"]);
    if (req.method() != http::verb::post && req.method() != http::verb::get && req.method() != http::verb::delete_)
      co_return co_await write(
          *sock, plain_response(405, "Method Not Allowed", "", "text/plain", "Allow: GET, POST, DELETE\r\n"));
    if (req.method() != http::verb::post && sid.empty())
      co_return co_await reply(400, "Bad Request", rpc_error("Mcp-Session-Id header is required"));
    if (req.method() == http::verb::delete_) {
      auto it = sessions.find(sid);
      if (it == sessions.end()) co_return co_await reply(404, "Not Found", rpc_error("Session not found"));
      end_session(it);
      co_return co_await reply(200, "OK", "", false);
    }
    if (req.method() == http::verb::get) {
      auto it = sessions.find(sid);
      if (it == sessions.end()) co_return co_await reply(404, "Not Found", rpc_error("Session not found"));
      std::shared_ptr<SessionState> session = it->second;
      session->last_used = std::chrono::steady_clock::now();
      if (session->get_stream())
        co_return co_await reply(409, "Conflict", rpc_error("This session's stream is open already"));
      auto stream = std::make_shared<Stream>(sock, io);
      stream->head(stream_head(sid));
      session->standalone = stream;
      for (std::string& m : session->kept) stream->push(m);
      session->kept.clear();
      co_await stream->done.async_wait(kTuple);
      co_return false;
    }

    boost::system::error_code jec;
    json::value body = json::parse(req.body(), jec);
    if (jec || !body.is_object())
      co_return co_await reply(400, "Bad Request",
                               rpc_error(jec ? "Parse error" : "One JSON-RPC message per request", -32700));
    const json::object& msg = body.as_object();
    const json::value* method = msg.if_contains("method");
    const json::value* id = msg.if_contains("id");
    bool is_request = method && id && !id->is_null();
    if (is_request && !id->is_string() && !id->is_int64() && !id->is_uint64())
      co_return co_await reply(400, "Bad Request", rpc_error("A request's id is a string or an integer"));
    std::shared_ptr<SessionState> session;
    if (is_request && method->is_string() && method->as_string() == "initialize") {
      struct stat st {};
      if (cwd.empty() || cwd[0] != '/' || ::stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        co_return co_await reply(400, "Bad Request", rpc_error("cwd must name an existing folder"));
      if (sessions.size() >= kMaxSessions && !evict_idle())
        co_return co_await reply(503, "Service Unavailable", rpc_error("Too many MCP sessions are busy"));
      session = open_session(cwd);
      if (!session) co_return co_await reply(500, "Internal Server Error", rpc_error("no session could be made"));
      sid = session->id;
    } else {
      if (sid.empty()) co_return co_await reply(400, "Bad Request", rpc_error("Mcp-Session-Id header is required"));
      auto it = sessions.find(sid);
      if (it == sessions.end()) co_return co_await reply(404, "Not Found", rpc_error("Session not found"));
      session = it->second;
    }
    session->last_used = std::chrono::steady_clock::now();
    arm_idle_sweep();
    if (!is_request) {
      deliver(*session, req.body());
      co_return co_await reply(202, "Accepted", "", false);
    }
    std::string key = proto::id_key(*id);
    if (session->by_request.count(key))
      co_return co_await reply(409, "Conflict", rpc_error("A request with this id is still in flight; use a new id"));
    auto stream = std::make_shared<Stream>(sock, io);
    stream->head(stream_head(sid));
    session->by_request[key] = stream;
    session->posts.push_back(stream);
    boost::system::error_code pec;
    if (const json::value* token = body.find_pointer("/params/_meta/progressToken", pec))
      session->by_progress[proto::id_key(*token)] = stream;
    deliver(*session, req.body());
    co_await stream->done.async_wait(kTuple);
    if (auto it = session->by_request.find(key); it != session->by_request.end() && it->second == stream)
      session->by_request.erase(it);  // its write failed before the answer came
    co_return !stream->failed && !stopping;
  }

  static std::string stream_head(const std::string& sid) {
    return fmt::format(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: "
        "chunked\r\nMcp-Session-Id: {}\r\n\r\n",
        sid);
  }

  asio::awaitable<bool> write(unix_socket::socket& sock, std::string text) {
    auto [ec, n] = co_await asio::async_write(sock, asio::buffer(text), kTuple);
    co_return !ec;
  }

  void deliver(SessionState& s, std::string line) {
    if (s.started && !s.closed && s.handlers.on_line) s.handlers.on_line(std::move(line));
  }

  // Ends the sessions idle past the limit, then waits for the next one that could be. A session
  // used since, or with a stream open, is looked at again at its own time.
  void arm_idle_sweep() {
    if (sweep_armed || sessions.empty() || stopping) return;
    auto due = std::chrono::steady_clock::time_point::max();
    for (auto& [id, s] : sessions) due = std::min(due, s->last_used + session_idle_limit());
    sweep_armed = true;
    idle_sweep.expires_at(due);
    idle_sweep.async_wait([w = weak_from_this()](boost::system::error_code ec) {
      auto self = w.lock();
      if (!self) return;
      self->sweep_armed = false;
      if (ec || self->stopping) return;
      auto now = std::chrono::steady_clock::now();
      for (auto it = self->sessions.begin(); it != self->sessions.end();) {
        auto next = std::next(it);
        if (it->second->last_used + session_idle_limit() <= now) {
          if (it->second->idle()) {
            log::info("MCP over HTTP: session {} ended: unused for {} s", it->first.substr(0, 8),
                      std::chrono::duration_cast<std::chrono::seconds>(now - it->second->last_used).count());
            self->end_session(it);
          } else {
            it->second->last_used = now;  // busy (a call or a stream open): counted from now
          }
        }
        it = next;
      }
      self->arm_idle_sweep();
    });
  }

  // At the cap: the session least recently used of those with no stream open ends. False if none.
  bool evict_idle() {
    auto oldest = sessions.end();
    for (auto it = sessions.begin(); it != sessions.end(); ++it)
      if (it->second->idle() && (oldest == sessions.end() || it->second->last_used < oldest->second->last_used))
        oldest = it;
    if (oldest == sessions.end()) return false;
    log::info("MCP over HTTP: session {} ended to make room (unused the longest)", oldest->first.substr(0, 8));
    end_session(oldest);
    return true;
  }

  std::shared_ptr<SessionState> open_session(const std::string& cwd) {
    auto state = std::make_shared<SessionState>();
    state->id = session_id();
    if (state->id.empty()) return nullptr;
    ServeOptions o = in_daemon_serve_options(server, cwd, "mcp over http");
    o.on_client_gone = [w = weak_from_this(), id = state->id] {
      auto self = w.lock();
      if (!self) return;
      asio::post(self->io, [self, id] {
        if (auto it = self->sessions.find(id); it != self->sessions.end()) self->end_session(it);
      });
    };
    state->serve = serve_mcp(io, std::make_unique<SessionLink>(state, io), std::move(o));
    sessions[state->id] = state;
    log::info("MCP over HTTP: session {} opened for {}", state->id.substr(0, 8), cwd);
    return state;
  }

  // The session, its streams and its daemon connection end; its server is let go after this turn
  // (it holds the session's transport, which holds the session).
  void end_session(Sessions::iterator it) {
    auto state = it->second;
    sessions.erase(it);
    state->hang_up();
    if (state->serve) end_serving(*state->serve);
    asio::post(io, [state] { state->serve.reset(); });
  }
};

McpHttp::McpHttp(Server& server) : impl_(std::make_shared<Impl>(server)) {}
McpHttp::~McpHttp() { stop(); }

std::string McpHttp::listen(const std::string& path) {
  impl_->path = path;
  ::unlink(path.c_str());  // the daemon holds the lock of this folder's socket: a file here is a stale one
  boost::system::error_code ec;
  impl_->acceptor.open(unix_socket(), ec);
  if (!ec) impl_->acceptor.bind(unix_socket::endpoint(path), ec);
  if (!ec) ::chmod(path.c_str(), 0600);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fmt::format("cannot listen on {}: {}", path, ec.message());
  impl_->accept_next();
  return "";
}

void McpHttp::stop() {
  if (impl_->stopping) return;
  impl_->stopping = true;
  boost::system::error_code ec;
  impl_->acceptor.close(ec);
  impl_->retry.cancel();
  impl_->idle_sweep.cancel();
  while (!impl_->sessions.empty()) impl_->end_session(impl_->sessions.begin());
  impl_->stdio.stop();
  // Connections waiting for their next request would keep the daemon's loop running.
  for (auto& w : impl_->connections)
    if (auto sock = w.lock()) sock->close(ec);
  impl_->connections.clear();
  if (!impl_->path.empty()) ::unlink(impl_->path.c_str());
}

}  // namespace oppx::daemon
