// oppx mcp list|get|tools|call|reconnect: the daemon's connectors, as a user and a script see
// them. Every listing has --json (the daemon's reply as it is); values of headers and env come
// masked from the daemon already.
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "common/text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace oppx::cli {

namespace json = boost::json;

namespace {

constexpr std::chrono::milliseconds kMcpTimeout{60'000};
// `oppx mcp reconnect <name>` waits for the daemon's LOGIN_TIMEOUT (180 s) and a little more.
constexpr std::chrono::milliseconds kReconnectTimeout{200'000};

std::string str(const json::object& o, std::string_view k) {
  const json::value* v = o.if_contains(k);
  return v && v->is_string() ? std::string(v->as_string()) : "";
}

// Server text may hold escapes meant for a terminal: shown escaped, never obeyed.
std::string printable(std::string_view s) { return escape_controls(s, true); }

std::string first_sentence(std::string_view d, std::size_t max) {
  auto end = d.find(". ");
  if (auto nl = d.find('\n'); nl < end) end = nl;
  std::string s(d.substr(0, end == std::string_view::npos ? d.size() : end));
  if (s.size() > max) s = s.substr(0, max - 1) + "…";
  return printable(s);
}

// The numbered steps back under a connector or an error, indented by `indent`.
void print_steps(std::FILE* to, const json::object& o, std::string_view indent) {
  const json::value* steps = o.if_contains("steps");
  if (!steps || !steps->is_array()) return;
  int n = 0;
  for (auto& s : steps->as_array()) {
    if (s.is_string()) fmt::print(to, "{}{}. {}\n", indent, ++n, printable(s.as_string()));
  }
}

using NoteHandler = std::function<void(const std::string& method, const json::value& params)>;

// Runs one method; prints --json or hands the result to `show`. Notifications go to `on_note`.
int run(Context& ctx, const Command& self, std::string_view method, json::object params, bool as_json,
        const std::function<int(const json::value&)>& show, NoteHandler on_note = {},
        std::chrono::milliseconds timeout = kMcpTimeout) {
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  conn->client.on_notification(std::move(on_note));
  auto r = conn->client.call(method, params, timeout);
  if (!r) {
    fmt::print(stderr, "oppx: {}\n", printable(r.error().message));
    // A connector that is down says why and what to do (data.reason, data.steps).
    if (r.error().kind == "connector_down") print_steps(stderr, r.error().data, "  ");
    if (r.error().kind == "unknown_connector") return kExitUsage;
    return kExitFailed;
  }
  (void)self;
  if (as_json) {
    fmt::print("{}\n", json::serialize(*r));
    return kExitOk;
  }
  return show(*r);
}

void print_entry(const json::object& c) {
  std::string what = str(c, "type") == "http" ? str(c, "url") : str(c, "command");
  if (const json::value* a = c.if_contains("args"); a && a->is_array()) {
    for (auto& arg : a->as_array()) what += " " + std::string(arg.as_string());
  }
  bool cached = c.contains("cached") && c.at("cached") == json::value(true);
  fmt::print("{:<16} {:<9} {:>3} tools{}  {}\n", str(c, "name"), str(c, "state"), c.at("tools").as_int64(),
             cached ? " (last run)" : "", printable(what));
  if (!str(c, "reason").empty()) fmt::print("    {}\n", printable(str(c, "reason")));
  print_steps(stdout, c, "    ");
}

int list(Context& ctx) {
  const Command& self = *find_command("mcp", "list");
  bool as_json = take_flag(ctx.args, "--json");
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);
  return run(ctx, self, "mcp/list", {}, as_json, [](const json::value& v) {
    const json::object& o = v.as_object();
    for (auto& w : o.at("warnings").as_array()) fmt::print(stderr, "oppx: warning: {}\n", std::string(w.as_string()));
    if (o.contains("error")) fmt::print(stderr, "oppx: {}\n", str(o, "error"));
    const json::array& list = o.at("connectors").as_array();
    if (list.empty()) {
      fmt::print("No connectors in {}.\n", str(o, "config"));
      return kExitOk;
    }
    for (auto& c : list) print_entry(c.as_object());
    return kExitOk;
  });
}

int tools(Context& ctx) {
  const Command& self = *find_command("mcp", "tools");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  return run(ctx, self, "mcp/tools", {{"name", ctx.args[0]}}, as_json, [name = ctx.args[0]](const json::value& v) {
    const json::object& o = v.as_object();
    bool cached = o.contains("cached") && o.at("cached") == json::value(true);
    if (cached) {
      fmt::print(stderr, "oppx: {} is still starting; these are its tools from its last run\n", name);
    } else if (str(o, "state") != "running") {
      fmt::print(stderr, "oppx: {} is {}: {}\n", name, str(o, "state"), printable(str(o, "reason")));
      print_steps(stderr, o, "  ");
      return kExitFailed;
    }
    for (auto& t : o.at("tools").as_array()) {
      const json::object& tool = t.as_object();
      fmt::print("{}.{}: {}\n", name, printable(str(tool, "name")), first_sentence(str(tool, "description"), 140));
    }
    return kExitOk;
  });
}

int call(Context& ctx) {
  const Command& self = *find_command("mcp", "call");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() < 2 || ctx.args.size() > 3)
    return usage_error(self, "give a connector, a tool and optionally JSON arguments");
  json::object params{{"connector", ctx.args[0]}, {"tool", ctx.args[1]}};
  if (ctx.args.size() == 3) {
    boost::system::error_code ec;
    json::value a = json::parse(ctx.args[2], ec);
    if (ec || !a.is_object())
      return usage_error(self, "the arguments must be a JSON object, e.g. '{\"message\":\"hi\"}'");
    params["arguments"] = a;
  }
  // Progress the server reports goes to stderr as it comes; the result alone goes to stdout.
  params["progress_token"] = 1;
  auto progress = [tool = ctx.args[1]](const std::string& method, const json::value& p) {
    if (method != "tools/progress" || !p.is_object()) return;
    const json::object& o = p.as_object();
    auto number = [&o](std::string_view k) {
      const json::value* v = o.if_contains(k);
      return v && v->is_number() ? fmt::format("{}", v->to_number<double>()) : std::string();
    };
    std::string total = number("total");
    std::string message = str(o, "message");
    fmt::print(stderr, "oppx: {}: {}{}{}\n", printable(tool), number("progress"), total.empty() ? "" : "/" + total,
               message.empty() ? "" : " " + printable(message));
  };
  // --json prints the reply as it is, and keeps the exit status of isError as well.
  int rc = run(
      ctx, self, "tools/call", params, false,
      [as_json](const json::value& v) {
        const json::object& o = v.as_object();
        if (as_json) {
          fmt::print("{}\n", json::serialize(v));
        } else {
          fmt::print("{}\n", printable(str(o, "text")));
        }
        return o.at("isError") == json::value(true) ? kExitFailed : kExitOk;
      },
      progress);
  return rc;
}

int reconnect(Context& ctx) {
  const Command& self = *find_command("mcp", "reconnect");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() > 1) return usage_error(self, "name at most one connector");
  json::object params;
  if (!ctx.args.empty()) params["name"] = ctx.args[0];
  return run(
      ctx, self, "mcp/reconnect", params, as_json,
      [](const json::value& v) {
        for (auto& c : v.as_object().at("connectors").as_array()) print_entry(c.as_object());
        return kExitOk;
      },
      {}, kReconnectTimeout);
}

}  // namespace

std::vector<Command> mcp_commands() {
  return {
      {"mcp", "list", "[--json]", "List your connectors with their state, tool count and, when not running, why.",
       "Connectors are read from $OPPX_MCP_CONFIG, else mcp.json next to config.json\n"
       "($XDG_CONFIG_HOME/oppx/mcp.json). Edits are picked up at the next command.",
       list},
      {"mcp", "tools", "<name> [--json]", "Show a connector's tools, one line each, as the model sees them.",
       "While it is starting, its tools from its last run (same definition) are shown at once.", tools},
      {"mcp", "call", "<name> <tool> [json-arguments] [--json]", "Call one tool and print its result.",
       "Progress the server reports is printed to stderr while the call runs (`oppx: <tool>: 2/5 …`).\n"
       "Exit status 1 when the tool reports an error (isError).",
       call},
      {"mcp", "reconnect", "[name] [--json]", "Start one connector again, or all of them.",
       "A named connector gets 3 minutes to start, time enough to log in in the browser (mcp-remote);\n"
       "all of them get 30 s each.",
       reconnect},
  };
}

}  // namespace oppx::cli
