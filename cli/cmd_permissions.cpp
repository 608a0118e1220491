// oppx permissions [list] | allow RULE | deny RULE | remove RULE: the permission rules of the
// project of the current folder, kept by the daemon in user state (never in the repository).
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/output.h"
#include "common/text.h"
#include "proto/session_api.h"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace oppx::cli {

namespace json = boost::json;

namespace {

constexpr std::string_view kRuleForms =
    "Rules: <connector>.<tool> (one tool), <connector>.* (every tool of a connector), run:<command\n"
    "prefix> (a shell command starting with those words; one that chains or redirects is still\n"
    "asked). A deny rule wins over an allow rule and over a tool marked read-only. Read-only tools\n"
    "run without asking; anything else is asked in the chat and declined by `oppx -p`.";

void print_rules(const proto::PermissionsListResult& l) {
  fmt::print("Permission rules for {}\n", escape_controls(l.project));
  for (const auto& [name, rules] : {std::pair{"allow", &l.allow}, std::pair{"deny", &l.deny}}) {
    if (rules->empty()) {
      fmt::print("  {}: none\n", name);
      continue;
    }
    fmt::print("  {}:\n", name);
    for (const auto& r : *rules) fmt::print("    {}\n", escape_controls(r, false));
  }
  fmt::print("Kept in {}\n", escape_controls(l.file));
  if (!l.problem.empty()) fmt::print(stderr, "oppx: warning: {}\n", escape_controls(l.problem));
}

// Calls `method` with `params` and decodes its result as `Result`: the result, or the exit code.
template <class Result>
boost::system::result<Result, int> call(Context& ctx, std::string_view method, const json::value& params,
                                        bool as_json) {
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  auto r = conn->client.call(method, params, kCallTimeout);
  if (!r) {
    if (as_json) fmt::print("{}", json_line(json::object{{"error", r.error().to_json()}}));
    fmt::print(stderr, "oppx: {}\n", escape_controls(r.error().message));
    // A rule that is not one is the caller's argument; one that is not there is a failed command.
    if (r.error().kind == proto::kind::kInvalidParams) {
      fmt::print(stderr, "{}\n", kRuleForms);
      return kExitUsage;
    }
    return kExitFailed;
  }
  auto result = proto::decode<Result>(*r);
  if (!result) return unreadable_answer(result.error());
  if (as_json) fmt::print("{}", json_line(*r));  // the reply as the daemon sent it
  return *result;
}

int list(Context& ctx) {
  const Command& self = *find_command("permissions", "list");
  bool as_json = take_flag(ctx.args, "--json");
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);
  auto r = call<proto::PermissionsListResult>(ctx, proto::kPermissionsList,
                                              json::value_from(proto::PermissionsListParams{}), as_json);
  if (!r) return r.error();
  if (!as_json) print_rules(*r);
  return kExitOk;
}

int rule_command(Context& ctx, std::string_view name, std::string_view method) {
  const Command& self = *find_command("permissions", name);
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 1) return usage_error(self, "name one rule");
  proto::RuleParams params;
  params.rule = ctx.args[0];
  auto r = call<proto::RuleResult>(ctx, method, json::value_from(params), as_json);
  if (!r) return r.error();
  if (as_json) return kExitOk;
  std::string rule = escape_controls(r->rule);
  if (name == "remove") {
    fmt::print("Removed {}\n", rule);
  } else {
    fmt::print("{} {}{}\n", name == "allow" ? "Allowed" : "Denied", rule, r->changed ? "" : " (it was already)");
  }
  print_rules(*r);
  return kExitOk;
}

int allow(Context& ctx) { return rule_command(ctx, "allow", proto::kPermissionsAllow); }
int deny(Context& ctx) { return rule_command(ctx, "deny", proto::kPermissionsDeny); }
int remove(Context& ctx) { return rule_command(ctx, "remove", proto::kPermissionsRemove); }

}  // namespace

std::vector<Command> permissions_commands() {
  return {
      {"permissions", "list", "[--json]", "List this project's permission rules.", kRuleForms, list},
      {"permissions", "allow", "<rule> [--json]", "Let a tool, a connector's tools or a command run without asking.",
       kRuleForms, allow},
      {"permissions", "deny", "<rule> [--json]", "Never let a tool, a connector's tools or a command run.", kRuleForms,
       deny},
      {"permissions", "remove", "<rule> [--json]", "Remove a rule (from either list).", kRuleForms, remove},
  };
}

}  // namespace oppx::cli
