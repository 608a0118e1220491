// Handlers of session/open, permissions/list, permissions/allow, permissions/deny, permissions/remove and
// permissions/judge (docs/protocol.md): the rules of the project a request comes from, and the
// verdict on one tool call or command. The table in methods.cpp binds them, one line each.
#pragma once

#include "daemon/router.h"

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <string>

namespace oppx::daemon {

class Server;

struct RuleParams {
  std::string rule, cwd;
  bool session = false;  // this session's allows (session/open), never saved
};
struct SessionParams {
  std::string cwd, mode;
};
struct JudgeParams {
  std::string connector, tool, command, cwd;  // a tool call (connector and tool) or a command
};

boost::system::result<RuleParams, std::string> decode_rule_params(const boost::json::value& params, bool required);
boost::system::result<JudgeParams, std::string> decode_judge_params(const boost::json::value& params);
boost::system::result<SessionParams, std::string> decode_session_params(const boost::json::value& params);

// session/open: the connection's session (its folder and mode); opening again replaces it.
void session_open(const SessionParams& p, Reply reply, Client& client);

void permissions_list(Server& s, const RuleParams& p, Reply reply, Client& client);
// allow: true (allow), false (deny).
void permissions_add(Server& s, const RuleParams& p, bool allow, Reply reply, Client& client);
void permissions_remove(Server& s, const RuleParams& p, Reply reply, Client& client);
void permissions_judge(Server& s, const JudgeParams& p, Reply reply, Client& client);

}  // namespace oppx::daemon
