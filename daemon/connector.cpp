// Connector::Impl. Pending operations hold a weak_ptr to the Impl, so a connector removed while
// its child is still starting ends cleanly. The child is watched through a pidfd: its exit is an
// event like any other, and the reason (exit status, signal, last stderr line) is kept for
// `mcp list` and for the ConnectorDown error of a call.
#include "daemon/connector.h"

#include "common/jsonrpc_peer.h"
#include "common/log.h"
#include "common/ndjson_transport.h"
#include "common/text.h"
#include "daemon/child_process.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <sys/stat.h>
#include <csignal>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
  }
  return "unknown";
}

namespace {

constexpr std::size_t kLogCap = 1u << 20;
constexpr int kMaxToolPages = 50;
constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
constexpr const char* kPassedVariables[] = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG"};

}  // namespace

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
  *truncated = text.size() > limit;
  if (*truncated) {
    std::size_t cut = limit;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    std::size_t total = text.size();
    text.resize(cut);
    text += fmt::format("\n[… cut at {} of {} characters …]", limit, total);
  }
  return text;
}

struct Connector::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io, ConnectorDef def, std::string log_path)
      : io(io), def(std::move(def)), log_path(std::move(log_path)), err_stream(io), exit_watch(io), start_timer(io) {}

  asio::io_context& io;
  ConnectorDef def;
  std::string log_path;
  ConnectorState state = ConnectorState::kStopped;
  std::string reason;
  std::string kind;
  json::array tools;
  std::function<void()> on_change;
  std::shared_ptr<JsonRpcPeer> peer;
  Child child;
  bool exited = true;
  asio::posix::stream_descriptor err_stream;
  asio::posix::stream_descriptor exit_watch;
  asio::steady_timer start_timer;
  std::array<char, 8192> err_buf{};
  std::string err_partial, last_err_line;
  int log_fd = -1;
  std::size_t log_size = 0;
  bool refetch_again = false, fetching = false;
  bool output_closed = false;
  std::uint64_t generation = 0;  // bumps at each start; callbacks of an older child are ignored

  void set_state(ConnectorState s, std::string why = {}, std::string_view k = {}) {
    state = s;
    reason = std::move(why);
    kind = std::string(k);
    if (s == ConnectorState::kFailed) log::warn("connector {}: {}", def.name, reason);
    if (on_change) on_change();
  }

  void fail(std::string_view k, std::string why) {
    if (state == ConnectorState::kStopped || state == ConnectorState::kWaiting) return;
    set_state(ConnectorState::kFailed, std::move(why), k);
    kill_child();
  }

  void start(const EnvMap& client_env, std::chrono::milliseconds timeout) {
    kill_child();
    ++generation;
    tools = {};
    output_closed = false;
    set_state(ConnectorState::kStarting);
    if (def.kind == ConnectorDef::Kind::kHttp) {
      return fail(down::kUnsupported, "streamable HTTP connectors are not supported by this build of oppxd yet");
    }
    SpawnSpec spec;
    auto expanded = [&](const std::string& v) -> std::optional<std::string> {
      auto r = expand(v, client_env);
      if (r) return *r;
      fail(down::kConfig, fmt::format("it needs ${{{}}}, which is not set in the environment of the oppx command that "
                                      "started it; set it and run `oppx mcp reconnect {}`",
                                      r.error().variable, def.name));
      return std::nullopt;
    };
    auto cmd = expanded(def.command);
    if (!cmd) return;
    spec.program = *cmd;
    for (auto& a : def.args) {
      auto x = expanded(a);
      if (!x) return;
      spec.args.push_back(*x);
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
    auto spawned = spawn_child(spec);
    if (!spawned) {
      bool missing = spawned.error().not_installed;
      return fail(missing ? down::kNotInstalled : down::kStopped,
                  spawned.error().message +
                      (missing ? "; install it, or correct the command of " + def.name + " in mcp.json" : ""));
    }
    child = *spawned;
    exited = false;
    open_log();
    watch_stderr();
    watch_exit();
    connect_peer();
    handshake(timeout);
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

  void take_stderr(std::string_view data) {
    append_log(data);
    err_partial.append(data);
    if (auto nl = err_partial.rfind('\n'); nl != std::string::npos) {
      std::string_view complete(err_partial.data(), nl);
      auto start = complete.rfind('\n');
      std::string_view last = start == std::string_view::npos ? complete : complete.substr(start + 1);
      if (!last.empty()) last_err_line = escape_controls(last.substr(0, 300));
      err_partial.erase(0, nl + 1);
    }
    if (err_partial.size() > 4096) err_partial.erase(0, err_partial.size() - 4096);
  }

  // What is still in the stderr pipe when the child exits: its last words, often the reason.
  void drain_stderr() {
    if (!err_stream.is_open()) return;
    boost::system::error_code ec;
    err_stream.non_blocking(true, ec);
    char buf[8192];
    ssize_t n;
    while ((n = ::read(err_stream.native_handle(), buf, sizeof buf)) > 0)
      take_stderr(std::string_view(buf, static_cast<std::size_t>(n)));
    if (!err_partial.empty()) last_err_line = escape_controls(std::string_view(err_partial).substr(0, 300));
  }

  void watch_exit() {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child.pid, 0));
    if (pidfd < 0) return;
    exit_watch.assign(pidfd);
    exit_watch.async_wait(asio::posix::stream_descriptor::wait_read,
                          [w = weak_from_this(), gen = generation](boost::system::error_code ec) {
                            auto self = w.lock();
                            if (!self || ec || gen != self->generation) return;
                            self->on_exit();
                          });
  }

  void on_exit() {
    int status = 0;
    // The pidfd is readable a moment before the child is a zombie (the kernel wakes pidfd
    // waiters first): WNOHANG could miss it, a blocking wait returns within microseconds.
    if (::waitpid(child.pid, &status, 0) != child.pid) return;
    exited = true;
    boost::system::error_code ec;
    exit_watch.close(ec);
    signal_group(child.pid, SIGKILL);  // grandchildren left in its group go with it
    drain_stderr();
    if (state == ConnectorState::kStopped || state == ConnectorState::kWaiting ||
        (state == ConnectorState::kFailed && !output_closed))
      return;
    std::string how = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                        : fmt::format("signal {}", WTERMSIG(status));
    std::string tail = last_err_line.empty() ? "" : ": " + last_err_line;
    fail(down::kStopped, fmt::format("its program stopped ({}){}; its log is {}", how, tail, log_path));
  }

  void connect_peer() {
    NdjsonLimits limits;
    limits.stall_timeout = std::chrono::hours(24);  // a server may write a long line slowly
    JsonRpcPeer::Options o;
    o.name = "mcp:" + def.name;
    o.reply_to_malformed = false;  // junk from a server is logged and skipped, never answered
    o.on_request = [name = def.name](proto::Request req, Reply reply) {
      if (req.method == "ping") return reply.ok(json::object{});
      // MCP: sampling, roots and elicitation were not offered in initialize; never leave them hanging.
      reply.fail(RpcError::make(ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                "oppx does not support " + req.method));
    };
    o.on_notification = [w = weak_from_this()](proto::Notification n) {
      auto self = w.lock();
      if (self && n.method == "notifications/tools/list_changed" && self->state == ConnectorState::kRunning) {
        self->fetch_tools(self->generation);
      }
    };
    o.on_closed = [w = weak_from_this(), gen = generation](const TransportError& e) {
      auto self = w.lock();
      if (!self || gen != self->generation) return;
      if (e.kind == "too_large")
        return self->fail(down::kStopped, "it sent a message too large (over 16 MiB); it was stopped");
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
    peer = JsonRpcPeer::create(make_ndjson_transport(io, child.out, child.in, limits), std::move(o));
    peer->start();
  }

  void handshake(std::chrono::milliseconds timeout) {
    auto gen = generation;
    start_timer.expires_after(timeout);
    start_timer.async_wait([w = weak_from_this(), gen, timeout](boost::system::error_code ec) {
      auto self = w.lock();
      if (!self || ec || gen != self->generation || self->state != ConnectorState::kStarting) return;
      self->fail(down::kTimeout, fmt::format("it did not finish starting within {} s; its log is {}",
                                             timeout.count() / 1000, self->log_path));
    });
    json::object params{{"protocolVersion", kProtocolVersions[0]},
                        {"capabilities", json::object{}},
                        {"clientInfo", json::object{{"name", "oppx"}, {"version", OPPX_VERSION}}}};
    peer->call("initialize", params, [w = weak_from_this(), gen](JsonRpcPeer::CallResult r) {
      auto self = w.lock();
      if (!self || gen != self->generation || self->state != ConnectorState::kStarting) return;
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

  void fetch_tools(std::uint64_t gen) {
    if (fetching) {
      refetch_again = true;  // a burst of list_changed gives one more fetch, not one per notice
      return;
    }
    fetching = true;
    fetch_page(gen, std::make_shared<json::array>(), "", 0);
  }

  void fetch_page(std::uint64_t gen, std::shared_ptr<json::array> acc, std::string cursor, int page) {
    json::value params = cursor.empty() ? json::value(nullptr) : json::value(json::object{{"cursor", cursor}});
    peer->call("tools/list", params, [w = weak_from_this(), gen, acc, page](JsonRpcPeer::CallResult r) {
      auto self = w.lock();
      if (!self || gen != self->generation) return;
      if (!r || !r->is_object() || !r->as_object().contains("tools") || !r->as_object().at("tools").is_array()) {
        self->fetching = false;
        return self->fail(down::kStopped,
                          "its tools/list answer was unusable" + (r ? std::string() : ": " + r.error().message));
      }
      for (auto& t : r->as_object().at("tools").as_array()) {
        if (t.is_object() && t.as_object().contains("name") && t.as_object().at("name").is_string()) acc->push_back(t);
      }
      const json::value* next = r->as_object().if_contains("nextCursor");
      if (next && next->is_string() && !next->as_string().empty() && page + 1 < kMaxToolPages) {
        return self->fetch_page(gen, acc, std::string(next->as_string()), page + 1);
      }
      self->fetching = false;
      self->tools = std::move(*acc);
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

  void call(const std::string& tool, json::value arguments, std::chrono::milliseconds timeout,
            std::function<void(CallResult)> done) {
    if (state != ConnectorState::kRunning || !peer) {
      auto e = RpcError::make(
          ErrorCode::kInternal, "connector_down",
          fmt::format("{} is {}: {}", def.name, state_name(state), reason.empty() ? "not running" : reason));
      e.data["connector"] = def.name;
      e.data["reason_kind"] = kind;
      return done(std::move(e));
    }
    auto timer = std::make_shared<asio::steady_timer>(io, timeout);
    auto finished = std::make_shared<bool>(false);
    auto shared_done = std::make_shared<std::function<void(CallResult)>>(std::move(done));
    json::value id = peer->call("tools/call", json::object{{"name", tool}, {"arguments", arguments}},
                                [timer, finished, shared_done, name = def.name](JsonRpcPeer::CallResult r) {
                                  if (*finished) return;
                                  *finished = true;
                                  timer->cancel();
                                  if (!r && r.error().kind == proto::kind::kDisconnected) {
                                    auto e = RpcError::make(ErrorCode::kInternal, "connector_down",
                                                            name +
                                                                "'s program stopped during the call; the call may or "
                                                                "may not have run. Run `oppx mcp list` for the reason");
                                    e.data["connector"] = name;
                                    e.data["reason_kind"] = std::string(down::kStopped);
                                    return (*shared_done)(std::move(e));
                                  }
                                  (*shared_done)(std::move(r));
                                });
    timer->async_wait(
        [w = weak_from_this(), timer, finished, shared_done, id, timeout, tool](boost::system::error_code ec) {
          if (ec || *finished) return;
          *finished = true;
          auto self = w.lock();
          // One slow call does not take a connector down: the call is cancelled, the connector stays.
          if (self && self->peer) {
            self->peer->notify("notifications/cancelled",
                               json::object{{"requestId", id}, {"reason", "the caller's time limit passed"}});
          }
          (*shared_done)(RpcError::make(ErrorCode::kInternal, proto::kind::kTimeout,
                                        fmt::format("{} did not answer within {} s", tool, timeout.count() / 1000)));
        });
  }

  // Stop = close stdin, then SIGTERM to the group after a grace, then SIGKILL.
  void kill_child() {
    if (peer) {
      peer->abort();
      peer.reset();
    }
    boost::system::error_code ec;
    err_stream.close(ec);
    start_timer.cancel();
    if (exited || child.pid <= 0) return;
    pid_t pid = child.pid;
    signal_group(pid, SIGTERM);
    auto grace = std::make_shared<asio::steady_timer>(io, std::chrono::seconds(2));
    grace->async_wait([grace, pid](boost::system::error_code) { signal_group(pid, SIGKILL); });
    // Reap it when it goes, so that no zombie stays behind.
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd >= 0) {
      auto watch = std::make_shared<asio::posix::stream_descriptor>(io, pidfd);
      watch->async_wait(asio::posix::stream_descriptor::wait_read, [watch, grace, pid](boost::system::error_code) {
        ::waitpid(pid, nullptr, 0);  // readable pidfd: it has exited (see on_exit)
        signal_group(pid, SIGKILL);
        grace->cancel();
      });
    }
    exit_watch.close(ec);
    exited = true;
  }

  void stop() {
    ++generation;
    set_state(ConnectorState::kStopped);
    kill_child();
    if (log_fd >= 0) ::close(log_fd);
    log_fd = -1;
  }

  void hold(std::string why) {
    ++generation;
    kill_child();
    tools = {};
    set_state(ConnectorState::kWaiting, std::move(why), "waiting");
  }
};

std::shared_ptr<Connector> Connector::create(asio::io_context& io, ConnectorDef def, std::string log_path) {
  return std::shared_ptr<Connector>(new Connector(std::make_shared<Impl>(io, std::move(def), std::move(log_path))));
}

Connector::Connector(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Connector::~Connector() {
  impl_->on_change = nullptr;
  impl_->stop();
}

void Connector::start(const EnvMap& env, std::chrono::milliseconds timeout) { impl_->start(env, timeout); }
void Connector::stop() { impl_->stop(); }
void Connector::hold(std::string reason) { impl_->hold(std::move(reason)); }
void Connector::call(const std::string& tool, json::value arguments, std::chrono::milliseconds timeout,
                     std::function<void(CallResult)> done) {
  impl_->call(tool, std::move(arguments), timeout, std::move(done));
}
void Connector::on_change(std::function<void()> fn) { impl_->on_change = std::move(fn); }
const ConnectorDef& Connector::def() const { return impl_->def; }
ConnectorState Connector::state() const { return impl_->state; }
const std::string& Connector::reason() const { return impl_->reason; }
const std::string& Connector::down_kind() const { return impl_->kind; }
const json::array& Connector::tools() const { return impl_->tools; }
const std::string& Connector::log_path() const { return impl_->log_path; }
std::int64_t Connector::pid() const { return impl_->exited ? 0 : impl_->child.pid; }

}  // namespace oppx::daemon
