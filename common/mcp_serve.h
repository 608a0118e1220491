// oppx as an MCP server (2025-11-25 and older, and 2026-07-28's server/discover and
// subscriptions/listen) for another client, backed by oppxd: `oppx mcp
// serve` on stdin/stdout, and oppxd's streamable-HTTP socket (daemon/mcp_http.h), one per session.
// The client's tools/list is the tools of the connectors its folder can see (running, idle with a
// cached list, or starting with one; never a repository's connector still waiting for consent,
// nor a tool a deny rule covers), each named as serve_names.h says; its tools/call goes through
// the daemon's own tools/call in a session of this folder, so the daemon's rules decide: a call
// they would ask about is asked of the client's user by elicitation when the client offers it (a
// 2026-07-28 client in its call's result, input_required), else declined with the `oppx
// permissions allow` line. Progress, cancellation and a connector's own questions pass both ways
// (a 2026-07-28 client is asked oppx's permission question only: a connector's own is declined);
// notifications/tools/list_changed follows the daemon's mcp/changed. One daemon connection per
// client, opened again after the daemon went away.
#pragma once

#include "common/transport.h"
#include "proto/daemon_api.h"

#include <boost/json/fwd.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx {

// What a server learned from its client that a server taking over the same client must know: it
// initialized, which questions it can be asked (MCP elicitation's form and url modes), and, for a
// client of MCP 2026-07-28, the list-change streams it opened (subscriptions/listen: each
// request's id as JSON text, and whether it asked for tool list changes), which stay open.
struct ServeState {
  bool initialized = false;
  bool forms = false;
  bool urls = false;
  bool modern = false;
  std::vector<std::pair<std::string, bool>> listens;
  bool operator==(const ServeState&) const = default;
};
boost::json::object to_json(const ServeState& state);
ServeState serve_state_of(const boost::json::value& v);

struct ServeOptions {
  // A new connection to the daemon, or null with `why` set. With `hello` set it is said first;
  // without, the connection has said it already (the CLI's connect_daemon).
  std::function<std::unique_ptr<Transport>(std::string& why)> connect;
  std::optional<proto::HelloParams> hello;
  std::string cwd;  // whose connectors and rules (absolute)
  std::chrono::milliseconds call_timeout{120'000};
  std::function<void()> on_client_gone;  // the client closed its end: the server is done
  // A server taking over a client another one served (the daemon restarted under `oppx mcp
  // serve`): it starts in that state and tells the client that its list may have changed.
  std::optional<ServeState> resume;
  std::function<void(const ServeState&)> on_state;  // optional: the state changed
};

class McpServe;

// Serves one MCP client on `client` until it closes; runs on `io`'s thread.
std::shared_ptr<McpServe> serve_mcp(boost::asio::io_context& io, std::unique_ptr<Transport> client,
                                    ServeOptions options);
// Ends the client's session from our side (the HTTP session deleted): its daemon connection closes.
void end_serving(McpServe& serve);

}  // namespace oppx
