// Handlers of mcp/login, mcp/login/wait, mcp/login/redirect and mcp/logout (docs/protocol.md):
// the OAuth login of an HTTP connector, run by the daemon (daemon/oauth.h) for any front end.
#pragma once

#include "daemon/router.h"
#include "proto/mcp_api.h"

namespace oppx::daemon {

class Server;

void mcp_login(Server& s, const proto::McpLoginParams& p, Reply reply, Client& client);
void mcp_login_wait(Server& s, const proto::McpLoginWaitParams& p, Reply reply, Client& client);
void mcp_login_redirect(Server& s, const proto::McpLoginRedirectParams& p, Reply reply, Client& client);
void mcp_logout(Server& s, const proto::McpLoginParams& p, Reply reply, Client& client);

}  // namespace oppx::daemon
