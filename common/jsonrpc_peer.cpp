// JsonRpcPeer. Every incoming request is tracked by id until its Reply is used or dropped; when
// the transport closes, their on_cancel hooks run and outgoing calls fail with "disconnected".
#include "common/jsonrpc_peer.h"

#include "common/changes.h"
#include "common/log.h"

namespace oppx {

namespace json = boost::json;
using proto::ErrorCode;
using proto::RpcError;

Reply::Reply(std::weak_ptr<JsonRpcPeer> peer, json::value id, std::shared_ptr<State> state)
    : peer_(std::move(peer)), id_(std::move(id)), state_(std::move(state)) {}

Reply::Reply(Reply&& other) noexcept
    : peer_(std::move(other.peer_)), id_(std::move(other.id_)), state_(std::move(other.state_)), done_(other.done_) {
  other.done_ = true;
}

Reply::~Reply() {
  if (done_ || cancelled()) return;  // a cancelled request has nobody left to answer
  log::error("request {} was dropped without a reply; answering with an internal error", proto::id_key(id_));
  fail(RpcError::make(ErrorCode::kInternal, proto::kind::kInternal,
                      "the daemon dropped this request without an answer (a bug); see oppxd.log"));
}

bool Reply::cancelled() const { return state_ && state_->cancelled; }

void Reply::on_cancel(std::function<void()> fn) {
  if (!state_) return;
  if (state_->cancelled) return fn();
  state_->on_cancel = std::move(fn);
}

void Reply::withdraw() {
  if (done_) return;
  done_ = true;
  if (auto peer = peer_.lock()) peer->reply_done(id_);
}

void Reply::ok(json::value result) { finish(proto::serialize_result(id_, result), {}); }
void Reply::fail(RpcError error) { finish(proto::serialize_error(id_, error), error.kind); }

void Reply::finish(std::string line, std::string_view error_kind) {
  if (done_) return;
  done_ = true;
  if (state_ && !state_->method.empty()) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - state_->received).count();
    log::debug("request {} {}: {} in {:.2f} ms{}", state_->method, proto::id_key(id_),
               error_kind.empty() ? "answered" : "failed (" + std::string(error_kind) + ")", ms,
               cancelled() ? ", its caller gone" : "");
  }
  auto peer = peer_.lock();
  if (!peer || cancelled()) return;
  peer->reply_done(id_);
  peer->send_response(std::move(line), id_);
}

std::shared_ptr<JsonRpcPeer> JsonRpcPeer::create(std::unique_ptr<Transport> transport, Options options) {
  return std::shared_ptr<JsonRpcPeer>(new JsonRpcPeer(std::move(transport), std::move(options)));
}

JsonRpcPeer::JsonRpcPeer(std::unique_ptr<Transport> transport, Options options)
    : transport_(std::move(transport)), options_(std::move(options)) {}

// Pending calls are answered even when the peer goes away first: nobody waits forever.
JsonRpcPeer::~JsonRpcPeer() {
  options_.on_closed = nullptr;
  on_closed(TransportError{"closed", "closed"});
}

void JsonRpcPeer::start() {
  std::weak_ptr<JsonRpcPeer> weak = weak_from_this();
  transport_->start(Transport::Handlers{
      [weak](std::string line) {
        if (auto self = weak.lock()) self->on_line(std::move(line));
      },
      [weak](const TransportError& e) {
        if (auto self = weak.lock()) self->on_closed(e);
      },
      [weak](const TransportError& e) {
        auto self = weak.lock();
        if (!self || !self->options_.reply_to_malformed) return;
        self->send_response(proto::serialize_error(
            nullptr, RpcError::make(ErrorCode::kInvalidRequest, proto::kind::kTooLarge,
                                    e.message + "; the connection is closed. Send large data in smaller messages")));
      },
      [weak](const json::value& id, RpcError error) {
        if (auto self = weak.lock()) self->request_failed(id, std::move(error));
      }});
}

void JsonRpcPeer::send(Message m) {
  if (!closed_) transport_->send(std::move(m));
}

void JsonRpcPeer::send_response(std::string line, const json::value& id) {
  Message m;
  m.text = std::move(line);
  m.id = id;
  send(std::move(m));
}

// The transport's own answer to a request it could not carry: its kind is ours (`received` stays
// false), whatever the far end could have said.
void JsonRpcPeer::request_failed(const json::value& id, RpcError error) {
  auto it = outgoing_.find(proto::id_key(id));
  if (it == outgoing_.end()) return;
  auto done = std::move(it->second);
  outgoing_.erase(it);
  changes::changed();  // calls_waiting() fell
  error.received = false;
  done(std::move(error));
}

void JsonRpcPeer::reply_done(const json::value& id) { incoming_.erase(proto::id_key(id)); }

void JsonRpcPeer::notify(std::string_view method, const json::value& params, const json::value& cancels) {
  Message m;
  m.kind = Message::Kind::kNotification;
  m.text = proto::serialize_notification(method, params);
  m.method = std::string(method);
  m.cancels = cancels;
  send(std::move(m));
}

json::value JsonRpcPeer::call(std::string_view method, const json::value& params, std::function<void(CallResult)> done,
                              RequestOptions request) {
  json::value id = next_id_++;
  if (closed_) {
    done(RpcError::make(ErrorCode::kInternal, proto::kind::kDisconnected, options_.name + " is not connected"));
    return id;
  }
  outgoing_.emplace(proto::id_key(id), std::move(done));
  Message m;
  m.kind = Message::Kind::kRequest;
  m.text = proto::serialize_request(id, method, params);
  m.method = std::string(method);
  m.id = id;
  m.repeatable = request.repeatable;
  m.slow_first_byte = request.slow_first_byte;
  m.label = std::move(request.label);
  m.headers = std::move(request.headers);
  send(std::move(m));
  return id;
}

void JsonRpcPeer::forget(const json::value& id) {
  if (outgoing_.erase(proto::id_key(id))) changes::changed();
}

bool JsonRpcPeer::cancel_request(const json::value& id, const RpcError& answer) {
  auto it = incoming_.find(proto::id_key(id));
  if (it == incoming_.end() || !it->second->on_cancel) return false;
  auto state = it->second;
  incoming_.erase(it);
  state->cancelled = true;  // its Reply, used later, sends nothing
  send_response(proto::serialize_error(id, answer), id);
  if (auto fn = std::move(state->on_cancel)) fn();
  return true;
}

void JsonRpcPeer::close() {
  if (!closed_) transport_->close();
}

void JsonRpcPeer::abort() {
  if (closed_) return;
  transport_->abort();
  on_closed(TransportError{"closed", "closed"});  // now, not when the transport's notice arrives
}

void JsonRpcPeer::on_line(std::string line) {
  auto parsed = proto::parse_message(line);
  if (!parsed) {
    const proto::Rejection& r = parsed.error();
    log::debug("{}: rejected a message: {}", options_.name, r.error.message);
    if (options_.reply_to_malformed) send_response(proto::serialize_error(r.id, r.error), r.id);
    return;
  }
  if (auto* resp = std::get_if<proto::Response>(&*parsed)) {
    auto it = outgoing_.find(proto::id_key(resp->id));
    if (it == outgoing_.end()) {
      log::debug("{}: skipped a response with unknown id {}", options_.name, proto::id_key(resp->id));
      return;
    }
    auto done = std::move(it->second);
    outgoing_.erase(it);
    changes::changed();
    if (resp->ok) {
      done(std::move(resp->result));
    } else {
      resp->error.received = true;  // the far end's: its data.kind is its own claim (request_failed: ours)
      done(std::move(resp->error));
    }
    return;
  }
  if (auto* note = std::get_if<proto::Notification>(&*parsed)) {
    if (options_.on_notification) options_.on_notification(std::move(*note));
    return;
  }
  auto& req = std::get<proto::Request>(*parsed);
  std::string key = proto::id_key(req.id);
  if (incoming_.count(key)) {
    send_response(proto::serialize_error(
                      req.id, RpcError::make(ErrorCode::kInvalidRequest, proto::kind::kDuplicateId,
                                             "id " + key.substr(2) +
                                                 " is already used by a request still in flight; use a new id")),
                  req.id);
    return;
  }
  if (incoming_.size() >= options_.max_in_flight) {
    send_response(proto::serialize_error(
                      req.id, RpcError::make(ErrorCode::kInvalidRequest, proto::kind::kTooLarge,
                                             "too many requests in flight (" + std::to_string(options_.max_in_flight) +
                                                 "); wait for some answers before sending more")),
                  req.id);
    return;
  }
  auto state = std::make_shared<Reply::State>();
  if (log::enabled(log::Level::kDebug)) {
    state->method = req.method;
    state->received = std::chrono::steady_clock::now();
  }
  incoming_.emplace(key, state);
  Reply reply(weak_from_this(), req.id, state);
  if (!options_.on_request) {
    reply.fail(RpcError::make(ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound, "this peer takes no requests"));
    return;
  }
  std::string method = req.method;
  try {
    options_.on_request(std::move(req), std::move(reply));
  } catch (const std::exception& e) {
    // The Reply moved into the handler answered with an internal error as it unwound.
    log::error("{}: handler of {} threw: {}", options_.name, method, e.what());
  }
}

void JsonRpcPeer::on_closed(const TransportError& e) {
  if (closed_) return;
  closed_ = true;
  auto incoming = std::move(incoming_);
  incoming_.clear();
  for (auto& [key, state] : incoming) {
    state->cancelled = true;
    if (auto fn = std::move(state->on_cancel)) fn();
  }
  auto outgoing = std::move(outgoing_);
  outgoing_.clear();
  changes::changed();  // calls_waiting() is 0, and a client's connection ended (its fd closed first)
  for (auto& [key, done] : outgoing) {
    done(RpcError::make(ErrorCode::kInternal, proto::kind::kDisconnected, options_.name + " closed: " + e.message));
  }
  if (options_.on_closed) options_.on_closed(e);
}

}  // namespace oppx
