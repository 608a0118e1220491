// The permissions/… methods over the PermissionStore. The project is the repository root of the
// request's folder (params.cwd, else the client's); a client cannot name another file.
#include "daemon/methods_permissions.h"

#include "daemon/browser.h"
#include "daemon/connectors.h"
#include "daemon/methods_browser.h"
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

void permissions_judge(Server& s, const proto::JudgeParams& p, Reply reply, Client& client) {
  std::string project = request_root(p.cwd, client);
  if (project.empty()) return reply.fail(no_project());
  Judgement j;
  bool read_only = false;
  if (!p.command.empty()) {
    j = s.permissions().judge_command(project, p.command, session_allows(client, project));
  } else {
    // Read-only as the connector itself says (its tools list), never as the caller claims. The
    // session's browser answers for `playwright`; its browser_evaluate is asked every time.
    auto browser = browser_connector(client, p.connector);
    if (browser) {
      read_only = browser->read_only(p.tool);
    } else if (auto c = s.connectors().find(p.connector, project)) {
      read_only = c->read_only(p.tool);
    }
    j = s.permissions().judge_tool(project, p.connector, p.tool, read_only, session_allows(client, project));
    if (browser && asked_every_time(p.tool) && j.verdict == Verdict::kAllow)
      j = {Verdict::kAsk, {}, p.tool + " runs JavaScript the model wrote: it is asked every time"};
  }
  proto::JudgeResult result{std::string(verdict_name(j.verdict)), j.why, project, j.rule, std::nullopt};
  if (p.command.empty()) result.read_only = read_only;
  reply.ok(json::value_from(result));
}

}  // namespace oppx::daemon
