// One MCP connector over stdio: its child process, the JSON-RPC peer on its pipes, the MCP
// handshake (initialize, tools/list with pages), calls with timeouts, its stderr drained into
// mcp-<name>.log, and its state with the reason when it is not running. Runs on the daemon's
// io_context; nothing blocks. (Streamable HTTP connectors are not built yet: they report so.)
#pragma once

#include "daemon/mcp_config.h"
#include "proto/jsonrpc.h"

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

// kWaiting: a repository's connector that has not been approved (daemon/consent.h); it never runs.
enum class ConnectorState { kStarting, kRunning, kFailed, kStopped, kWaiting };
std::string_view state_name(ConnectorState s);

// What stopped a connector, as the diagnosis names it (SPEC §3).
namespace down {
inline constexpr std::string_view kNotInstalled = "not_installed";
inline constexpr std::string_view kStopped = "stopped";
inline constexpr std::string_view kTimeout = "timeout";
inline constexpr std::string_view kConfig = "config";
inline constexpr std::string_view kUnsupported = "unsupported";
inline constexpr std::string_view kLogin = "login";              // 401/403, "unauthorized", "token expired"
inline constexpr std::string_view kUnreachable = "unreachable";  // connect refused, DNS, TLS, no route
}  // namespace down

inline constexpr std::chrono::milliseconds kStartTimeout{30'000};
inline constexpr std::chrono::milliseconds kCallTimeout{120'000};
inline constexpr std::size_t kResultLimit = 12'000;  // characters of text kept from a result

class Connector {
 public:
  using CallResult = boost::system::result<boost::json::value, proto::RpcError>;

  static std::shared_ptr<Connector> create(boost::asio::io_context& io, ConnectorDef def, std::string log_path);
  ~Connector();

  // Starts the child with the asking client's environment; `on_change` runs at every state change.
  void start(const EnvMap& env, std::chrono::milliseconds timeout);
  void stop();
  // Stops it if it runs and keeps it `waiting` for consent, with `reason` saying how to give it.
  void hold(std::string reason);
  void call(const std::string& tool, boost::json::value arguments, std::chrono::milliseconds timeout,
            std::function<void(CallResult)> done);
  void on_change(std::function<void()> fn);

  const ConnectorDef& def() const;
  ConnectorState state() const;
  const std::string& reason() const;     // why it is not running (empty when running)
  const std::string& down_kind() const;  // a down:: value when failed
  const boost::json::array& tools() const;
  const std::string& log_path() const;
  std::int64_t pid() const;

 private:
  struct Impl;
  explicit Connector(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;  // shared with its pending operations
};

// The text a tools/call result gives the model: text parts joined, other parts summarised, cut
// at `limit` characters with a visible marker.
std::string result_text(const boost::json::value& result, std::size_t limit, bool* truncated);

}  // namespace oppx::daemon
