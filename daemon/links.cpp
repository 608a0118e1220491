// The two links (daemon/link.h): StdioLink (a Subprocess and an NDJSON transport on its pipes)
// and HttpLink (the streamable HTTP transport), and make_link, which expands a definition for
// the starting client into one of them. The only code that tells the two kinds apart.
#include "daemon/link.h"

#include "common/fs.h"
#include "common/log.h"
#include "common/ndjson_transport.h"
#include "common/paths.h"
#include "common/text.h"
#include "daemon/connector.h"
#include "daemon/http_transport.h"
#include "daemon/subprocess.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <sys/stat.h>

namespace oppx::daemon {

namespace asio = boost::asio;

namespace {

constexpr const char* kPassedVariables[] = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG"};
// A program that closed its output is given this long to exit (and say why) before it is stopped.
constexpr auto kOutputClosedGrace = std::chrono::seconds(2);

// The folder a stdio program starts in when its entry has no "cwd": a repository's root for a
// repository's connector, else the HOME of the client that starts it.
std::string default_folder(const ConnectorDef& def, const EnvMap& env) {
  if (def.project) return dirname_of(def.file);
  auto home = env.find("HOME");
  return home != env.end() && home->second.starts_with('/') ? home->second : paths::home();
}

NdjsonLimits stdio_limits() {
  NdjsonLimits limits;
  limits.stall_timeout = std::chrono::hours(24);  // a server may write a long line slowly
  return limits;
}

class StdioLink final : public Link, public std::enable_shared_from_this<StdioLink> {
 public:
  StdioLink(asio::io_context& io, const ConnectorDef& def, SpawnSpec spec, LinkContext context)
      : io_(io),
        name_(def.name),
        file_(file_name_of(def)),
        spec_(std::move(spec)),
        context_(std::move(context)),
        grace_(io) {}

  void open(Handlers handlers) override {
    handlers_ = std::move(handlers);
    Subprocess::Options o{name_, context_.log_path, context_.secrets};
    Subprocess::spawn(io_, spec_, std::move(o), [w = weak_from_this()](auto r) {
      auto self = w.lock();
      if (!self || self->closed_) return;  // a process nobody keeps is killed at once (~Subprocess)
      self->spawned(std::move(r));
    });
  }

  void transport_ended(const TransportError&) override {
    // Its output ended: normally it exited, and the exit (with its status) is reported in a
    // moment. One that lives on without output is useless: stopped after a grace.
    grace_.expires_after(kOutputClosedGrace);
    grace_.async_wait([w = weak_from_this()](boost::system::error_code ec) {
      auto self = w.lock();
      if (ec || !self || self->closed_ || !self->process_ || self->process_->pid() == 0) return;
      self->handlers_.on_failed({proto::kind::kStopped, "its program closed its output; it was stopped. Its log is " +
                                                            self->context_.log_path});
    });
  }

  void close() override {
    closed_ = true;
    handlers_ = {};
    grace_.cancel();
    if (process_) process_->stop();
    process_.reset();
  }

  bool closes_gracefully() const override { return false; }  // its stdin is closed at once: that is the stop
  bool reports_its_loss() const override { return true; }
  std::string log_note() const override { return "; its log is " + context_.log_path; }
  std::int64_t pid() const override { return process_ ? process_->pid() : 0; }

 private:
  void spawned(boost::system::result<std::shared_ptr<Subprocess>, SpawnError> r) {
    if (!r) {
      bool missing = r.error().not_installed;
      return handlers_.on_failed(
          {missing ? proto::kind::kNotInstalled : proto::kind::kStopped,
           r.error().message + (missing ? "; install it, or correct the command of " + name_ + " in " + file_ : "")});
    }
    process_ = *r;
    process_->on_finished([w = weak_from_this()](Subprocess::Finished f) {
      auto self = w.lock();
      if (!self || self->closed_) return;
      self->grace_.cancel();
      self->handlers_.on_program_stop(ProgramStop{std::move(f.status), std::move(f.last_lines)});
    });
    int out = process_->take_stdout(), in = process_->take_stdin();
    handlers_.on_open(make_ndjson_transport(io_, out, in, stdio_limits()));
  }

  asio::io_context& io_;
  std::string name_, file_;
  SpawnSpec spec_;
  LinkContext context_;
  Handlers handlers_;
  asio::steady_timer grace_;
  std::shared_ptr<Subprocess> process_;
  bool closed_ = false;
};

class HttpLink final : public Link {
 public:
  explicit HttpLink(std::unique_ptr<Transport> transport) : transport_(std::move(transport)) {}
  void open(Handlers handlers) override {
    handlers_ = std::move(handlers);
    handlers_.on_open(std::move(transport_));
  }
  void transport_ended(const TransportError& e) override {
    if (handlers_.on_failed) handlers_.on_failed({proto::kind::kStopped, "its HTTP session ended: " + e.message});
  }
  void close() override { handlers_ = {}; }
  bool closes_gracefully() const override { return true; }  // it DELETEs the session, bounded
  bool reports_its_loss() const override { return false; }
  // An HTTP connector has no log of its own (its log path is the daemon's): its steps say where to look.
  std::string log_note() const override { return ""; }

 private:
  std::unique_ptr<Transport> transport_;
  Handlers handlers_;
};

// ${VAR}s of the definition, expanded for the starting client; an unset one is a config failure.
class Expander {
 public:
  Expander(const ConnectorDef& def, const EnvMap& env) : def_(def), env_(env) {}
  std::optional<std::string> operator()(const std::string& v) {
    auto r = expand(v, env_);
    if (r) return *r;
    if (!failure_)
      failure_ = LinkFailure{proto::kind::kConfig,
                             fmt::format("{}; {} it and run `oppx mcp reconnect {}`", r.error().describe(),
                                         r.error().written_wrong() ? "correct" : "set", def_.name)};
    return std::nullopt;
  }
  LinkFailure failure() const { return *failure_; }

 private:
  const ConnectorDef& def_;
  const EnvMap& env_;
  std::optional<LinkFailure> failure_;
};

LinkResult make_stdio_link(asio::io_context& io, const ConnectorDef& def, const EnvMap& env, LinkContext context) {
  Expander expanded(def, env);
  SpawnSpec spec;
  auto cmd = expanded(def.command);
  if (!cmd) return expanded.failure();
  spec.program = *cmd;
  for (auto& a : def.args) {
    auto x = expanded(a);
    if (!x) return expanded.failure();
    spec.args.push_back(*x);
  }
  spec.cwd = default_folder(def, env);
  if (!def.cwd.empty()) {
    auto dir = expanded(def.cwd);
    if (!dir) return expanded.failure();
    spec.cwd = dir->starts_with('/') ? *dir : dirname_of(def.file) + "/" + *dir;
    struct stat st {};
    bool found = ::stat(spec.cwd.c_str(), &st) == 0;
    if (!found || !S_ISDIR(st.st_mode)) {
      return LinkFailure{proto::kind::kConfig,
                         fmt::format("its folder {} (\"cwd\" in {}) cannot be used: {}", spec.cwd, file_name_of(def),
                                     found ? "it is not a folder" : std::strerror(errno))};
    }
  }
  for (const char* name : kPassedVariables) {
    if (auto it = env.find(name); it != env.end()) spec.env.push_back(std::string(name) + "=" + it->second);
  }
  for (auto& [k, v] : def.env) {
    auto x = expanded(v);
    if (!x) return expanded.failure();
    spec.env.push_back(k + "=" + *x);
  }
  return std::shared_ptr<Link>(std::make_shared<StdioLink>(io, def, std::move(spec), std::move(context)));
}

// Overrides from a spec like "connect=500,headers=1000,idle=2000,total=5000,stream=200" (milliseconds; any
// subset): OPPX_HTTP_TIMEOUTS, for tests and slow networks; an unusable spec is an error naming the part.
boost::system::result<void, std::string> apply_timeout_spec(HttpTimeouts& t, std::string_view spec) {
  while (!spec.empty()) {
    auto comma = spec.find(',');
    std::string_view part = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    auto eq = part.find('=');
    std::string_view name = part.substr(0, eq);
    std::chrono::milliseconds* slot = name == "connect"   ? &t.connect
                                      : name == "headers" ? &t.headers
                                      : name == "idle"    ? &t.idle
                                      : name == "total"   ? &t.total
                                      : name == "stream"  ? &t.stream
                                                          : nullptr;
    std::string_view num = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    if (!slot || num.empty() || num.size() > 9 ||
        !std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return "\"" + escape_controls(part) + "\" is not connect=MS, headers=MS, idle=MS, total=MS or stream=MS";
    *slot = std::chrono::milliseconds(std::stol(std::string(num)));
  }
  return {};
}

LinkResult make_http_link(asio::io_context& io, const ConnectorDef& def, const EnvMap& env, LinkContext context) {
  Expander expanded(def, env);
  HttpOptions o;
  auto url = expanded(def.url);
  if (!url) return expanded.failure();
  o.url = *url;
  for (auto& [k, v] : def.headers) {
    auto x = expanded(v);
    if (!x) return expanded.failure();
    o.headers.emplace_back(k, *x);
  }
  // Shorter limits for tests and slow networks, from the environment of the asking client.
  if (auto it = env.find("OPPX_HTTP_TIMEOUTS"); it != env.end()) {
    if (auto r = apply_timeout_spec(o.timeouts, it->second); !r)
      return LinkFailure{proto::kind::kConfig, "OPPX_HTTP_TIMEOUTS is unusable: " + r.error()};
  }
  o.on_late_stream = std::move(context.on_late_stream);
  if (context.auth_for && logs_in_with_oauth(def)) o.auth = context.auth_for(o.url);
  auto t = make_http_transport(io, std::move(o));
  if (!t) {
    return LinkFailure{proto::kind::kConfig, fmt::format("{}; correct \"url\" or \"headers\" of {} in {}", t.error(),
                                                         def.name, file_name_of(def))};
  }
  return std::shared_ptr<Link>(std::make_shared<HttpLink>(std::move(*t)));
}

}  // namespace

LinkResult make_link(asio::io_context& io, const ConnectorDef& def, const EnvMap& env, LinkContext context) {
  if (def.kind == ConnectorDef::Kind::kHttp) return make_http_link(io, def, env, std::move(context));
  return make_stdio_link(io, def, env, std::move(context));
}

// The value of each ${VAR} it reads (but those every program gets, such as HOME and PATH), and
// the values a definition is shown with masked: headers, env entries whose name says secret,
// arguments after a secret flag; each also without its "Bearer " or "KEY=" part, as a server
// would repeat it.
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
  // A value that does not expand is never given to a server (its connector does not start), and
  // kept as written it would hide the name of the variable it reads ("it needs ***"): a name is
  // never secret, its value is.
  auto expanded = [&env](const std::string& v) {
    auto r = expand(v, env);
    return r ? *r : std::string();
  };
  for (auto& var : referenced_variables(def)) {
    bool everyones = std::any_of(std::begin(kPassedVariables), std::end(kPassedVariables),
                                 [&var](const char* p) { return var == p; });
    if (auto it = env.find(var); it != env.end() && !everyones) keep(it->second);
  }
  for (auto& h : def.headers) keep(expanded(h.second));
  keep(expanded(def.oauth.client_secret));
  for (auto& [k, v] : def.env) {
    if (secret_word(k)) keep(expanded(v));
  }
  auto shown = mask_args(def.args);
  for (std::size_t i = 0; i < def.args.size(); ++i) {
    if (shown[i] != def.args[i]) keep(expanded(def.args[i]));
  }
  return out;
}

}  // namespace oppx::daemon
