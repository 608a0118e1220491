// Connectors: a definition's identity is its text as written (ConnectorDef::canonical), so an
// edit to one entry restarts only that connector. A broken file keeps the last good set running.
#include "daemon/connectors.h"

#include "common/log.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <sys/stat.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

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

}  // namespace

Connectors::Connectors(boost::asio::io_context& io, std::string state_dir)
    : io_(io), state_dir_(std::move(state_dir)), cache_(state_dir_ + "/mcp-tools-cache.json") {}

Connectors::~Connectors() { stop_all(); }

void Connectors::stop_all() {
  for (auto& [name, c] : connectors_) removed(*c, false);  // shutting down: clients see end of stream
  connectors_.clear();
}

void Connectors::refresh(const EnvMap& env) {
  reload(env);
  // A changed variable restarts only the connectors that read it (those just started have it).
  for (auto& [name, c] : connectors_) {
    if (std::string var = changed_variable(*c, env); !var.empty()) {
      log::info("connector {}: restarting, ${{{}}} has another value in the environment of the client that asked", name,
                var);
      start_one(*c, env, start_timeout(env));
    }
  }
}

void Connectors::reload(const EnvMap& env) {
  std::string path = user_mcp_config_path(env);
  struct stat st {};
  std::string stamp = ::stat(path.c_str(), &st) == 0
                          ? fmt::format("{}:{}:{}.{}", st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec)
                          : "missing";
  if (path == config_path_ && stamp == config_stamp_) return;
  config_path_ = path;
  config_stamp_ = stamp;
  auto cfg = load_mcp_config(path);
  if (!cfg) {
    config_error_ = cfg.error() + " (the connectors read before stay as they were)";
    log::warn("{}", config_error_);
    return;
  }
  config_error_.clear();
  warnings_ = cfg->warnings;
  for (auto& w : warnings_) log::warn("{}", w);

  std::map<std::string, std::shared_ptr<Connector>> next;
  for (auto& def : cfg->connectors) {
    auto it = connectors_.find(def.name);
    if (it != connectors_.end() && it->second->def().canonical == def.canonical) {
      next.emplace(def.name, it->second);
      continue;
    }
    std::string name = def.name;
    auto c = Connector::create(io_, std::move(def), state_dir_ + "/mcp-" + name + ".log");
    adopt(c);
    next.emplace(name, c);
  }
  for (auto& [name, c] : connectors_) {
    auto it = next.find(name);
    if (it == next.end() || it->second != c) removed(*c, it == next.end());
  }
  connectors_ = std::move(next);
  for (auto& [name, c] : connectors_) {
    if (c->state() == ConnectorState::kStopped) start_one(*c, env, start_timeout(env));
  }
  settled_check();
}

// One connector named: the user is at hand, maybe to log in in the browser (mcp-remote), so it
// gets LOGIN_TIMEOUT (180 s); all of them get the usual start timeout.
void Connectors::reconnect(const std::string& name, const EnvMap& env) {
  for (auto& [n, c] : connectors_) {
    if (name.empty() || n == name) start_one(*c, env, name.empty() ? start_timeout(env) : kLoginTimeout);
  }
}

void Connectors::adopt(const std::shared_ptr<Connector>& c) {
  const Connector* raw = c.get();
  c->on_change([this, raw] {
    changed(*raw);
    settled_check();
  });
}

void Connectors::start_one(Connector& c, const EnvMap& env, std::chrono::milliseconds timeout) {
  auto& used = seen_[&c].env;
  used.clear();
  for (auto& var : referenced_variables(c.def())) {
    auto it = env.find(var);
    used[var] = it == env.end() ? "unset" : "set " + definition_hash(it->second);
  }
  c.start(env, timeout);
}

// The first variable the definition reads that `env` sets to another value than at start.
std::string Connectors::changed_variable(const Connector& c, const EnvMap& env) const {
  auto seen = seen_.find(&c);
  if (seen == seen_.end()) return {};
  for (auto& [var, was] : seen->second.env) {
    auto it = env.find(var);
    if (it != env.end() && was != "set " + definition_hash(it->second)) return var;
  }
  return {};
}

// Subscribers hear of a new state or reason, and of a new tool list (which is also cached).
void Connectors::changed(const Connector& c) {
  Seen& seen = seen_[&c];
  bool tools_changed = false;
  if (c.state() == ConnectorState::kRunning) {
    std::string tools = definition_hash(json::serialize(c.tools()));
    if (tools != seen.tools) {
      tools_changed = true;
      seen.tools = tools;
      cache_.store(c.def().name, c.def().canonical, c.tools());
    }
  }
  std::string state = fmt::format("{}\n{}", state_name(c.state()), c.reason());
  if (!tools_changed && state == seen.state) return;
  seen.state = std::move(state);
  if (subscriptions_.size() == 0) return;
  json::object entry = entry_json(c);
  entry["tools_changed"] = tools_changed;
  subscriptions_.publish("mcp/changed", entry);
}

// `gone`: no connector of that name is left (one replaced by an edit speaks on as the new one).
void Connectors::removed(Connector& c, bool gone) {
  c.on_change(nullptr);
  c.stop();
  seen_.erase(&c);
  if (gone && subscriptions_.size() > 0) {
    subscriptions_.publish("mcp/changed",
                           json::object{{"name", c.def().name}, {"source", "user"}, {"state", "removed"}});
  }
}

const json::array& Connectors::tools_of(const Connector& c, bool* cached) const {
  *cached = false;
  if (c.state() == ConnectorState::kStarting && c.tools().empty()) {
    if (const json::array* list = cache_.find(c.def().canonical)) {
      *cached = true;
      return *list;
    }
  }
  return c.tools();
}

void Connectors::when_settled(const std::string& name, std::function<void()> fn) {
  waiters_.emplace_back(name, std::move(fn));
  settled_check();
}

void Connectors::settled_check() {
  auto starting = [this](const std::string& name) {
    for (auto& [n, c] : connectors_) {
      if ((name.empty() || n == name) && c->state() == ConnectorState::kStarting) return true;
    }
    return false;
  };
  std::vector<std::function<void()>> ready;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (!starting(it->first)) {
      ready.push_back(std::move(it->second));
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& fn : ready) fn();
}

std::shared_ptr<Connector> Connectors::find(const std::string& name) const {
  auto it = connectors_.find(name);
  return it == connectors_.end() ? nullptr : it->second;
}

json::object Connectors::entry_json(const Connector& c) const {
  const ConnectorDef& d = c.def();
  json::object o{{"name", d.name},
                 {"source", "user"},
                 {"type", d.kind == ConnectorDef::Kind::kHttp ? "http" : "stdio"},
                 {"state", state_name(c.state())},
                 {"log", c.log_path()},
                 {"requests_waiting", c.calls_waiting()}};
  bool cached = false;
  o["tools"] = tools_of(c, &cached).size();
  o["cached"] = cached;
  if (d.kind == ConnectorDef::Kind::kHttp) {
    o["url"] = d.url;
    json::object h;
    for (auto& [k, v] : d.headers) h[k] = mask_value(v);
    o["headers"] = std::move(h);
  } else {
    o["command"] = d.command;
    json::array args;
    for (auto& a : d.args) args.emplace_back(a);
    o["args"] = std::move(args);
    json::object e;
    for (auto& [k, v] : d.env) e[k] = mask_value(v);
    o["env"] = std::move(e);
  }
  if (!c.reason().empty()) {
    o["reason"] = c.reason();
    o["reason_kind"] = c.down_kind();
    json::array steps;
    for (auto& s : c.steps()) steps.emplace_back(s);
    o["steps"] = std::move(steps);
  }
  return o;
}

json::object Connectors::list_json() const {
  json::array list;
  for (auto& [name, c] : connectors_) list.push_back(entry_json(*c));
  json::object out{{"connectors", std::move(list)}, {"config", config_path_}};
  if (!config_error_.empty()) out["error"] = config_error_;
  json::array w;
  for (auto& s : warnings_) w.emplace_back(s);
  out["warnings"] = std::move(w);
  return out;
}

}  // namespace oppx::daemon
