// Handlers of session/open, permissions/list, permissions/allow, permissions/deny, permissions/remove and
// permissions/judge (docs/protocol.md): the rules of the project a request comes from, and the
// verdict on one tool call or command. The table in methods.cpp binds them, one line each.
#pragma once

#include "daemon/router.h"
#include "proto/mcp_api.h"
#include "proto/session_api.h"

#include <functional>

#include <string>

namespace oppx::daemon {

class Server;

// session/open: the connection's session (its folder and mode); opening again replaces it.
void session_open(Server& s, const proto::SessionOpenParams& p, Reply reply, Client& client);

void permissions_list(Server& s, const proto::PermissionsListParams& p, Reply reply, Client& client);
void permissions_allow(Server& s, const proto::RuleParams& p, Reply reply, Client& client);
void permissions_deny(Server& s, const proto::RuleParams& p, Reply reply, Client& client);
void permissions_remove(Server& s, const proto::RuleParams& p, Reply reply, Client& client);
void permissions_judge(Server& s, const proto::JudgeParams& p, Reply reply, Client& client);

// Whether a tools/call may reach its connector, judged by the same rules as permissions/judge:
// a deny rule refuses it (kind "denied") for every client; for a session, plan mode refuses a
// tool that is not read-only, an allow rule or a read-only tool lets it go, and anything else is
// asked of the session's client (permissions/ask): go() only on its yes, else kind "declined".
// A client without a session is a command the user typed, held by deny rules only. `project` is
// request_root(p.cwd, client), found once by the caller for the whole call.
void gate_call(Server& s, const proto::ToolsCallParams& p, const std::string& project, Client& client,
               std::function<void()> go, std::function<void(proto::RpcError)> refuse);

}  // namespace oppx::daemon
