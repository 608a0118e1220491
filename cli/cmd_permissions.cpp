// oppx permissions [list] | allow RULE | deny RULE | remove RULE: the permission rules of the
// project of the current folder, kept by the daemon in user state (never in the repository).
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/output.h"
#include "common/text.h"

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

std::string str(const json::object& o, std::string_view k) {
  const json::value* v = o.if_contains(k);
  return v && v->is_string() ? std::string(v->as_string()) : "";
}

void print_rules(const json::object& o) {
  fmt::print("Permission rules for {}\n", escape_controls(str(o, "project")));
  for (const char* list : {"allow", "deny"}) {
    const json::array& a = o.at(list).as_array();
    if (a.empty()) {
      fmt::print("  {}: none\n", list);
      continue;
    }
    fmt::print("  {}:\n", list);
    for (const auto& r : a) fmt::print("    {}\n", escape_controls(std::string_view(r.as_string()), false));
  }
  fmt::print("Kept in {}\n", escape_controls(str(o, "file")));
  if (!str(o, "problem").empty()) fmt::print(stderr, "oppx: warning: {}\n", escape_controls(str(o, "problem")));
}

int call(Context& ctx, std::string_view method, json::object params, bool as_json) {
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
    if (r.error().kind == "invalid_params") {
      fmt::print(stderr, "{}\n", kRuleForms);
      return kExitUsage;
    }
    return kExitFailed;
  }
  if (as_json) {
    fmt::print("{}", json_line(*r));
    return kExitOk;
  }
  const json::object& o = r->as_object();
  if (method != "permissions/list") {
    std::string rule = escape_controls(str(o, "rule"));
    bool changed = o.at("changed") == json::value(true);
    if (method == "permissions/remove") {
      fmt::print("Removed {}\n", rule);
    } else {
      fmt::print("{} {}{}\n", method == "permissions/allow" ? "Allowed" : "Denied", rule,
                 changed ? "" : " (it was already)");
    }
  }
  print_rules(o);
  return kExitOk;
}

int list(Context& ctx) {
  const Command& self = *find_command("permissions", "list");
  bool as_json = take_flag(ctx.args, "--json");
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);
  return call(ctx, "permissions/list", {}, as_json);
}

int rule_command(Context& ctx, std::string_view name, std::string_view method) {
  const Command& self = *find_command("permissions", name);
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 1) return usage_error(self, "name one rule");
  return call(ctx, method, json::object{{"rule", ctx.args[0]}}, as_json);
}

int allow(Context& ctx) { return rule_command(ctx, "allow", "permissions/allow"); }
int deny(Context& ctx) { return rule_command(ctx, "deny", "permissions/deny"); }
int remove(Context& ctx) { return rule_command(ctx, "remove", "permissions/remove"); }

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
