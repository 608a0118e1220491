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

json::array array_of(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

// The session's allows apply to the project it was opened in.
const std::vector<std::string>& session_allows(const Client& client, const std::string& project) {
  static const std::vector<std::string> none;
  return client.session && client.session->root == project ? client.session->allow : none;
}

json::object rules_json(Server& s, const std::string& project, const Client& client) {
  Rules r = s.permissions().rules(project);
  json::object o{
      {"project", project}, {"file", s.permissions().path()}, {"allow", array_of(r.allow)}, {"deny", array_of(r.deny)}};
  if (client.session) o["session_allow"] = array_of(session_allows(client, project));
  if (!s.permissions().problem().empty()) o["problem"] = s.permissions().problem();
  return o;
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
  json::object o{{"session", session.id},
                 {"cwd", session.cwd},
                 {"project", session.root},
                 {"mode", session.mode},
                 {"replaced", client.session.has_value()}};
  client.session = std::move(session);
  reply.ok(std::move(o));
}

void permissions_list(Server& s, const proto::PermissionsListParams& p, Reply reply, Client& client) {
  std::string project = request_root(p.cwd, client);
  if (project.empty()) return reply.fail(no_project());
  reply.ok(rules_json(s, project, client));
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
    json::object o = rules_json(s, project, client);
    o["rule"] = p.rule;
    o["changed"] = added;
    o["session"] = true;
    return reply.ok(std::move(o));
  }
  // Answered once written (on the worker); the connection may have closed by then, so what the
  // answer shows of it is as it was when asked.
  auto shared = std::make_shared<Reply>(std::move(reply));
  s.permissions().add(
      project, p.rule, allow,
      [&s, shared, project, rule = p.rule, asked = client](boost::system::result<bool, std::string> r) {
        if (!r) return shared->fail(proto::RpcError::make(proto::ErrorCode::kInternal, "write_failed", r.error()));
        json::object o = rules_json(s, project, asked);
        o["rule"] = rule;
        o["changed"] = *r;
        shared->ok(std::move(o));
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
        json::object o = rules_json(s, project, asked);
        o["rule"] = rule;
        o["changed"] = true;
        shared->ok(std::move(o));
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
  json::object o{{"decision", verdict_name(j.verdict)}, {"why", j.why}, {"project", project}};
  if (!j.rule.empty()) o["rule"] = j.rule;
  if (p.command.empty()) o["read_only"] = read_only;
  reply.ok(std::move(o));
}

}  // namespace oppx::daemon
