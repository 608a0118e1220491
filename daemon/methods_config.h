// Handlers of the methods that change what runs: mcp/get, mcp/add, mcp/remove, consent/approve,
// consent/deny (docs/protocol.md). The table in methods.cpp binds them, one line each. Also where
// a request comes from: its working folder, and the repository root found from it.
#pragma once

#include "daemon/router.h"
#include "proto/mcp_api.h"

#include <string>

namespace oppx::daemon {

class Server;

// The repository root a request is about: params.cwd, else the cwd the client gave in hello.
std::string request_root(const std::string& cwd_param, const Client& client);

void mcp_get(Server& s, const proto::McpGetParams& p, Reply reply, Client& client);
void consent_approve(Server& s, const proto::ConsentParams& p, Reply reply, Client& client);
void consent_deny(Server& s, const proto::ConsentParams& p, Reply reply, Client& client);
void mcp_add(Server& s, const proto::McpAddParams& p, Reply reply, Client& client);
void mcp_remove(Server& s, const proto::McpRemoveParams& p, Reply reply, Client& client);

}  // namespace oppx::daemon
