// The four commands of cli/mcp_offers.h: one daemon request each, its answer printed escaped
// (a server's words never reach the terminal raw), or as JSON with --json.
#include "cli/mcp_offers.h"

#include "cli/daemon_client.h"
#include "cli/output.h"
#include "common/text.h"
#include "proto/resources_api.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <chrono>

namespace oppx::cli {

namespace json = boost::json;

namespace {

constexpr std::chrono::milliseconds kLimit{40'000};

std::string str(const json::value& v, std::string_view key) {
  const json::object* o = v.if_object();
  const json::value* s = o ? o->if_contains(key) : nullptr;
  return s && s->is_string() ? escape_controls(s->as_string()) : std::string();
}

// Sends `method` and hands the decoded answer to `show`; the daemon's error says why.
template <class Result>
int ask(Context& ctx, std::string_view method, json::value params, bool as_json,
        const std::function<void(const Result&)>& show) {
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  auto r = conn->client.call(method, params, kLimit);
  if (!r) {
    fmt::print(stderr, "oppx: {}\n", escape_controls(r.error().message));
    if (as_json) fmt::print("{}", json_line(json::object{{"error", r.error().to_json()}}));
    return kExitFailed;
  }
  if (as_json) {
    fmt::print("{}", json_line(*r));
    return kExitOk;
  }
  auto decoded = proto::decode<Result>(*r);
  if (!decoded) {
    fmt::print(stderr, "oppx: {}\n", proto::unreadable_reply(decoded.error()));
    return kExitFailed;
  }
  show(*decoded);
  return kExitOk;
}

}  // namespace

int mcp_resources(Context& ctx) {
  const Command& self = *find_command("mcp", "resources");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  std::string name = ctx.args[0];
  return ask<proto::McpResourcesResult>(
      ctx, proto::kMcpResources, json::value_from(proto::McpOffersParams{name, ""}), as_json,
      [&name](const proto::McpResourcesResult& r) {
        for (const auto& res : r.resources) {
          std::string title = str(res, "title").empty() ? str(res, "name") : str(res, "title");
          std::string mime = str(res, "mimeType");
          fmt::print("@{}:{}  {}{}\n", escape_controls(name), str(res, "uri"), title,
                     mime.empty() ? "" : " (" + mime + ")");
        }
        for (const auto& t : r.templates)
          fmt::print("@{}:{}  {} (template)\n", escape_controls(name), str(t, "uriTemplate"), str(t, "name"));
        if (r.resources.empty() && r.templates.empty()) fmt::print(stderr, "oppx: {} offers no resources\n", name);
      });
}

int mcp_read(Context& ctx) {
  const Command& self = *find_command("mcp", "read");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 2) return usage_error(self, "name a connector and a resource's address");
  return ask<proto::McpReadResult>(
      ctx, proto::kMcpRead, json::value_from(proto::McpReadParams{ctx.args[0], ctx.args[1], ""}), as_json,
      [](const proto::McpReadResult& r) { fmt::print("{}\n", escape_controls(r.text, true)); });
}

int mcp_prompts(Context& ctx) {
  const Command& self = *find_command("mcp", "prompts");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  std::string name = ctx.args[0];
  return ask<proto::McpPromptsResult>(
      ctx, proto::kMcpPrompts, json::value_from(proto::McpOffersParams{name, ""}), as_json,
      [&name](const proto::McpPromptsResult& r) {
        for (const auto& p : r.prompts) {
          std::string args;
          const json::value* a = p.is_object() ? p.as_object().if_contains("arguments") : nullptr;
          for (const auto& arg : a && a->is_array() ? a->as_array() : json::array{}) {
            const json::value* req = arg.is_object() ? arg.as_object().if_contains("required") : nullptr;
            bool required = req && req->is_bool() && req->as_bool();
            args += fmt::format(" {}{}=…{}", required ? "" : "[", str(arg, "name"), required ? "" : "]");
          }
          std::string what = str(p, "description");
          fmt::print("/{}:{}{}{}{}\n", escape_controls(name), str(p, "name"), args, what.empty() ? "" : "  ", what);
        }
        if (r.prompts.empty()) fmt::print(stderr, "oppx: {} offers no prompts\n", name);
      });
}

int mcp_prompt(Context& ctx) {
  const Command& self = *find_command("mcp", "prompt");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() < 2) return usage_error(self, "name a connector and one of its prompts");
  proto::McpPromptParams params{ctx.args[0], ctx.args[1], "", {}};
  for (std::size_t i = 2; i < ctx.args.size(); ++i) {
    auto eq = ctx.args[i].find('=');
    if (eq == std::string::npos || eq == 0) return usage_error(self, "give arguments as name=value: " + ctx.args[i]);
    params.arguments[ctx.args[i].substr(0, eq)] = ctx.args[i].substr(eq + 1);
  }
  return ask<proto::McpPromptResult>(
      ctx, proto::kMcpPrompt, json::value_from(params), as_json, [](const proto::McpPromptResult& r) {
        for (const auto& m : r.messages)
          fmt::print("[{}]\n{}\n", escape_controls(m.role), escape_controls(m.text, true));
      });
}

std::vector<Command> mcp_offer_commands() {
  return {
      {"mcp", "resources", "<name> [--json]", "List a connector's resources and resource templates.",
       "One line each: @<name>:<uri> (what the chat attaches when a message holds it), its title\n"
       "and type; templates say so. Asked of the server as it runs (a lazy one starts for it).",
       mcp_resources},
      {"mcp", "read", "<name> <uri> [--json]", "Print one resource of a connector.",
       "Text as the server sends it (escaped); binary contents described by type and size.", mcp_read},
      {"mcp", "prompts", "<name> [--json]", "List a connector's prompts, with their arguments.",
       "One line each: /<name>:<prompt> (the chat's slash command for it) and its arguments,\n"
       "[optional] ones in brackets.",
       mcp_prompts},
      {"mcp", "prompt", "<name> <prompt> [arg=value …] [--json]", "Print the messages of a connector's prompt.",
       "Its arguments as name=value words.", mcp_prompt},
  };
}

}  // namespace oppx::cli
