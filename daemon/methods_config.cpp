// mcp/get, mcp/add, mcp/remove, consent/approve, consent/deny. No write happens on the loop:
// an edit of a connectors file (read, change, write) runs on the worker, and the edits asked run
// there one after the other, in order, so two clients adding at once both survive; a consent is
// recorded on the loop and written by the worker (consent.h). Each answers, and starts or stops
// what it changed, once its write has landed. `mcp/add` answers once the new connector has started
// or failed: that answer is the probe (its tools) the CLI prints.
#include "daemon/methods_config.h"

#include "common/log.h"
#include "common/tool_text.h"
#include "daemon/config_write.h"
#include "daemon/connectors.h"
#include "daemon/server.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace oppx::daemon {

namespace json = boost::json;
using proto::ErrorCode;
using proto::RpcError;

namespace {

RpcError error_of(ErrorCode code, std::string_view kind, std::string message, std::string_view field = {}) {
  auto e = RpcError::make(code, kind, std::move(message));
  if (!field.empty()) e.data["field"] = std::string(field);
  return e;
}

RpcError needs_folder(std::string_view what) {
  return error_of(ErrorCode::kInvalidParams, proto::kind::kInvalidParams,
                  fmt::format("{} needs the folder you work in (params.cwd, or cwd in hello); run it inside the "
                              "repository",
                              what),
                  "params.cwd");
}

// The second halves of mcp/add and mcp/remove, once the edit of the file is done.
void added(Server& s, const std::shared_ptr<Reply>& reply, const proto::McpAddParams& p, const ConnectorDef& def,
           const std::string& root, const std::string& path, const EnvMap& env,
           boost::system::result<EditOutcome, EditError> out);
void settle_added(Server& s, const std::shared_ptr<Reply>& shared, const proto::McpAddParams& p,
                  const std::string& root, const EnvMap& env, proto::McpAddResult result);
void removed(Server& s, const std::shared_ptr<Reply>& reply, const proto::McpRemoveParams& p, const std::string& root,
             const std::string& path, const EnvMap& env, boost::system::result<EditOutcome, EditError> out);

}  // namespace

std::string request_root(const std::string& cwd_param, const Client& client) {
  const std::string& cwd = cwd_param.empty() ? client.cwd : cwd_param;
  return cwd.empty() ? std::string() : repository_root(cwd);
}

void mcp_get(Server& s, const proto::McpGetParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  s.connectors().refresh(client.env, root, Connectors::Restart::kNever);
  auto e = s.connectors().get(p.name, root, p.show_values);
  if (!e) {
    return reply.fail(error_of(ErrorCode::kInvalidParams, "unknown_connector",
                               "no connector named " + p.name + "; `oppx mcp list` shows them", "params.name"));
  }
  reply.ok(json::value_from(*e));
}

namespace {

void consent_decide(Server& s, const proto::ConsentParams& p, bool approve, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  if (root.empty()) return reply.fail(needs_folder(approve ? proto::kConsentApprove : proto::kConsentDeny));
  if (approve && p.sha256.empty()) {
    // Consent is to what the user saw: the hash from mcp/get or mcp/list, never "whatever is there now".
    return reply.fail(error_of(ErrorCode::kInvalidParams, proto::kind::kInvalidParams,
                               "params.sha256: required; pass the sha256 of the definition you showed the user "
                               "(from mcp/get or mcp/list)",
                               "params.sha256"));
  }
  s.connectors().refresh(client.env, root, Connectors::Restart::kMay);
  auto shared = std::make_shared<Reply>(std::move(reply));
  std::optional<FileHashes> files;
  if (p.files) files.emplace(p.files->begin(), p.files->end());
  s.connectors().decide(root, p.name, p.sha256, approve, client.env, files,
                        [&s, shared, name = p.name, root](boost::system::result<void, Connectors::ConsentError> r) {
                          if (!r) {
                            const auto& e = r.error();
                            ErrorCode code = e.kind == "io" ? ErrorCode::kInternal : ErrorCode::kInvalidParams;
                            return shared->fail(error_of(code, e.kind, e.message, e.kind == "io" ? "" : "params.name"));
                          }
                          s.connectors().when_settled(root, name, [&s, shared, name, root] {
                            auto e = s.connectors().get(name, root);
                            shared->ok(e ? json::value_from(*e) : json::object{});
                          });
                        });
}

}  // namespace

void consent_approve(Server& s, const proto::ConsentParams& p, Reply reply, Client& client) {
  consent_decide(s, p, true, std::move(reply), client);
}

void consent_deny(Server& s, const proto::ConsentParams& p, Reply reply, Client& client) {
  consent_decide(s, p, false, std::move(reply), client);
}

void mcp_add(Server& s, const proto::McpAddParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  if (p.project && root.empty()) return reply.fail(needs_folder(std::string(proto::kMcpAdd) + " with project"));
  auto def = check_definition(p.name, p.definition);
  if (!def) {
    return reply.fail(
        error_of(ErrorCode::kInvalidParams, proto::kind::kInvalidDefinition, def.error().message, "params.definition"));
  }
  s.connectors().refresh(client.env, root, Connectors::Restart::kMay);  // knows the user's file path for this client
  std::string path = p.project ? root + "/.mcp.json" : user_mcp_config_path(client.env);
  auto shared = std::make_shared<Reply>(std::move(reply));
  s.connectors().worker().run(
      [path, name = p.name, entry = p.definition, force = p.force, users_file = !p.project] {
        return add_entry(path, name, entry, force, users_file);
      },
      [&s, shared, p, def = *def, root, path, env = client.env](boost::system::result<EditOutcome, EditError> out) {
        added(s, shared, p, def, root, path, env, std::move(out));
      });
}

namespace {

void added(Server& s, const std::shared_ptr<Reply>& reply, const proto::McpAddParams& p, const ConnectorDef& def,
           const std::string& root, const std::string& path, const EnvMap& env,
           boost::system::result<EditOutcome, EditError> out) {
  if (!out) {
    const auto& e = out.error();
    ErrorCode code = e.kind == "io" ? ErrorCode::kInternal : ErrorCode::kInvalidParams;
    return reply->fail(error_of(code, e.kind == "invalid" ? std::string(proto::kind::kInvalidDefinition) : e.kind,
                                e.message, e.kind == "exists" ? "params.name" : ""));
  }
  if (!out->warning.empty()) log::warn("{}", out->warning);
  log::info("connector {} {} in {}", p.name, out->replaced ? "replaced" : "added", path);
  proto::McpAddResult result{.name = p.name, .file = path, .replaced = out->replaced, .warning = out->warning};
  s.connectors().file_written();
  // Without consent (what `oppx mcp import --project` adds: a repository's own files' servers) it
  // waits for consent/approve, where the user sees it in full.
  if (!p.project || !p.consent) return settle_added(s, reply, p, root, env, std::move(result));
  // Adding it to the repository yourself is consent to exactly what was written, and to the
  // files it runs as they are now.
  ConnectorDef written = def;
  written.file = path;
  written.project = true;
  s.connectors().consent().approve(
      root, p.name, sha256_hex(out->canonical), s.connectors().run_files(written, root, true),
      [&s, reply, p, root, env, result](boost::system::result<void, std::string> r) mutable {
        if (!r) result.consent_error = r.error() + "; approve it with `oppx mcp approve " + p.name + "`";
        settle_added(s, reply, p, root, env, std::move(result));
      });
}

// Starts what was added and answers with its probe once it has started or failed.
void settle_added(Server& s, const std::shared_ptr<Reply>& shared, const proto::McpAddParams& p,
                  const std::string& root, const EnvMap& env, proto::McpAddResult result) {
  s.connectors().refresh(env, root, Connectors::Restart::kMay);
  s.connectors().when_settled(root, p.name, [&s, shared, root, result, name = p.name, project = p.project]() mutable {
    auto e = s.connectors().get(name, root);
    if (e && project && e->hides) {
      // The user's own of the same name wins: the repository's is saved but does not run, and
      // the probe must not show the user's one as if it were the one just added.
      proto::ConnectorEntry hidden = *e->hides;
      result.warning = fmt::format(
          "your own connector {} (in {}) has the same name and wins: the repository's is saved but does not run "
          "while yours exists; rename one of them",
          name, e->file);
      hidden.tools = json::array{};
      result.connector = std::move(hidden);
      return shared->ok(json::value_from(result));
    }
    if (e) {
      auto c = s.connectors().find(name, root);
      json::array tools = c ? c->tools() : json::array{};
      if (c && c->state() == ConnectorState::kRunning) {
        // The probe's part that needs no model server: the lines the model sees and their cost.
        // The share of the model's context is the client's to ask (the daemon never waits on a
        // model server); docs/protocol.md says how.
        std::string text = tool_list_text(name, tools);
        proto::AddProbe probe{.tokens = estimate_tokens(text), .estimate = "about 4 characters a token"};
        for (std::size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
          probe.lines.push_back(text.substr(at, nl - at));
        }
        result.probe = std::move(probe);
      }
      e->tools = std::move(tools);
      result.connector = std::move(*e);
    }
    shared->ok(json::value_from(result));
  });
}

}  // namespace

void mcp_remove(Server& s, const proto::McpRemoveParams& p, Reply reply, Client& client) {
  std::string root = request_root(p.cwd, client);
  if (p.project && root.empty()) return reply.fail(needs_folder("mcp/remove with project"));
  std::string path = p.project ? root + "/.mcp.json" : user_mcp_config_path(client.env);
  auto shared = std::make_shared<Reply>(std::move(reply));
  s.connectors().worker().run(
      [path, name = p.name, users_file = !p.project] { return remove_entry(path, name, users_file); },
      [&s, shared, p, root, path, env = client.env](boost::system::result<EditOutcome, EditError> out) {
        removed(s, shared, p, root, path, env, std::move(out));
      });
}

namespace {

void removed(Server& s, const std::shared_ptr<Reply>& reply, const proto::McpRemoveParams& p, const std::string& root,
             const std::string& path, const EnvMap& env, boost::system::result<EditOutcome, EditError> out) {
  if (!out) {
    const auto& e = out.error();
    bool io = e.kind == "io";
    std::string message = e.message;
    if (e.kind == "not_found" && !p.project && !root.empty()) {
      // Not yours, but the repository's: say how to remove that one.
      s.connectors().refresh(env, root, Connectors::Restart::kNever);
      if (auto g = s.connectors().get(p.name, root); g && g->is_project()) {
        message += fmt::format(
            "; {} is the repository's (in {}/.mcp.json): remove it with `oppx mcp remove {} "
            "--project`",
            p.name, root, p.name);
      }
    }
    return reply->fail(error_of(io ? ErrorCode::kInternal : ErrorCode::kInvalidParams,
                                e.kind == "not_found" ? "unknown_connector" : e.kind, message,
                                io ? "" : "params.name"));
  }
  proto::McpRemoveResult result{.name = p.name, .file = path, .removed = true, .warning = out->warning};
  log::info("connector {} removed from {}", p.name, path);
  s.connectors().file_written();
  auto answer = [&s, reply, root, env](const proto::McpRemoveResult& result) {
    s.connectors().refresh(env, root, Connectors::Restart::kMay);
    reply->ok(json::value_from(result));
  };
  if (!p.project) return answer(std::move(result));
  s.connectors().consent().forget(root, p.name, [answer, result](boost::system::result<void, std::string> r) mutable {
    if (!r) result.consent_error = r.error();
    answer(result);
  });
}

}  // namespace

}  // namespace oppx::daemon
