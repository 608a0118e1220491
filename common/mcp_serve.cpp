// `oppx mcp serve`'s server: the MCP client's requests on one side, a daemon connection (a session
// of the client's folder, subscribed to mcp/changed) on the other. See mcp_serve.h.
#include "common/mcp_serve.h"

#include "common/serve_names.h"
#include "common/serve_results.h"
#include "common/jsonrpc_peer.h"
#include "common/log.h"
#include "proto/elicitation.h"
#include "proto/decode.h"
#include "proto/mcp_versions.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <map>
#include <set>
#include <utility>
#include <optional>
#include <vector>

namespace oppx {

namespace json = boost::json;

namespace {

// How long the first tools/list waits for connectors still starting without a cached list.
constexpr std::chrono::seconds kFirstStart{10};

// subscriptions/listen requests held at once (a client needs one).
constexpr std::size_t kMaxListens = 4;
constexpr std::size_t kMaxCancelled = 256;
// How long the daemon's call waits for a 2026-07-28 client to call again with its answer.
constexpr std::chrono::minutes kUnanswered{5};
// Questions of a 2026-07-28 client left unanswered at once; one more tells the oldest no.
constexpr std::size_t kMaxUnanswered = 16;
// The permission question's key among a 2026-07-28 result's inputRequests.
constexpr std::string_view kPermissionInput = "oppx_permission";

constexpr std::string_view kInstructions =
    "The tools of the user's MCP connectors, kept running by oppx. Each is named "
    "<connector>__<tool>. The user's oppx permission rules decide what runs.";

// A connector as the daemon listed it: the fields that decide whether its tools are offered.
struct Listed {
  std::string source;
  std::string name;
  std::string state;
  bool cached = false;
  bool offered() const { return state == "running" || state == "idle" || (state == "starting" && cached); }
};

Listed listed_of(const json::value& entry) {
  return {proto::string_field(entry, "source"), proto::string_field(entry, "name"), proto::string_field(entry, "state"),
          proto::bool_field(entry, "cached")};
}

// One tools/call of the client on its way through the daemon.
struct Call {
  std::shared_ptr<Reply> reply;  // the client's request, or its retry once a question was answered
  std::string key;               // that request's id (id_key)
  std::string served;            // the tool's name as the client calls it
  std::string connector;
  std::string tool;
  json::value arguments;
  json::value daemon_id;     // the daemon's tools/call
  json::value client_token;  // the progressToken of the client's request (null: none)
  std::string progress;      // the token the daemon's progress names (the client's changes with a retry)
  bool modern = false;       // of MCP 2026-07-28: its result says it is complete
  // A 2026-07-28 client that shows forms: a permission question goes out in the call's result.
  bool asks_in_results = false;
  std::shared_ptr<Reply> ask;  // the daemon's permissions/ask while the client is asked
  std::string request_state;   // what the client sends back with its answer
  std::shared_ptr<boost::asio::steady_timer> unanswered;
};

}  // namespace

class McpServe : public std::enable_shared_from_this<McpServe> {
 public:
  McpServe(boost::asio::io_context& io, ServeOptions options)
      : io_(io), options_(std::move(options)), first_wait_(io) {}

  void start(std::unique_ptr<Transport> transport) {
    client_ = peer(std::move(transport), "mcp client", &McpServe::on_client_request, &McpServe::on_client_notification,
                   &McpServe::client_gone);
    if (options_.resume) {
      initialized_ = options_.resume->initialized;
      asks_forms_ = options_.resume->forms;
      asks_urls_ = options_.resume->urls;
      modern_ = options_.resume->modern;
      // The streams stay open on the client's side: their notices go on, and they are answered by
      // no one (the request was the server's before).
      for (const auto& [id, tools] : options_.resume->listens) {
        boost::system::error_code ec;
        json::value v = json::parse(id, ec);
        if (!ec) listens_.push_back({nullptr, std::move(v), tools});
      }
      told_ = *options_.resume;
    }
    connect_daemon_now();
    client_->start();
    if (options_.resume) list_changed();  // what the server before this one offered may differ
  }

  // The daemon's side at once (its calls fail now, answered "went away", the waiting ones with
  // why), then the client's, which writes those answers before it closes.
  void end() {
    if (daemon_) daemon_->abort();
    // The list-change streams stay open on the client's side: a server taking it over goes on with
    // them (ServeState), so none is answered here.
    for (const Listen& l : std::exchange(listens_, {}))
      if (l.reply) l.reply->withdraw();
    if (client_) client_->close();
  }

 private:
  // A peer on `transport` whose handlers are these members of this server, held weakly.
  std::shared_ptr<JsonRpcPeer> peer(std::unique_ptr<Transport> transport, std::string name,
                                    void (McpServe::*request)(proto::Request, Reply),
                                    void (McpServe::*notification)(const proto::Notification&),
                                    void (McpServe::*closed)()) {
    JsonRpcPeer::Options po;
    po.name = std::move(name);
    po.on_request = [w = weak_from_this(), request](proto::Request r, Reply reply) {
      if (auto self = w.lock()) (self.get()->*request)(std::move(r), std::move(reply));
    };
    po.on_notification = [w = weak_from_this(), notification](proto::Notification n) {
      if (auto self = w.lock()) (self.get()->*notification)(n);
    };
    po.on_closed = [w = weak_from_this(), closed](const TransportError&) {
      if (auto self = w.lock()) (self.get()->*closed)();
    };
    return JsonRpcPeer::create(std::move(transport), std::move(po));
  }

  // ---- the daemon side ----

  // Connects (options_.connect), then hello (when asked), a session of the folder and the
  // subscription, each waiting for the one before. False with down_ saying why when no connection
  // was made; the steps after it fail into down_ and the waiters.
  bool connect_daemon_now() {
    if (daemon_ && !daemon_->closed()) return true;
    std::string why;
    std::unique_ptr<Transport> transport = options_.connect(why);
    if (!transport) {
      down_ = why;
      return false;
    }
    daemon_ = peer(std::move(transport), "oppxd", &McpServe::on_daemon_request, &McpServe::on_daemon_notification,
                   &McpServe::daemon_gone);
    daemon_->start();
    down_.clear();
    subscribed_ = false;
    if (options_.hello)
      step("hello", json::value_from(*options_.hello), "oppxd refused hello", &McpServe::open_session);
    else
      open_session();
    return true;
  }

  // One request of the handshake; `next` runs on its answer, a failure ends the connection.
  void step(std::string_view method, json::value params, std::string failure, void (McpServe::*next)()) {
    daemon_->call(method, params, [w = weak_from_this(), d = daemon_, failure, next](JsonRpcPeer::CallResult r) {
      auto self = w.lock();
      if (!self || self->daemon_ != d) return;
      if (!r) {
        self->down_ = failure + ": " + r.error().message;
        d->close();
        return;
      }
      if (next) (self.get()->*next)();
    });
  }

  void open_session() {
    step("session/open", json::object{{"cwd", options_.cwd}, {"mode", "editor"}}, "oppxd did not open a session",
         &McpServe::subscribe);
  }

  void subscribe() {
    daemon_->call("mcp/subscribe", json::object{}, [w = weak_from_this(), d = daemon_](JsonRpcPeer::CallResult r) {
      auto self = w.lock();
      if (!self || self->daemon_ != d) return;
      if (!r) {
        self->down_ = "oppxd refused the subscription: " + r.error().message;
        d->close();
        return;
      }
      self->connectors_.clear();
      if (const json::value* list = r->is_object() ? r->as_object().if_contains("connectors") : nullptr;
          list && list->is_array())
        for (const json::value& e : list->as_array()) self->connectors_.push_back(listed_of(e));
      self->subscribed_ = true;
      self->run_waiters();
    });
  }

  void daemon_gone() {
    daemon_.reset();
    subscribed_ = false;
    connectors_.clear();
    tools_.clear();
    names_.reset();
    if (down_.empty()) down_ = "oppxd stopped";
    reconnect_announces_ = initialized_;
    run_waiters();
    auto starting = std::move(starting_);
    starting_.clear();
    for (auto& [name, waiting] : starting)
      for (auto& w : waiting) w();
  }

  void on_daemon_request(proto::Request r, Reply reply) {
    if (r.method == "permissions/ask") return ask_permission(r.params, std::move(reply));
    if (r.method == proto::kMcpElicit) return pass_question(r.params, std::move(reply));
    reply.fail(proto::RpcError::make(proto::ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                     "oppx mcp serve does not answer " + r.method));
  }

  void on_daemon_notification(const proto::Notification& n) {
    if (n.method == "tools/progress") {
      std::string token = proto::string_field(n.params, "progress_token");
      auto it = std::find_if(calls_.begin(), calls_.end(), [&](const auto& c) { return c->progress == token; });
      if (token.empty() || it == calls_.end() || !(*it)->reply || (*it)->client_token.is_null() || !client_) return;
      json::object p{{"progressToken", (*it)->client_token}};
      for (std::string_view k : {"progress", "total", "message"})
        if (const json::value* v = n.params.as_object().if_contains(k)) p[k] = *v;
      client_->notify("notifications/progress", p);
      return;
    }
    if (n.method != "mcp/changed") return;
    Listed now = listed_of(n.params);
    bool was_offered = false;
    bool found = false;
    for (auto it = connectors_.begin(); it != connectors_.end(); ++it) {
      if (it->source != now.source || it->name != now.name) continue;
      found = true;
      was_offered = it->offered();
      if (now.state == "removed")
        connectors_.erase(it);
      else
        *it = now;
      break;
    }
    if (!found && now.state != "removed") connectors_.push_back(now);
    if (now.state != "starting") run_started(now.name);
    bool tools_changed = proto::bool_field(n.params, "tools_changed");
    if (tools_changed || now.state == "removed") tools_.erase(now.name);
    if (tools_changed || was_offered != (now.state != "removed" && now.offered())) list_changed();
    if (!first_wait_over_ && !waiters_.empty()) fetch_missing();
  }

  // ---- what the client is told ----

  void list_changed() {
    names_.reset();
    if (!initialized_ || announce_posted_) return;
    announce_posted_ = true;  // a burst of changes is one notification
    boost::asio::post(io_, [w = weak_from_this()] {
      auto self = w.lock();
      if (!self || !self->client_) return;
      self->announce_posted_ = false;
      // A 2026-07-28 client hears of changes on the streams it opened for them, each notice
      // naming its stream; a 2025 one at any time.
      if (!self->modern_) return self->client_->notify("notifications/tools/list_changed", json::object{});
      for (const Listen& l : self->listens_)
        if (l.tools) self->client_->notify("notifications/tools/list_changed", serve::on_stream(json::object{}, l.id));
    });
  }

  void client_gone() {
    if (daemon_) daemon_->close();
    if (options_.on_client_gone) options_.on_client_gone();
  }

  // Tells options_.on_state what a server taking over this client would need, when it changed.
  void note_state() {
    ServeState now{initialized_, asks_forms_, asks_urls_, modern_, {}};
    for (const Listen& l : listens_) now.listens.emplace_back(json::serialize(l.id), l.tools);
    if (now == told_) return;
    told_ = now;
    if (options_.on_state) options_.on_state(now);
  }

  void on_client_notification(const proto::Notification& n) {
    if (n.method == "notifications/initialized") {
      initialized_ = true;
      note_state();
    } else if (n.method == "notifications/cancelled") {
      const json::value* id = n.params.is_object() ? n.params.as_object().if_contains("requestId") : nullptr;
      if (!id) return;
      if (drop_listen(*id)) return;  // the client closed that stream: no answer is expected
      auto it = in_flight_.find(proto::id_key(*id));
      if (it != in_flight_.end() && daemon_)
        return daemon_->notify(proto::kCancelRequest, json::object{{"id", it->second}});
      // A call still waiting for the listing: it is answered cancelled instead of being sent.
      if (cancelled_.size() < kMaxCancelled) cancelled_.insert(proto::id_key(*id));
    }
  }

  void on_client_request(proto::Request r, Reply reply) {
    if (r.method == "initialize") return initialize(r.params, std::move(reply));
    if (r.method == "server/discover") return discover(std::move(reply));
    if (r.method == "ping") return reply.ok(serve::complete(json::object{}, serve::is_modern(r.params)));
    if (r.method == "subscriptions/listen") return listen(std::move(r), std::move(reply));
    if (r.method == "tools/list") {
      remember_modern_capabilities(r.params);
      return with_listing(
          [this, modern = serve::is_modern(r.params), reply = std::make_shared<Reply>(std::move(reply))] {
            if (!names_) return reply->fail(daemon_down_error());
            reply->ok(serve::fresh_now(json::object{{"tools", listing_}}, modern));
          });
    }
    if (r.method == "tools/call") {
      remember_modern_capabilities(r.params);
      if (r.params.is_object() && r.params.as_object().contains("requestState"))
        return resume_call(std::move(r), std::move(reply));
      return call_tool(std::move(r), std::move(reply));
    }
    reply.fail(proto::RpcError::make(proto::ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                     "oppx mcp serve has no method " + r.method));
  }

  // MCP 2026-07-28's standing request for list changes: acknowledged with what of its filter is
  // honoured (tool list changes, the only list this server has), then held open (never answered
  // while the client is here); the changes go out as notifications naming it.
  void listen(proto::Request r, Reply reply) {
    modern_ = true;
    initialized_ = true;
    const json::value* filter = r.params.is_object() ? r.params.as_object().if_contains("notifications") : nullptr;
    bool tools = filter && proto::bool_field(*filter, "toolsListChanged");
    json::object honoured;
    if (tools) honoured["toolsListChanged"] = true;
    client_->notify("notifications/subscriptions/acknowledged",
                    serve::on_stream(json::object{{"notifications", std::move(honoured)}}, r.id));
    listens_.push_back({std::make_shared<Reply>(std::move(reply)), r.id, tools});
    if (listens_.size() > kMaxListens) {
      // The oldest stream is ended from this side, as a server ends one over stdio.
      json::value oldest = listens_.front().id;
      client_->notify("notifications/cancelled", json::object{{"requestId", oldest}});
      drop_listen(oldest);
    }
    note_state();
  }

  bool drop_listen(const json::value& id) {
    auto it = std::find_if(listens_.begin(), listens_.end(), [&](const Listen& l) { return l.id == id; });
    if (it == listens_.end()) return false;
    if (it->reply) it->reply->withdraw();
    listens_.erase(it);
    note_state();
    return true;
  }

  void initialize(const json::value& params, Reply reply) {
    std::string asked = proto::string_field(params, "protocolVersion");
    std::string version =
        proto::mcp::supported(asked) || asked == "2024-11-05" ? asked : std::string(proto::mcp::kLatest);
    if (const json::value* caps = params.is_object() ? params.as_object().if_contains("capabilities") : nullptr)
      take_capabilities(*caps);
    reply.ok(json::object{{"protocolVersion", version},
                          {"capabilities", json::object{{"tools", json::object{{"listChanged", true}}}}},
                          {"serverInfo", serve::server_info()},
                          {"instructions", kInstructions}});
  }

  // MCP 2026-07-28: no initialize; the versions and what the server offers, and each request says
  // what its client can do in its _meta.
  void discover(Reply reply) {
    modern_ = true;
    json::array versions{proto::mcp::kStateless};
    for (std::string_view v : proto::mcp::kVersions) versions.emplace_back(v);
    initialized_ = true;
    note_state();
    reply.ok(serve::fresh_now({{"supportedVersions", std::move(versions)},
                               {"capabilities", json::object{{"tools", json::object{{"listChanged", true}}}}},
                               {"serverInfo", serve::server_info()},
                               {"instructions", kInstructions}},
                              true));
  }

  // A 2026-07-28 client says what it can do in each request's _meta; it is asked through its
  // results (modern_shows_forms), never by a request from the server.
  void remember_modern_capabilities(const json::value& params) {
    if (!serve::modern_capabilities(params)) return;
    modern_ = true;
    take_capabilities(json::object{});
  }

  void take_capabilities(const json::value& caps) {
    asks_forms_ = serve::shows(caps, "form");
    asks_urls_ = serve::shows(caps, "url");
    note_state();
  }

  proto::RpcError daemon_down_error() const {
    return proto::RpcError::make(proto::ErrorCode::kInternal, proto::kind::kDisconnected,
                                 "oppx cannot reach its daemon: " + down_ + " (see `oppx daemon status`)");
  }

  // ---- the listing ----

  // Runs `then` once the tools of every offered connector are known (or the daemon is down).
  void with_listing(std::function<void()> then) {
    if (!daemon_ && connect_daemon_now() && reconnect_announces_) {
      reconnect_announces_ = false;
      list_changed();
    }
    if (!daemon_) return then();
    if (subscribed_ && names_ && fetching_ == 0) return then();
    waiters_.push_back(std::move(then));
    if (subscribed_) fetch_missing();
  }

  // A connector starting with no list cached, when the client first lists: its tools are waited
  // for (kFirstStart at most), so that a client that lists once at its start sees them.
  bool first_listing_waits() {
    if (first_wait_over_) return false;
    bool starting = false;
    for (const Listed& c : connectors_) starting = starting || (c.state == "starting" && !c.cached);
    if (!starting) {
      first_wait_over_ = true;
      first_wait_.cancel();
      return false;
    }
    if (!first_wait_armed_) {
      first_wait_armed_ = true;
      first_wait_.expires_after(kFirstStart);
      first_wait_.async_wait([w = weak_from_this()](boost::system::error_code ec) {
        auto self = w.lock();
        if (ec || !self) return;
        self->first_wait_over_ = true;
        self->fetch_missing();
      });
    }
    return true;
  }

  void run_waiters() {
    if (daemon_ && subscribed_) return fetch_missing();
    auto waiting = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiting) w();
  }

  void fetch_missing() {
    if (fetching_ > 0 || !daemon_ || !subscribed_ || waiters_.empty() || first_listing_waits()) return;
    for (const Listed& c : connectors_) {
      if (!c.offered() || tools_.count(c.name)) continue;
      ++fetching_;
      daemon_->call("mcp/tools", json::object{{"name", c.name}, {"cwd", options_.cwd}},
                    [w = weak_from_this(), d = daemon_, name = c.name](JsonRpcPeer::CallResult r) {
                      auto self = w.lock();
                      if (!self || self->daemon_ != d) return;
                      --self->fetching_;
                      // A failed reading is not kept: the connector is left out of this listing
                      // and asked again by the next.
                      if (r) self->tools_[name] = offered_tools(*r);
                      if (self->fetching_ == 0) self->build_listing();
                    });
    }
    if (fetching_ == 0) build_listing();
  }

  // The tools of a mcp/tools answer that a deny rule does not cover.
  static json::array offered_tools(const json::value& r) {
    json::array out;
    const json::object* o = r.if_object();
    const json::value* tools = o ? o->if_contains("tools") : nullptr;
    if (!tools || !tools->is_array()) return out;
    const json::value* denied = o->if_contains("denied");
    for (const json::value& t : tools->as_array()) {
      std::string name = proto::string_field(t, "name");
      bool refused = false;
      if (denied && denied->is_array())
        for (const json::value& d : denied->as_array()) refused = refused || (d.is_string() && d.as_string() == name);
      if (!name.empty() && !refused && t.is_object()) out.push_back(t);
    }
    return out;
  }

  void build_listing() {
    std::vector<ServedTool> served;
    std::vector<const json::object*> objects;
    for (const Listed& c : connectors_) {
      auto it = tools_.find(c.name);
      if (!c.offered() || it == tools_.end()) continue;
      for (const json::value& t : it->second) {
        served.push_back({c.name, proto::string_field(t, "name")});
        objects.push_back(&t.as_object());
      }
    }
    names_.emplace(served);
    listing_.clear();
    for (std::size_t i = 0; i < served.size(); ++i) {
      json::object t = *objects[i];
      std::string title = proto::string_field(t, "title");
      t["name"] = names_->name_of(i);
      t["title"] = fmt::format("{}: {}", served[i].connector, title.empty() ? served[i].tool : title);
      listing_.push_back(std::move(t));
    }
    auto waiting = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiting) w();
  }

  // ---- calls ----

  void call_tool(proto::Request r, Reply reply) {
    auto shared = std::make_shared<Reply>(std::move(reply));
    with_listing([this, r = std::move(r), reply = shared]() mutable {
      if (!names_) return reply->fail(daemon_down_error());
      std::string name = proto::string_field(r.params, "name");
      std::optional<ServedTool> tool = names_->find(name);
      if (!tool)
        return reply->fail(proto::RpcError::make(proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams,
                                                 "Unknown tool: " + name));
      after_start(tool->connector,
                  [this, r = std::move(r), reply, tool = *tool]() mutable { send_call(std::move(r), reply, tool); });
    });
  }

  // Runs `then` once `connector` is not starting: a call judged while it starts (its list as the
  // daemon last saw it, not yet its server's) would find no read-only mark and be asked about.
  void after_start(const std::string& connector, std::function<void()> then) {
    for (const Listed& c : connectors_)
      if (c.name == connector && c.state == "starting") return starting_[connector].push_back(std::move(then));
    then();
  }

  void run_started(const std::string& connector) {
    auto it = starting_.find(connector);
    if (it == starting_.end()) return;
    auto waiting = std::move(it->second);
    starting_.erase(it);
    for (auto& w : waiting) w();
  }

  void send_call(proto::Request r, const std::shared_ptr<Reply>& reply, const ServedTool& tool) {
    if (!daemon_) return reply->fail(daemon_down_error());
    json::object p{{"connector", tool.connector},
                   {"tool", tool.tool},
                   {"cwd", options_.cwd},
                   {"timeout_ms", options_.call_timeout.count()}};
    const json::object& params = r.params.as_object();
    if (const json::value* a = params.if_contains("arguments"); a && !a->is_null()) p["arguments"] = *a;
    auto call = std::make_shared<Call>();
    call->client_token = serve::progress_token_of(r.params);
    if (!call->client_token.is_null()) {
      call->progress = fmt::format("p{}", ++progress_ids_);
      p["progress_token"] = call->progress;
    }
    call->reply = reply;
    call->key = proto::id_key(r.id);
    call->served = proto::string_field(r.params, "name");
    call->connector = tool.connector;
    call->tool = tool.tool;
    call->arguments = p.contains("arguments") ? p["arguments"] : json::value(json::object{});
    call->modern = serve::is_modern(r.params);
    call->asks_in_results = serve::modern_shows_forms(r.params);
    if (cancelled_.erase(call->key))
      return reply->fail(proto::RpcError::make(proto::ErrorCode::kCancelled, proto::kind::kCancelled,
                                               "the client cancelled the call before it was sent"));
    call->daemon_id = daemon_->call("tools/call", p, [w = weak_from_this(), call](JsonRpcPeer::CallResult res) {
      if (auto self = w.lock()) self->call_ended(*call);
      if (!call->reply) return;  // its client was asked a question and has not answered
      if (!res && res.error().kind == proto::kind::kCancelled) return call->reply->fail(res.error());
      json::object out = res ? serve::call_result(*res)
                         : res.error().kind == proto::kind::kDisconnected
                             ? serve::text_result("oppxd went away during the call: it may or may not have run", true)
                             : serve::error_result(res.error());
      call->reply->ok(serve::complete(std::move(out), call->modern));
    });
    in_flight_[call->key] = call->daemon_id;
    calls_.push_back(call);
    cancels_daemon_call(*reply, call->daemon_id);
  }

  void call_ended(Call& call) {
    if (!call.key.empty()) in_flight_.erase(call.key);
    if (!call.request_state.empty()) parked_.erase(call.request_state);
    if (call.unanswered) call.unanswered->cancel();
    if (call.ask) std::exchange(call.ask, nullptr)->ok(serve::permission_answer(nullptr));
    std::erase_if(calls_, [&](const std::shared_ptr<Call>& c) { return c.get() == &call; });
  }

  // The client's cancel of `reply` (or its going away) cancels the daemon's call.
  void cancels_daemon_call(Reply& reply, const json::value& id) {
    reply.on_cancel([d = std::weak_ptr<JsonRpcPeer>(daemon_), id] {
      if (auto peer = d.lock()) peer->notify(proto::kCancelRequest, json::object{{"id", id}});
    });
  }

  // The daemon asks whether a call may run: asked of the client's user as a form, when it can show
  // one (a 2026-07-28 client in the call's result); else refused (method not found), and the
  // daemon declines the call with the line that allows it.
  void ask_permission(const json::value& params, Reply reply) {
    if (asks_forms_ && client_) {
      auto shared = std::make_shared<Reply>(std::move(reply));
      client_->call("elicitation/create", serve::permission_form(params),
                    [shared](JsonRpcPeer::CallResult r) { shared->ok(serve::permission_answer(r ? &*r : nullptr)); });
      return;
    }
    if (std::shared_ptr<Call> call = call_asked_about(params)) return ask_in_result(call, params, std::move(reply));
    reply.fail(proto::RpcError::make(proto::ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                     "this MCP client cannot be asked"));
  }

  // The call a permissions/ask is about (it names no call): the oldest of a 2026-07-28 client with
  // that tool and those arguments that is not being asked about already.
  std::shared_ptr<Call> call_asked_about(const json::value& params) const {
    const json::value* a = params.as_object().if_contains("arguments");
    json::value args = a && !a->is_null() ? *a : json::value(json::object{});
    for (const auto& c : calls_)
      if (c->asks_in_results && c->reply && !c->ask && c->connector == proto::string_field(params, "connector") &&
          c->tool == proto::string_field(params, "tool") && c->arguments == args)
        return c;
    return nullptr;
  }

  // MCP 2026-07-28 (multi round-trip requests): the client's request is answered input_required
  // with the form, and the daemon's call waits; the client calls again with its answer and this
  // requestState, and that request gets the call's result (resume_call). Unanswered within
  // kUnanswered, the daemon is told no.
  void ask_in_result(const std::shared_ptr<Call>& call, const json::value& params, Reply ask) {
    if (parked_.size() >= kMaxUnanswered) {
      // The oldest question left unanswered is taken as no (a client that dropped its questions).
      auto oldest = std::find_if(calls_.begin(), calls_.end(), [](const auto& c) { return c->ask != nullptr; });
      if (oldest != calls_.end()) no_answer(**oldest);
    }
    call->ask = std::make_shared<Reply>(std::move(ask));
    call->request_state = fmt::format("oppx-permission-{}", ++questions_);
    parked_[call->request_state] = call;
    in_flight_.erase(std::exchange(call->key, {}));  // that request is answered now
    call->unanswered = std::make_shared<boost::asio::steady_timer>(io_, kUnanswered);
    call->unanswered->async_wait([w = weak_from_this(), wc = std::weak_ptr<Call>(call)](boost::system::error_code ec) {
      auto self = w.lock();
      auto c = wc.lock();
      if (!ec && self && c && c->ask) self->no_answer(*c);
    });
    std::exchange(call->reply, nullptr)
        ->ok(serve::input_required(kPermissionInput, serve::permission_form(params), call->request_state));
  }

  // A question of `call` left unanswered: the daemon is told no; the client's answer, if it comes,
  // is refused as one to a question oppx no longer holds.
  void no_answer(Call& call) {
    parked_.erase(call.request_state);
    call.unanswered->cancel();
    std::exchange(call.ask, nullptr)->ok(serve::permission_answer(nullptr));
  }

  // The client's call again, with its answer to a permission question: the daemon is given the
  // answer, and this request gets the call's result.
  void resume_call(proto::Request r, Reply reply) {
    auto it = parked_.find(proto::string_field(r.params, "requestState"));
    if (it == parked_.end())
      return reply.fail(proto::RpcError::make(
          proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams,
          "this call answers a question that oppx no longer holds (answered already, or its call ended): "
          "call the tool again"));
    std::shared_ptr<Call> call = it->second;
    parked_.erase(it);
    call->unanswered->cancel();
    const json::value* responses = r.params.as_object().if_contains("inputResponses");
    const json::value* answer =
        responses && responses->is_object() ? responses->as_object().if_contains(kPermissionInput) : nullptr;
    const json::value* a = r.params.as_object().if_contains("arguments");
    json::value args = a && !a->is_null() ? *a : json::value(json::object{});
    if (proto::string_field(r.params, "name") != call->served || args != call->arguments) {
      std::exchange(call->ask, nullptr)->ok(serve::permission_answer(nullptr));
      return reply.fail(proto::RpcError::make(
          proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams,
          "this answer is for " + call->served + " with the arguments it was asked about, not " +
              proto::string_field(r.params, "name").substr(0, 100) + " with these; oppx took it as no"));
    }
    call->client_token = serve::progress_token_of(r.params);
    call->key = proto::id_key(r.id);
    call->reply = std::make_shared<Reply>(std::move(reply));
    in_flight_[call->key] = call->daemon_id;
    cancels_daemon_call(*call->reply, call->daemon_id);
    std::exchange(call->ask, nullptr)->ok(serve::permission_answer(answer));
  }

  // A connector's own question (mcp/elicit) passed to the client as MCP elicitation, or declined
  // when it cannot show that kind.
  void pass_question(const json::value& params, Reply reply) {
    std::string mode = proto::string_field(params, "mode");
    bool can = mode == "url" ? asks_urls_ : asks_forms_;
    if (!can || !client_) return reply.ok(json::object{{"action", "decline"}});
    std::string message =
        fmt::format("{}: {}", proto::string_field(params, "connector"), proto::string_field(params, "message"));
    json::object q{{"mode", mode}, {"message", message}};
    if (mode == "url") {
      q["url"] = proto::string_field(params, "url");
      q["elicitationId"] = fmt::format("oppx-{}", ++questions_);
    } else if (const json::value* schema = params.as_object().if_contains("schema")) {
      q["requestedSchema"] = *schema;
    }
    auto shared = std::make_shared<Reply>(std::move(reply));
    client_->call("elicitation/create", q, [shared](JsonRpcPeer::CallResult r) {
      if (!r || !r->is_object()) return shared->ok(json::object{{"action", "decline"}});
      shared->ok(*r);
    });
  }

  boost::asio::io_context& io_;
  ServeOptions options_;
  std::shared_ptr<JsonRpcPeer> client_;
  std::shared_ptr<JsonRpcPeer> daemon_;
  std::string down_;
  bool subscribed_ = false;
  bool initialized_ = false;
  bool announce_posted_ = false;
  bool reconnect_announces_ = false;
  bool asks_forms_ = false;
  bool asks_urls_ = false;
  bool modern_ = false;  // the client speaks MCP 2026-07-28
  bool first_wait_armed_ = false;
  bool first_wait_over_ = false;
  boost::asio::steady_timer first_wait_;
  int fetching_ = 0;
  std::int64_t questions_ = 0;
  std::int64_t progress_ids_ = 0;
  ServeState told_;  // the state options_.on_state was last given
  std::vector<Listed> connectors_;
  std::map<std::string, json::array> tools_;  // by connector name, deny rules' tools left out
  std::optional<ServedNames> names_;
  json::array listing_;
  std::vector<std::function<void()>> waiters_;
  std::map<std::string, std::vector<std::function<void()>>> starting_;  // calls waiting for a connector's start
  struct Listen {
    std::shared_ptr<Reply> reply;  // null for one opened with the server before (a handover)
    json::value id;
    bool tools = false;  // it asked for tool list changes
  };
  std::vector<Listen> listens_;                          // subscriptions/listen, held until the client goes or cancels
  std::map<std::string, json::value> in_flight_;         // the client's request id (id_key) -> the daemon's
  std::set<std::string> cancelled_;                      // calls cancelled before they were sent (id_key)
  std::vector<std::shared_ptr<Call>> calls_;             // sent to the daemon and not answered by it, oldest first
  std::map<std::string, std::shared_ptr<Call>> parked_;  // by requestState: asked, waiting for the answer
};

void end_serving(McpServe& serve) { serve.end(); }

json::object to_json(const ServeState& state) {
  json::array listens;
  for (const auto& [id, tools] : state.listens) listens.push_back(json::object{{"id", id}, {"tools", tools}});
  return {{"initialized", state.initialized},
          {"forms", state.forms},
          {"urls", state.urls},
          {"modern", state.modern},
          {"listens", std::move(listens)}};
}

ServeState serve_state_of(const json::value& v) {
  ServeState s{proto::bool_field(v, "initialized"),
               proto::bool_field(v, "forms"),
               proto::bool_field(v, "urls"),
               proto::bool_field(v, "modern"),
               {}};
  const json::value* listens = v.is_object() ? v.as_object().if_contains("listens") : nullptr;
  if (listens && listens->is_array())
    for (const json::value& l : listens->as_array())
      if (std::string id = proto::string_field(l, "id"); !id.empty() && s.listens.size() < kMaxListens)
        s.listens.emplace_back(std::move(id), proto::bool_field(l, "tools"));
  return s;
}

std::shared_ptr<McpServe> serve_mcp(boost::asio::io_context& io, std::unique_ptr<Transport> client,
                                    ServeOptions options) {
  auto s = std::make_shared<McpServe>(io, std::move(options));
  s->start(std::move(client));
  return s;
}

}  // namespace oppx
