// Connector::Impl: the state machine of one connector (starting, running, failed, stopped,
// waiting, disabled, unsupported), its restart policy (a crash loop backs off, then gives up),
// the retry of a call after a restart (only when that cannot run it twice), and the diagnosis of
// a stop. What it runs on comes from a factory (daemon/link.h: a stdio child or an HTTP session)
// and the MCP session on it is an McpClient (daemon/mcp_client.h): nothing here depends on the
// kind of link. Pending operations hold a weak_ptr to the Impl, so a connector removed while it
// starts ends cleanly. All of it is callbacks on the daemon's io_context; no coroutines.
#include "daemon/connector.h"

#include "common/log.h"
#include "common/text.h"
#include "daemon/diagnose.h"
#include "daemon/link.h"
#include "daemon/mcp_client.h"
#include "proto/mcp_results.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <map>

namespace oppx::daemon {

namespace asio = boost::asio;
namespace json = boost::json;
using proto::ErrorCode;
using proto::RpcError;

namespace {

// Crash loop: a program that stops on its own is started again after 1, 2, 4… s (at most
// kMaxBackoff); after kMaxQuickDeaths stops each within kStableRun of its start, it stays failed
// until `oppx mcp reconnect`.
constexpr auto kStableRun = std::chrono::seconds(60);
constexpr int kMaxQuickDeaths = 4;
constexpr auto kMaxBackoff = std::chrono::seconds(30);
// A server that could not be reached is tried again by a call at most this often: 2 s, or
// OPPX_TEST_UNREACHABLE_RETRY_MS from the daemon's environment, so that a test can show both
// sides of the limit without waiting for a clock (0: the next call tries; an hour: it does not).
std::chrono::milliseconds unreachable_retry() {
  static const std::chrono::milliseconds every = [] {
    const char* v = std::getenv("OPPX_TEST_UNREACHABLE_RETRY_MS");
    return std::chrono::milliseconds(v && *v ? std::max(0L, std::strtol(v, nullptr, 10)) : 2000L);
  }();
  return every;
}
// A call that lost its program waits this long for the exit (and its reason) before answering.
constexpr auto kExitWait = std::chrono::seconds(5);

}  // namespace

struct Connector::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io, ConnectorDef def, std::string log_path, LinkFactory factory)
      : io(io),
        def(std::move(def)),
        log_path(std::move(log_path)),
        factory(std::move(factory)),
        start_timer(io),
        restart_timer(io),
        deadline_timer(io) {}
  ~Impl() { log::hide(this, {}); }

  using Clock = std::chrono::steady_clock;

  struct PendingCall;
  // Deadlines of the calls in flight, earliest first; one timer serves them all (a timer per
  // call costs a system call and a cancelled wait for every call).
  using Deadlines = std::multimap<Clock::time_point, std::weak_ptr<PendingCall>>;
  // One tools/call, from its first try to its answer: the caller's time limit (one deadline for
  // all tries, across restarts, so it lives here and not in the MCP client), the attempt in
  // flight, progress, and the caller's cancel. Answered once.
  struct PendingCall {
    std::string tool;
    json::value arguments;
    std::chrono::milliseconds limit{};
    std::chrono::milliseconds asked{};  // the limit as the caller gave it, for messages
    bool retried = false;               // started again once for it already
    std::weak_ptr<McpClient> client;    // the session the attempt went to, not whichever runs later
    json::value id;                     // of the attempt in flight; null when none is
    std::function<void(const json::object&)> on_progress;
    decltype(CallOptions::on_elicit) on_elicit;
    int asking = 0;  // questions to the user open: the deadline waits
    bool paused = false;
    std::chrono::milliseconds left{};  // what was left of the limit when the first was asked
    Deadlines::iterator deadline;
    bool timed = false;  // `deadline` is in the map
    std::function<void(CallResult)> done;
    bool finished = false;
  };
  using Call = std::shared_ptr<PendingCall>;

  asio::io_context& io;
  ConnectorDef def;
  std::string log_path;
  std::optional<std::vector<std::string>> roots;  // offer_roots
  LinkFactory factory;
  ConnectorState state = ConnectorState::kStopped;
  std::string reason;
  std::string kind;
  std::vector<std::string> steps;
  json::array tools;
  std::function<void()> on_change;
  std::function<void()> on_idle;
  std::function<void()> on_offers_changed;  // its resources or prompts changed, or a new session began
  std::function<std::string()> start_check;
  std::size_t open_calls = 0;         // calls not answered yet
  std::shared_ptr<Link> link;         // of the current start
  std::shared_ptr<McpClient> client;  // the MCP session on `link`, once it opened
  asio::steady_timer start_timer, restart_timer, deadline_timer;
  Deadlines deadlines;
  Clock::time_point deadline_armed = Clock::time_point::max();
  std::vector<std::string> secrets;  // of its last start (secrets_of), hidden in what it says
  std::uint64_t generation = 0;      // bumps at each start; callbacks of an older start are ignored
  EnvMap env;                        // of the client that started it last: a restart uses it again
  std::chrono::milliseconds start_timeout = kStartTimeout;
  Clock::time_point started_at;
  Clock::time_point failed_at;

  int quick_deaths = 0;      // stops on its own, each soon after its start, in a row
  bool failing = false;      // inside fail(): what end_link() ends must not fail it again
  bool restartable = false;  // failed because its program stopped on its own, and not given up on
  std::string era;           // the MCP version its server spoke last (remember_era, then each start)
  // Run at every state change; each returns true when it is done and can be dropped.
  std::vector<std::function<bool()>> waiters;

  std::string masked(std::string_view text) const { return mask_secrets(text, secrets); }

  // A call's answer with the secrets hidden, before it reaches the socket, `--json`, the model or a
  // conversation file: an error's words and data, and every string of a result (its text parts,
  // structuredContent, an isError text); the server may repeat what it was given ("invalid api key
  // sk-…", an echoed Authorization header, a printed environment).
  void hide_secrets(CallResult& r) const {
    if (secrets.empty()) return;
    if (r) return hide_in(*r);
    RpcError e = r.error();
    e.message = masked(e.message);
    for (auto& member : e.data) hide_in(member.value());
    r = CallResult(boost::system::in_place_error, std::move(e));
  }

  void hide_in(json::value& v) const {
    if (v.is_string()) {
      v = masked(v.as_string());
    } else if (v.is_array()) {
      for (auto& x : v.as_array()) hide_in(x);
    } else if (v.is_object()) {
      for (auto& member : v.as_object()) hide_in(member.value());
    }
  }

  void set_state(ConnectorState s, std::string why = {}, std::string_view k = {}, int http_status = 0) {
    state = s;
    why = masked(why);  // its reason quotes what the server said
    steps.clear();
    if (s == ConnectorState::kFailed) {
      Diagnosis d = diagnose(k, why, def, log_path, http_status);
      reason = std::move(d.reason);
      kind = std::move(d.kind);
      steps = std::move(d.steps);
      log::warn("connector {}: {}", def.name, reason);
      if (kind == proto::kind::kLogin && logs_in_with_oauth(def)) state = ConnectorState::kLogin;
    } else {
      reason = std::move(why);
      kind = std::string(k);
      if (s == ConnectorState::kUnsupported) steps = {def.fix};
    }
    // Waiters may start it again (a call's retry): a list of their own, new ones kept.
    auto now = std::move(waiters);
    waiters.clear();
    for (auto& w : now) {
      if (!w()) waiters.push_back(std::move(w));
    }
    if (on_change) on_change();
  }

  // `can_restart`: its program stopped on its own and a call may start it again. `http_status`:
  // the HTTP server's answer, when that is why.
  // The order matters: the state is kFailed before the link is ended, so that what end_link()
  // ends (a pending initialize or tools/list, a call's answer) sees it and stays quiet; the link
  // is ended before set_state(), so that a waiter run there may start it again on a clean slate.
  void fail(std::string_view k, std::string why, bool can_restart = false, int http_status = 0) {
    if (state == ConnectorState::kStopped || state == ConnectorState::kWaiting || failing) return;
    failing = true;
    state = ConnectorState::kFailed;
    restartable = can_restart;
    failed_at = Clock::now();
    end_link();
    failing = false;
    set_state(ConnectorState::kFailed, std::move(why), k, http_status);
  }

  // Runs `fn` once `ready` holds after a state change (or now), or when `limit` passes.
  void when(std::function<bool()> ready, std::chrono::milliseconds limit, std::function<void()> fn) {
    if (ready()) return fn();
    auto fired = std::make_shared<bool>(false);
    auto timer = std::make_shared<asio::steady_timer>(io, limit);
    auto shared_fn = std::make_shared<std::function<void()>>(std::move(fn));
    waiters.push_back([ready = std::move(ready), fired, timer, shared_fn] {
      if (*fired) return true;
      if (!ready()) return false;
      *fired = true;
      timer->cancel();
      (*shared_fn)();
      return true;
    });
    timer->async_wait([fired, shared_fn](boost::system::error_code ec) {
      if (ec || *fired) return;
      *fired = true;
      (*shared_fn)();
    });
  }

  void start(const EnvMap& client_env, std::chrono::milliseconds timeout) {
    if (def.never_starts()) return set_aside();
    if (std::string why = start_check ? start_check() : ""; !why.empty()) return wait_for_consent(std::move(why));
    end_link();
    ++generation;
    tools = {};
    restartable = false;
    restart_timer.cancel();
    if (&client_env != &env) env = client_env;
    start_timeout = timeout;
    started_at = Clock::now();
    secrets = secrets_of(def, client_env);
    log::hide(this, secrets);  // what the start meets (a DNS error naming the host) is logged masked too
    log::info("connector {}: starting (start timeout {} s)", def.name, timeout.count() / 1000);
    set_state(ConnectorState::kStarting);
    auto w = weak_from_this();
    auto gen = generation;
    LinkContext context;
    context.log_path = log_path;
    context.secrets = secrets;
    // The server stream opened only after tools/list went out without it: a list_changed sent
    // meanwhile was lost, so the tools are fetched once more.
    context.on_late_stream = [w, gen] {
      auto self = w.lock();
      if (self && gen == self->generation && self->client) self->client->refetch_tools();
    };
    auto made = factory(io, def, env, std::move(context));
    if (!made) return fail(made.error().kind, made.error().why, false, made.error().http_status);
    link = *made;
    // Its time to start runs from here: a slow exec counts in it (and one that never ends fails it).
    arm_start_timer(timeout);
    Link::Handlers h;
    h.on_open = [w, gen](std::unique_ptr<Transport> transport) {
      auto self = w.lock();
      if (self && gen == self->generation && self->state == ConnectorState::kStarting)
        self->open_session(std::move(transport));
    };
    h.on_failed = [w, gen](LinkFailure f) {
      auto self = w.lock();
      if (self && gen == self->generation) self->fail(f.kind, std::move(f.why), false, f.http_status);
    };
    h.on_program_stop = [w, gen](ProgramStop stop) {
      auto self = w.lock();
      if (self && gen == self->generation) self->program_stopped(std::move(stop));
    };
    link->open(std::move(h));
  }

  // The MCP session on a link just opened: initialize, then the tools, then it runs.
  void open_session(std::unique_ptr<Transport> transport) {
    auto w = weak_from_this();
    auto gen = generation;
    McpClient::Options o;
    o.name = def.name;
    o.quiet_on_disconnect = link->reports_its_loss();
    // The era: a server known to speak 2025-11-25 is started straight with initialize; any other
    // is asked server/discover first (a stdio one within a short bound).
    o.stateless_first = era.empty() || era == proto::mcp::kStateless;
    if (def.kind != ConnectorDef::Kind::kHttp) o.discover_bound = discover_bound(env);
    o.list_changed_debounce = kListChangedDebounce;
    if (roots) {
      o.roots = [w] {
        auto self = w.lock();
        return self && self->roots ? *self->roots : std::vector<std::string>{};
      };
    }
    McpClient::Handlers h;
    h.on_tools = [w, gen](json::array list) {
      auto self = w.lock();
      if (self && gen == self->generation) self->tools_arrived(std::move(list));
    };
    h.on_failed = [w, gen](std::string_view k, std::string why, int http_status) {
      auto self = w.lock();
      if (self && gen == self->generation) self->fail(k, std::move(why), false, http_status);
    };
    h.on_closed = [w, gen](const TransportError& e) {
      auto self = w.lock();
      if (!self || gen != self->generation) return;
      if (e.kind == "too_large")
        return self->fail(proto::kind::kStopped, "it sent a message too large (over 16 MiB); it was stopped");
      bool ours = e.kind == "closed";
      if (!ours && self->link && (self->state == ConnectorState::kRunning || self->state == ConnectorState::kStarting))
        self->link->transport_ended(e);
    };
    h.on_offers_changed = [w, gen] {
      auto self = w.lock();
      if (self && gen == self->generation && self->on_offers_changed) self->on_offers_changed();
    };
    if (on_offers_changed) on_offers_changed();  // a new session may offer other lists
    client = McpClient::create(io, std::move(transport), std::move(o), std::move(h));
    client->start();
  }

  void tools_arrived(json::array list) {
    tools = std::move(list);
    if (client) era = client->version();
    if (state == ConnectorState::kStarting) {
      start_timer.cancel();
      log::info("connector {}: running, {} tools", def.name, tools.size());
    }
    set_state(ConnectorState::kRunning);
  }

  // `timeout` after the start began.
  void arm_start_timer(std::chrono::milliseconds timeout) {
    start_timer.expires_at(started_at + timeout);
    start_timer.async_wait([w = weak_from_this(), gen = generation, timeout](boost::system::error_code ec) {
      auto self = w.lock();
      if (!self || ec || gen != self->generation || self->state != ConnectorState::kStarting) return;
      self->fail(proto::kind::kTimeout, fmt::format("it did not finish starting within {}{}", duration_text(timeout),
                                                    self->link ? self->link->log_note() : ""));
    });
  }

  // Its program stopped on its own: the reason from its exit status and last stderr lines, and
  // a restart with backoff unless it is given up on.
  void program_stopped(ProgramStop stop) {
    if (state == ConnectorState::kStopped || state == ConnectorState::kWaiting || state == ConnectorState::kFailed ||
        state == ConnectorState::kLogin)
      return;
    // It stopped on server/discover (some 2025 servers end on a request before initialize): it is
    // started again at once, straight with initialize, and remembered so (the tool cache). The
    // stop counts as a quick one: a program that dies at every start is still given up on.
    if (state == ConnectorState::kStarting && client && client->probing()) {
      log::info("connector {}: its program stopped on server/discover; starting it again with MCP {}", def.name,
                proto::mcp::kLatest);
      era = proto::mcp::kLatest;
      ++quick_deaths;
      // Posted: the link that reports the stop is still on the stack.
      return asio::post(io, [w = weak_from_this(), gen = generation] {
        auto self = w.lock();
        if (self && gen == self->generation && self->state == ConnectorState::kStarting)
          self->start(self->env, self->start_timeout);
      });
    }
    const auto& status = stop.status;
    std::string how = !status            ? "its exit status could not be read"
                      : status->signaled ? fmt::format("signal {}", status->code)
                                         : fmt::format("exit status {}", status->code);
    // Killed by a signal, what it said last is whatever it printed before (a start banner): only
    // an error is worth showing then.
    StderrReading words = read_stderr_lines(stop.last_lines, def, status && status->signaled);
    std::string line = escape_controls(words.line);
    std::string tail = line.empty() ? "" : ": " + line + (words.meaning.empty() ? "" : ": " + words.meaning);
    std::string why = fmt::format("its program stopped ({}){}; its log is {}", how, tail, log_path);
    // Its package, script or module is missing at start: starting it again finds it missing again.
    // (One that ran a while and then missed a lazily loaded module is started again like any other.)
    bool soon = Clock::now() - started_at <= kStableRun;
    if (soon && words.kind == proto::kind::kNotInstalled) return fail(proto::kind::kNotInstalled, why);
    // mcp-remote whose login failed: each start would open the browser again; a reconnect does it.
    if (words.kind == proto::kind::kLogin) return fail(proto::kind::kLogin, why);
    // A crash loop backs off and, after kMaxQuickDeaths quick stops in a row, gives up.
    if (!soon) quick_deaths = 0;
    ++quick_deaths;
    if (quick_deaths >= kMaxQuickDeaths) {
      return fail(proto::kind::kStopped,
                  fmt::format("{}. It stopped {} times in a row soon after starting, so oppx stopped restarting it",
                              why, quick_deaths));
    }
    auto delay = std::min<std::chrono::seconds>(std::chrono::seconds(1 << std::min(quick_deaths - 1, 10)), kMaxBackoff);
    // Armed before fail(): a call waiting for this exit may start it at once, which cancels it.
    restart_timer.expires_after(delay);
    restart_timer.async_wait([w = weak_from_this(), gen = generation](boost::system::error_code ec) {
      auto self = w.lock();
      if (ec || !self || gen != self->generation || !self->restartable) return;
      log::info("connector {}: starting it again after its stop", self->def.name);
      self->start(self->env, oppx::daemon::start_timeout(self->env));  // never a reconnect's login time
    });
    fail(proto::kind::kStopped, fmt::format("{}. oppx starts it again in {} s", why, delay.count()), true);
  }

  proto::RpcError down_error(std::string message) const {
    auto e = RpcError::make(ErrorCode::kInternal, proto::kind::kConnectorDown, std::move(message));
    proto::ConnectorDown down{def.name, kind.empty() ? std::string(proto::kind::kStopped) : kind, reason, steps};
    e.data = json::value_from(down).as_object();
    return e;
  }

  bool read_only(const std::string& tool) const {
    for (auto& t : tools) {
      const json::object& o = t.as_object();
      if (o.at("name") != json::value(tool)) continue;
      const json::value* a = o.if_contains("annotations");
      const json::value* ro = a && a->is_object() ? a->as_object().if_contains("readOnlyHint") : nullptr;
      return ro && *ro == json::value(true);
    }
    return false;
  }

  // A server that could not be reached (only an HTTP link says so) may be back: a call tries it
  // again, at most once every unreachable_retry() (the call never reached it, so nothing runs twice).
  bool may_be_back() const {
    return kind == proto::kind::kUnreachable && Clock::now() - failed_at >= unreachable_retry();
  }

  // Starts it again for a call and runs `then` once it is no longer starting.
  void restart_for_call(std::function<void()> then) {
    log::info("connector {}: starting it again for a call", def.name);
    if (state != ConnectorState::kStarting) start(env, oppx::daemon::start_timeout(env));
    when([this] { return state != ConnectorState::kStarting; }, start_timeout + std::chrono::seconds(1),
         std::move(then));
  }
  CancelCall call(const std::string& tool, json::value arguments, CallOptions options,
                  std::function<void(CallResult)> done) {
    auto pc = std::make_shared<PendingCall>();
    ++open_calls;
    pc->tool = tool;
    pc->arguments = std::move(arguments);
    pc->limit = options.timeout;
    pc->asked = options.asked.count() > 0 ? options.asked : options.timeout;
    pc->done = std::move(done);
    pc->on_progress = std::move(options.on_progress);
    pc->on_elicit = std::move(options.on_elicit);
    pc->deadline = deadlines.emplace(Clock::now() + options.timeout, pc);
    pc->timed = true;
    arm_deadlines();
    attempt(pc);
    // Weak: a finished call is freed at once, even while its caller's cancel hook lives on.
    return [w = weak_from_this(), weak_call = std::weak_ptr<PendingCall>(pc)] {
      auto pc = weak_call.lock();
      if (!pc || pc->finished) return;
      abandon(*pc, "the caller went away");
      finish(w, *pc, RpcError::make(ErrorCode::kCancelled, proto::kind::kCancelled, "the caller went away"));
    };
  }

  void arm_deadlines() {
    if (deadlines.empty() || deadlines.begin()->first >= deadline_armed) return;
    deadline_armed = deadlines.begin()->first;
    deadline_timer.expires_at(deadline_armed);
    deadline_timer.async_wait([w = weak_from_this()](boost::system::error_code ec) {
      if (ec) return;  // re-armed for an earlier deadline, or the connector went away
      if (auto self = w.lock()) self->deadlines_passed();
    });
  }

  void deadlines_passed() {
    deadline_armed = Clock::time_point::max();
    auto now = Clock::now();
    std::vector<Call> due;
    while (!deadlines.empty() && deadlines.begin()->first <= now) {
      if (auto pc = deadlines.begin()->second.lock()) {
        pc->timed = false;
        due.push_back(std::move(pc));
      }
      deadlines.erase(deadlines.begin());
    }
    for (auto& pc : due) time_out(pc);
    arm_deadlines();
  }

  void time_out(const Call& pc) {
    if (pc->finished) return;
    auto w = weak_from_this();
    if (pc->id.is_null() && state == ConnectorState::kStarting)
      return finish(w, *pc, start_outlasted_call(def.name, pc->asked));
    // One slow call does not take a connector down: the call is cancelled, the connector stays.
    abandon(*pc, "the caller's time limit passed");
    finish(w, *pc,
           RpcError::make(
               ErrorCode::kInternal, proto::kind::kTimeout,
               fmt::format("{} did not answer within {}; the call was cancelled", pc->tool, duration_text(pc->asked))));
  }

  // One try: waits while it starts, starts a program found stopped (the call has not reached it,
  // so that is always safe), then sends.
  void attempt(const Call& pc) {
    if (pc->finished) return;
    auto w = weak_from_this();
    auto again = [w, pc] {
      if (auto self = w.lock()) return self->attempt(pc);
      finish(w, *pc, RpcError::make(ErrorCode::kInternal, proto::kind::kConnectorDown, "the connector was removed"));
    };
    if (state == ConnectorState::kStarting) {
      // The call's own timer ends the wait when its limit comes first.
      return when([this] { return state != ConnectorState::kStarting; }, pc->limit, again);
    }
    if (state == ConnectorState::kFailed && !pc->retried && (restartable || may_be_back())) {
      pc->retried = true;
      return restart_for_call(again);
    }
    if (state != ConnectorState::kRunning || !client) {
      return finish(w, *pc,
                    down_error(fmt::format("{} is not running ({}): {}", def.name, state_name(state),
                                           reason.empty() ? "not running" : reason)));
    }
    bool ro = read_only(pc->tool);
    std::function<void(const json::object&)> progress;
    if (pc->on_progress) {
      progress = [weak_call = std::weak_ptr<PendingCall>(pc)](const json::object& p) {
        auto c = weak_call.lock();
        if (c && !c->finished) c->on_progress(p);
      };
    }
    pc->client = client;
    McpClient::Elicit elicit;
    if (pc->on_elicit) {
      elicit = [w, weak_call = std::weak_ptr<PendingCall>(pc)](const json::object& params,
                                                               std::function<void(json::object)> answer) {
        auto c = weak_call.lock();
        auto self = w.lock();
        if (!c || c->finished || !self) return answer(json::object{{"action", "cancel"}});
        self->pause_deadline(*c);
        c->on_elicit(params, [w, weak_call, answer = std::move(answer)](json::object a) {
          auto c = weak_call.lock();
          if (auto self = w.lock(); self && c && !c->finished) self->resume_deadline(c);
          answer(std::move(a));
        });
      };
    }
    pc->id = client->call_tool(
        pc->tool, pc->arguments, ro, std::move(progress),
        [w, pc, ro](CallResult r) {
          if (pc->finished) return;
          pc->id = nullptr;
          auto self = w.lock();
          if (!self) return finish(w, *pc, std::move(r));
          // Failures of the way there (not a server's own error answer) go to the daemon's log, the
          // only log an HTTP connector has.
          self->hide_secrets(r);
          if (!r && !r.error().received)
            log::warn("connector {}: the call to {} failed: {}", self->def.name,
                      escape_controls(pc->tool.substr(0, 100)), r.error().message);
          if (!r && r.error().kind == proto::kind::kDisconnected) return self->lost_during_call(pc, ro);
          if (!r) self->check_login(r.error());
          if (!r && (self->state == ConnectorState::kFailed || self->state == ConnectorState::kLogin)) {
            return finish(w, *pc,
                          self->down_error(fmt::format("{}.{} failed: {}", self->def.name, pc->tool, self->reason)));
          }
          finish(w, *pc, std::move(r));
        },
        std::move(elicit));
  }

  // While the user is asked for a call, its limit stands still (a form takes a person's time).
  void pause_deadline(PendingCall& pc) {
    if (pc.asking++ > 0 || !pc.timed) return;
    pc.left = std::chrono::duration_cast<std::chrono::milliseconds>(pc.deadline->first - Clock::now());
    deadlines.erase(pc.deadline);
    pc.timed = false;
    pc.paused = true;
  }
  void resume_deadline(const Call& pc) {
    if (pc->asking == 0 || --pc->asking > 0 || !pc->paused) return;
    pc->paused = false;
    pc->deadline = deadlines.emplace(Clock::now() + std::max(pc->left, std::chrono::milliseconds(0)), pc);
    pc->timed = true;
    arm_deadlines();
  }

  static void finish(const std::weak_ptr<Impl>& w, PendingCall& pc, CallResult r) {
    if (pc.finished) return;
    pc.finished = true;
    if (auto self = w.lock()) {
      if (pc.timed) self->deadlines.erase(pc.deadline);
      // Posted: what waits for no call to be open may restart it, which must not happen inside
      // the peer's answer to this call.
      if (--self->open_calls == 0 && self->on_idle) {
        asio::post(self->io, [w] {
          auto me = w.lock();
          if (me && me->open_calls == 0 && me->on_idle) me->on_idle();
        });
      }
    }
    pc.timed = false;
    auto done = std::move(pc.done);
    done(std::move(r));
  }

  // The server is told (MCP notifications/cancelled) and its late answer, if any, is skipped.
  static void abandon(PendingCall& pc, std::string_view why) {
    if (pc.id.is_null()) return;
    if (auto c = pc.client.lock()) c->cancel(pc.id, why);
    pc.id = nullptr;
  }

  // The program went away with the call sent: it may have run. Waits for the exit (and its
  // reason), then repeats a read-only call once; anything else is reported, never repeated.
  void lost_during_call(const Call& pc, bool ro) {
    // Posted: this runs inside the peer's close, maybe inside fail() before the reason is set.
    asio::post(io, [w = weak_from_this(), pc, ro] {
      if (auto self = w.lock()) self->after_loss(pc, ro);
    });
  }

  void after_loss(const Call& pc, bool ro) {
    auto gen = generation;
    when([this, gen] { return gen != generation || state != ConnectorState::kRunning; }, kExitWait,
         [w = weak_from_this(), pc, ro] {
           if (pc->finished) return;
           auto self = w.lock();
           if (!self)
             return finish(
                 w, *pc,
                 RpcError::make(ErrorCode::kInternal, proto::kind::kConnectorDown, "the connector was removed"));
           if (ro && !pc->retried && self->state != ConnectorState::kStopped) {
             log::info("connector {}: {} is read-only; repeating it after a restart", self->def.name, pc->tool);
             pc->retried = true;
             return self->restart_for_call([w, pc] {
               if (auto me = w.lock()) me->attempt(pc);
             });
           }
           finish(w, *pc,
                  self->down_error(fmt::format(
                      "{}'s program stopped during the call to {}; the call may or may not have run, so it was not "
                      "repeated. {}",
                      self->def.name, pc->tool, self->reason.empty() ? "" : "Why: " + self->reason)));
         });
  }

  // A call's error that says the login is gone (or, over HTTP, the server is out of reach) takes
  // the connector down; any other error, such as a tool refusing its arguments, leaves it running.
  // The kinds are ours (the MCP client moved any a server sent to data.server_kind); the words
  // are the tool's, so only words count there, never a bare number such as 403.
  void check_login(const proto::RpcError& e) {
    if (e.kind == proto::kind::kUnreachable) return fail(proto::kind::kUnreachable, e.message);
    if (e.kind == proto::kind::kLogin || tool_error_looks_like_login(e.message))
      return fail(proto::kind::kLogin, e.message);
  }

  // Ends the MCP session and its link: a program is stopped (stdin closed, then SIGTERM and
  // SIGKILL to its group, reaped: daemon/subprocess.h), an HTTP session is ended with a DELETE.
  // The calls still waiting on it get a "disconnected" error at once (stdio) or when it closes.
  void end_link() {
    if (client) {
      auto c = std::move(client);
      c->close(link && link->closes_gracefully());
    }
    if (link) {
      auto l = std::move(link);
      l->close();
    }
    start_timer.cancel();
  }

  void stop() {
    ++generation;
    restartable = false;
    restart_timer.cancel();
    set_state(ConnectorState::kStopped);
    end_link();
  }

  // An entry that never runs ("disabled": true, or one oppx cannot use): nothing started or expanded.
  void set_aside() {
    ++generation;
    restartable = false;
    restart_timer.cancel();
    end_link();
    tools = {};
    if (!def.unsupported.empty())
      return set_state(ConnectorState::kUnsupported, def.unsupported, proto::kind::kUnsupported);
    set_state(ConnectorState::kDisabled,
              fmt::format("\"disabled\": true in {}; to start it, remove that key (or set it to false)", def.file),
              "disabled");
  }

  // Stopped, and kept waiting for consent (or another check before start) with `why`.
  void wait_for_consent(std::string why) {
    if (def.never_starts()) return set_aside();
    ++generation;
    restartable = false;
    restart_timer.cancel();
    end_link();
    tools = {};
    set_state(ConnectorState::kWaiting, std::move(why), "waiting");
  }
};

// OPPX_MCP_START_TIMEOUT_MS in the asking client's environment shortens or lengthens the 30 s a
// connector gets to start (a slow first npx download; a test of a server that never answers).

std::shared_ptr<Connector> Connector::create(asio::io_context& io, ConnectorDef def, std::string log_path) {
  return create(io, std::move(def), std::move(log_path), make_link);
}

std::shared_ptr<Connector> Connector::create(asio::io_context& io, ConnectorDef def, std::string log_path,
                                             LinkFactory factory) {
  return std::shared_ptr<Connector>(
      new Connector(std::make_shared<Impl>(io, std::move(def), std::move(log_path), std::move(factory))));
}

Connector::Connector(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Connector::~Connector() {
  impl_->on_change = nullptr;
  impl_->on_idle = nullptr;
  impl_->on_offers_changed = nullptr;
  impl_->start_check = nullptr;
  impl_->stop();
}

void Connector::start(const EnvMap& env, std::chrono::milliseconds timeout) {
  impl_->quick_deaths = 0;  // asked for by a user: a crash loop given up on gets its chances again
  impl_->start(env, timeout);
}
void Connector::stop() { impl_->stop(); }
void Connector::hold(std::string reason) { impl_->wait_for_consent(std::move(reason)); }
void Connector::call(const std::string& tool, json::value arguments, std::chrono::milliseconds timeout,
                     std::function<void(CallResult)> done) {
  CallOptions options;
  options.timeout = timeout;
  impl_->call(tool, std::move(arguments), std::move(options), std::move(done));
}
Connector::CancelCall Connector::call(const std::string& tool, json::value arguments, CallOptions options,
                                      std::function<void(CallResult)> done) {
  return impl_->call(tool, std::move(arguments), std::move(options), std::move(done));
}
void Connector::on_change(std::function<void()> fn) { impl_->on_change = std::move(fn); }
void Connector::on_offers_changed(std::function<void()> fn) { impl_->on_offers_changed = std::move(fn); }
void Connector::offer_roots(std::vector<std::string> folders) { impl_->roots = std::move(folders); }
void Connector::check_before_start(std::function<std::string()> fn) { impl_->start_check = std::move(fn); }
void Connector::remember_era(std::string version) { impl_->era = std::move(version); }
const std::string& Connector::version() const { return impl_->era; }
const ConnectorDef& Connector::def() const { return impl_->def; }
void Connector::request(const std::string& method, json::value params, std::chrono::milliseconds limit,
                        std::function<void(CallResult)> done) {
  if (impl_->state != ConnectorState::kRunning || !impl_->client) {
    return done(RpcError::make(ErrorCode::kInternal, proto::kind::kConnectorDown,
                               fmt::format("{} is {}{}{}", impl_->def.name, state_name(impl_->state),
                                           impl_->reason.empty() ? "" : ": ", impl_->reason)));
  }
  impl_->client->request(method, std::move(params), limit, [w = std::weak_ptr<Impl>(impl_), done](CallResult r) {
    auto self = w.lock();
    if (!self)
      return done(RpcError::make(ErrorCode::kInternal, proto::kind::kConnectorDown, "the connector was removed"));
    self->hide_secrets(r);
    done(std::move(r));
  });
}

void Connector::tools_needed() {
  if (impl_->client && impl_->state == ConnectorState::kRunning) impl_->client->refetch_if_stale();
}
ConnectorState Connector::state() const { return impl_->state; }
const std::string& Connector::reason() const { return impl_->reason; }
const std::string& Connector::down_kind() const { return impl_->kind; }
const std::vector<std::string>& Connector::steps() const { return impl_->steps; }
const json::array& Connector::tools() const { return impl_->tools; }
bool Connector::read_only(const std::string& tool) const { return impl_->read_only(tool); }
const std::string& Connector::log_path() const { return impl_->log_path; }
std::int64_t Connector::pid() const { return impl_->link ? impl_->link->pid() : 0; }
std::size_t Connector::calls_waiting() const { return impl_->client ? impl_->client->calls_waiting() : 0; }
std::size_t Connector::calls_open() const { return impl_->open_calls; }
void Connector::on_idle(std::function<void()> fn) { impl_->on_idle = std::move(fn); }
const EnvMap& Connector::last_env() const { return impl_->env; }

}  // namespace oppx::daemon
