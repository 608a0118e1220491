// The permissions/… methods over the PermissionStore. The project is the repository root of the
// request's folder (params.cwd, else the client's); a client cannot name another file.
#include "daemon/methods_permissions.h"

#include "common/jsonrpc_peer.h"
#include "common/log.h"
#include "common/shell_words.h"
#include "daemon/connector_scope.h"
#include "daemon/methods_config.h"
#include "daemon/permissions.h"
#include "daemon/server.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <algorithm>
#include <memory>

#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

// The session's allows apply to the project it was opened in.
const std::vector<std::string>& session_allows(const Client& client, const std::string& project) {
  static const std::vector<std::string> none;
  return client.session && client.session->root == project ? client.session->allow : none;
}

proto::PermissionsListResult rules_of(Server& s, const std::string& project, const Client& client) {
  Rules r = s.permissions().rules(project);
  proto::PermissionsListResult l;
  l.project = project;
  l.file = s.permissions().path();
  l.allow = std::move(r.allow);
  l.deny = std::move(r.deny);
  if (client.session) l.session_allow = session_allows(client, project);
  l.problem = s.permissions().problem();
  return l;
}

// What the rule methods answer: the rules after the change, and the change.
proto::RuleResult rule_result(Server& s, const std::string& project, const Client& client, std::string rule,
                              bool changed) {
  proto::RuleResult r;
  static_cast<proto::PermissionsListResult&>(r) = rules_of(s, project, client);
  r.rule = std::move(rule);
  r.changed = changed;
  return r;
}

proto::RpcError no_session() {
  return proto::RpcError::make(proto::ErrorCode::kInvalidParams, "no_session",
                               "this connection has no session: send session/open first");
}

proto::RpcError no_project() {
  return proto::RpcError::make(proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams,
                               "the request names no folder: pass params.cwd (or cwd in hello)");
}

}  // namespace

void session_open(Server&, const proto::SessionOpenParams& p, Reply reply, Client& client) {
  static std::uint64_t opened = 0;
  Session session{std::to_string(::getpid()) + "-" + std::to_string(client.id) + "-" + std::to_string(++opened),
                  p.cwd,
                  request_root(p.cwd, client),
                  p.mode,
                  {},
                  {}};
  proto::SessionOpenResult opened_result{session.id, session.cwd, session.root, session.mode,
                                         client.session.has_value()};
  client.session = std::move(session);
  reply.ok(json::value_from(opened_result));
}

void permissions_list(Server& s, const proto::PermissionsListParams& p, Reply reply, Client& client) {
  std::string project = request_root(p.cwd, client);
  if (project.empty()) return reply.fail(no_project());
  reply.ok(json::value_from(rules_of(s, project, client)));
}

namespace {

void permissions_add(Server& s, const proto::RuleParams& p, bool allow, Reply reply, Client& client) {
  std::string project = request_root(p.cwd, client);
  if (project.empty()) return reply.fail(no_project());
  if (p.session) {
    // Only an allow, only in the session's own project, held until its connection closes.
    if (!client.session) return reply.fail(no_session());
    if (!allow)
      return reply.fail(proto::RpcError::make(proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams,
                                              "params.session: a deny rule is always saved"));
    if (client.session->root != project)
      return reply.fail(proto::RpcError::make(proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams,
                                              "params.cwd: the session was opened in " + client.session->root));
    auto& list = client.session->allow;
    bool added = std::find(list.begin(), list.end(), p.rule) == list.end();
    if (added) list.push_back(p.rule);
    proto::RuleResult result = rule_result(s, project, client, p.rule, added);
    result.session = true;
    return reply.ok(json::value_from(result));
  }
  // Answered once written (on the worker); the connection may have closed by then, so what the
  // answer shows of it is as it was when asked.
  auto shared = std::make_shared<Reply>(std::move(reply));
  s.permissions().add(
      project, p.rule, allow,
      [&s, shared, project, rule = p.rule, asked = client](boost::system::result<bool, std::string> r) {
        if (!r) return shared->fail(proto::RpcError::make(proto::ErrorCode::kInternal, "write_failed", r.error()));
        shared->ok(json::value_from(rule_result(s, project, asked, rule, *r)));
      });
}

}  // namespace

void permissions_allow(Server& s, const proto::RuleParams& p, Reply reply, Client& client) {
  permissions_add(s, p, true, std::move(reply), client);
}

void permissions_deny(Server& s, const proto::RuleParams& p, Reply reply, Client& client) {
  permissions_add(s, p, false, std::move(reply), client);
}

void permissions_remove(Server& s, const proto::RuleParams& p, Reply reply, Client& client) {
  std::string project = request_root(p.cwd, client);
  if (project.empty()) return reply.fail(no_project());
  bool from_session = false;
  if (client.session && client.session->root == project) {
    auto& list = client.session->allow;
    auto it = std::find(list.begin(), list.end(), p.rule);
    from_session = it != list.end();
    if (from_session) list.erase(it);
  }
  auto shared = std::make_shared<Reply>(std::move(reply));
  s.permissions().remove(
      project, p.rule,
      [&s, shared, project, rule = p.rule, from_session, asked = client](boost::system::result<bool, std::string> r) {
        if (!r) return shared->fail(proto::RpcError::make(proto::ErrorCode::kInternal, "write_failed", r.error()));
        if (!*r && !from_session) {
          auto e = proto::RpcError::make(proto::ErrorCode::kInvalidParams, "unknown_rule",
                                         "this project has no rule " + rule + "; `oppx permissions` lists them");
          e.data["field"] = "params.rule";
          return shared->fail(std::move(e));
        }
        shared->ok(json::value_from(rule_result(s, project, asked, rule, true)));
      });
}

namespace {

struct ToolVerdict {
  Judgement judgement;
  bool read_only = false;
  bool once_only = false;  // asked every time: never allowed for longer than one call
};

// A tool call's verdict, on the connector the call would reach (ConnectorLookup: the session's
// browser answers for `playwright`). Read-only as the connector itself says (its tools list),
// never as the caller claims; a tool that runs code the model wrote (the browser's
// browser_evaluate) is asked every time.
ToolVerdict judge_tool_call(Server& s, const Client& client, const std::string& project, const std::string& connector,
                            const std::string& tool) {
  ToolVerdict v;
  auto found = ConnectorLookup(s, client, project).find(connector);
  v.read_only = found && found->read_only(tool);
  v.judgement = s.permissions().judge_tool(project, connector, tool, v.read_only, session_allows(client, project));
  v.once_only = found && found->asked_every_time(tool);
  if (v.once_only && v.judgement.verdict == Verdict::kAllow)
    v.judgement = {Verdict::kAsk, {}, tool + " runs JavaScript the model wrote: it is asked every time"};
  return v;
}

proto::RpcError kept_from_connector(std::string_view kind, const std::string& name, const std::string& why) {
  return proto::RpcError::make(proto::ErrorCode::kInvalidRequest, kind, name + " was not run: " + why);
}

}  // namespace

void permissions_judge(Server& s, const proto::JudgeParams& p, Reply reply, Client& client) {
  std::string project = request_root(p.cwd, client);
  if (project.empty()) return reply.fail(no_project());
  Judgement j;
  bool read_only = false;
  if (!p.command.empty()) {
    j = s.permissions().judge_command(project, p.command, session_allows(client, project));
  } else {
    ToolVerdict v = judge_tool_call(s, client, project, p.connector, p.tool);
    j = std::move(v.judgement);
    read_only = v.read_only;
  }
  proto::JudgeResult result{std::string(verdict_name(j.verdict)), j.why, project, j.rule, std::nullopt};
  if (p.command.empty()) result.read_only = read_only;
  reply.ok(json::value_from(result));
}

void gate_call(Server& s, const proto::ToolsCallParams& p, const std::string& project, Client& client,
               std::function<void()> go, std::function<void(proto::RpcError)> refuse) {
  if (project.empty()) return go();  // no folder, no rules
  const std::string name = p.connector + "." + p.tool;
  ToolVerdict v = judge_tool_call(s, client, project, p.connector, p.tool);
  const Judgement& j = v.judgement;
  if (j.verdict == Verdict::kDeny) {
    std::string lift = j.rule.empty() ? "" : "; `oppx permissions remove " + shell_quote(j.rule) + "` lifts it";
    return refuse(kept_from_connector(proto::kind::kDenied, name, j.why + lift));
  }
  // Without a session the caller is a command the user typed (`oppx mcp call`): only deny rules hold.
  if (!client.session) return go();
  if (client.session->mode == "plan" && !v.read_only)
    return refuse(kept_from_connector(proto::kind::kDenied, name,
                                      "this session is in plan mode, which runs only "
                                      "tools that read, and this one may change things"));
  if (j.verdict == Verdict::kAllow) return go();
  auto peer = client.peer.lock();
  if (!peer) return refuse(kept_from_connector(proto::kind::kDeclined, name, "its session has gone"));
  proto::PermissionQuestion q{p.connector, p.tool, {}, j.why, name, v.read_only};
  if (p.arguments.is_object()) q.arguments = p.arguments.as_object();
  // The answer comes from the session's client; it is only acted on while that client is here.
  peer->call(proto::kPermissionsAsk, json::value_from(q),
             [&s, project, name, go = std::move(go), refuse = std::move(refuse), once = v.once_only, why = j.why,
              weak = client.peer, asked = &client](JsonRpcPeer::CallResult r) {
               auto here = weak.lock();
               if (!r || !here) {
                 std::string how = r || r.error().kind != proto::kind::kMethodNotFound
                                       ? "its session did not answer"
                                       : "it needs permission (" + why +
                                             ") and this session's client cannot be asked; allow it with "
                                             "`oppx permissions allow " +
                                             shell_quote(name) + "`";
                 return refuse(kept_from_connector(proto::kind::kDeclined, name, how));
               }
               auto a = proto::decode<proto::PermissionAnswer>(*r);
               if (!a)
                 return refuse(kept_from_connector(proto::kind::kDeclined, name, "the session's answer: " + a.error()));
               proto::PermissionAnswerKind k = a->answer;
               if (once && k != proto::PermissionAnswerKind::kNo) k = proto::PermissionAnswerKind::kYes;
               switch (k) {
                 case proto::PermissionAnswerKind::kNo:
                   return refuse(kept_from_connector(proto::kind::kDeclined, name, "the session said no"));
                 case proto::PermissionAnswerKind::kYes:
                   return go();
                 case proto::PermissionAnswerKind::kSession:
                   if (asked->session && asked->session->root == project) {
                     auto& list = asked->session->allow;
                     if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
                   }
                   return go();
                 case proto::PermissionAnswerKind::kAlways:
                   s.permissions().add(project, name, true, [name](boost::system::result<bool, std::string> saved) {
                     if (!saved) log::warn("the rule {} could not be saved: {}", name, saved.error());
                   });
                   return go();
               }
             });
}

}  // namespace oppx::daemon
