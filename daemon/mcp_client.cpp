// McpClient: the session's phases are kNew → kInitializing → kListing → kReady, and kClosed,
// after which no handler runs and late answers are dropped. The JSON-RPC peer's callbacks hold
// a weak_ptr to the client, so a client closed or destroyed with calls in flight ends cleanly.
#include "daemon/mcp_client.h"

#include "proto/mcp_versions.h"

#include "common/log.h"
#include "common/text.h"
#include "daemon/connector.h"
#include "daemon/diagnose.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace oppx::daemon {

namespace asio = boost::asio;
namespace json = boost::json;
using proto::ErrorCode;
using proto::RpcError;

namespace {

constexpr int kMaxToolPages = 50;

// The HTTP link turns a lost login or an unreachable server into an error of that kind; those
// take the connector down. Anything else (a timeout, a bad answer) fails one call.
// At start, a step-up is a login like any other: without it the connector cannot work at all.
bool takes_it_down(const RpcError& e) {
  return e.kind == proto::kind::kLogin || e.kind == proto::kind::kUnreachable || e.kind == proto::kind::kStepUp;
}
std::string_view down_kind(const RpcError& e) {
  return e.kind == proto::kind::kStepUp ? proto::kind::kLogin : std::string_view(e.kind);
}

}  // namespace

std::string file_uri(std::string_view path) {
  std::string out = "file://";
  for (unsigned char ch : path) {
    if (std::isalnum(ch) || ch == '/' || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
      out += static_cast<char>(ch);
    } else {
      out += fmt::format("%{:02X}", ch);
    }
  }
  return out;
}

void move_server_kind_to_data(JsonRpcPeer::CallResult& r) {
  if (r || !r.error().received) return;
  proto::RpcError e = r.error();
  if (!e.kind.empty()) e.data["server_kind"] = e.kind;
  e.kind.clear();
  r = JsonRpcPeer::CallResult(boost::system::in_place_error, std::move(e));
}

struct McpClient::Timer {
  explicit Timer(asio::io_context& io) : t(io) {}
  asio::steady_timer t;
};

struct McpClient::Pages {
  json::array tools;
  std::unordered_map<std::string, std::vector<mcp_headers::ParamHeader>> marks;
  std::set<std::string> names, cursors;
  int count = 0;
  std::chrono::steady_clock::time_point fresh_until = std::chrono::steady_clock::time_point::max();
};

McpClient::McpClient(asio::io_context& io, Options options, Handlers handlers)
    : io_(io),
      options_(std::move(options)),
      handlers_(std::move(handlers)),
      list_changed_timer_(std::make_unique<Timer>(io)),
      probe_timer_(std::make_unique<Timer>(io)),
      listen_timer_(std::make_unique<Timer>(io)) {}

McpClient::~McpClient() { close(false); }

std::shared_ptr<McpClient> McpClient::create(asio::io_context& io, std::unique_ptr<Transport> transport,
                                             Options options, Handlers handlers) {
  std::shared_ptr<McpClient> c(new McpClient(io, std::move(options), std::move(handlers)));
  std::weak_ptr<McpClient> w = c;
  JsonRpcPeer::Options o;
  o.name = "mcp:" + c->options_.name;
  o.reply_to_malformed = false;  // junk from a server is logged and skipped, never answered
  o.on_request = [w, &io](proto::Request req, Reply reply) {
    if (req.method == "ping") return reply.ok(json::object{});
    if (auto self = w.lock(); self && req.method == "roots/list" && self->options_.roots)
      return reply.ok(self->roots_result());
    if (req.method == "initialize") {
      // No server sends a client initialize: this one is ours, sent back. Answered like any
      // request we do not serve; the failure is posted, as failing ends the peer calling us.
      reply.fail(
          RpcError::make(ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound, "oppx does not support initialize"));
      return asio::post(io, [w] {
        auto self = w.lock();
        if (!self || self->phase_ == Phase::kReady || self->phase_ == Phase::kClosed) return;
        self->failed(proto::kind::kConfig,
                     fmt::format("it sent oppx's own initialize request back: {} is not an MCP server (a program "
                                 "that echoes its input, like cat, is not one); correct its command",
                                 self->options_.name));
      });
    }
    if (auto self = w.lock(); self && req.method == "elicitation/create")
      return self->elicit_for_server(std::move(req), std::move(reply));
    // MCP: sampling was not offered in initialize (nor roots, when there are none); never leave
    // such a request hanging.
    reply.fail(RpcError::make(ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                              "oppx does not support " + req.method));
  };
  o.on_notification = [w](proto::Notification n) {
    auto self = w.lock();
    if (!self || self->phase_ == Phase::kClosed) return;
    // Before the first tools/list is sent a notice changes nothing (server-everything sends one
    // before it even answers initialize); one while that list is on its way means fetch again.
    if (n.method == "notifications/tools/list_changed" && self->listing_or_ready()) {
      self->list_changed();
    } else if (n.method == "notifications/progress" && n.params.is_object()) {
      self->progress(n.params.as_object());
    } else if (n.method == "notifications/resources/list_changed" || n.method == "notifications/prompts/list_changed") {
      if (self->handlers_.on_offers_changed) self->handlers_.on_offers_changed();
    }
  };
  o.on_closed = [w](const TransportError& e) {
    auto self = w.lock();
    if (!self || self->phase_ == Phase::kClosed || !self->handlers_.on_closed) return;
    auto on_closed = self->handlers_.on_closed;
    on_closed(e);
  };
  c->peer_ = JsonRpcPeer::create(std::move(transport), std::move(o));
  c->peer_->start();
  return c;
}

void McpClient::start() {
  if (!options_.stateless_first) return initialize();
  phase_ = Phase::kInitializing;
  version_ = proto::mcp::kStateless;  // stamps the probe
  probe_pending_ = true;
  peer_->call("server/discover", stamped(json::object{}), [w = weak_from_this()](CallResult r) {
    auto self = w.lock();
    if (!self || self->phase_ != Phase::kInitializing) return;
    self->probe_timer_->t.cancel();
    // A server gone on it stays "probing": its connector then knows what stopped it.
    if (r || r.error().kind != proto::kind::kDisconnected) self->probe_pending_ = false;
    self->discovered(std::move(r));
  });
  if (options_.discover_bound.count() <= 0) return;
  probe_timer_->t.expires_after(options_.discover_bound);
  probe_timer_->t.async_wait([w = weak_from_this()](boost::system::error_code ec) {
    auto self = w.lock();
    if (ec || !self || !self->probing() || self->probe_late_) return;
    log::info("connector {}: no answer to server/discover within {} ms; initialize follows", self->options_.name,
              self->options_.discover_bound.count());
    self->probe_late_ = true;
    self->version_.clear();
    self->initialize();
  });
}

json::value McpClient::stamped(json::value params) const {
  if (!stateless()) return params;
  json::object out = params.is_object() ? std::move(params.as_object()) : json::object{};
  if (meta_.empty()) {  // the same for every request: made once
    meta_ = json::object{{proto::mcp::kMetaVersion, proto::mcp::kStateless},
                         {proto::mcp::kMetaCapabilities, client_capabilities()},
                         {proto::mcp::kMetaClientInfo, json::object{{"name", "oppx"}, {"version", OPPX_VERSION}}}};
  }
  json::object meta = meta_;
  if (auto* m = out.if_contains("_meta"); m && m->is_object()) {
    for (auto& [k, v] : m->as_object()) meta[k] = v;
  }
  out["_meta"] = std::move(meta);
  return out;
}

// server/discover's answer: a server that lists 2026-07-28 speaks it from now on; a lost login or
// an unreachable server is what it would be for initialize; anything else is an older server.
void McpClient::discovered(CallResult r) {
  move_server_kind_to_data(r);
  if (probe_late_) {
    // initialize went out meanwhile: only a server of the new era is worth switching to (its
    // answer to initialize, if any comes, is then dropped).
    const json::value* listed = r && r->is_object() ? r->as_object().if_contains("supportedVersions") : nullptr;
    bool modern = listed && listed->is_array() &&
                  std::find(listed->as_array().begin(), listed->as_array().end(),
                            json::value(proto::mcp::kStateless)) != listed->as_array().end();
    if (!modern) return;
    version_ = proto::mcp::kStateless;
    phase_ = Phase::kListing;
    return fetch_tools();
  }
  if (!r && r.error().kind == proto::kind::kDisconnected && options_.quiet_on_disconnect) return;
  if (!r && (takes_it_down(r.error()) || r.error().kind == proto::kind::kTimeout))
    return failed(down_kind(r.error()), r.error().message);
  const json::value* listed = r && r->is_object() ? r->as_object().if_contains("supportedVersions") : nullptr;
  if (listed && listed->is_array()) {
    for (auto& v : listed->as_array()) {
      if (v.is_string() && v.as_string() == proto::mcp::kStateless) {
        const json::value* caps = r->as_object().if_contains("capabilities");
        const json::value* tools = caps && caps->is_object() ? caps->as_object().if_contains("tools") : nullptr;
        const json::value* changes =
            tools && tools->is_object() ? tools->as_object().if_contains("listChanged") : nullptr;
        announces_changes_ = changes && *changes == json::value(true);
        phase_ = Phase::kListing;
        return fetch_tools();
      }
    }
  }
  log::info("connector {}: no MCP {} there ({}); speaking {}", options_.name, proto::mcp::kStateless,
            r ? std::string("server/discover lists other versions") : escape_controls(r.error().message).substr(0, 200),
            proto::mcp::kLatest);
  version_.clear();
  initialize();
}

void McpClient::initialize() {
  phase_ = Phase::kInitializing;
  json::object params{{"protocolVersion", proto::mcp::kLatest},
                      {"capabilities", client_capabilities()},
                      {"clientInfo", json::object{{"name", "oppx"}, {"version", OPPX_VERSION}}}};
  peer_->call("initialize", params, [w = weak_from_this()](CallResult r) {
    auto self = w.lock();
    if (self && self->phase_ == Phase::kInitializing) self->initialized(std::move(r));
  });
}

void McpClient::initialized(CallResult r) {
  move_server_kind_to_data(r);
  // Sent when the probe's bound passed: a refusal may be a new-era server still to answer it.
  if (!r && probe_pending_ && r.error().received) return;
  // A program's output ended: its link reports the stop, with its exit status and last stderr lines.
  if (!r && r.error().kind == proto::kind::kDisconnected && options_.quiet_on_disconnect) return;
  if (!r && (takes_it_down(r.error()) || r.error().kind == proto::kind::kTimeout))
    return failed(down_kind(r.error()), r.error().message);
  if (!r && !r.error().received) {
    // The link's own error (never a server's claim) with the status the URL answered.
    // A copy kept: result::error() returns one, and a pointer into a temporary would dangle.
    const RpcError e = r.error();
    const json::value* status = e.data.if_contains("http_status");
    int code = status && status->is_int64() ? static_cast<int>(status->as_int64()) : 0;
    if (url_is_wrong(code))
      return failed(proto::kind::kConfig, "its URL is not the server's MCP endpoint: " + e.message, code);
    return failed(proto::kind::kStopped, "initialize failed: " + e.message);
  }
  if (!r) return failed(proto::kind::kStopped, "it refused initialize: " + r.error().message);
  std::string version;
  if (auto* v = r->is_object() ? r->as_object().if_contains("protocolVersion") : nullptr; v && v->is_string())
    version = std::string(v->as_string());
  if (!proto::mcp::supported(version))
    return failed(proto::kind::kStopped,
                  fmt::format("it speaks MCP protocol \"{}\", which oppx does not support", version));
  version_ = version;
  phase_ = Phase::kListing;
  peer_->notify("notifications/initialized", nullptr);
  fetch_tools();
}

void McpClient::refetch_tools() {
  if (phase_ != Phase::kClosed && listing_or_ready()) fetch_tools();
}

void McpClient::refetch_if_stale() {
  if (phase_ == Phase::kReady && !fetching_ && std::chrono::steady_clock::now() >= fresh_until_) {
    fresh_until_ = std::chrono::steady_clock::time_point::max();  // one fetch, until its answer says
    fetch_tools();
  }
}

void McpClient::fetch_tools() {
  if (fetching_) {
    fetch_again_ = true;  // a burst of list_changed gives one more fetch, not one per notice
    return;
  }
  fetching_ = true;
  fetch_page(std::make_shared<Pages>(), "");
}

// Pages end at the last one, at a cursor seen before, or at kMaxToolPages.
void McpClient::request(const std::string& method, json::value params, std::chrono::milliseconds limit,
                        std::function<void(CallResult)> done) {
  struct Pending {
    std::function<void(CallResult)> done;
    Timer timer;
    json::value id;
    explicit Pending(asio::io_context& io) : timer(io) {}
  };
  auto p = std::make_shared<Pending>(io_);
  p->done = std::move(done);
  p->id = peer_->call(method, stamped(std::move(params)), [p](CallResult r) {
    if (!p->done) return;
    p->timer.t.cancel();
    move_server_kind_to_data(r);
    std::exchange(p->done, nullptr)(std::move(r));
  });
  p->timer.t.expires_after(limit);
  p->timer.t.async_wait([w = weak_from_this(), p, method, limit](boost::system::error_code ec) {
    if (ec || !p->done) return;
    if (auto self = w.lock()) self->cancel(p->id, "timed out");
    std::exchange(p->done,
                  nullptr)(proto::RpcError::make(proto::ErrorCode::kInternal, proto::kind::kTimeout,
                                                 fmt::format("{} got no answer within {} ms", method, limit.count())));
  });
}

void McpClient::fetch_page(std::shared_ptr<Pages> acc, std::string cursor) {
  json::value params = cursor.empty() ? json::value(nullptr) : json::value(json::object{{"cursor", cursor}});
  params = stamped(std::move(params));
  peer_->call("tools/list", params, [w = weak_from_this(), acc](CallResult r) {
    auto self = w.lock();
    if (self && self->phase_ != Phase::kClosed) self->page(acc, std::move(r));
  });
}

void McpClient::page(std::shared_ptr<Pages> acc, CallResult r) {
  move_server_kind_to_data(r);
  if (!r && r.error().kind == proto::kind::kDisconnected && options_.quiet_on_disconnect) {
    fetching_ = false;  // as for initialize: the link reports it
    return;
  }
  if (!r || !r->is_object() || !r->as_object().contains("tools") || !r->as_object().at("tools").is_array()) {
    fetching_ = false;
    if (!r && takes_it_down(r.error())) return failed(down_kind(r.error()), r.error().message);
    return failed(proto::kind::kStopped,
                  "its tools/list answer was unusable" + (r ? std::string() : ": " + r.error().message));
  }
  for (auto& t : r->as_object().at("tools").as_array()) {
    const json::value* name = t.is_object() ? t.as_object().if_contains("name") : nullptr;
    if (!name || !name->is_string() || !acc->names.insert(std::string(name->as_string())).second) continue;
    if (stateless()) {
      const json::value* schema = t.as_object().if_contains("inputSchema");
      auto marks = mcp_headers::param_headers(schema ? *schema : json::value());
      if (!marks) {
        log::warn("connector {}: tool {} is left out: {}", options_.name,
                  escape_controls(std::string_view(name->as_string()).substr(0, 100)), escape_controls(marks.error()));
        continue;
      }
      acc->marks[std::string(name->as_string())] = std::move(*marks);
    }
    acc->tools.push_back(t);
  }
  if (acc->count == 0) {
    // The first page's ttlMs says how long the list stays fresh; none (or 0): until a change is announced.
    const json::value* ttl = r->as_object().if_contains("ttlMs");
    double ms = ttl && ttl->is_number() ? std::min(ttl->to_number<double>(), 86'400'000.0) : 0;  // a day at most
    acc->fresh_until = ms >= 1 ? std::chrono::steady_clock::now() + std::chrono::milliseconds(std::int64_t(ms))
                               : std::chrono::steady_clock::time_point::max();
  }
  ++acc->count;
  const json::value* next = r->as_object().if_contains("nextCursor");
  if (next && next->is_string() && !next->as_string().empty()) {
    std::string c(next->as_string());
    if (!acc->cursors.insert(c).second) {
      log::warn("connector {}: tools/list gave the cursor {} twice; its list ends there", options_.name,
                escape_controls(c.substr(0, 80)));
    } else if (acc->count >= kMaxToolPages) {
      log::warn("connector {}: tools/list has more than {} pages; the rest is left out", options_.name, kMaxToolPages);
    } else {
      return fetch_page(acc, std::move(c));
    }
  }
  fetching_ = false;
  phase_ = Phase::kReady;
  param_headers_ = std::move(acc->marks);
  fresh_until_ = acc->fresh_until;
  if (stateless() && announces_changes_ && !listening_) listen();
  auto keep = shared_from_this();  // on_tools may close this client
  if (handlers_.on_tools) handlers_.on_tools(std::move(acc->tools));
  if (fetch_again_ && phase_ != Phase::kClosed) {
    fetch_again_ = false;
    fetch_tools();
  }
}

// Servers may send list_changed in bursts (one per tool they add): the first notice arms a
// short timer, the ones within it ride along, and one fetch follows.
void McpClient::list_changed() {
  if (list_changed_armed_) return;
  list_changed_armed_ = true;
  list_changed_timer_->t.expires_after(options_.list_changed_debounce);
  list_changed_timer_->t.async_wait([w = weak_from_this()](boost::system::error_code ec) {
    auto self = w.lock();
    if (!self || ec) return;  // cancelled by close(), which also disarmed it
    self->list_changed_armed_ = false;
    self->refetch_tools();
  });
}

void McpClient::listen() {
  listening_ = true;
  listened_at_ = std::chrono::steady_clock::now();
  RequestOptions request;
  request.slow_first_byte = true;  // the answer comes only when the subscription ends
  request.label = "the subscription to tool list changes";
  json::object params{
      {"notifications",
       json::object{{"toolsListChanged", true}, {"resourcesListChanged", true}, {"promptsListChanged", true}}}};
  peer_->call(
      "subscriptions/listen", stamped(std::move(params)),
      [w = weak_from_this()](CallResult r) {
        if (auto self = w.lock(); self && self->phase_ != Phase::kClosed) self->listen_ended(std::move(r));
      },
      std::move(request));
}

void McpClient::listen_ended(CallResult r) {
  listening_ = false;
  if (!r && r.error().kind == proto::kind::kDisconnected) return;  // the session ended: its start says how
  if (!r && r.error().received && r.error().code == static_cast<int>(ErrorCode::kMethodNotFound)) {
    log::info("connector {}: it offers no subscriptions/listen; its tool list is read at each start", options_.name);
    return;
  }
  // One that lasted is opened again soon; one that ends at once, less and less often.
  bool lasted = std::chrono::steady_clock::now() - listened_at_ > std::chrono::minutes(1);
  listen_pause_ =
      lasted ? std::chrono::milliseconds(1'000) : std::min(listen_pause_ * 2, std::chrono::milliseconds(60'000));
  log::info("connector {}: its subscription to tool list changes ended ({}); opened again in {} ms", options_.name,
            r ? std::string("the server ended it") : escape_controls(r.error().message).substr(0, 200),
            listen_pause_.count());
  listen_timer_->t.expires_after(listen_pause_);
  listen_timer_->t.async_wait([w = weak_from_this()](boost::system::error_code ec) {
    auto self = w.lock();
    if (ec || !self || self->phase_ != Phase::kReady || self->listening_) return;
    self->refetch_tools();
    self->listen();
  });
}

void McpClient::progress(const json::object& params) {
  const json::value* token = params.if_contains("progressToken");
  if (!token || !token->is_string()) return;  // we only ever send string tokens
  auto it = progress_.find(std::string(token->as_string()));
  if (it == progress_.end()) return;  // a call that ended, or a token that is not ours
  json::object p = params;
  p.erase("progressToken");
  auto fn = it->second;
  fn(p);
}

void McpClient::failed(std::string_view kind, std::string why, int http_status) {
  if (phase_ == Phase::kClosed || !handlers_.on_failed) return;
  auto on_failed = handlers_.on_failed;
  on_failed(kind, std::move(why), http_status);
}

void McpClient::close(bool graceful) {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  handlers_ = {};
  list_changed_timer_->t.cancel();
  probe_timer_->t.cancel();
  listen_timer_->t.cancel();
  list_changed_armed_ = false;
  if (!peer_) return;
  auto peer = std::move(peer_);
  if (graceful) {
    peer->close();
  } else {
    peer->abort();
  }
}

}  // namespace oppx::daemon
