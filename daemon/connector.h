// One MCP connector: its state with the reason and steps (daemon/diagnose.h) when it is not
// running, calls with time limits, and its restart policy: a program that stops is started again
// with backoff, and for a call when that is safe. It reaches its server through a link made by a
// factory (daemon/link.h: a stdio child or an HTTP session) and speaks MCP over it with an
// McpClient (daemon/mcp_client.h). Runs on the daemon's io_context as callbacks; nothing blocks.
#pragma once

#include "daemon/link.h"
#include "daemon/mcp_config.h"
#include "proto/jsonrpc.h"
#include "proto/mcp_api.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

// kWaiting: a repository's connector that has not been approved (daemon/consent.h); it never runs.
// kDisabled ("disabled": true) and kUnsupported (an entry oppx cannot use) never run either.
// kLogin: an HTTP connector whose server wants an OAuth login (or a wider one) that only the
// user can give (`oppx mcp login`); it is not started again until then.
enum class ConnectorState { kStarting, kRunning, kFailed, kLogin, kStopped, kWaiting, kDisabled, kUnsupported };
std::string_view state_name(ConnectorState s);

// What stopped a connector, as the diagnosis names it (docs/protocol.md, `mcp/list`: reason_kind),
// is one of the proto::kind words (proto/jsonrpc.h): kNotInstalled, kStopped, kTimeout, kConfig,
// kUnsupported, kLogin, kUnreachable.

inline constexpr std::chrono::milliseconds kStartTimeout{30'000};
// "30 s", or "1500 ms" when not whole seconds: a limit as messages say it.
std::string duration_text(std::chrono::milliseconds limit);
// The start limit for a client's environment: OPPX_MCP_START_TIMEOUT_MS there, else kStartTimeout.
std::chrono::milliseconds start_timeout(const EnvMap& env);
// How long a stdio server's first start waits for its answer to server/discover before sending
// initialize: OPPX_MCP_DISCOVER_TIMEOUT_MS there, else 3 s.
std::chrono::milliseconds discover_bound(const EnvMap& env);
// A duration in milliseconds from the variable `name` of a client's environment: `fallback` when
// it is unset, not a whole number, or outside [min_ms, max_ms].
std::chrono::milliseconds env_milliseconds(const EnvMap& env, std::string_view name, std::chrono::milliseconds fallback,
                                           long long min_ms, long long max_ms);
inline constexpr std::chrono::milliseconds kLoginTimeout{
    180'000};  // `oppx mcp reconnect <name>`: time for a browser login
inline constexpr std::chrono::milliseconds kCallTimeout{proto::kCallTimeoutMs};

inline constexpr std::chrono::milliseconds kListChangedDebounce{200};  // a burst of list_changed: one fetch

struct CallOptions {
  std::chrono::milliseconds timeout = kCallTimeout;
  // The caller's whole limit, for messages, when `timeout` is what is left of it after a wait for
  // the start; zero: `timeout` itself.
  std::chrono::milliseconds asked{0};
  // When set, the server is asked for progress (`_meta.progressToken`) and each of its
  // notifications/progress for this call arrives here (its params without the token).
  std::function<void(const boost::json::object&)> on_progress;
  // When set, what the server asks the user for this call (MCP elicitation/create params) arrives
  // here, to be answered once with an ElicitResult; else it is declined. The call's time limit
  // stands still while the user is asked.
  std::function<void(const boost::json::object& params, std::function<void(boost::json::object)> answer)> on_elicit;
};

class Connector {
 public:
  using CallResult = boost::system::result<boost::json::value, proto::RpcError>;
  // Ends a call whose caller went away: the server gets notifications/cancelled, `done` gets a
  // `cancelled` error, and a late result is dropped. Does nothing once the call has ended.
  using CancelCall = std::function<void()>;

  // `log_path`: a program's stderr log; for an HTTP connector, the daemon's log (named in its steps).
  static std::shared_ptr<Connector> create(boost::asio::io_context& io, ConnectorDef def, std::string log_path);
  // The same with the links made by `factory` (tests; a connector on a link of its own).
  static std::shared_ptr<Connector> create(boost::asio::io_context& io, ConnectorDef def, std::string log_path,
                                           LinkFactory factory);
  ~Connector();

  // Starts the child with the asking client's environment; `on_change` runs at every state change.
  // A start asked for by a user (this one) also clears the crash-loop count.
  void start(const EnvMap& env, std::chrono::milliseconds timeout);
  void stop();
  // Stops it if it runs and keeps it `waiting` for consent, with `reason` saying how to give it.
  void hold(std::string reason);
  // Calls a tool. A program found stopped, or stopping during the call, is started again once and
  // the call repeated, but only when the call never reached it or the tool is read-only
  // (annotations.readOnlyHint); else the error (kind connector_down) says it may or may not have run.
  void call(const std::string& tool, boost::json::value arguments, std::chrono::milliseconds timeout,
            std::function<void(CallResult)> done);
  CancelCall call(const std::string& tool, boost::json::value arguments, CallOptions options,
                  std::function<void(CallResult)> done);
  // Any other request of its session (resources/…, prompts/…) while it runs; else a
  // connector_down error saying its state. The answer's secrets are hidden as a call's are.
  void request(const std::string& method, boost::json::value params, std::chrono::milliseconds limit,
               std::function<void(CallResult)> done);
  void on_change(std::function<void()> fn);
  // Its server's resources or prompts list changed (list_changed), or a new session began.
  void on_offers_changed(std::function<void()> fn);
  // Offers the server roots (MCP "Roots") from its next session on: roots/list answers with
  // `folders` as they are when asked, so they may be set after the start (a spare server given
  // to a session: daemon/browser.h).
  void offer_roots(std::vector<std::string> folders);
  // Asked before every start (a restart after its program stopped, or for a call, too): a
  // non-empty answer keeps it waiting (hold) with that reason instead.
  void check_before_start(std::function<std::string()> fn);

  // The MCP version its server spoke last (the tool cache's): a 2025-11-25 one is started straight
  // with initialize, without the server/discover probe.
  void remember_era(std::string version);
  // The MCP version its session speaks ("" before the first start).
  const std::string& version() const;
  const ConnectorDef& def() const;
  ConnectorState state() const;
  const std::string& reason() const;              // why it is not running (empty when running)
  const std::string& down_kind() const;           // a proto::kind value when failed
  const std::vector<std::string>& steps() const;  // the steps back when failed (daemon/diagnose.h)
  const boost::json::array& tools() const;
  // A client asks for its tools: fetched again in the background when its server's ttlMs passed.
  void tools_needed();
  // Whether the connector marks this tool read-only (annotations.readOnlyHint): it then runs
  // without asking, and a call it interrupted may be repeated.
  bool read_only(const std::string& tool) const;
  const std::string& log_path() const;
  std::int64_t pid() const;
  std::size_t calls_waiting() const;  // requests sent to the server and not answered yet
  std::size_t calls_open() const;     // tools/call requests not answered yet, sent or not
  // Runs `fn` (posted) each time the last open call ends.
  void on_idle(std::function<void()> fn);
  // The environment of the client that started it last (empty before its first start).
  const EnvMap& last_env() const;

 private:
  struct Impl;
  explicit Connector(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;  // shared with its pending operations
};

// The `timeout` error of a call whose time limit passed while its connector was still starting:
// the call was never sent, and the connector goes on starting.
proto::RpcError start_outlasted_call(const std::string& connector, std::chrono::milliseconds limit);

}  // namespace oppx::daemon
