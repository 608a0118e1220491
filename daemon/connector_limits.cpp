// The words and limits of a connector's messages (daemon/connector.h): its state's name, a
// duration as messages say it, the start limit and the probe's bound from a client's environment.
#include "daemon/connector.h"

#include <fmt/format.h>

#include <cstdlib>

namespace oppx::daemon {

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
    case ConnectorState::kLogin:
      return "login";
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

std::string duration_text(std::chrono::milliseconds limit) {
  auto ms = limit.count();
  return ms % 1000 ? fmt::format("{} ms", ms) : fmt::format("{} s", ms / 1000);
}

proto::RpcError start_outlasted_call(const std::string& connector, std::chrono::milliseconds limit) {
  auto e = RpcError::make(ErrorCode::kInternal, proto::kind::kTimeout,
                          fmt::format("{} was still starting when the call's time limit of {} passed, so the call was "
                                      "not sent; try again in a moment, or with a longer time limit",
                                      connector, duration_text(limit)));
  e.data["connector"] = connector;
  return e;
}

std::chrono::milliseconds start_timeout(const EnvMap& env) {
  return env_milliseconds(env, "OPPX_MCP_START_TIMEOUT_MS", kStartTimeout, 100, 3'600'000);
}

std::chrono::milliseconds discover_bound(const EnvMap& env) {
  return env_milliseconds(env, "OPPX_MCP_DISCOVER_TIMEOUT_MS", std::chrono::milliseconds(3'000), 10, 60'000);
}

std::chrono::milliseconds env_milliseconds(const EnvMap& env, std::string_view name, std::chrono::milliseconds fallback,
                                           long long min_ms, long long max_ms) {
  auto it = env.find(name);
  if (it == env.end()) return fallback;
  char* end = nullptr;
  long long ms = std::strtoll(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0' || ms < min_ms || ms > max_ms) return fallback;
  return std::chrono::milliseconds(ms);
}

}  // namespace oppx::daemon
