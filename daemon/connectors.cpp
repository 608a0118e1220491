// Connectors: a definition's identity is its text as written (ConnectorDef::canonical), so an
// edit to one entry restarts only that connector. A broken file keeps the last good set running.
// A repository's connector is built from the bytes read once; its consent is checked against the
// hash of that same in-memory definition, and that definition is what starts: nothing re-reads
// the file between the check and the spawn. Every change of a connector's state or tools is
// told to the subscribers (mcp/changed), and a running tool list is cached for its definition.
#include "daemon/connectors.h"

#include "common/http_client.h"
#include "common/log.h"
#include "common/text.h"
#include "common/user_config.h"
#include "proto/mcp_results.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <sys/stat.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

// config.json "lazy_connectors": true makes every connector of the user's lazy (read when the
// connectors file is read).
bool lazy_connectors() {
  auto config = read_user_config();
  const json::value* v = config ? config->if_contains("lazy_connectors") : nullptr;
  return v && v->is_bool() && v->as_bool();
}

// lstat and stat both: a swapped symlink with a same-sized target is still a change. Compared
// as numbers, since this runs at every request.
FileStamp stamp_of(const std::string& path) {
  struct stat l {
  }, st{};
  FileStamp f;
  if (::lstat(path.c_str(), &l) != 0) return f;
  f.at = {1, static_cast<long long>(l.st_ino), static_cast<long long>(l.st_size), l.st_mtim.tv_sec, l.st_mtim.tv_nsec};
  if (S_ISLNK(l.st_mode) && ::stat(path.c_str(), &st) == 0)
    f.target = {1, static_cast<long long>(st.st_ino), static_cast<long long>(st.st_size), st.st_mtim.tv_sec,
                st.st_mtim.tv_nsec};
  return f;
}

std::string waiting_reason(const std::string& name, const std::string& root, Consent c,
                           const std::string& file_change = {}) {
  if (c == Consent::kChanged && !file_change.empty()) {
    return fmt::format(
        "{0}: a file of the repository that it runs, so it waits for your consent again. Look at that file, "
        "review the connector with `oppx mcp get {1}`, then run `oppx mcp approve {1}` in {2}",
        file_change, name, root);
  }
  if (c == Consent::kDenied) {
    return fmt::format("you denied this definition; to allow it, run `oppx mcp approve {}` in {}", name, root);
  }
  if (c == Consent::kChanged) {
    return fmt::format(
        "its definition changed since you approved it, so it waits for your consent again: review it with `oppx "
        "mcp get {0} --show-values`, then run `oppx mcp approve {0}` in {1}",
        name, root);
  }
  return fmt::format(
      "a repository connector waits for your consent: review it with `oppx mcp get {0} --show-values`, then "
      "run `oppx mcp approve {0}` in {1} (any change to its definition asks again)",
      name, root);
}

}  // namespace

Connectors::Connectors(boost::asio::io_context& io, std::string state_dir)
    : io_(io),
      worker_(io),
      state_dir_(std::move(state_dir)),
      consent_(state_dir_ + "/mcp-approved.json", &worker_),
      cache_(state_dir_ + "/mcp-tools-cache.json", [this](const std::string& path, std::string text) {
        worker_.write_file(path, std::move(text), 0600, "the tool-list cache");
      }) {
  // Off the loop, before the first HTTPS connector needs them.
  worker_.run(
      [] {
        http::load_tls_roots();
        return true;
      },
      [](bool) {});
  oauth_ = std::make_unique<OAuth>(io_, state_dir_, &worker_);
  oauth_->on_logged_in([this](const std::string& name) { logged_in(name); });
}

Connectors::~Connectors() { stop_all(); }

// make_link, with the OAuth of the connector's URL for one that logs in.
LinkFactory Connectors::link_factory() {
  return [this](boost::asio::io_context& io, const ConnectorDef& def, const EnvMap& env, LinkContext context) {
    context.auth_for = [this, def, env](const std::string& url) { return oauth_->auth_for(def, url, env); };
    return make_link(io, def, env, std::move(context));
  };
}

std::string Connectors::url_of(const Connector& c) const {
  auto url = expand(c.def().url, c.last_env());
  return url ? *url : std::string();
}

void Connectors::logged_in(const std::string& name) {
  auto again = [this](Connector& c) {
    if (c.state() == ConnectorState::kRunning || c.state() == ConnectorState::kWaiting ||
        c.state() == ConnectorState::kStarting)
      return;
    const EnvMap& env = c.last_env();
    seen_[&c].idle = false;
    envs_.start(c, env, start_timeout(env));
  };
  if (auto it = user_.connectors.find(name); it != user_.connectors.end()) again(*it->second);
  for (auto& [root, repo] : repos_) {
    auto it = repo.connectors.find(name);
    if (it != repo.connectors.end() && !user_.connectors.contains(name)) again(*it->second);
  }
}

// Shutting down: subscribers see the end of their stream, not a removal.
void Connectors::stop_all() {
  if (oauth_) oauth_->stop();
  for (auto& [name, c] : user_.connectors) removed(*c, false);
  user_.connectors.clear();
  for (auto& [root, repo] : repos_) {
    for (auto& [name, c] : repo.connectors) removed(*c, false);
    repo.connectors.clear();
  }
}

std::size_t Connectors::size() const {
  std::size_t n = user_.connectors.size();
  for (auto& [root, repo] : repos_) n += repo.connectors.size();
  return n;
}

std::size_t Connectors::calls_waiting() const {
  std::size_t n = 0;
  for (auto& [name, c] : user_.connectors) n += c ? c->calls_waiting() : 0;
  for (auto& [root, repo] : repos_)
    for (auto& [name, c] : repo.connectors) n += c ? c->calls_waiting() : 0;
  return n;
}

std::string Connectors::log_path(const ConnectorDef& def, const std::string& root) const {
  if (def.kind == ConnectorDef::Kind::kHttp) return state_dir_ + "/oppxd.log";  // as paths::daemon_log()
  if (root.empty()) return state_dir_ + "/mcp-" + def.name + ".log";
  return state_dir_ + "/mcp-" + def.name + "-" + sha256_hex(root).substr(0, 8) + ".log";
}

// Looked at once per turn of the event loop: requests that arrived together (8 calls in one
// read) share one stat, and any request handled in a later turn sees an edit made before it.
bool Connectors::reread(Source& src, const std::string& path, bool is_user) {
  if (path == src.path && src.checked_turn == turn_) return false;
  if (!turn_posted_) {
    turn_posted_ = true;
    boost::asio::post(io_, [this] {
      ++turn_;
      turn_posted_ = false;
    });
  }
  src.checked_turn = turn_;
  FileStamp stamp = stamp_of(path);
  if (path == src.path && stamp == src.stamp) return false;
  if (is_user && !src.path.empty() && path != src.path) {
    // One user file at a time: a client with another OPPX_MCP_CONFIG switches every client to it.
    log::info("connectors file is now {} (a client asked with it), was {}: the connectors of {} that it lacks stop",
              path, src.path, src.path);
  }
  src.path = path;
  src.stamp = stamp;
  // Read once: these bytes are what gets hashed for consent and what is started.
  auto cfg = load_mcp_config(path);
  if (!cfg) {
    src.error = cfg.error() + " (the connectors read before stay as they were)";
    log::warn("{}", src.error);
    return false;
  }
  src.error.clear();
  src.warnings = is_user ? cfg->warnings : std::vector<std::string>{};
  src.warnings.insert(src.warnings.end(), cfg->notes.begin(), cfg->notes.end());
  for (auto& w : src.warnings) log::warn("{}", w);
  for (auto& d : cfg->connectors) {
    d.project = !is_user;
    if (!is_user) keep_cwd_in_repository(d, dirname_of(path));  // its folder stays in the repository
    if (!d.unsupported.empty())
      log::warn("connector {}: set aside: {}", escape_controls(d.name), escape_controls(d.unsupported));
  }
  src.defs = std::move(cfg->connectors);
  return true;
}

void Connectors::replace_connectors(Source& src, const std::string& root) {
  std::map<std::string, std::shared_ptr<Connector>> next;
  const bool all_lazy = root.empty() && lazy_connectors();
  for (const ConnectorDef& def : src.defs) {
    if (!root.empty() && user_.connectors.contains(def.name)) continue;  // the user's wins: hidden
    auto it = src.connectors.find(def.name);
    if (it != src.connectors.end() && it->second->def().canonical == def.canonical) {
      next.emplace(def.name, it->second);
      continue;
    }
    auto c = Connector::create(io_, def, log_path(def, root), link_factory());
    c->remember_era(cache_.era(def.canonical));
    adopt(c, root);
    // A user's lazy connector waits for its first call while its definition's list is cached (an
    // edited definition has none, and starts as any other).
    if (root.empty() && (def.lazy || all_lazy) && !def.never_starts() && cache_.find(def.canonical))
      seen_[c.get()].idle = true;
    if (!root.empty()) c->hold(waiting_reason(def.name, root, Consent::kNone));
    next.emplace(def.name, c);
  }
  for (auto& [name, c] : src.connectors) {
    auto it = next.find(name);
    if (it == next.end() || it->second != c) removed(*c, it == next.end());
  }
  src.connectors = std::move(next);
}

void Connectors::apply_consent(const std::string& root, Source& repo, const EnvMap& env) {
  for (auto& [name, c] : repo.connectors) {
    if (c->def().never_starts()) continue;  // nothing to consent to: it is never run
    std::string why = held_because(c->def(), root, false);
    if (why.empty()) {
      if (c->state() == ConnectorState::kWaiting) envs_.start(*c, env, start_timeout(env));
      continue;
    }
    // Not approved (never, denied, changed, a file it runs changed, or the store was lost): it must not run.
    if (c->state() != ConnectorState::kWaiting || c->reason() != why) c->hold(why);
  }
}

FileHashes Connectors::run_files(const ConnectorDef& def, const std::string& root, bool fresh) const {
  FileHashes out;
  for (auto& relative : files_it_runs(def, root)) {
    std::string path = root + "/" + relative;
    FileStamp stamp = stamp_of(path);
    auto& [seen, sha] = file_hashes_[path];
    if (fresh || sha.empty() || !(stamp == seen)) {
      auto h = file_sha256(path);
      sha = h ? *h : "unreadable: " + h.error();
      seen = stamp;
    }
    out[relative] = sha;
  }
  return out;
}

Connectors::Verdict Connectors::consent_of(const ConnectorDef& def, const std::string& root, bool fresh) const {
  Verdict v{consent_.lookup(root, def.name, sha256_hex(def.canonical)), ""};
  if (v.decision != Consent::kApproved) return v;
  v.file_change =
      file_change(consent_.approved_files(root, def.name), run_files(def, root, fresh), "since you approved it");
  if (!v.file_change.empty()) v.decision = Consent::kChanged;
  return v;
}

std::string Connectors::held_because(const ConnectorDef& def, const std::string& root, bool fresh) const {
  if (fresh) {
    // A link in the repository retargeted since the file was read: its folder is checked again.
    ConnectorDef now = def;
    keep_cwd_in_repository(now, root);
    if (!now.unsupported.empty()) return now.unsupported + ". " + now.fix;
  }
  Verdict v = consent_of(def, root, fresh);
  return v.decision == Consent::kApproved ? "" : waiting_reason(def.name, root, v.decision, v.file_change);
}

void Connectors::refresh(const EnvMap& env, const std::string& root, Restart restart) {
  if (reread(user_, user_mcp_config_path(env), true)) {
    replace_connectors(user_, "");
    ++user_generation_;
  }
  for (auto& [name, c] : user_.connectors) {
    if (c->state() == ConnectorState::kStopped && !is_idle(*c)) envs_.start(*c, env, start_timeout(env));
  }
  restart_changed(user_, env, restart);
  if (!root.empty()) {
    Source& repo = repos_[root];
    // Also when the user's set changed since: a name the user added (or removed) hides (or shows) one.
    if (reread(repo, root + "/.mcp.json", false) || repo.user_generation != user_generation_) {
      replace_connectors(repo, root);
      repo.user_generation = user_generation_;
    }
    apply_consent(root, repo, env);
    restart_changed(repo, env, restart);
  }
  settled_check();
}

void Connectors::restart_changed(Source& src, const EnvMap& env, Restart restart) {
  for (auto& [name, c] : src.connectors) envs_.restart_if_changed(*c, env, restart);
}

void Connectors::idle(Connector& c) {
  if (envs_.idle(c)) settled_check();
}

void Connectors::decide(const std::string& root, const std::string& name, const std::string& sha256, bool approve,
                        const EnvMap& env, const std::optional<FileHashes>& shown_files, Decided done) {
  auto repo = repos_.find(root);
  const ConnectorDef* def = nullptr;
  if (repo != repos_.end()) {
    for (auto& d : repo->second.defs) {
      if (d.name == name) def = &d;
    }
  }
  if (!def) {
    if (user_.connectors.contains(name)) {
      return done(ConsentError{"not_a_project_connector",
                               fmt::format("{} is your own connector (from {}); only a repository's connectors need "
                                           "approval",
                                           name, user_.path)});
    }
    return done(ConsentError{"unknown_connector",
                             fmt::format("{} has no connector named {}; `oppx mcp list` in that folder shows them",
                                         root + "/.mcp.json", name)});
  }
  if (approve && user_.connectors.contains(name)) {
    return done(
        ConsentError{"hidden", fmt::format("the repository's {} is hidden by your own connector of the same name "
                                           "(in {}), which is the one used; remove or rename yours first",
                                           name, user_.path)});
  }
  std::string current = sha256_hex(def->canonical);
  if (!sha256.empty() && sha256 != current) {
    return done(
        ConsentError{"changed", fmt::format("the definition of {} in {}/.mcp.json changed since it was shown "
                                            "(sha256 {} now, {} shown); look at it again with `oppx mcp get {}` "
                                            "and approve what you see",
                                            name, root, current.substr(0, 12), sha256.substr(0, 12), name)});
  }
  FileHashes files = approve ? run_files(*def, root, true) : FileHashes{};
  if (std::string change = shown_files ? file_change(*shown_files, files, "since it was shown") : ""; !change.empty()) {
    return done(
        ConsentError{"changed", fmt::format("{} ({} runs it); look at it again with `oppx mcp get {}` and approve "
                                            "what you see",
                                            change, name, name)});
  }
  // Applied once written: a decision the disk refused is not acted on (the store reads the file
  // again). A repository's set may have been read again meanwhile: it is looked up anew.
  auto written = [this, root, name, approve, current, env,
                  done = std::move(done)](boost::system::result<void, std::string> r) {
    if (!r) return done(ConsentError{"io", r.error()});
    log::info("connector {} of {}: {} (sha256 {})", name, root, approve ? "approved" : "denied", current.substr(0, 12));
    if (auto repo = repos_.find(root); repo != repos_.end()) apply_consent(root, repo->second, env);
    settled_check();
    done({});
  };
  if (approve) return consent_.approve(root, name, current, files, std::move(written));
  consent_.deny(root, name, current, std::move(written));
}

// One connector named: the user is at hand, maybe to log in in the browser (mcp-remote), so it
// gets LOGIN_TIMEOUT (180 s); all of them get the usual start timeout.
void Connectors::reconnect(const std::string& name, const EnvMap& env, const std::string& root) {
  auto timeout = name.empty() ? start_timeout(env) : kLoginTimeout;
  for (auto& [n, c] : user_.connectors) {
    if (!name.empty() && n != name) continue;
    seen_[c.get()].idle = false;
    envs_.start(*c, env, timeout);
  }
  auto repo = repos_.find(root);
  if (repo == repos_.end()) return;
  for (auto& [n, c] : repo->second.connectors) {
    if ((name.empty() || n == name) && !user_.connectors.contains(n) &&
        consent_of(c->def(), root, false).decision == Consent::kApproved) {
      envs_.start(*c, env, timeout);
    }
  }
}

void Connectors::adopt(const std::shared_ptr<Connector>& c, const std::string& root) {
  Connector* raw = c.get();
  seen_[raw].root = root;
  c->on_change([this, raw] {
    changed(*raw);
    settled_check();
  });
  c->on_idle([this, raw] { idle(*raw); });
  c->on_offers_changed([this, raw] {
    ++offers_epochs_[raw];
    if (offers_.erase(raw) == 0 || subscriptions_.size() == 0) return;
    proto::ConnectorEntry e = entry(raw->def(), raw, seen_[raw].root, source_path(seen_[raw].root));
    e.offers_changed = true;
    subscriptions_.publish(proto::kMcpChanged, json::value_from(e).as_object());
  });
  // However it comes to start (a restart after a stop, for a call), a repository's connector
  // starts only while its definition and the files it runs are as approved.
  if (!root.empty()) c->check_before_start([this, raw, root] { return held_because(raw->def(), root, true); });
}

// Subscribers hear of a new state or reason, and of a new tool list (which is also cached).
void Connectors::changed(const Connector& c) {
  Seen& seen = seen_[&c];
  bool tools_changed = false;
  if (c.state() == ConnectorState::kRunning) {
    std::string tools = definition_hash(json::serialize(c.tools()));
    if (tools != seen.tools || cache_.era(c.def().canonical) != c.version()) {
      tools_changed = tools != seen.tools;
      seen.tools = tools;
      cache_.store(c.def().name, c.def().canonical, c.tools(), c.version());
    }
  }
  std::string state = fmt::format("{}\n{}", state_name(c.state()), c.reason());
  if (!tools_changed && state == seen.state) return;
  seen.state = std::move(state);
  if (subscriptions_.size() == 0) return;
  proto::ConnectorEntry e = entry(c.def(), &c, seen.root, source_path(seen.root));
  e.tools_changed = tools_changed;
  subscriptions_.publish(proto::kMcpChanged, json::value_from(e).as_object());
}

// `gone`: no connector of that name is left (one replaced by an edit speaks on as the new one).
void Connectors::removed(Connector& c, bool gone) {
  c.on_change(nullptr);
  c.on_idle(nullptr);
  c.on_offers_changed(nullptr);
  offers_.erase(&c);
  offers_epochs_.erase(&c);
  c.check_before_start(nullptr);
  c.stop();
  std::string root = seen_[&c].root;
  seen_.erase(&c);
  envs_.forget(c);
  if (gone && subscriptions_.size() > 0) {
    subscriptions_.publish(proto::kMcpChanged, json::value_from(proto::ConnectorRemoved{c.def().name, root}));
  }
}

std::string Connectors::source_path(const std::string& root) const {
  if (root.empty()) return user_.path;
  auto it = repos_.find(root);
  return it == repos_.end() ? root + "/.mcp.json" : it->second.path;
}

const json::array* Connectors::offers(const Connector& c, const std::string& method) const {
  auto it = offers_.find(&c);
  if (it == offers_.end()) return nullptr;
  auto list = it->second.find(method);
  return list == it->second.end() ? nullptr : &list->second;
}

std::uint64_t Connectors::offers_epoch(const Connector& c) const {
  auto it = offers_epochs_.find(&c);
  return it == offers_epochs_.end() ? 0 : it->second;
}

void Connectors::keep_offers(const Connector& c, const std::string& method, json::array list, std::uint64_t epoch) {
  if (!seen_.count(&c) || c.state() != ConnectorState::kRunning || offers_epoch(c) != epoch) return;
  offers_[&c][method] = std::move(list);
}

bool Connectors::is_idle(const Connector& c) const {
  auto it = seen_.find(&c);
  return it != seen_.end() && it->second.idle;
}

void Connectors::wake(Connector& c, const EnvMap& env) {
  auto it = seen_.find(&c);
  if (it == seen_.end() || !it->second.idle) return;
  it->second.idle = false;
  log::info("connector {}: started for its first call (lazy)", c.def().name);
  envs_.start(c, env, start_timeout(env));
}

const json::array& Connectors::tools_of(const Connector& c, bool* cached) const {
  *cached = false;
  if ((c.state() == ConnectorState::kStarting && c.tools().empty()) || is_idle(c)) {
    if (const json::array* list = cache_.find(c.def().canonical)) {
      *cached = true;
      return *list;
    }
  }
  return c.tools();
}

// At once when none is starting (the usual case of a call to a warm connector).
void Connectors::when_settled(const std::string& root, const std::string& name, std::function<void()> fn) {
  if (!starting(root, name)) return fn();
  waiters_.push_back(Waiter{root, name, std::move(fn)});
}

bool Connectors::starting(const std::string& root, const std::string& name) const {
  auto starting_in = [this, &name](const Source& src) {
    if (!name.empty()) {
      auto it = src.connectors.find(name);
      return it != src.connectors.end() &&
             (it->second->state() == ConnectorState::kStarting || envs_.restart_waits(*it->second));
    }
    for (auto& [n, c] : src.connectors) {
      if (c->state() == ConnectorState::kStarting || envs_.restart_waits(*c)) return true;
    }
    return false;
  };
  if (starting_in(user_)) return true;
  auto repo = root.empty() ? repos_.end() : repos_.find(root);
  return repo != repos_.end() && starting_in(repo->second);
}

void Connectors::settled_check() {
  std::vector<std::function<void()>> ready;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (!starting(it->root, it->name)) {
      ready.push_back(std::move(it->fn));
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& fn : ready) fn();
}

std::shared_ptr<Connector> Connectors::find(const std::string& name, const std::string& root) const {
  if (auto it = user_.connectors.find(name); it != user_.connectors.end()) return it->second;
  auto repo = repos_.find(root);
  if (repo == repos_.end()) return nullptr;
  auto it = repo->second.connectors.find(name);
  return it == repo->second.connectors.end() ? nullptr : it->second;
}

proto::ConnectorEntry Connectors::entry(const ConnectorDef& d, const Connector* c, const std::string& root,
                                        const std::string& file, bool as_written) const {
  auto value = [as_written](const std::string& v) { return as_written ? v : mask_value(v); };
  proto::ConnectorEntry e;
  e.name = d.name;
  e.source = root.empty() ? "user" : "project";
  e.file = file;
  e.type = d.kind == ConnectorDef::Kind::kHttp ? "http" : "stdio";
  // Without an instance it is a repository's one that the user's of the same name hides.
  e.state = c ? (is_idle(*c) ? "idle" : state_name(c->state())) : "hidden";
  if (d.kind != ConnectorDef::Kind::kHttp) e.log = log_path(d, root);  // its program's stderr; HTTP has none
  e.requests_waiting = c ? static_cast<std::int64_t>(c->calls_waiting()) : 0;
  e.protocol = c ? c->version() : std::string();
  e.always_load = d.always_load;
  e.tool_count = c ? static_cast<std::int64_t>(tools_of(*c, &e.cached).size()) : 0;
  if (d.kind == ConnectorDef::Kind::kHttp) {
    if (c && logs_in_with_oauth(d)) {
      if (std::string url = url_of(*c); !url.empty()) e.login = oauth_->state_of(url);
    }
    e.url = as_written ? d.url : mask_url(d.url);
    for (auto& [k, v] : d.headers) e.headers[k] = value(v);
  } else {
    e.command = d.command;
    e.cwd = d.cwd;
    e.args = as_written ? d.args : mask_args(d.args);
    for (auto& [k, v] : d.env) e.env[k] = value(v);
  }
  e.as_written = as_written;
  for (auto& v : referenced_variables(d)) e.reads.push_back(v);
  if (!root.empty()) {
    Consent decision = consent_of(d, root, false).decision;
    e.root = root;
    e.sha256 = sha256_hex(d.canonical);
    for (auto& [path, file_sha] : run_files(d, root, false)) e.files.push_back({path, file_sha});
    e.consent = decision == Consent::kApproved  ? "approved"
                : decision == Consent::kDenied  ? "denied"
                : decision == Consent::kChanged ? "changed"
                                                : "none";
    if (decision != Consent::kApproved && !d.never_starts()) e.approve = "oppx mcp approve " + d.name;
    if (!c) {
      e.hidden_by = "user";
      e.reason = fmt::format("hidden: your own connector named {} (in {}) is used instead", d.name, user_.path);
    }
  }
  if (c && !c->reason().empty()) {
    e.reason = c->reason();
    e.reason_kind = c->down_kind();
    e.steps = c->steps();
  }
  return e;
}

proto::McpListResult Connectors::list(const std::string& root) const {
  proto::McpListResult out;
  for (auto& [name, c] : user_.connectors) out.connectors.push_back(entry(c->def(), c.get(), "", user_.path));
  out.config = user_.path;
  out.error = user_.error;
  out.warnings = user_.warnings;
  if (auto repo = repos_.find(root); !root.empty() && repo != repos_.end()) {
    const Source& r = repo->second;
    for (auto& d : r.defs) {
      auto it = r.connectors.find(d.name);
      out.connectors.push_back(entry(d, it == r.connectors.end() ? nullptr : it->second.get(), root, r.path));
    }
    out.project = proto::ProjectConnectors{root, r.path, r.error, r.warnings};
  }
  out.consent_error = consent_.problem();
  return out;
}

std::optional<proto::ConnectorEntry> Connectors::get(const std::string& name, const std::string& root,
                                                     bool as_written) const {
  const ConnectorDef* project = nullptr;
  const Source* repo = nullptr;
  if (auto it = repos_.find(root); !root.empty() && it != repos_.end()) {
    repo = &it->second;
    for (auto& d : repo->defs) {
      if (d.name == name) project = &d;
    }
  }
  std::optional<proto::ConnectorEntry> project_entry;
  if (project) {
    auto it = repo->connectors.find(name);
    project_entry =
        entry(*project, it == repo->connectors.end() ? nullptr : it->second.get(), root, repo->path, as_written);
  }
  if (auto it = user_.connectors.find(name); it != user_.connectors.end()) {
    proto::ConnectorEntry e = entry(it->second->def(), it->second.get(), "", user_.path, as_written);
    if (project_entry) e.hides = std::make_shared<const proto::ConnectorEntry>(std::move(*project_entry));
    return e;
  }
  return project_entry;
}

}  // namespace oppx::daemon
