#include "cli/agent_client.h"

#include "cli/commands.h"
#include "cli/output.h"

#include <boost/json/value_from.hpp>

#include <poll.h>
#include <sys/socket.h>

namespace oppx::cli {

namespace json = boost::json;

namespace {

// A turn can take many model requests; the daemon streams events all along and ends it itself.
constexpr std::chrono::hours kTurnLimit{4};
constexpr std::chrono::milliseconds kOpenLimit{150'000};  // the model server's and the browser's start

chat::ActionRecord record_of(const proto::AgentAction& a) {
  return {a.name, a.arguments, a.status, a.text, a.could_not_ask};
}

chat::Question question_of(const proto::AgentQuestion& q) {
  return {q.action, q.command, q.arguments, q.read_only, q.why, q.once_only, q.exposed};
}

proto::AgentAnswer answer_of(const chat::Answer& a) {
  using K = proto::AgentAnswerKind;
  switch (a.kind) {
    case chat::Answer::kYes:
      return {K::kYes, {}};
    case chat::Answer::kAlwaysTool:
      return {K::kAlwaysTool, {}};
    case chat::Answer::kAlwaysConnector:
      return {K::kAlwaysConnector, {}};
    case chat::Answer::kText:
      return {K::kText, a.text};
    case chat::Answer::kNo:
      break;
  }
  return {};
}

void dispatch(const proto::AgentEvent& e, chat::FrontEnd& front) {
  switch (e.kind) {
    case proto::AgentEventKind::kText:
      return front.reply_text(e.text);
    case proto::AgentEventKind::kNotice:
      return front.notice(e.text);
    case proto::AgentEventKind::kAction:
      if (!e.action) return;
      if (e.action->status == "started") return front.action_started(e.action->name, e.action->arguments);
      return front.action_done(record_of(*e.action));
    case proto::AgentEventKind::kProgress:
      return front.progress(e.progress, e.total, e.message);
  }
}

}  // namespace

chat::ModelError model_error_of(const proto::AgentModelProblem& p) {
  return {p.kind, p.message, p.steps, static_cast<unsigned>(p.http_status)};
}

AgentClient::AgentClient(std::string socket, proto::AgentOpenParams params, chat::FrontEnd& front)
    : socket_(std::move(socket)), params_(std::move(params)), front_(&front) {}

std::optional<AgentClient::Failure> AgentClient::connect() {
  conn_.reset();
  auto c = connect_daemon(socket_, Start::kIfNeeded);
  if (!c) return Failure{c.error().message, c.error().exit_code, std::nullopt, false};
  conn_.emplace(std::move(*c));
  listen();
  return std::nullopt;
}

boost::system::result<std::vector<proto::AgentConversation>, AgentClient::Failure> AgentClient::conversations(
    std::int64_t limit) {
  if (!conn_) {
    if (auto failed = connect()) return *failed;
  }
  proto::AgentConversationsParams params{params_.cwd, limit};
  auto r = proto::decode_reply<proto::AgentConversationsResult>(
      conn_->client.call(proto::kAgentConversations, json::value_from(params), kCallTimeout));
  if (!r) return Failure{r.error(), kExitFailed};
  return std::move(r->conversations);
}

boost::system::result<proto::AgentOpenResult, AgentClient::Failure> AgentClient::open() {
  // A new connection for every open but the first (which may use the one conversations() made):
  // one that is being replaced, or that the daemon closed, is not reused.
  if (!conn_ || !alive() || opened_once_) {
    if (auto failed = connect()) return *failed;
  }
  opened_once_ = true;
  auto opened = conn_->client.call(proto::kAgentOpen, json::value_from(params_), kOpenLimit);
  if (!opened) {
    const proto::RpcError& e = opened.error();
    Failure f{e.message, kExitNoDaemon, std::nullopt, e.kind == proto::kind::kNoConversation};
    if (f.no_conversation) f.exit_code = kExitFailed;
    if (e.kind == proto::kind::kModel) {
      if (auto p = proto::decode<proto::AgentModelProblem>(e.data)) {
        f.model = model_error_of(*p);
        f.exit_code = kExitModel;
      }
    }
    return f;
  }
  auto info = proto::decode<proto::AgentOpenResult>(*opened);
  if (!info) return Failure{"the daemon's answer to agent/open could not be read: " + info.error(), kExitFailed};
  return std::move(*info);
}

void AgentClient::listen() {
  SyncClient& client = conn_->client;
  client.on_notification([this](const std::string& method, const json::value& params) {
    if (method != proto::kAgentEvent) return;
    auto e = proto::decode<proto::AgentEvent>(params);
    if (!e) return;
    if (e->action && e->action->status != "started") ran_.push_back(*e->action);
    dispatch(*e, *front_);
  });
  client.on_request([this](const std::string& method, const json::value& params) -> SyncClient::RequestResult {
    if (method == proto::kMcpElicit) {
      auto q = proto::decode<proto::ElicitQuestion>(params);
      if (!q) return proto::RpcError::make(proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams, q.error());
      return json::value_from(front_->elicit(*q));
    }
    if (method != proto::kAgentAsk)
      return proto::RpcError::make(proto::ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                   "the chat answers agent/ask and mcp/elicit only");
    auto q = proto::decode<proto::AgentQuestion>(params);
    if (!q) return proto::RpcError::make(proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams, q.error());
    chat::Answer a = front_->ask(question_of(*q));
    // Installed here, with npm's progress on this terminal, before the daemon starts it.
    bool starts_browser =
        q->action == "browser" && (a.kind == chat::Answer::kYes || a.kind == chat::Answer::kAlwaysTool ||
                                   a.kind == chat::Answer::kAlwaysConnector);
    if (starts_browser) {
      if (std::string why = front_->prepare_browser(); !why.empty()) {
        front_->notice("the browser cannot start: " + why);
        a = {chat::Answer::kNo, {}};
      }
    }
    return json::value_from(answer_of(a));
  });
}

AgentClient::Turn AgentClient::turn(const std::string& message) {
  Turn out;
  if (!conn_) {
    out.cut = true;
    out.why = "no connection to the daemon";
    return out;
  }
  SyncClient& client = conn_->client;
  ran_.clear();
  proto::AgentTurnParams params{message, std::nullopt};
  auto r = client.call(proto::kAgentTurn, json::value_from(params), kTurnLimit);
  if (!r) {
    out.why = r.error().message;
    if (r.error().kind == proto::kind::kDisconnected) {
      out.cut = true;
      out.result.actions = std::move(ran_);
    } else if (r.error().kind == proto::kind::kModel) {
      if (auto p = proto::decode<proto::AgentModelProblem>(r.error().data)) out.result.error = *p;
    }
    return out;
  }
  auto t = proto::decode<proto::AgentTurnResult>(*r);
  if (!t) {
    out.why = "the daemon's answer to agent/turn could not be read: " + t.error();
    return out;
  }
  out.result = std::move(*t);
  if (!out.result.conversation.empty()) state_.conversation = out.result.conversation;
  return out;
}

void AgentClient::cancel() {
  if (conn_) conn_->client.send(proto::kAgentCancel, json::object{});
}

std::string AgentClient::update(const proto::AgentStateParams& changes) {
  if (!conn_) return "no connection to the daemon";
  auto r = conn_->client.call(proto::kAgentState, json::value_from(changes), kOpenLimit);
  if (!r) return r.error().message;
  auto s = proto::decode<proto::AgentState>(*r);
  if (!s) return "the daemon's answer to agent/state could not be read: " + s.error();
  state_ = std::move(*s);
  return {};
}

bool AgentClient::alive() const {
  if (!conn_) return false;
  int fd = conn_->client.fd();
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return true;  // nothing to read: still open
  if (p.revents & (POLLHUP | POLLERR)) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) != 0;  // 0: the daemon closed it
}

std::string AgentClient::reconnect() {
  proto::AgentState was = state_;
  params_.conversation = was.conversation;
  params_.resume = false;
  if (!was.mode.empty()) params_.mode = was.mode;
  auto opened = open();
  if (!opened) return opened.error().message;
  if (std::string why = update(); !why.empty()) return why;
  proto::AgentStateParams same;
  if (!was.sandbox.empty() && (was.sandbox != state_.sandbox || was.network != state_.network)) {
    same.sandbox = was.sandbox;
    same.network = was.network;
    return update(same);
  }
  return {};
}

}  // namespace oppx::cli
