// McpClient: the MCP client side of one session over any transport (a stdio link, an HTTP link,
// an in-memory pair in tests): initialize and the protocol version check, the paginated
// tools/list and its refetch on list_changed (debounced), tools/call with progress routed by
// token, cancellation, roots when its owner offers them, elicitation passed to the call that
// caused it (a 2025-11-25 server's request, or a 2026-07-28 result that asks for input, fulfilled
// and sent again: daemon/mcp_calls.cpp), and a refusal for every other server request (MCP
// "Lifecycle", "Tools", "Roots", "Elicitation", "Multi Round-Trip Requests"; docs/protocol.md). It
// knows nothing of restarts or processes: the connector owns one per run. Callbacks run on the
// io_context; none of them blocks.
#pragma once

#include "common/jsonrpc_peer.h"
#include "daemon/mcp_headers.h"
#include "proto/mcp_versions.h"
#include "common/transport.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

class McpClient : public std::enable_shared_from_this<McpClient> {
 public:
  using CallResult = JsonRpcPeer::CallResult;
  // A server's elicitation/create params (form or URL), answered once with an ElicitResult
  // ({action, content}); the caller's to ask, or to decline.
  using Elicit =
      std::function<void(const boost::json::object& params, std::function<void(boost::json::object)> answer)>;
  struct Options {
    std::string name;  // the connector's, for log lines
    // The link reports a lost connection itself (a stdio program's stop, with its exit status):
    // a disconnected initialize or tools/list is then no failure of ours to report.
    bool quiet_on_disconnect = false;
    std::chrono::milliseconds list_changed_debounce{200};
    // When set, the client offers roots (MCP "Roots") and answers roots/list with these folders,
    // read at each request (absolute paths, sent as file: URIs).
    std::function<std::vector<std::string>()> roots;
    // Ask for MCP 2026-07-28 first (server/discover), and speak it when the server does; else
    // initialize as below. The HTTP link's: its server says which in its answer. There a tool
    // whose x-mcp-header marks are invalid is left out of the list (logged), and the marked
    // parameters of a call go as Mcp-Param-* headers.
    bool stateless_first = false;
    // With stateless_first, for a stdio server (which says nothing of its era before it answers):
    // a probe not answered within this bound is followed by initialize on the same connection, and
    // whichever of the two answers first as its era wants decides. Zero: no bound.
    std::chrono::milliseconds discover_bound{0};
  };
  struct Handlers {
    // The complete tool list: after initialize (the session is ready), then after each change.
    std::function<void(boost::json::array tools)> on_tools;
    // initialize or tools/list failed: `kind` is a proto::kind value.
    std::function<void(std::string_view kind, std::string why, int http_status)> on_failed;
    // The transport ended (its kind as TransportError says).
    std::function<void(const TransportError&)> on_closed;
    // The server's resources or prompts list changed (notifications/…/list_changed).
    std::function<void()> on_offers_changed;
  };

  static std::shared_ptr<McpClient> create(boost::asio::io_context& io, std::unique_ptr<Transport> transport,
                                           Options options, Handlers handlers);
  ~McpClient();

  // Sends initialize; once the version is one of proto::mcp::kVersions, notifications/initialized and the
  // tools/list pages follow, and then on_tools. With stateless_first, server/discover goes first: a
  // server that lists 2026-07-28 gets the tools/list pages at once, every request stamped with the
  // protocol's _meta; any other answer (an error, HTTP 400 from a 2025 server) leads to initialize.
  void start();
  // The MCP version spoken, once known (empty before).
  const std::string& version() const { return version_; }
  // Sends tools/call; `done` runs once. Errors the server sent carry no kind of ours (its kind is
  // kept as data.server_kind): only errors made on our side (disconnected, the HTTP link's login,
  // unreachable, timeout) carry the kinds the daemon acts on. With `on_progress`, the server is
  // asked for progress and each notifications/progress for this call arrives there.
  // With `on_elicit`, what the server asks for this call is asked there (else declined).
  // Returns the request's id, which stays the call's for cancel() through every round.
  // `read_only`: the tool is marked read-only, so the request may be sent again by a link whose
  // connection closed before the answer (it may have run).
  boost::json::value call_tool(const std::string& tool, const boost::json::value& arguments, bool read_only,
                               std::function<void(const boost::json::object&)> on_progress,
                               std::function<void(CallResult)> done, Elicit on_elicit = {});
  // Gives up a call: the server is told (notifications/cancelled) and a late answer is skipped;
  // its `done` never runs.
  void cancel(const boost::json::value& id, std::string_view why);
  // Any other request of the session (resources/list, resources/read, prompts/get, …), stamped as
  // the era wants; `done` runs once: with the answer, or a `timeout` error after `limit` (the
  // server is then told the request was cancelled).
  void request(const std::string& method, boost::json::value params, std::chrono::milliseconds limit,
               std::function<void(CallResult)> done);
  // Fetches the tools again (when the list may have changed unannounced), if it is ready or listing.
  void refetch_tools();
  // The list is needed (a client asks for it): fetched again when the server's ttlMs for it
  // (MCP 2026-07-28 "Caching") has passed; meanwhile the list held is what is shown. Without a
  // ttlMs, list changes are what renew it.
  void refetch_if_stale();
  // Ends the session: `graceful` writes what is queued first (and an HTTP link ends its session).
  // No handler runs after this.
  void close(bool graceful);

  bool ready() const { return phase_ == Phase::kReady; }
  // server/discover sent and not answered yet, nothing else decided: a server that stops now did
  // so on the probe.
  bool probing() const { return probe_pending_ && phase_ == Phase::kInitializing; }
  // Requests sent and not answered, but for the standing subscriptions/listen.
  std::size_t calls_waiting() const { return peer_ ? peer_->calls_waiting() - (listening_ ? 1 : 0) : 0; }

 private:
  enum class Phase { kNew, kInitializing, kListing, kReady, kClosed };
  struct Pages;
  struct ToolCall;
  McpClient(boost::asio::io_context& io, Options options, Handlers handlers);
  void initialize();
  void discovered(CallResult r);
  void initialized(CallResult r);
  // `params` with the 2026-07-28 _meta added, when that is the version spoken.
  boost::json::value stamped(boost::json::value params) const;
  bool stateless() const { return version_ == proto::mcp::kStateless; }
  void fetch_tools();
  void fetch_page(std::shared_ptr<Pages> acc, std::string cursor);
  void page(std::shared_ptr<Pages> acc, CallResult r);
  void list_changed();
  // MCP 2026-07-28: list changes come on a subscriptions/listen request that stays open; one that
  // ends is opened again after a pause, and the tools fetched again (a change may have been missed).
  void listen();
  void listen_ended(CallResult r);
  void progress(const boost::json::object& params);
  void failed(std::string_view kind, std::string why, int http_status = 0);
  bool listing_or_ready() const { return phase_ == Phase::kReady || fetching_; }
  // daemon/mcp_calls.cpp: a call's rounds, what it is asked, and the server's own requests.
  void send_call(std::shared_ptr<ToolCall> call, boost::json::object params);
  void call_answered(std::shared_ptr<ToolCall> call, CallResult r);
  void fulfil(std::shared_ptr<ToolCall> call, const boost::json::object& result);
  void elicit_for_server(proto::Request req, Reply reply);
  // The call leaves calls_ and its progress: its `done`, to run once (it never runs otherwise).
  std::function<void(CallResult)> take_call(const std::shared_ptr<ToolCall>& call);
  boost::json::object client_capabilities() const;
  boost::json::object roots_result() const;  // roots/list's answer, from options_.roots

  struct Timer;
  boost::asio::io_context& io_;
  Options options_;
  Handlers handlers_;
  std::shared_ptr<JsonRpcPeer> peer_;
  std::unique_ptr<Timer> list_changed_timer_, probe_timer_, listen_timer_;
  Phase phase_ = Phase::kNew;
  std::string version_;
  bool fetching_ = false, fetch_again_ = false, list_changed_armed_ = false;
  bool probe_pending_ = false;      // server/discover not answered
  bool probe_late_ = false;         // its bound passed: initialize was sent meanwhile
  bool announces_changes_ = false;  // server/discover's capabilities.tools.listChanged
  bool listening_ = false;          // subscriptions/listen open
  std::chrono::steady_clock::time_point listened_at_;
  std::chrono::milliseconds listen_pause_{500};
  std::chrono::steady_clock::time_point fresh_until_ = std::chrono::steady_clock::time_point::max();
  mutable boost::json::object meta_;  // the 2026-07-28 _meta every request carries
  std::unordered_map<std::string, std::function<void(const boost::json::object&)>> progress_;  // by token
  std::uint64_t next_progress_ = 0;
  // The calls not answered yet, by the key of their first id (what call_tool returned), with the
  // order they were made in: a 2025-11-25 server's request goes to the newest that can ask.
  std::unordered_map<std::string, std::shared_ptr<ToolCall>> calls_;
  std::uint64_t next_call_ = 0;
  // MCP 2026-07-28 over HTTP: each listed tool's parameters mirrored into Mcp-Param-* headers.
  std::unordered_map<std::string, std::vector<mcp_headers::ParamHeader>> param_headers_;
};

// The file: URI of an absolute path, each byte outside RFC 3986's unreserved set and '/' escaped.
std::string file_uri(std::string_view path);

// An error that the server sent is the server's, whatever its data.kind says: its kind is moved
// to data.server_kind, so that only errors made on our side carry the kinds the daemon acts on.
void move_server_kind_to_data(JsonRpcPeer::CallResult& r);

}  // namespace oppx::daemon
