// Handlers of browser/status, browser/start and browser/stop (docs/protocol.md), and how the
// other methods find the session's browser: `playwright` in mcp/list, mcp/tools, tools/call and
// permissions/judge is the asking session's own, never a shared connector.
#pragma once

#include "daemon/router.h"
#include "proto/mcp_results.h"

#include <boost/json/object.hpp>

#include <memory>
#include <optional>
#include <string>

namespace oppx::daemon {

class Connector;
class Server;
class SessionBrowser;

void browser_status(Server& s, const proto::NoParams& p, Reply reply, Client& client);
void browser_start(Server& s, const proto::NoParams& p, Reply reply, Client& client);
void browser_stop(Server& s, const proto::NoParams& p, Reply reply, Client& client);

// The session's browser when `name` is `playwright` and the client's session has one started.
std::shared_ptr<SessionBrowser> session_browser(const Client& client, const std::string& name);
std::shared_ptr<Connector> browser_connector(const Client& client, const std::string& name);
// The session's browser as a connector entry (mcp/tools), and as mcp/list's entry once started.
proto::ConnectorEntry browser_entry(const SessionBrowser& browser);
std::optional<proto::ConnectorEntry> browser_list_entry(const std::shared_ptr<SessionBrowser>& browser);

}  // namespace oppx::daemon
