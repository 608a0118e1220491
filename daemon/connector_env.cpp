// ConnectorEnv: a changed variable restarts only the connectors that read it (those just started
// have it), and only once no call is open on it: a call in flight (a write, maybe) is never cut
// off. The log names the variable, never its value. A read-only request restarts nothing that
// runs or starts, but does start one that failed (one that lacked the variable). A repository's
// connector waiting for consent is not running, so it is never started here.
#include "daemon/connector_env.h"

#include "common/log.h"
#include "daemon/tools_cache.h"

namespace oppx::daemon {

namespace {

// A value that could never be used (a line break, NUL) is like no value.
bool usable(const std::string& value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos;
}

}  // namespace

// A variable the definition reads that the asking client lacks (or has no usable value for)
// keeps the value it had at the connector's last start: a shell without your token does not
// take down a connector that reads it, not even by a reconnect.
void ConnectorEnv::start(Connector& c, const EnvMap& asked, std::chrono::milliseconds timeout) {
  Started& started = started_[&c];
  started.restart_env.reset();  // a restart that waited is this one
  started.env.clear();
  EnvMap env = asked;
  for (auto& var : referenced_variables(c.def())) {
    auto it = env.find(var);
    if (it == env.end() || !usable(it->second)) {
      if (auto last = c.last_env().find(var); last != c.last_env().end() && usable(last->second)) {
        it = env.insert_or_assign(var, last->second).first;
      }
    }
    started.env[var] = it == env.end() ? "unset" : "set " + definition_hash(it->second);
  }
  c.start(env, timeout);
}

void ConnectorEnv::restart_if_changed(Connector& c, const EnvMap& env, Restart restart) {
  ConnectorState state = c.state();
  if (state == ConnectorState::kWaiting || c.def().never_starts()) return;
  if (restart == Restart::kNever && (state == ConnectorState::kRunning || state == ConnectorState::kStarting)) return;
  std::string var = changed_variable(c, env);
  if (var.empty()) return;
  const std::string& name = c.def().name;
  if (std::size_t open = c.calls_open(); open > 0) {
    Started& started = started_[&c];
    if (!started.restart_env) {
      log::info(
          "connector {}: ${{{}}} has another value in the environment of a client that asked; it restarts "
          "once its {} call{} in flight {} ended",
          name, var, open, open == 1 ? "" : "s", open == 1 ? "has" : "have");
    }
    started.restart_env = env;  // the latest client that asked with another value
    started.restart_variable = var;
    return;
  }
  log::info("connector {}: restarting, ${{{}}} has another value in the environment of the client that asked", name,
            var);
  start(c, env, start_timeout(env));
}

bool ConnectorEnv::idle(Connector& c) {
  auto started = started_.find(&c);
  if (started == started_.end() || !started->second.restart_env) return false;
  EnvMap env = std::move(*started->second.restart_env);
  started->second.restart_env.reset();
  if (c.state() != ConnectorState::kWaiting) {  // held for consent meanwhile: it must not run
    log::info("connector {}: restarting, ${{{}}} has another value in the environment of the client that asked",
              c.def().name, started->second.restart_variable);
    start(c, env, start_timeout(env));
  }
  return true;
}

bool ConnectorEnv::restart_waits(const Connector& c) const {
  auto started = started_.find(&c);
  return started != started_.end() && started->second.restart_env.has_value();
}

void ConnectorEnv::forget(const Connector& c) { started_.erase(&c); }

std::string ConnectorEnv::changed_variable(const Connector& c, const EnvMap& env) const {
  auto started = started_.find(&c);
  if (started == started_.end()) return {};
  for (auto& [var, was] : started->second.env) {
    auto it = env.find(var);
    if (it == env.end() || !usable(it->second)) continue;  // like no value: it stops nothing
    if (was != "set " + definition_hash(it->second)) return var;
  }
  return {};
}

}  // namespace oppx::daemon
