// Handlers of session/open, permissions/list, permissions/allow, permissions/deny, permissions/remove and
// permissions/judge (docs/protocol.md): the rules of the project a request comes from, and the
// verdict on one tool call or command. The table in methods.cpp binds them, one line each.
#pragma once

#include "daemon/router.h"
#include "proto/session_api.h"

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

}  // namespace oppx::daemon
