// Connector::Impl. Pending operations hold a weak_ptr to the Impl, so a connector removed while
// its child is still starting ends cleanly. The child is watched through a pidfd: its exit is an
// event like any other, and the reason (exit status, signal, its telling stderr line) is kept for
// `mcp list` and for the ConnectorDown error of a call.
#include "daemon/connector.h"

#include "common/fs.h"
#include "common/jsonrpc_peer.h"
#include "common/log.h"
#include "common/ndjson_transport.h"
#include "common/paths.h"
#include "common/text.h"
#include "daemon/child_process.h"
#include "daemon/diagnose.h"
#include "daemon/http_transport.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <sys/stat.h>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace oppx::daemon {

namespace asio = boost::asio;
namespace json = boost::json;
using proto::ErrorCode;
using proto::RpcError;

std::string_view state_name(ConnectorState s) {
  switch (s) {
    case ConnectorState::kStarting:
      return "starting";
    case ConnectorState::kRunning:
      return "running";
    case ConnectorState::kFailed:
      return "failed";
    case ConnectorState::kStopped:
      return "stopped";
    case ConnectorState::kWaiting:
      return "waiting";
    case ConnectorState::kDisabled:
      return "disabled";
    case ConnectorState::kUnsupported:
      return "unsupported";
  }
  return "unknown";
}

namespace {

constexpr std::size_t kLogCap = 1u << 20;
constexpr int kMaxToolPages = 50;
// Crash loop: a program that stops on its own is started again after 1, 2, 4… s (at most
// kMaxBackoff); after kMaxQuickDeaths stops each within kStableRun of its start, it stays failed
// until `oppx mcp reconnect`.
constexpr auto kStableRun = std::chrono::seconds(60);
constexpr int kMaxQuickDeaths = 4;
constexpr auto kMaxBackoff = std::chrono::seconds(30);
// An HTTP server that could not be reached is tried again by a call at most this often.
constexpr auto kUnreachableRetry = std::chrono::seconds(2);
// Stop: stdin closed, then SIGTERM to the group after kTermGrace, SIGKILL kKillGrace later.
constexpr auto kTermGrace = std::chrono::seconds(1);
constexpr auto kKillGrace = std::chrono::seconds(2);
// A call that lost its program waits this long for the exit (and its reason) before answering.
constexpr auto kExitWait = std::chrono::seconds(5);
constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
constexpr const char* kPassedVariables[] = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG"};

// The folder a stdio program starts in when its entry has no "cwd": a repository's root for a
// repository's connector, else the HOME of the client that starts it.
std::string default_folder(const ConnectorDef& def, const EnvMap& env) {
  if (def.project) return dirname_of(def.file);
  auto home = env.find("HOME");
  return home != env.end() && home->second.starts_with('/') ? home->second : paths::home();
}

// The HTTP transport turns a lost login or an unreachable server into an error of that kind on
// the call; those take the connector down. Anything else (a timeout, a bad answer) fails one call.
bool takes_it_down(const RpcError& e) { return e.kind == down::kLogin || e.kind == down::kUnreachable; }

// What a start gives its program or server that may be a secret, hidden in all that the server
// says back (mask_secrets): the value of each ${VAR} it reads (but those every program gets, such
// as HOME and PATH), and the values a definition is shown with masked: headers, env entries whose
// name says secret, arguments after a secret flag; each also without its "Bearer " or "KEY=" part,
// as a server would repeat it.
std::vector<std::string> secrets_of(const ConnectorDef& def, const EnvMap& env) {
  std::vector<std::string> out;
  auto keep = [&out](const std::string& v) {
    if (v.empty()) return;
    out.push_back(v);
    for (auto at : {v.rfind(' '), v.find('='), v.find(':')}) {
      auto from = at == std::string::npos ? at : v.find_first_not_of(' ', at + 1);
      if (from != std::string::npos) out.push_back(v.substr(from));
    }
  };
  auto expanded = [&env](const std::string& v) {
    auto r = expand(v, env);
    return r ? *r : v;
  };
  for (auto& var : referenced_variables(def)) {
    bool everyones = std::any_of(std::begin(kPassedVariables), std::end(kPassedVariables),
                                 [&var](const char* p) { return var == p; });
    if (auto it = env.find(var); it != env.end() && !everyones) keep(it->second);
  }
  for (auto& h : def.headers) keep(expanded(h.second));
  for (auto& [k, v] : def.env) {
    if (secret_word(k)) keep(expanded(v));
  }
  auto shown = mask_args(def.args);
  for (std::size_t i = 0; i < def.args.size(); ++i) {
    if (shown[i] != def.args[i]) keep(expanded(def.args[i]));
  }
  return out;
}

std::string duration_text(std::chrono::milliseconds limit) {
  auto ms = limit.count();
  return ms % 1000 ? fmt::format("{} ms", ms) : fmt::format("{} s", ms / 1000);
}

// A child's exit, watched without ever blocking the loop. A completed wait on its pidfd is only a
// hint: Asio gives a freed descriptor slot to the next descriptor registered, so a readiness event
// queued for a pipe closed in the same turn can complete this wait early. The child is asked with
// WNOHANG and watched again while it runs; without a pidfd (at the descriptor limit) it is asked
// every kExitPoll. `done` gets its status once it is reaped, or why it cannot be, and never after
// cancel(). Nothing is called before start() returns.
class ExitWatch : public std::enable_shared_from_this<ExitWatch> {
 public:
  using Done = std::function<void(boost::system::result<ExitStatus, std::string>)>;

  static std::shared_ptr<ExitWatch> start(asio::io_context& io, pid_t pid, Done done) {
    std::shared_ptr<ExitWatch> w(new ExitWatch(io, pid, std::move(done)));
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    boost::system::error_code ec;
    if (fd < 0) {
      log::warn("no pidfd for pid {} ({}); its exit is looked for every {} ms", pid, std::strerror(errno),
                kExitPoll.count());
    } else if (w->pidfd_.assign(fd, ec); ec) {
      ::close(fd);
      log::warn("cannot watch the pidfd of pid {} ({}); its exit is looked for every {} ms", pid, ec.message(),
                kExitPoll.count());
    }
    w->arm();
    return w;
  }

  void cancel() {
    done_ = nullptr;
    boost::system::error_code ec;
    pidfd_.close(ec);
    retry_.cancel();
  }

 private:
  static constexpr auto kExitPoll = std::chrono::milliseconds(500);
  static constexpr auto kRecheck = std::chrono::milliseconds(5);

  ExitWatch(asio::io_context& io, pid_t pid, Done done) : pidfd_(io), retry_(io), pid_(pid), done_(std::move(done)) {}

  void check() {
    if (!done_) return;
    auto r = try_reap(pid_, pidfd_.is_open() ? pidfd_.native_handle() : -1);
    if (r && !*r) return arm();
    Done done = std::move(done_);
    cancel();
    if (r) return done(**r);
    done(r.error());
  }

  void arm() {
    // The pidfd is edge-triggered in Asio's epoll: one still readable while the child runs (a
    // wake-up a moment early) would not complete a new wait, so it is looked at again soon.
    pollfd p{pidfd_.is_open() ? pidfd_.native_handle() : -1, POLLIN, 0};
    if (pidfd_.is_open() && ::poll(&p, 1, 0) == 0) {
      pidfd_.async_wait(asio::posix::stream_descriptor::wait_read,
                        [self = shared_from_this()](boost::system::error_code ec) {
                          if (ec == asio::error::operation_aborted || !self->done_) return;
                          if (ec) {
                            log::warn("watching pid {} failed ({}); its exit is looked for every {} ms", self->pid_,
                                      ec.message(), kExitPoll.count());
                            self->pidfd_.close(ec);
                          }
                          self->check();
                        });
      return;
    }
    retry_.expires_after(pidfd_.is_open() ? kRecheck : kExitPoll);
    retry_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec == asio::error::operation_aborted || !self->done_) return;
      if (ec) log::warn("the exit timer of pid {} failed ({})", self->pid_, ec.message());
      self->check();
    });
  }

  asio::posix::stream_descriptor pidfd_;
  asio::steady_timer retry_;
  pid_t pid_;
  Done done_;
};

}  // namespace

proto::RpcError start_outlasted_call(const std::string& connector, std::chrono::milliseconds limit) {
  auto e = RpcError::make(ErrorCode::kInternal, proto::kind::kTimeout,
                          fmt::format("{} was still starting when the call's time limit of {} passed, so the call was "
                                      "not sent; try again in a moment, or with a longer time limit",
                                      connector, duration_text(limit)));
  e.data["connector"] = connector;
  return e;
}

std::string result_text(const json::value& result, std::size_t limit, bool* truncated) {
  std::string text;
  if (const json::object* o = result.if_object()) {
    if (const json::value* content = o->if_contains("content"); content && content->is_array()) {
      for (const json::value& part : content->as_array()) {
        if (!part.is_object()) continue;
        const json::object& p = part.as_object();
        std::string type = p.contains("type") && p.at("type").is_string() ? std::string(p.at("type").as_string()) : "";
        if (!text.empty()) text += "\n";
        if (type == "text" && p.contains("text") && p.at("text").is_string()) {
          text += std::string(p.at("text").as_string());
        } else {
          std::string mime =
              p.contains("mimeType") && p.at("mimeType").is_string() ? std::string(p.at("mimeType").as_string()) : "";
          text += fmt::format("[{} content{}{} left out]", type.empty() ? "non-text" : type, mime.empty() ? "" : ": ",
                              mime);
        }
      }
    }
  }
  // Characters are UTF-8 code points: each starts with a byte that is not a continuation byte
  // (10xxxxxx), so the cut falls before one and never inside a multi-byte sequence. An invalid
  // byte counts as one character.
  *truncated = false;
  if (text.size() <= limit) return text;  // never more characters than bytes: nothing to count
  auto starts_char = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  std::size_t chars = 0, cut = text.size();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!starts_char(text[i])) continue;
    if (chars == limit) cut = i;
    ++chars;
  }
  *truncated = chars > limit;
  if (*truncated) {
    text.resize(cut);
    text += fmt::format("\n[… cut at {} of {} characters …]", limit, chars);
  }
  return text;
}

struct Connector::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io, ConnectorDef def, std::string log_path)
      : io(io),
        def(std::move(def)),
        log_path(std::move(log_path)),
        err_stream(io),
        start_timer(io),
        restart_timer(io),
        list_changed_timer(io),
        deadline_timer(io) {}
  ~Impl() { log::hide(this, {}); }

  using Clock = std::chrono::steady_clock;

  struct PendingCall;
  // Deadlines of the calls in flight, earliest first; one timer serves them all (a timer per
  // call costs a system call and a cancelled wait for every call).
  using Deadlines = std::multimap<Clock::time_point, std::weak_ptr<PendingCall>>;
  // One tools/call, from its first try to its answer: the caller's time limit (one deadline for
  // all tries), the attempt in flight, progress, and the caller's cancel. Answered once.
  struct PendingCall {
    std::string tool;
    json::value arguments;
    std::chrono::milliseconds limit{};
    std::chrono::milliseconds asked{};  // the limit as the caller gave it, for messages
    bool retried = false;               // started again once for it already
    std::weak_ptr<JsonRpcPeer> peer;    // the child the attempt went to, not whichever runs later
    json::value id;                     // of the attempt in flight; null when none is
    std::string progress_token;         // empty when no progress was asked
    Deadlines::iterator deadline;
    bool timed = false;  // `deadline` is in the map
    std::function<void(CallResult)> done;
    bool finished = false;
  };
  using Call = std::shared_ptr<PendingCall>;

  asio::io_context& io;
  ConnectorDef def;
  std::string log_path;
  ConnectorState state = ConnectorState::kStopped;
  std::string reason;
  std::string kind;
  std::vector<std::string> steps;
  json::array tools;
  std::function<void()> on_change;
  std::function<void()> on_idle;
  std::function<std::string()> start_check;
  std::size_t open_calls = 0;  // calls not answered yet
  std::shared_ptr<JsonRpcPeer> peer;
  Child child;
  bool exited = true;
  asio::posix::stream_descriptor err_stream;
  std::shared_ptr<ExitWatch> exit_watch;  // of the running child
  asio::steady_timer start_timer;
  asio::steady_timer restart_timer, list_changed_timer, deadline_timer;
  Deadlines deadlines;
  Clock::time_point deadline_armed = Clock::time_point::max();
  bool list_changed_armed = false;
  std::unordered_map<std::string, std::function<void(const json::object&)>> progress;  // by token
  std::uint64_t next_progress = 0;
  std::array<char, 8192> err_buf{};
  std::string err_partial;
  std::deque<std::string> err_lines;  // its last kKeptStderrLines lines, for the reason of a stop
  std::vector<std::string> secrets;   // of its last start (secrets_of), hidden in what it says
  int log_fd = -1;
  std::size_t log_size = 0;
  bool refetch_again = false, fetching = false;
  bool output_closed = false;
  std::uint64_t generation = 0;  // bumps at each start; callbacks of an older child are ignored
  EnvMap env;                    // of the client that started it last: a restart uses it again
  std::chrono::milliseconds start_timeout = kStartTimeout;
  std::chrono::steady_clock::time_point started_at;
  std::chrono::steady_clock::time_point failed_at;

  int quick_deaths = 0;      // stops on its own, each soon after its start, in a row
  bool failing = false;      // inside fail(): what kill_child ends must not fail it again
  bool restartable = false;  // failed because its program stopped on its own, and not given up on
  // Run at every state change; each returns true when it is done and can be dropped.
  std::vector<std::function<bool()>> waiters;

  std::string masked(std::string_view text) const { return mask_secrets(text, secrets); }

  // A call's answer with the secrets hidden: an error's words and data, and a result that is an
  // error (isError); the server may repeat what it was given ("invalid api key sk-…").
  void hide_secrets(CallResult& r) const {
    if (secrets.empty()) return;
    if (r) {
      const json::value* is_error = r->is_object() ? r->as_object().if_contains("isError") : nullptr;
      if (is_error && *is_error == json::value(true)) hide_in(*r);
      return;
    }
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

  // `restartable`: its program stopped on its own and a call may start it again. `http_status`:
  // the HTTP server's answer, when that is why.
  void fail(std::string_view k, std::string why, bool can_restart = false, int http_status = 0) {
    if (state == ConnectorState::kStopped || state == ConnectorState::kWaiting || failing) return;
    failing = true;
    // Failed before the child is killed: the callbacks that kill_child ends (a pending initialize,
    // tools/list) see it and stay quiet. Killed before set_state: a waiter may start it again.
    state = ConnectorState::kFailed;
    restartable = can_restart;
    failed_at = std::chrono::steady_clock::now();
    kill_child();
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
    if (std::string why = start_check ? start_check() : ""; !why.empty()) return hold(std::move(why));
    kill_child();
    ++generation;
    tools = {};
    output_closed = false;
    restartable = false;
    restart_timer.cancel();
    list_changed_timer.cancel();
    list_changed_armed = false;
    if (&client_env != &env) env = client_env;
    start_timeout = timeout;
    started_at = std::chrono::steady_clock::now();
    secrets = secrets_of(def, client_env);
    log::hide(this, secrets);  // what the start meets (a DNS error naming the host) is logged masked too
    log::info("connector {}: starting (start timeout {} s)", def.name, timeout.count() / 1000);
    set_state(ConnectorState::kStarting);
    auto expanded = [&](const std::string& v) -> std::optional<std::string> {
      auto r = expand(v, client_env);
      if (r) return *r;
      fail(down::kConfig,
           fmt::format("{}; {} it and run `oppx mcp reconnect {}`", r.error().describe(),
                       r.error().problem == ExpandError::Problem::kUnclosed ? "correct" : "set", def.name));
      return std::nullopt;
    };
    if (def.kind == ConnectorDef::Kind::kHttp) return start_http(client_env, timeout, expanded);
    SpawnSpec spec;
    auto cmd = expanded(def.command);
    if (!cmd) return;
    spec.program = *cmd;
    for (auto& a : def.args) {
      auto x = expanded(a);
      if (!x) return;
      spec.args.push_back(*x);
    }
    spec.cwd = default_folder(def, client_env);
    if (!def.cwd.empty()) {
      auto dir = expanded(def.cwd);
      if (!dir) return;
      spec.cwd = dir->starts_with('/') ? *dir : dirname_of(def.file) + "/" + *dir;
      struct stat st {};
      bool found = ::stat(spec.cwd.c_str(), &st) == 0;
      if (!found || !S_ISDIR(st.st_mode)) {
        return fail(down::kConfig, fmt::format("its folder {} (\"cwd\" in {}) cannot be used: {}", spec.cwd,
                                               file_name_of(def), found ? "it is not a folder" : std::strerror(errno)));
      }
    }
    for (const char* name : kPassedVariables) {
      if (auto it = client_env.find(name); it != client_env.end())
        spec.env.push_back(std::string(name) + "=" + it->second);
    }
    for (auto& [k, v] : def.env) {
      auto x = expanded(v);
      if (!x) return;
      spec.env.push_back(k + "=" + *x);
    }
    // Its time to start runs from here: a slow exec counts in it (and one that never ends fails it).
    arm_start_timer(timeout);
    spawn_child(
        io, spec,
        [w = weak_from_this(), gen = generation, &io = io, timeout](boost::system::result<Child, SpawnError> r) {
          auto self = w.lock();
          if (self && gen == self->generation && self->state == ConnectorState::kStarting)
            return self->spawned(std::move(r), timeout);
          if (r) abandon(io, *r);  // stopped, restarted or removed meanwhile
        });
  }

  // A child started for a start that is over: it goes at once, and is reaped.
  static void abandon(asio::io_context& io, const Child& c) {
    ::close(c.in), ::close(c.out), ::close(c.err);
    signal_group(c.pid, SIGKILL);
    ExitWatch::start(io, c.pid, [pid = c.pid](boost::system::result<ExitStatus, std::string> status) {
      if (!status) return log::error("stopping pid {}: {}", pid, status.error());
      release_group(pid);
    });
  }

  void spawned(boost::system::result<Child, SpawnError> spawned, std::chrono::milliseconds timeout) {
    if (!spawned) {
      bool missing = spawned.error().not_installed;
      return fail(
          missing ? down::kNotInstalled : down::kStopped,
          spawned.error().message +
              (missing ? "; install it, or correct the command of " + def.name + " in " + file_name_of(def) : ""));
    }
    child = *spawned;
    exited = false;
    err_partial.clear();  // the last words of an earlier run are not this one's
    err_lines.clear();
    open_log();
    watch_stderr();
    watch_exit();
    connect_peer(make_ndjson_transport(io, child.out, child.in, stdio_limits()));
    handshake(timeout);
  }

  // Streamable HTTP: no child; the transport POSTs each message to the URL.
  template <class Expand>
  void start_http(const EnvMap& client_env, std::chrono::milliseconds timeout, Expand& expanded) {
    HttpOptions o;
    auto url = expanded(def.url);
    if (!url) return;
    o.url = *url;
    for (auto& [k, v] : def.headers) {
      auto x = expanded(v);
      if (!x) return;
      o.headers.emplace_back(k, *x);
    }
    // Shorter limits for tests and slow networks, from the environment of the asking client.
    if (auto it = client_env.find("OPPX_HTTP_TIMEOUTS"); it != client_env.end()) {
      if (auto r = apply_timeout_spec(o.timeouts, it->second); !r)
        return fail(down::kConfig, "OPPX_HTTP_TIMEOUTS is unusable: " + r.error());
    }
    // SPEC §3, as for a program's stopping during a call: only a read-only tool's call is sent
    // again when the server closed the connection before answering it.
    o.read_only = [w = weak_from_this()](const std::string& tool) {
      auto self = w.lock();
      return self && self->read_only(tool);
    };
    // The server stream opened only after tools/list went out without it: a list_changed sent
    // meanwhile was lost, so the tools are fetched once more.
    o.on_late_stream = [w = weak_from_this(), gen = generation] {
      auto self = w.lock();
      if (self && gen == self->generation && (self->state == ConnectorState::kRunning || self->fetching))
        self->fetch_tools(gen);
    };
    auto t = make_http_transport(io, std::move(o));
    if (!t)
      return fail(down::kConfig, fmt::format("{}; correct \"url\" or \"headers\" of {} in {}", t.error(), def.name,
                                             file_name_of(def)));
    connect_peer(std::move(*t));
    handshake(timeout);
  }

  static NdjsonLimits stdio_limits() {
    NdjsonLimits limits;
    limits.stall_timeout = std::chrono::hours(24);  // a server may write a long line slowly
    return limits;
  }

  void open_log() {
    if (log_fd >= 0) ::close(log_fd);
    log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat st {};
    log_size = log_fd >= 0 && ::fstat(log_fd, &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
  }

  void append_log(std::string_view data) {
    if (log_fd < 0) return;
    if (log_size + data.size() > kLogCap) {
      std::string old = log_path + ".1";
      ::rename(log_path.c_str(), old.c_str());
      open_log();
    }
    if (::write(log_fd, data.data(), data.size()) > 0) log_size += data.size();
  }

  void watch_stderr() {
    err_stream.assign(child.err);
    read_stderr(generation);
  }

  // Drained continuously, so a child flooding stderr never blocks; the log is capped and rotated.
  void read_stderr(std::uint64_t gen) {
    err_stream.async_read_some(asio::buffer(err_buf),
                               [w = weak_from_this(), gen](boost::system::error_code ec, std::size_t n) {
                                 auto self = w.lock();
                                 if (!self || ec || gen != self->generation) return;
                                 self->take_stderr(std::string_view(self->err_buf.data(), n));
                                 self->read_stderr(gen);
                               });
  }

  // Its log gets each line with the secrets hidden; a long line without its end yet is written in
  // pieces, cut where no secret runs across the cut.
  void take_stderr(std::string_view data) {
    err_partial.append(data);
    std::size_t from = 0;
    for (auto nl = err_partial.find('\n'); nl != std::string::npos; nl = err_partial.find('\n', from)) {
      std::string_view line = std::string_view(err_partial).substr(from, nl - from);
      append_log(masked(line) + "\n");
      keep_err_line(line);
      from = nl + 1;
    }
    err_partial.erase(0, from);
    if (err_partial.size() > 4096) {
      std::size_t cut = safe_cut(err_partial, err_partial.size() - 512);
      append_log(masked(std::string_view(err_partial).substr(0, cut)));
      err_partial.erase(0, cut);
    }
  }

  // `at`, or the start of a secret that runs across it.
  std::size_t safe_cut(std::string_view text, std::size_t at) const {
    for (bool moved = true; moved;) {
      moved = false;
      for (auto& s : secrets) {
        auto p = text.find(s, at >= s.size() ? at - s.size() + 1 : 0);
        if (!s.empty() && p < at) {
          at = p;
          moved = true;
        }
      }
    }
    return at;
  }

  void keep_err_line(std::string_view line) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
    err_lines.emplace_back(line.substr(0, 300));  // escaped when one is shown
    if (err_lines.size() > kKeptStderrLines) err_lines.pop_front();
  }

  // What is still in the stderr pipe when the child exits: its last words, often the reason.
  void drain_stderr() {
    if (!err_stream.is_open()) return;
    boost::system::error_code ec;
    err_stream.non_blocking(true, ec);
    // A blocking read would wait for whatever else holds the pipe (a grandchild): no draining then.
    if (ec) log::warn("connector {}: its stderr is not drained ({})", def.name, ec.message());
    char buf[8192];
    ssize_t n;
    while (!ec && (n = ::read(err_stream.native_handle(), buf, sizeof buf)) > 0)
      take_stderr(std::string_view(buf, static_cast<std::size_t>(n)));
    append_log(masked(err_partial));
    keep_err_line(err_partial);
    err_partial.clear();
  }

  void watch_exit() {
    exit_watch = ExitWatch::start(
        io, child.pid, [w = weak_from_this(), gen = generation](boost::system::result<ExitStatus, std::string> status) {
          auto self = w.lock();
          if (self && gen == self->generation) self->on_exit(std::move(status));
        });
  }

  void on_exit(boost::system::result<ExitStatus, std::string> status) {
    exited = true;
    exit_watch.reset();
    if (status) {
      signal_group(child.pid, SIGKILL);  // grandchildren left in its group go with it
      release_group(child.pid);
    } else {
      // Not ours to reap any more: its group number may be someone else's by now.
      log::error("connector {}: {}", def.name, status.error());
    }
    drain_stderr();
    if (state == ConnectorState::kStopped || state == ConnectorState::kWaiting ||
        (state == ConnectorState::kFailed && !output_closed))
      return;
    std::string how = !status            ? "its exit status could not be read"
                      : status->signaled ? fmt::format("signal {}", status->code)
                                         : fmt::format("exit status {}", status->code);
    // Killed by a signal, its last words are whatever it printed before (a start banner): only an
    // error is worth showing then.
    LastWords words = read_last_words(err_lines, def, status && status->signaled);
    std::string line = escape_controls(words.line);
    std::string tail = line.empty() ? "" : ": " + line + (words.meaning.empty() ? "" : ": " + words.meaning);
    std::string why = fmt::format("its program stopped ({}){}; its log is {}", how, tail, log_path);
    // Its package, script or module is missing at start: starting it again finds it missing again.
    // (One that ran a while and then missed a lazily loaded module is started again like any other.)
    bool soon = std::chrono::steady_clock::now() - started_at <= kStableRun;
    if (soon && words.kind == down::kNotInstalled) return fail(down::kNotInstalled, why);
    // mcp-remote whose login failed: each start would open the browser again; a reconnect does it.
    if (words.kind == down::kLogin) return fail(down::kLogin, why);
    // A crash loop backs off and, after kMaxQuickDeaths quick stops in a row, gives up.
    if (!soon) quick_deaths = 0;
    ++quick_deaths;
    if (quick_deaths >= kMaxQuickDeaths) {
      return fail(down::kStopped,
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
    fail(down::kStopped, fmt::format("{}. oppx starts it again in {} s", why, delay.count()), true);
  }

  void connect_peer(std::unique_ptr<Transport> transport) {
    JsonRpcPeer::Options o;
    o.name = "mcp:" + def.name;
    o.reply_to_malformed = false;  // junk from a server is logged and skipped, never answered
    o.on_request = [w = weak_from_this(), gen = generation, io = &io](proto::Request req, Reply reply) {
      if (req.method == "ping") return reply.ok(json::object{});
      if (req.method == "initialize") {
        // No server sends a client initialize: this one is ours, sent back. Answered like any
        // request we do not serve; the failure is posted, as failing ends the peer calling us.
        reply.fail(RpcError::make(ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                  "oppx does not support initialize"));
        return asio::post(*io, [w, gen] {
          auto self = w.lock();
          if (!self || gen != self->generation || self->state != ConnectorState::kStarting) return;
          self->fail(down::kConfig,
                     fmt::format("it sent oppx's own initialize request back: {} is not an MCP server (a program "
                                 "that echoes its input, like cat, is not one); correct its command",
                                 self->def.name));
        });
      }
      // MCP: sampling, roots and elicitation were not offered in initialize; never leave them hanging.
      reply.fail(RpcError::make(ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                "oppx does not support " + req.method));
    };
    o.on_notification = [w = weak_from_this()](proto::Notification n) {
      auto self = w.lock();
      if (!self) return;
      // Before the first tools/list is sent a notice changes nothing (server-everything sends one
      // before it even answers initialize); one while that list is on its way means fetch again.
      if (n.method == "notifications/tools/list_changed" &&
          (self->state == ConnectorState::kRunning || self->fetching)) {
        self->tools_changed_soon();
      } else if (n.method == "notifications/progress" && n.params.is_object()) {
        self->pass_progress(n.params.as_object());
      }
    };
    o.on_closed = [w = weak_from_this(), gen = generation](const TransportError& e) {
      auto self = w.lock();
      if (!self || gen != self->generation) return;
      if (e.kind == "too_large")
        return self->fail(down::kStopped, "it sent a message too large (over 16 MiB); it was stopped");
      if (self->def.kind == ConnectorDef::Kind::kHttp) {
        bool ours = e.kind == "closed";
        if (!ours && (self->state == ConnectorState::kRunning || self->state == ConnectorState::kStarting))
          self->fail(down::kStopped, "its HTTP session ended: " + e.message);
        return;
      }
      // Its output ended: normally it exited, and the exit (with its status) is reported in a
      // moment. One that lives on without output is useless: stopped after a grace.
      if (self->state == ConnectorState::kRunning || self->state == ConnectorState::kStarting) {
        auto grace = std::make_shared<asio::steady_timer>(self->io, std::chrono::seconds(2));
        grace->async_wait([w, gen, grace](boost::system::error_code ec) {
          auto me = w.lock();
          if (ec || !me || gen != me->generation || me->exited) return;
          me->output_closed = true;
          me->fail(down::kStopped, "its program closed its output; it was stopped. Its log is " + me->log_path);
        });
      }
    };
    peer = JsonRpcPeer::create(std::move(transport), std::move(o));
    peer->start();
  }

  // `timeout` after the start began.
  void arm_start_timer(std::chrono::milliseconds timeout) {
    start_timer.expires_at(started_at + timeout);
    start_timer.async_wait([w = weak_from_this(), gen = generation, timeout](boost::system::error_code ec) {
      auto self = w.lock();
      if (!self || ec || gen != self->generation || self->state != ConnectorState::kStarting) return;
      // An HTTP connector has no log of its own (log_path is the daemon's): its steps say where to look.
      bool http = self->def.kind == ConnectorDef::Kind::kHttp;
      self->fail(down::kTimeout, fmt::format("it did not finish starting within {}{}", duration_text(timeout),
                                             http ? "" : "; its log is " + self->log_path));
    });
  }

  void handshake(std::chrono::milliseconds timeout) {
    auto gen = generation;
    arm_start_timer(timeout);
    json::object params{{"protocolVersion", kProtocolVersions[0]},
                        {"capabilities", json::object{}},
                        {"clientInfo", json::object{{"name", "oppx"}, {"version", OPPX_VERSION}}}};
    peer->call("initialize", params, [w = weak_from_this(), gen](JsonRpcPeer::CallResult r) {
      auto self = w.lock();
      if (!self || gen != self->generation || self->state != ConnectorState::kStarting) return;
      self->disown(r);
      // A program's output ended: the exit, with its status and last words, is the reason (on_exit).
      bool http = self->def.kind == ConnectorDef::Kind::kHttp;
      if (!r && r.error().kind == proto::kind::kDisconnected && !http) return;
      if (!r && (takes_it_down(r.error()) || r.error().kind == down::kTimeout))
        return self->fail(r.error().kind, r.error().message);
      if (!r && http) {
        // The transport's own error (never a server's claim) with the status the URL answered.
        // A copy kept: result::error() returns one, and a pointer into a temporary would dangle.
        const RpcError e = r.error();
        const json::value* status = e.received ? nullptr : e.data.if_contains("http_status");
        int code = status && status->is_int64() ? static_cast<int>(status->as_int64()) : 0;
        if (url_is_wrong(code))
          return self->fail(down::kConfig, "its URL is not the server's MCP endpoint: " + e.message, false, code);
        return self->fail(down::kStopped, "initialize failed: " + e.message);
      }
      if (!r) return self->fail(down::kStopped, "it refused initialize: " + r.error().message);
      std::string version;
      if (auto* v = r->is_object() ? r->as_object().if_contains("protocolVersion") : nullptr; v && v->is_string()) {
        version = std::string(v->as_string());
      }
      if (std::find(std::begin(kProtocolVersions), std::end(kProtocolVersions), version) ==
          std::end(kProtocolVersions)) {
        return self->fail(down::kStopped,
                          fmt::format("it speaks MCP protocol \"{}\", which oppx does not support", version));
      }
      self->peer->notify("notifications/initialized", nullptr);
      self->fetch_tools(gen);
    });
  }

  // Servers may send list_changed in bursts (one per tool they add): the first notice arms a
  // short timer, the ones within it ride along, and one fetch follows.
  void tools_changed_soon() {
    if (list_changed_armed) return;
    list_changed_armed = true;
    list_changed_timer.expires_after(kListChangedDebounce);
    list_changed_timer.async_wait([w = weak_from_this(), gen = generation](boost::system::error_code ec) {
      auto self = w.lock();
      if (!self || ec) return;  // cancelled by a stop, which also disarmed it
      self->list_changed_armed = false;
      if (gen == self->generation && (self->state == ConnectorState::kRunning || self->fetching))
        self->fetch_tools(gen);
    });
  }

  void pass_progress(const json::object& params) {
    const json::value* token = params.if_contains("progressToken");
    if (!token || !token->is_string()) return;  // we only ever send string tokens
    auto it = progress.find(std::string(token->as_string()));
    if (it == progress.end()) return;  // a call that ended, or a token that is not ours
    json::object p = params;
    p.erase("progressToken");
    auto fn = it->second;
    fn(p);
  }

  void fetch_tools(std::uint64_t gen) {
    if (fetching) {
      refetch_again = true;  // a burst of list_changed gives one more fetch, not one per notice
      return;
    }
    fetching = true;
    fetch_page(gen, std::make_shared<Pages>(), "");
  }

  struct Pages {
    json::array tools;
    std::set<std::string> names, cursors;
    int count = 0;
  };

  // Pages end at the last one, at a cursor seen before, or at kMaxToolPages.
  void fetch_page(std::uint64_t gen, std::shared_ptr<Pages> acc, std::string cursor) {
    json::value params = cursor.empty() ? json::value(nullptr) : json::value(json::object{{"cursor", cursor}});
    peer->call("tools/list", params, [w = weak_from_this(), gen, acc](JsonRpcPeer::CallResult r) {
      auto self = w.lock();
      if (!self || gen != self->generation) return;
      self->disown(r);
      if (!r && r.error().kind == proto::kind::kDisconnected && self->def.kind != ConnectorDef::Kind::kHttp) {
        self->fetching = false;  // as for initialize: on_exit reports it
        return;
      }
      if (!r || !r->is_object() || !r->as_object().contains("tools") || !r->as_object().at("tools").is_array()) {
        self->fetching = false;
        if (!r && takes_it_down(r.error())) return self->fail(r.error().kind, r.error().message);
        return self->fail(down::kStopped,
                          "its tools/list answer was unusable" + (r ? std::string() : ": " + r.error().message));
      }
      for (auto& t : r->as_object().at("tools").as_array()) {
        const json::value* name = t.is_object() ? t.as_object().if_contains("name") : nullptr;
        if (name && name->is_string() && acc->names.insert(std::string(name->as_string())).second)
          acc->tools.push_back(t);
      }
      ++acc->count;
      const json::value* next = r->as_object().if_contains("nextCursor");
      if (next && next->is_string() && !next->as_string().empty()) {
        std::string c(next->as_string());
        if (!acc->cursors.insert(c).second) {
          log::warn("connector {}: tools/list gave the cursor {} twice; its list ends there", self->def.name,
                    escape_controls(c.substr(0, 80)));
        } else if (acc->count >= kMaxToolPages) {
          log::warn("connector {}: tools/list has more than {} pages; the rest is left out", self->def.name,
                    kMaxToolPages);
        } else {
          return self->fetch_page(gen, acc, std::move(c));
        }
      }
      self->fetching = false;
      self->tools = std::move(acc->tools);
      if (self->state == ConnectorState::kStarting) {
        self->start_timer.cancel();
        log::info("connector {}: running, {} tools", self->def.name, self->tools.size());
      }
      self->set_state(ConnectorState::kRunning);
      if (self->refetch_again) {
        self->refetch_again = false;
        self->fetch_tools(gen);
      }
    });
  }

  proto::RpcError down_error(std::string message) const {
    auto e = RpcError::make(ErrorCode::kInternal, "connector_down", std::move(message));
    e.data["connector"] = def.name;
    e.data["reason_kind"] = kind.empty() ? std::string(down::kStopped) : kind;
    e.data["reason"] = reason;
    json::array s;
    for (auto& step : steps) s.emplace_back(step);
    e.data["steps"] = std::move(s);
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

  // An HTTP server that could not be reached may be back: a call tries it again, at most once
  // every kUnreachableRetry (the call never reached it, so nothing runs twice).
  bool may_be_back() const {
    return def.kind == ConnectorDef::Kind::kHttp && kind == down::kUnreachable &&
           std::chrono::steady_clock::now() - failed_at >= kUnreachableRetry;
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
    if (options.on_progress) {
      pc->progress_token = fmt::format("oppx-{}", ++next_progress);
      progress.emplace(pc->progress_token, std::move(options.on_progress));
    }
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
      finish(w, *pc, RpcError::make(ErrorCode::kInternal, "connector_down", "the connector was removed"));
    };
    if (state == ConnectorState::kStarting) {
      // The call's own timer ends the wait when its limit comes first.
      return when([this] { return state != ConnectorState::kStarting; }, pc->limit, again);
    }
    if (state == ConnectorState::kFailed && !pc->retried && (restartable || may_be_back())) {
      pc->retried = true;
      return restart_for_call(again);
    }
    if (state != ConnectorState::kRunning || !peer) {
      return finish(w, *pc,
                    down_error(fmt::format("{} is not running ({}): {}", def.name, state_name(state),
                                           reason.empty() ? "not running" : reason)));
    }
    bool ro = read_only(pc->tool);
    json::object params{{"name", pc->tool}, {"arguments", pc->arguments}};
    if (!pc->progress_token.empty()) params["_meta"] = json::object{{"progressToken", pc->progress_token}};
    pc->peer = peer;
    pc->id = peer->call("tools/call", params, [w, pc, ro](JsonRpcPeer::CallResult r) {
      if (pc->finished) return;
      pc->id = nullptr;
      auto self = w.lock();
      if (!self) return finish(w, *pc, std::move(r));
      self->disown(r);
      // Failures of the way there (not a server's own error answer) go to the daemon's log, the
      // only log an HTTP connector has.
      self->hide_secrets(r);
      if (!r && !r.error().received)
        log::warn("connector {}: the call to {} failed: {}", self->def.name, escape_controls(pc->tool.substr(0, 100)),
                  r.error().message);
      if (!r && r.error().kind == proto::kind::kDisconnected) return self->lost_during_call(pc, ro);
      if (!r) self->check_login(r.error());
      if (!r && self->state == ConnectorState::kFailed) {
        return finish(w, *pc,
                      self->down_error(fmt::format("{}.{} failed: {}", self->def.name, pc->tool, self->reason)));
      }
      finish(w, *pc, std::move(r));
    });
  }

  static void finish(const std::weak_ptr<Impl>& w, PendingCall& pc, CallResult r) {
    if (pc.finished) return;
    pc.finished = true;
    if (auto self = w.lock()) {
      if (pc.timed) self->deadlines.erase(pc.deadline);
      if (!pc.progress_token.empty()) self->progress.erase(pc.progress_token);
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
    if (auto p = pc.peer.lock()) {
      p->forget(pc.id);
      p->notify("notifications/cancelled", json::object{{"requestId", pc.id}, {"reason", why}});
    }
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
             return finish(w, *pc, RpcError::make(ErrorCode::kInternal, "connector_down", "the connector was removed"));
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
  // The kinds are ours (disown() took any a server sent); the words are the tool's, so only words
  // count there, never a bare number such as 403.
  void check_login(const proto::RpcError& e) {
    if (e.kind == down::kUnreachable) return fail(down::kUnreachable, e.message);
    if (e.kind == down::kLogin || tool_error_looks_like_login(e.message)) return fail(down::kLogin, e.message);
  }

  // An error the server sent is the server's, whatever its data.kind says; only errors made here
  // (the peer's "disconnected", the HTTP transport's login, unreachable or timeout, delivered out
  // of band and so not `received`) carry the kinds the daemon acts on (restart, repeat, take it
  // down). The server's kind is kept as data.server_kind.
  void disown(JsonRpcPeer::CallResult& r) const {
    if (r || !r.error().received) return;
    proto::RpcError e = r.error();
    if (!e.kind.empty()) e.data["server_kind"] = e.kind;
    e.kind.clear();
    r = JsonRpcPeer::CallResult(boost::system::in_place_error, std::move(e));
  }

  // Stop: stdin closed (the peer's abort), SIGTERM to the group after kTermGrace, SIGKILL after
  // kKillGrace more; reaped when it goes, so no zombie stays behind, then the group is released.
  // An HTTP connector's transport is closed instead: it DELETEs the session, bounded.
  void kill_child() {
    if (peer) {
      if (def.kind == ConnectorDef::Kind::kHttp) {
        peer->close();
      } else {
        peer->abort();
      }
      peer.reset();
    }
    boost::system::error_code ec;
    err_stream.close(ec);
    start_timer.cancel();
    list_changed_timer.cancel();
    list_changed_armed = false;
    if (exited || child.pid <= 0) return;
    pid_t pid = child.pid;
    auto term = std::make_shared<asio::steady_timer>(io, kTermGrace);
    auto kill = std::make_shared<asio::steady_timer>(io, kTermGrace + kKillGrace);
    term->async_wait([pid](boost::system::error_code e) {
      if (!e) signal_group(pid, SIGTERM);
    });
    kill->async_wait([pid](boost::system::error_code e) {
      if (!e) signal_group(pid, SIGKILL);
    });
    if (exit_watch) exit_watch->cancel();
    exit_watch.reset();
    ExitWatch::start(io, pid, [term, kill, pid](boost::system::result<ExitStatus, std::string> status) {
      term->cancel();
      kill->cancel();
      if (!status) return log::error("stopping pid {}: {}", pid, status.error());
      release_group(pid);
    });
    exited = true;
  }

  void stop() {
    ++generation;
    restartable = false;
    restart_timer.cancel();
    set_state(ConnectorState::kStopped);
    kill_child();
    if (log_fd >= 0) ::close(log_fd);
    log_fd = -1;
  }

  // An entry that never runs ("disabled": true, or one oppx cannot use): nothing started or expanded.
  void set_aside() {
    ++generation;
    restartable = false;
    restart_timer.cancel();
    kill_child();
    tools = {};
    if (!def.unsupported.empty()) return set_state(ConnectorState::kUnsupported, def.unsupported, down::kUnsupported);
    set_state(ConnectorState::kDisabled,
              fmt::format("\"disabled\": true in {}; to start it, remove that key (or set it to false)", def.file),
              "disabled");
  }

  void hold(std::string why) {
    if (def.never_starts()) return set_aside();
    ++generation;
    restartable = false;
    restart_timer.cancel();
    kill_child();
    tools = {};
    set_state(ConnectorState::kWaiting, std::move(why), "waiting");
  }
};

// OPPX_MCP_START_TIMEOUT_MS in the asking client's environment shortens or lengthens the 30 s a
// connector gets to start (a slow first npx download; a test of a server that never answers).
std::chrono::milliseconds start_timeout(const EnvMap& env) {
  auto it = env.find("OPPX_MCP_START_TIMEOUT_MS");
  if (it == env.end()) return kStartTimeout;
  char* end = nullptr;
  long long ms = std::strtoll(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0' || ms < 100 || ms > 3'600'000) return kStartTimeout;
  return std::chrono::milliseconds(ms);
}

std::shared_ptr<Connector> Connector::create(asio::io_context& io, ConnectorDef def, std::string log_path) {
  return std::shared_ptr<Connector>(new Connector(std::make_shared<Impl>(io, std::move(def), std::move(log_path))));
}

Connector::Connector(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Connector::~Connector() {
  impl_->on_change = nullptr;
  impl_->on_idle = nullptr;
  impl_->start_check = nullptr;
  impl_->stop();
}

void Connector::start(const EnvMap& env, std::chrono::milliseconds timeout) {
  impl_->quick_deaths = 0;  // asked for by a user: a crash loop given up on gets its chances again
  impl_->start(env, timeout);
}
void Connector::stop() { impl_->stop(); }
void Connector::hold(std::string reason) { impl_->hold(std::move(reason)); }
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
void Connector::check_before_start(std::function<std::string()> fn) { impl_->start_check = std::move(fn); }
const ConnectorDef& Connector::def() const { return impl_->def; }
ConnectorState Connector::state() const { return impl_->state; }
const std::string& Connector::reason() const { return impl_->reason; }
const std::string& Connector::down_kind() const { return impl_->kind; }
const std::vector<std::string>& Connector::steps() const { return impl_->steps; }
const json::array& Connector::tools() const { return impl_->tools; }
bool Connector::read_only(const std::string& tool) const { return impl_->read_only(tool); }
const std::string& Connector::log_path() const { return impl_->log_path; }
std::int64_t Connector::pid() const { return impl_->exited ? 0 : impl_->child.pid; }
std::size_t Connector::calls_waiting() const { return impl_->peer ? impl_->peer->calls_waiting() : 0; }
std::size_t Connector::calls_open() const { return impl_->open_calls; }
void Connector::on_idle(std::function<void()> fn) { impl_->on_idle = std::move(fn); }
const EnvMap& Connector::last_env() const { return impl_->env; }

}  // namespace oppx::daemon
