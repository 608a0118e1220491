// Wire structs of the `hello` and `daemon/…` methods (docs/protocol.md, "Methods").
// Encoders are tag_invoke overloads for boost::json::value_from; decoders return the struct or
// the message naming the failing field.
#pragma once

#include "proto/decode.h"

#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace oppx {
extern const char kBuildId[];  // generated: version and a hash of the sources
}

namespace oppx::proto {

// Bumped whenever a method changes incompatibly; a client and a daemon must agree on it.
inline constexpr int kProtocolVersion = 1;

struct HelloParams {
  int protocol = 0;
  std::string client;  // free text: "oppx", "vscode-oppx 0.3", …
  std::string build;   // the client's build id, when it has one
  StringMap env;       // the client's environment (for ${VAR})
  std::string cwd;     // the client's working folder: its repository's .mcp.json applies (absolute)
};

struct HelloResult {
  int protocol = kProtocolVersion;
  std::string version;
  std::string build;
  std::int64_t pid = 0;
};

// The fields of StatusResult that `until` may name: the daemon looks again each time one of them
// may have changed (common/changes.h); the others (uptime_ms, rss_kib, …) change without a signal.
inline constexpr std::array<std::string_view, 6> kStatusWaitFields = {
    "clients", "buffered_bytes", "requests_waiting", "spare_state", "children", "worker_jobs"};

struct StatusParams {
  // Answer once every named field equals its value (an integer, or a string for spare_state), or
  // at timeout_ms with until_met false. Empty: answer now.
  std::map<std::string, boost::json::value, std::less<>> until;
  std::int64_t timeout_ms = 30'000;
};

struct StatusResult {
  std::int64_t pid = 0;
  std::string version;
  std::string build;
  std::int64_t uptime_ms = 0;
  std::int64_t clients = 0;
  std::int64_t connectors = 0;      // configured MCP connectors (none before the connectors land)
  std::int64_t rss_kib = 0;         // the daemon's resident memory
  std::int64_t buffered_bytes = 0;  // held in buffers for clients and servers (common/budget.h)
  std::int64_t buffer_budget = 0;   // the most they may hold together
  std::string socket;
  std::string log;
  // How connectors' processes are kept from outliving them: "pid_namespace", "process_group"
  // (with the reason namespaces are not used), or "" before the first connector started.
  std::string isolation;
  std::string isolation_reason;
  std::int64_t reaper_pid = 0;        // the group reaper of "process_group"; 0 when none runs
  std::int64_t requests_waiting = 0;  // sent to the connectors' servers and not answered yet
  std::string spare_state = "off";    // the browser spare (daemon/browser.h): off|starting|running
  std::int64_t children = 0;          // the daemon's child processes not reaped yet
  std::int64_t worker_jobs = 0;       // file writes given to the daemon's worker thread, not finished
  std::optional<bool> until_met;      // only when the request named `until`
};

struct ShutdownResult {
  bool stopping = true;
};

Decoded<HelloParams> decode(const boost::json::value& v, std::type_identity<HelloParams>);
Decoded<HelloResult> decode(const boost::json::value& v, std::type_identity<HelloResult>);
Decoded<StatusParams> decode(const boost::json::value& v, std::type_identity<StatusParams>);
Decoded<StatusResult> decode(const boost::json::value& v, std::type_identity<StatusResult>);
Decoded<ShutdownResult> decode(const boost::json::value& v, std::type_identity<ShutdownResult>);

void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const HelloParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const HelloResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const StatusResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ShutdownResult& v);

// The method names, declared once for the router and the clients.
inline constexpr std::string_view kHello = "hello";
inline constexpr std::string_view kDaemonStatus = "daemon/status";
inline constexpr std::string_view kDaemonShutdown = "daemon/shutdown";

}  // namespace oppx::proto
