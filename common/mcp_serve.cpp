// `oppx mcp serve`'s server: the MCP client's requests on one side, a daemon connection (a session
// of the client's folder, subscribed to mcp/changed) on the other. See mcp_serve.h.
#include "common/mcp_serve.h"

#include "common/serve_names.h"
#include "common/jsonrpc_peer.h"
#include "common/log.h"
#include "proto/elicitation.h"
#include "proto/mcp_versions.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <map>
#include <set>
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
// How much of a call's arguments the permission question shows.
constexpr std::size_t kShownArguments = 2000;

constexpr std::string_view kInstructions =
    "The tools of the user's MCP connectors, kept running by oppx. Each is named "
    "<connector>__<tool>. The user's oppx permission rules decide what runs.";

std::string str_of(const json::value& v, std::string_view key) {
  const json::object* o = v.if_object();
  const json::value* s = o ? o->if_contains(key) : nullptr;
  return s && s->is_string() ? std::string(s->as_string()) : std::string();
}

bool bool_of(const json::value& v, std::string_view key) {
  const json::object* o = v.if_object();
  const json::value* b = o ? o->if_contains(key) : nullptr;
  return b && b->is_bool() && b->as_bool();
}

// A connector as the daemon listed it: the fields that decide whether its tools are offered.
struct Listed {
  std::string source;
  std::string name;
  std::string state;
  bool cached = false;
  bool offered() const { return state == "running" || state == "idle" || (state == "starting" && cached); }
};

Listed listed_of(const json::value& entry) {
  return {str_of(entry, "source"), str_of(entry, "name"), str_of(entry, "state"), bool_of(entry, "cached")};
}

json::object text_result(std::string text, bool is_error) {
  return {{"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}, {"isError", is_error}};
}

// A daemon's error as the tool's failed result, with its steps, so that the client's model and
// user read why and what to do.
json::object error_result(const proto::RpcError& e) {
  std::string text = e.message;
  if (const json::value* steps = e.data.if_contains("steps"); steps && steps->is_array()) {
    int n = 0;
    for (const json::value& s : steps->as_array())
      if (s.is_string()) text += fmt::format("\n{}. {}", ++n, std::string_view(s.as_string()));
  }
  return text_result(std::move(text), true);
}

// The daemon's tools/call result in MCP's form: its text (secrets hidden, binary parts described,
// cut with a marker naming the file of the whole), and its structuredContent when it fit the schema.
json::object call_result(const json::value& r) {
  json::object out = text_result(str_of(r, "text"), bool_of(r, "isError"));
  if (std::string structured = str_of(r, "structured"); !structured.empty()) {
    boost::system::error_code ec;
    json::value parsed = json::parse(structured, ec);
    if (!ec && parsed.is_object()) out["structuredContent"] = std::move(parsed);
  }
  return out;
}

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
      const json::value* token = n.params.is_object() ? n.params.as_object().if_contains("progress_token") : nullptr;
      if (!token || !client_) return;
      json::object p{{"progressToken", *token}};
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
    bool tools_changed = bool_of(n.params, "tools_changed");
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
      self->client_->notify("notifications/tools/list_changed", json::object{});
    });
  }

  void client_gone() {
    if (daemon_) daemon_->close();
    if (options_.on_client_gone) options_.on_client_gone();
  }

  // Tells options_.on_state what a server taking over this client would need, when it changed.
  void note_state() {
    ServeState now{initialized_, asks_forms_, asks_urls_};
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
    if (r.method == "ping") return reply.ok(json::object{});
    if (r.method == "subscriptions/listen") {
      // MCP 2026-07-28's standing request for list changes: held open (never answered while the
      // client is here); the changes go out as notifications, as to any client.
      initialized_ = true;
      note_state();
      listens_.push_back(std::make_shared<Reply>(std::move(reply)));
      if (listens_.size() > kMaxListens) listens_.erase(listens_.begin());  // answered (an error) as dropped
      return;
    }
    if (r.method == "tools/list") {
      remember_modern_capabilities(r.params);
      return with_listing([this, reply = std::make_shared<Reply>(std::move(reply))]() mutable {
        if (!names_) return reply->fail(daemon_down_error());
        reply->ok(json::object{{"tools", listing_}});
      });
    }
    if (r.method == "tools/call") {
      remember_modern_capabilities(r.params);
      return call_tool(std::move(r), std::move(reply));
    }
    reply.fail(proto::RpcError::make(proto::ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                     "oppx mcp serve has no method " + r.method));
  }

  void initialize(const json::value& params, Reply reply) {
    std::string asked = str_of(params, "protocolVersion");
    std::string version =
        proto::mcp::supported(asked) || asked == "2024-11-05" ? asked : std::string(proto::mcp::kLatest);
    if (const json::value* caps = params.is_object() ? params.as_object().if_contains("capabilities") : nullptr)
      take_capabilities(*caps);
    reply.ok(json::object{{"protocolVersion", version},
                          {"capabilities", json::object{{"tools", json::object{{"listChanged", true}}}}},
                          {"serverInfo", json::object{{"name", "oppx"}, {"version", OPPX_VERSION}}},
                          {"instructions", kInstructions}});
  }

  // MCP 2026-07-28: no initialize; the versions and what the server offers, and each request says
  // what its client can do in its _meta.
  void discover(Reply reply) {
    json::array versions{proto::mcp::kStateless};
    for (std::string_view v : proto::mcp::kVersions) versions.emplace_back(v);
    initialized_ = true;
    note_state();
    reply.ok(json::object{{"supportedVersions", std::move(versions)},
                          {"capabilities", json::object{{"tools", json::object{{"listChanged", true}}}}},
                          {"serverInfo", json::object{{"name", "oppx"}, {"version", OPPX_VERSION}}},
                          {"instructions", kInstructions}});
  }

  void remember_modern_capabilities(const json::value& params) {
    const json::object* o = params.if_object();
    const json::value* meta = o ? o->if_contains("_meta") : nullptr;
    const json::value* caps =
        meta && meta->is_object() ? meta->as_object().if_contains(proto::mcp::kMetaCapabilities) : nullptr;
    // A 2026-07-28 client asks through its results, not by requests from the server: not offered.
    if (caps) take_capabilities(json::object{});
  }

  void take_capabilities(const json::value& caps) {
    const json::value* e = caps.is_object() ? caps.as_object().if_contains("elicitation") : nullptr;
    // An empty elicitation object is the form mode alone (2025-06-18's meaning).
    asks_forms_ = e && e->is_object() && (e->as_object().empty() || e->as_object().contains("form"));
    asks_urls_ = e && e->is_object() && e->as_object().contains("url");
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
      std::string name = str_of(t, "name");
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
        served.push_back({c.name, str_of(t, "name")});
        objects.push_back(&t.as_object());
      }
    }
    names_.emplace(served);
    listing_.clear();
    for (std::size_t i = 0; i < served.size(); ++i) {
      json::object t = *objects[i];
      std::string title = str_of(t, "title");
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
      std::string name = str_of(r.params, "name");
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
    if (const json::value* meta = params.if_contains("_meta"); meta && meta->is_object())
      if (const json::value* token = meta->as_object().if_contains("progressToken")) p["progress_token"] = *token;
    std::string key = proto::id_key(r.id);
    if (cancelled_.erase(key))
      return reply->fail(proto::RpcError::make(proto::ErrorCode::kCancelled, proto::kind::kCancelled,
                                               "the client cancelled the call before it was sent"));
    json::value id = daemon_->call("tools/call", p, [w = weak_from_this(), reply, key](JsonRpcPeer::CallResult res) {
      auto self = w.lock();
      if (self) self->in_flight_.erase(key);
      if (res) return reply->ok(call_result(*res));
      if (res.error().kind == proto::kind::kCancelled) return reply->fail(res.error());
      if (res.error().kind == proto::kind::kDisconnected)
        return reply->ok(text_result("oppxd went away during the call: it may or may not have run", true));
      reply->ok(error_result(res.error()));
    });
    in_flight_[key] = id;
    reply->on_cancel([w = weak_from_this(), d = std::weak_ptr<JsonRpcPeer>(daemon_), id] {
      if (auto peer = d.lock()) peer->notify(proto::kCancelRequest, json::object{{"id", id}});
    });
  }

  // The daemon asks whether a call may run: asked of the client's user as a form, when it can show
  // one; else not answered, so the daemon declines with the line that allows it.
  void ask_permission(const json::value& params, Reply reply) {
    if (!asks_forms_ || !client_)
      return reply.fail(proto::RpcError::make(proto::ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                              "this MCP client cannot be asked"));
    std::string rule = str_of(params, "rule");
    std::string args;
    if (const json::value* a = params.as_object().if_contains("arguments")) args = proto::json_text(*a);
    if (args.size() > kShownArguments) {
      std::size_t cut = kShownArguments;
      while (cut > 0 && (static_cast<unsigned char>(args[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
      args = fmt::format("{} … ({} more bytes not shown)", args.substr(0, cut), args.size() - cut);
    }
    std::string message = fmt::format("oppx: may {} run? {}.\nArguments: {}", rule, str_of(params, "why"), args);
    json::object answer{
        {"type", "string"},
        {"title", "Allow it?"},
        {"enum", json::array{"yes", "session", "always", "no"}},
        {"enumNames", json::array{"Yes, this time", "Yes, until this client closes",
                                  "Always in this project (oppx permissions allow " + rule + ")", "No"}}};
    json::object form{{"mode", "form"},
                      {"message", message},
                      {"requestedSchema", json::object{{"type", "object"},
                                                       {"properties", json::object{{"answer", answer}}},
                                                       {"required", json::array{"answer"}}}}};
    auto shared = std::make_shared<Reply>(std::move(reply));
    client_->call("elicitation/create", form, [shared](JsonRpcPeer::CallResult r) {
      std::string choice = "no";
      if (r && str_of(*r, "action") == "accept") {
        const json::value* content = r->as_object().if_contains("content");
        std::string a = content ? str_of(*content, "answer") : "";
        if (a == "yes" || a == "session" || a == "always") choice = a;
      }
      shared->ok(json::object{{"answer", choice}});
    });
  }

  // A connector's own question (mcp/elicit) passed to the client as MCP elicitation, or declined
  // when it cannot show that kind.
  void pass_question(const json::value& params, Reply reply) {
    std::string mode = str_of(params, "mode");
    bool can = mode == "url" ? asks_urls_ : asks_forms_;
    if (!can || !client_) return reply.ok(json::object{{"action", "decline"}});
    std::string message = fmt::format("{}: {}", str_of(params, "connector"), str_of(params, "message"));
    json::object q{{"mode", mode}, {"message", message}};
    if (mode == "url") {
      q["url"] = str_of(params, "url");
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
  bool first_wait_armed_ = false;
  bool first_wait_over_ = false;
  boost::asio::steady_timer first_wait_;
  int fetching_ = 0;
  std::int64_t questions_ = 0;
  ServeState told_;  // the state options_.on_state was last given
  std::vector<Listed> connectors_;
  std::map<std::string, json::array> tools_;  // by connector name, deny rules' tools left out
  std::optional<ServedNames> names_;
  json::array listing_;
  std::vector<std::function<void()>> waiters_;
  std::map<std::string, std::vector<std::function<void()>>> starting_;  // calls waiting for a connector's start
  std::vector<std::shared_ptr<Reply>> listens_;   // subscriptions/listen, held until the client goes
  std::map<std::string, json::value> in_flight_;  // the client's request id (id_key) -> the daemon's
  std::set<std::string> cancelled_;               // calls cancelled before they were sent (id_key)
};

void end_serving(McpServe& serve) { serve.end(); }

json::object to_json(const ServeState& state) {
  return {{"initialized", state.initialized}, {"forms", state.forms}, {"urls", state.urls}};
}

ServeState serve_state_of(const json::value& v) {
  return {bool_of(v, "initialized"), bool_of(v, "forms"), bool_of(v, "urls")};
}

std::shared_ptr<McpServe> serve_mcp(boost::asio::io_context& io, std::unique_ptr<Transport> client,
                                    ServeOptions options) {
  auto s = std::make_shared<McpServe>(io, std::move(options));
  s->start(std::move(client));
  return s;
}

}  // namespace oppx
