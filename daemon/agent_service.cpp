// AgentService and AgentSession. Threads: the daemon's loop owns the service, the sessions map and
// every Reply; a session's thread owns its Agent, model client and daemon connection, and runs one
// job at a time (open, then turns). The two meet in three places only: the job queue (a mutex and
// a condition variable), the posts back to the loop (events, questions, replies, the end), and
// cancel(), which the loop calls and which reaches the agent through its thread-safe cancel().
#include "daemon/agent_service.h"

#include "chat/agent.h"
#include "chat/browser.h"
#include "chat/conversations.h"
#include "chat/sandbox.h"
#include "common/log.h"
#include "common/playwright.h"
#include "common/text.h"
#include "common/sync_client.h"
#include "common/tool_text.h"
#include "daemon/connectors.h"
#include "daemon/router.h"
#include "daemon/server.h"
#include "proto/daemon_api.h"
#include "proto/elicitation.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/value_from.hpp>

#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include <sys/socket.h>

namespace oppx::daemon {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr std::chrono::milliseconds kHelloLimit{10'000};

proto::AgentModelProblem problem_of(const chat::ModelError& e) {
  return {e.kind, e.message, e.steps, static_cast<std::int64_t>(e.http_status)};
}

proto::RpcError model_failed(const chat::ModelError& e) {
  auto error = proto::RpcError::make(proto::ErrorCode::kInternal, proto::kind::kModel, e.message);
  json::value data = json::value_from(problem_of(e));
  for (auto& [k, v] : data.as_object()) error.data[k] = v;
  return error;
}

proto::RpcError failed(std::string_view kind, std::string message) {
  return proto::RpcError::make(proto::ErrorCode::kInternal, kind, std::move(message));
}

proto::AgentAction action_of(const chat::ActionRecord& r) {
  return {r.name, r.arguments, r.status, r.text, r.could_not_ask};
}

chat::Answer answer_of(const proto::AgentAnswer& a) {
  using K = proto::AgentAnswerKind;
  switch (a.answer) {
    case K::kYes:
      return {chat::Answer::kYes, {}};
    case K::kAlwaysTool:
      return {chat::Answer::kAlwaysTool, {}};
    case K::kAlwaysConnector:
      return {chat::Answer::kAlwaysConnector, {}};
    case K::kText:
      return {chat::Answer::kText, a.text};
    case K::kNo:
      break;
  }
  return {};
}

// One answer, given once: by the client, or as "no" by a cancel or a client gone.
template <class A>
struct Pending {
  std::mutex m;
  std::condition_variable cv;
  std::optional<A> answer;
  void give(A a) {
    {
      std::lock_guard lock(m);
      if (answer) return;
      answer = std::move(a);
    }
    cv.notify_all();
  }
  A wait() {
    std::unique_lock lock(m);
    cv.wait(lock, [this] { return answer.has_value(); });
    return *answer;
  }
};

}  // namespace

class AgentSession final : public chat::FrontEnd, public std::enable_shared_from_this<AgentSession> {
 public:
  AgentSession(asio::io_context& io, const Client& client, std::weak_ptr<JsonRpcPeer> front, int fd,
               proto::AgentOpenParams params)
      : io_(io), front_(std::move(front)), daemon_fd_(fd), sync_(SyncClient::adopt(fd)), params_(std::move(params)) {
    for (const auto& [k, v] : client.env) env_.emplace(k, v);
    if (params_.cwd.empty()) params_.cwd = client.cwd;
    name_ = "agent of client " + std::to_string(client.id);
  }
  ~AgentSession() override {
    end();
    if (thread_.joinable()) thread_.join();
  }

  // The loop's side.
  void start(std::function<void()> on_end) {
    thread_ = std::thread([this, on_end = std::move(on_end)] {
      work();
      asio::post(io_, on_end);
    });
  }
  void run(std::function<void()> job) {
    {
      std::lock_guard lock(m_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_all();
  }
  // The running turn ends as cancelled: the model request is aborted, a call in flight cancelled,
  // a question waiting answered no.
  void cancel(chat::Agent::CancelledBy by = chat::Agent::CancelledBy::kUser) {
    std::lock_guard lock(m_);
    cancelled_ = true;
    if (pending_) pending_->give({});
    if (pending_form_) pending_form_->give({"cancel", {}});
    if (agent_) agent_->cancel(by);
  }
  // No more jobs; the thread ends once the current one returns.
  void end(chat::Agent::CancelledBy by = chat::Agent::CancelledBy::kUser) {
    cancel(by);
    {
      std::lock_guard lock(m_);
      if (ending_) return;
      ending_ = true;
    }
    cv_.notify_all();
    ::shutdown(daemon_fd_, SHUT_RDWR);  // a daemon call in flight returns at once
  }
  bool busy = false;  // a turn is queued or running (the loop's flag)

  // The session thread's jobs: each completes its reply on the loop.
  void open(std::shared_ptr<Reply> reply);
  void turn(proto::AgentTurnParams params, std::shared_ptr<Reply> reply);
  void state(proto::AgentStateParams params, std::shared_ptr<Reply> reply);

  // chat::FrontEnd, on the session's thread.
  void reply_text(std::string_view piece) override {
    proto::AgentEvent e;
    e.text = std::string(piece);
    event(e);
  }
  void notice(std::string_view text) override {
    proto::AgentEvent e{proto::AgentEventKind::kNotice, std::string(text)};
    event(e);
  }
  void action_started(const std::string& name, const json::object& arguments) override {
    proto::AgentEvent e{proto::AgentEventKind::kAction};
    e.action = proto::AgentAction{name, arguments, "started", {}, false};
    event(e);
  }
  void action_done(const chat::ActionRecord& record) override {
    proto::AgentEvent e{proto::AgentEventKind::kAction};
    e.action = action_of(record);
    event(e);
  }
  void progress(double progress, std::optional<double> total, const std::string& message) override {
    proto::AgentEvent e{proto::AgentEventKind::kProgress};
    e.progress = progress;
    e.total = total;
    e.message = message;
    event(e);
  }
  bool can_ask() const override { return params_.can_ask; }
  // The user said yes to the browser: installed first when it is not (any front end), what the
  // install does said as notices; npm's own report goes to the daemon's log.
  std::string prepare_browser() override {
    return playwright::prepare([this](std::string_view line) { notice(line); });
  }
  chat::Answer ask(const chat::Question& q) override;
  proto::ElicitAnswer elicit(const proto::ElicitQuestion& q) override;

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [this] { return ending_ || !jobs_.empty(); });
        if (ending_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }
  void event(const proto::AgentEvent& e) {
    asio::post(io_, [peer = front_, v = json::value_from(e)] {
      if (auto p = peer.lock()) p->notify(proto::kAgentEvent, v);
    });
  }
  // The job's answer, once: the session takes the next open or turn from then on.
  void finish(std::shared_ptr<Reply> reply, boost::system::result<json::value, proto::RpcError> r) {
    asio::post(io_, [self = weak_from_this(), reply = std::move(reply), r = std::move(r)]() mutable {
      if (auto s = self.lock()) s->busy = false;
      if (reply->done()) return;
      if (r) return reply->ok(std::move(*r));
      reply->fail(std::move(r.error()));
    });
  }

  asio::io_context& io_;
  std::weak_ptr<JsonRpcPeer> front_;
  int daemon_fd_;
  SyncClient sync_;
  proto::AgentOpenParams params_;
  std::map<std::string, std::string> env_;
  std::string name_;
  std::thread thread_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool ending_ = false;
  bool cancelled_ = false;
  std::shared_ptr<Pending<chat::Answer>> pending_;
  std::shared_ptr<Pending<proto::ElicitAnswer>> pending_form_;
  // Made by open() on the session's thread; cancel() reaches the agent under m_.
  std::optional<chat::ModelClient> model_;
  std::unique_ptr<chat::DaemonTools> tools_;
  std::unique_ptr<chat::Agent> agent_;
  chat::Conversation conversation_;
};

chat::Answer AgentSession::ask(const chat::Question& q) {
  auto pending = std::make_shared<Pending<chat::Answer>>();
  {
    std::lock_guard lock(m_);
    if (cancelled_ || ending_) return {};
    pending_ = pending;
  }
  proto::AgentQuestion question{q.action, q.command, q.arguments, q.read_only, q.why, q.once_only, q.exposed};
  asio::post(io_, [peer = front_, v = json::value_from(question), pending] {
    auto p = peer.lock();
    if (!p) return pending->give({});
    p->call(proto::kAgentAsk, v, [pending](JsonRpcPeer::CallResult r) {
      auto a = r ? proto::decode<proto::AgentAnswer>(*r) : proto::Decoded<proto::AgentAnswer>();
      if (r && !a) log::warn("agent/ask: the client's answer could not be read ({}); taken as no", a.error());
      pending->give(r && a ? answer_of(*a) : chat::Answer{});
    });
  });
  chat::Answer a = pending->wait();
  std::lock_guard lock(m_);
  pending_.reset();
  return a;
}

// Sent to the front end as it came (mcp/elicit) when it asks; else answered by the session's
// policy, and said as a notice.
proto::ElicitAnswer AgentSession::elicit(const proto::ElicitQuestion& q) {
  auto policy = proto::elicit_policy(params_.elicit)
                    .value_or(params_.can_ask ? proto::ElicitPolicy::kAsk : proto::ElicitPolicy::kDecline);
  if (policy == proto::ElicitPolicy::kAsk && !params_.can_ask) policy = proto::ElicitPolicy::kDecline;
  if (policy != proto::ElicitPolicy::kAsk) {
    proto::ElicitAnswer a = proto::unasked_answer(policy, q);
    std::string what = q.mode == "url" ? "to open an address" : "to fill in a form";
    notice(fmt::format("{} asked {}; {}", escape_controls(q.connector.substr(0, 60)), what,
                       a.action == "accept" ? "accepted with its defaults"
                                            : "declined, as this session cannot ask (--elicit accept-defaults "
                                              "accepts a form's defaults)"));
    return a;
  }
  auto pending = std::make_shared<Pending<proto::ElicitAnswer>>();
  {
    std::lock_guard lock(m_);
    if (cancelled_ || ending_) return {"cancel", {}};
    pending_form_ = pending;
  }
  asio::post(io_, [peer = front_, v = json::value_from(q), pending] {
    auto p = peer.lock();
    if (!p) return pending->give({"cancel", {}});
    p->call(proto::kMcpElicit, v, [pending](JsonRpcPeer::CallResult r) {
      auto a = proto::decode_reply<proto::ElicitAnswer>(r);
      if (r && !a) log::warn("mcp/elicit: the client's answer could not be read ({}); declined", a.error());
      pending->give(a ? *a : proto::ElicitAnswer{});
    });
  });
  proto::ElicitAnswer a = pending->wait();
  std::lock_guard lock(m_);
  pending_form_.reset();
  return a;
}

void AgentSession::open(std::shared_ptr<Reply> reply) {
  proto::HelloParams hello{proto::kProtocolVersion, name_, kBuildId, {}, params_.cwd};
  for (const auto& [k, v] : env_) hello.env.emplace(k, v);
  if (auto r = sync_.call(proto::kHello, json::value_from(hello), kHelloLimit); !r)
    return finish(reply, failed(proto::kind::kInternal, "the agent could not reach the daemon: " + r.error().message));

  auto cfg = chat::load_model_config(env_);
  if (!cfg) return finish(reply, model_failed(cfg.error()));
  model_.emplace(*cfg);
  auto resolved = model_->resolve_model();
  if (!resolved) return finish(reply, model_failed(resolved.error()));

  proto::AgentOpenResult out;
  chat::Conversation conversation{{}, params_.cwd, {}};
  if (!params_.conversation.empty()) {
    // Only a conversation of this folder's (as agent/conversations lists them).
    if (std::filesystem::path(params_.conversation).parent_path() != chat::conversations_dir(params_.cwd))
      return finish(reply, failed(proto::kind::kNoConversation,
                                  params_.conversation + " is not a conversation of " + params_.cwd));
    auto saved = chat::load_conversation(params_.conversation, params_.cwd);
    if (!saved) return finish(reply, failed(proto::kind::kNoConversation, saved.error()));
    conversation = std::move(*saved);
  } else if (params_.resume) {
    auto last = chat::last_conversation(params_.cwd);
    if (!last) return finish(reply, failed(proto::kind::kNoConversation, last.error()));
    conversation = std::move(*last);
  }
  auto tools = std::make_unique<chat::DaemonTools>(sync_, params_.cwd);
  if (std::string why = tools->open_session(params_.mode); !why.empty())
    return finish(reply, failed(proto::kind::kInternal, "the daemon did not open a session: " + why));

  chat::AgentOptions options{params_.mode};
  options.browser = params_.browser.value_or(true);
  std::string sandbox_problem;
  options.sandbox = chat::sandbox_policy_from_config(params_.cwd, sandbox_problem);
  options.sandbox.client_env = env_;
  if (!sandbox_problem.empty()) out.notices.push_back(sandbox_problem);
  std::string search_problem;
  options.tool_search = chat::tool_search_settings(search_problem);
  if (!search_problem.empty()) out.notices.push_back(search_problem);
  {
    std::lock_guard lock(m_);
    tools_ = std::move(tools);
    agent_ = std::make_unique<chat::Agent>(*model_, *tools_, *this, options);
  }
  if (!conversation.messages.empty()) agent_->restore(conversation.messages);
  out.resumed_messages = static_cast<std::int64_t>(conversation.messages.size());
  conversation_ = std::move(conversation);
  if (chat::browser_auto()) {
    std::string why = prepare_browser();
    if (why.empty()) why = tools_->browser_start();
    if (!why.empty()) out.notices.push_back("the browser is on but did not start: " + why);
  }
  if (std::string why = agent_->start(); !why.empty())
    return finish(reply, failed(proto::kind::kInternal, "the daemon did not list the connectors: " + why));

  out.model = model_->config().model;
  out.context_tokens = agent_->context().tokens;
  std::string lines;
  for (const auto& t : agent_->tools()) {
    out.tools.push_back(t.line);
    lines += t.line + "\n";
  }
  for (const auto& c : agent_->not_offered())
    out.not_offered.push_back({c.name, c.state, c.reason, c.approve, c.steps});
  if (out.context_tokens) {
    for (auto& [kind, message] : cost_warnings(estimate_tokens(lines), *out.context_tokens,
                                               "The connectors' tool lists take", "`oppx mcp remove <name>` drops one"))
      out.warnings.push_back({kind, message});
  }
  finish(reply, json::value_from(out));
}

void AgentSession::turn(proto::AgentTurnParams params, std::shared_ptr<Reply> reply) {
  {
    std::lock_guard lock(m_);
    cancelled_ = false;
  }
  if (!agent_) return finish(reply, failed(proto::kind::kNoAgent, "the agent did not open; send agent/open again"));
  if (params.mode && *params.mode != agent_->mode()) agent_->set_mode(*params.mode);
  // A connector that was starting (or down) when the agent listed them joins once it runs.
  if (!agent_->not_offered().empty()) {
    if (std::string why = agent_->refresh(); !why.empty()) notice("the connectors could not be listed again: " + why);
  }
  chat::TurnResult t = agent_->turn(params.message);
  conversation_.messages = agent_->conversation();
  if (std::string why = chat::save_conversation(conversation_); !why.empty())
    notice("warning: the conversation was not saved (" + why + "); `-c` will not find it");

  proto::AgentTurnResult out;
  out.reply = t.reply;
  for (const auto& a : t.actions) out.actions.push_back(action_of(a));
  out.connectors_down = t.connectors_down;
  out.usage = t.usage;
  out.step_bound = t.step_bound;
  out.cancelled = t.cancelled;
  out.declined = t.declined();
  out.conversation = conversation_.path;
  if (t.error) out.error = problem_of(*t.error);
  finish(reply, json::value_from(out));
}

void AgentSession::state(proto::AgentStateParams params, std::shared_ptr<Reply> reply) {
  if (!agent_) return finish(reply, failed(proto::kind::kNoAgent, "the agent did not open; send agent/open again"));
  proto::AgentState out;
  auto problem = [&out](std::string why) {
    if (!why.empty()) out.problem += (out.problem.empty() ? "" : "; ") + why;
  };
  if (params.mode) agent_->set_mode(*params.mode);
  if (params.sandbox || params.network) {
    chat::SandboxPolicy p = agent_->sandbox();
    if (params.sandbox) p.mode = chat::sandbox_mode_from(*params.sandbox).value_or(p.mode);
    if (params.network) p.network = *params.network;
    agent_->set_sandbox(std::move(p));
  }
  if (params.clear) {
    agent_->clear();
    conversation_ = chat::Conversation{{}, params_.cwd, {}};
  }
  if (params.browser == "start") problem(agent_->start_browser());
  if (params.browser == "stop") problem(agent_->stop_browser());
  if (params.refresh) {
    if (std::string why = agent_->refresh(); !why.empty()) problem("the connectors could not be listed again: " + why);
  }

  out.model = model_->config().model;
  out.server = model_->config().server;
  out.context_tokens = agent_->context().tokens;
  out.context_note = agent_->context().note;
  out.mode = agent_->mode();
  out.sandbox = chat::sandbox_mode_name(agent_->sandbox().mode);
  out.network = agent_->sandbox().network;
  out.sandbox_text = chat::describe_sandbox(agent_->sandbox());
  for (const auto& t : agent_->tools()) out.tools.push_back({t.connector, t.line});
  for (const auto& c : agent_->not_offered())
    out.not_offered.push_back({c.name, c.state, c.reason, c.approve, c.steps});
  out.conversation = conversation_.path;
  out.system_tokens = estimate_tokens(agent_->system_prompt());
  for (const auto& m : agent_->conversation()) {
    if (const auto* c = m.as_object().if_contains("content"); c && c->is_string())
      out.conversation_tokens += estimate_tokens(c->get_string());
  }
  out.browser_running = agent_->browser_running();
  out.browser_offered = agent_->browser_offered();
  finish(reply, json::value_from(out));
}

AgentService::AgentService(Server& server) : server_(server) {}

AgentService::~AgentService() {
  stop();
  sessions_.clear();  // joins each thread: every job returns soon after end()
}

void AgentService::open(const proto::AgentOpenParams& params, Reply reply, Client& client) {
  if (auto old = sessions_.find(client.id); old != sessions_.end()) {
    if (old->second->busy)
      return reply.fail(failed(proto::kind::kAgentBusy, "a turn of this connection is running; agent/cancel it first"));
    old->second->end();
    sessions_.erase(old);  // its thread is idle: the join is at once
  }
  int fd = server_.connect_self();
  if (fd < 0) return reply.fail(failed(proto::kind::kInternal, "the daemon could not connect the agent to itself"));
  auto session = std::make_shared<AgentSession>(server_.io(), client, client.peer, fd, params);
  std::uint64_t id = client.id;
  session->start([alive = std::weak_ptr<AgentService*>(alive_), id, weak = std::weak_ptr<AgentSession>(session)] {
    // The thread ended (the session was ended): forget it if it is still the client's.
    auto service = alive.lock();
    if (!service) return;
    auto& sessions = (*service)->sessions_;
    auto it = sessions.find(id);
    if (it != sessions.end() && it->second == weak.lock()) sessions.erase(it);
  });
  sessions_[id] = session;
  // `busy` covers the open too: a second open or a turn before its answer is refused.
  session->busy = true;
  auto shared = std::make_shared<Reply>(std::move(reply));
  std::weak_ptr<AgentSession> weak = session;
  shared->on_cancel([weak] {
    if (auto s = weak.lock()) s->end();
  });
  session->run([s = session.get(), shared] { s->open(shared); });
}

void AgentService::turn(const proto::AgentTurnParams& params, Reply reply, Client& client) {
  auto it = sessions_.find(client.id);
  if (it == sessions_.end())
    return reply.fail(failed(proto::kind::kNoAgent, "this connection has no agent; send agent/open first"));
  auto session = it->second;
  if (session->busy)
    return reply.fail(
        failed(proto::kind::kAgentBusy, "a turn of this connection is running; wait for it or agent/cancel it"));
  session->busy = true;
  auto shared = std::make_shared<Reply>(std::move(reply));
  std::weak_ptr<AgentSession> weak = session;
  shared->on_cancel([weak] {
    if (auto s = weak.lock()) s->cancel();
  });
  session->run([s = session.get(), params, shared] { s->turn(params, shared); });
}

void AgentService::state(const proto::AgentStateParams& params, Reply reply, Client& client) {
  auto it = sessions_.find(client.id);
  if (it == sessions_.end())
    return reply.fail(failed(proto::kind::kNoAgent, "this connection has no agent; send agent/open first"));
  auto session = it->second;
  if (session->busy) return reply.fail(failed(proto::kind::kAgentBusy, "a turn of this connection is running"));
  session->busy = true;
  auto shared = std::make_shared<Reply>(std::move(reply));
  session->run([s = session.get(), params, shared] { s->state(params, shared); });
}

void AgentService::conversations(const proto::AgentConversationsParams& params, Reply reply, const Client& client) {
  std::string cwd = params.cwd.empty() ? client.cwd : params.cwd;
  auto shared = std::make_shared<Reply>(std::move(reply));
  server_.connectors().worker().run(
      [cwd, limit = static_cast<std::size_t>(params.limit)] { return chat::list_conversations(cwd, limit); },
      [shared](std::vector<chat::ConversationSummary> list) {
        proto::AgentConversationsResult out;
        for (auto& c : list)
          out.conversations.push_back({std::move(c.path), std::move(c.first), static_cast<std::int64_t>(c.messages)});
        shared->ok(json::value_from(out));
      });
}

void AgentService::cancel(Reply reply, Client& client) {
  auto it = sessions_.find(client.id);
  bool running = it != sessions_.end() && it->second->busy;
  if (running) it->second->cancel();
  reply.ok(json::value_from(proto::AgentCancelResult{running}));
}

void AgentService::client_gone(std::uint64_t client) {
  auto it = sessions_.find(client);
  if (it == sessions_.end()) return;
  // Ended, not destroyed here: its thread may be inside a job; it is forgotten once it returns.
  it->second->end();
}

void AgentService::stop() {
  for (auto& [id, s] : sessions_) s->end(chat::Agent::CancelledBy::kDaemon);
}

}  // namespace oppx::daemon
