// Where a request finds a connector. A connector has a scope: the user's (their connectors file,
// shared by every client), a project's (a repository's .mcp.json, shared by the clients working
// in it) or a session's (its browser, `playwright`, which no other session sees). The method
// handlers look connectors up here and never ask which scope one has: what differs (reading the
// files again, waiting for a start, the browser's rules of daemon/browser.h) is behind
// ScopedConnector. Callbacks on the daemon's loop; nothing blocks.
#pragma once

#include "daemon/connector.h"
#include "daemon/connectors.h"
#include "proto/jsonrpc.h"
#include "proto/mcp_results.h"

#include <boost/json/value.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace oppx::daemon {

struct Client;
class Server;
class SessionBrowser;

enum class ConnectorScope { kUser, kProject, kSession };

// The error of a request that names no connector this client sees (kind unknown_connector).
proto::RpcError unknown_connector(const std::string& name);

// One connector as a request found it (ConnectorLookup). Used while the request is handled and
// not kept, since it holds the session's browser, which ends with its session; what it hands to
// callbacks holds neither the client nor the browser.
class ScopedConnector {
 public:
  ConnectorScope scope() const { return scope_; }
  const std::string& name() const { return name_; }

  // Whether the connector marks `tool` read-only (annotations.readOnlyHint in its tool list),
  // never as the caller claims. False for a session's connector that has not started.
  bool read_only(const std::string& tool) const;
  // Whether a call to `tool` is asked every time, whatever the rules allow: the browser's tools
  // that run code the model wrote.
  bool asked_every_time(const std::string& tool) const;

  // Its entry with the tools it offers (mcp/tools): a user's or project's connector still starting
  // answers at once with the list cached for its definition, else once it is no longer starting,
  // nullopt when it is gone by then; the session's browser with its offered tools.
  void tools(std::function<void(std::optional<proto::ConnectorEntry>)> done) const;
  // The tools it offers now, without waiting: its running list, the list cached for a connector
  // still starting, or none (tools/search).
  boost::json::array tools_now() const;
  // Another request of its server's (resources/…, prompts/…): a lazy connector is started for it,
  // one still starting waited for (within `limit` too).
  void request(const std::string& method, boost::json::value params, std::chrono::milliseconds limit,
               std::function<void(Connector::CallResult)> done) const;
  // A user's or project's connector's list as read last (Connectors::offers), and keeping one.
  const boost::json::array* offers(const std::string& method) const;
  std::uint64_t offers_epoch() const;  // bumped by each announced change
  void keep_offers(const std::string& method, boost::json::array list, std::uint64_t epoch) const;
  // The characters of a result its model is given: the entry's "resultLimit", else the default.
  std::size_t result_limit() const;
  // `tool`'s outputSchema from the list it offers now; null when it has none.
  boost::json::value output_schema(const std::string& tool) const;

  // Sends a call and gives `done` its result, or the error that kept it from being sent.
  // `options.timeout` is the call's whole limit: a user's or project's connector still starting
  // is waited for within it (the call is sent with what is left, or fails as start_outlasted_call).
  // The session's browser first refuses a call it has not started for, a tool it does not offer
  // and an address off the web, and puts the files its result links into the result.
  // The returned cancel ends the call: before it is sent, nothing is sent.
  Connector::CancelCall call(const std::string& tool, boost::json::value arguments, CallOptions options,
                             std::function<void(Connector::CallResult)> done) const;

 private:
  friend class ConnectorLookup;
  ScopedConnector(Server& server, ConnectorScope scope, std::string name, std::string root, const EnvMap& env)
      : server_(&server), scope_(scope), name_(std::move(name)), root_(std::move(root)), env_(&env) {}

  Connector::CancelCall call_shared(const std::string& tool, boost::json::value arguments, CallOptions options,
                                    std::function<void(Connector::CallResult)> done) const;
  Connector::CancelCall call_session(const std::string& tool, boost::json::value arguments, CallOptions options,
                                     std::function<void(Connector::CallResult)> done) const;

  Server* server_;
  ConnectorScope scope_;
  std::string name_, root_;
  const EnvMap* env_;                        // the asking client's: a lazy connector starts with it
  std::shared_ptr<Connector> connector_;     // as found; a session's is null until it started
  std::shared_ptr<SessionBrowser> browser_;  // the session's browser (kSession only)
};

// The connectors one request sees: the session's own, the user's, and those of repository `root`
// (empty: none). Made for one request and not kept: it refers to the client.
class ConnectorLookup {
 public:
  ConnectorLookup(Server& server, const Client& client, std::string root);

  const std::string& root() const { return root_; }

  // Reads the user's and the repository's connectors files again when they changed, with the
  // client's environment (Connectors::refresh).
  void refresh(Connectors::Restart restart) const;
  // The connector `name`: the session's own first (its browser answers for `playwright` once the
  // session has one, started or not), then the user's, then the repository's. Reads nothing again.
  std::optional<ScopedConnector> find(const std::string& name) const;
  // The same after refresh, when `name` is not the session's own (no file defines that one).
  std::optional<ScopedConnector> refresh_and_find(const std::string& name, Connectors::Restart restart) const;

  // mcp/list: the user's and the repository's connectors, then the session's browser once started;
  // with `wait`, once none of them is starting.
  void list(bool wait, std::function<void(proto::McpListResult)> done) const;

 private:
  Server& server_;
  const Client& client_;
  std::string root_;
  std::shared_ptr<SessionBrowser> browser_;  // the session's, when it has one
};

}  // namespace oppx::daemon
