// oppx mcp list|get|tools|call|reconnect: the daemon's connectors, as a user and a script see
// them. Every listing has --json (the daemon's reply as it is); values of headers and env come
// masked from the daemon already. Text from servers and files is printed as it is: the filter of
// cli/output.h escapes it on the way to the terminal.
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/output.h"
#include "cli/probe.h"
#include "common/tool_text.h"
#include "common/text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

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

// The numbered steps back under a connector or an error, indented by `indent`.
void print_steps(std::FILE* to, const json::object& o, std::string_view indent) {
  const json::value* steps = o.if_contains("steps");
  if (!steps || !steps->is_array()) return;
  int n = 0;
  for (auto& s : steps->as_array()) {
    if (s.is_string()) fmt::print(to, "{}{}. {}\n", indent, ++n, std::string_view(s.as_string()));
  }
}

using NoteHandler = std::function<void(const std::string& method, const json::value& params)>;

using Show = std::function<int(const json::value&)>;

// Runs one method; prints --json or hands the result to `show`. Notifications go to `on_note`.
// With --json the exit status is `json_status`'s (the same as the text's, where it varies).
// `complete` adds to a result what the client asks elsewhere (the probe's share), before either is printed.
int run(Context& ctx, const Command& self, std::string_view method, json::object params, bool as_json, const Show& show,
        NoteHandler on_note = {}, std::chrono::milliseconds timeout = kMcpTimeout, const Show& json_status = {},
        const std::function<void(json::value&)>& complete = {}) {
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  conn->client.on_notification(std::move(on_note));
  auto r = conn->client.call(method, params, timeout);
  if (r && complete) complete(*r);
  if (!r) {
    fmt::print(stderr, "oppx: {}\n", r.error().message);
    // A connector that is down says why and what to do (data.reason, data.steps).
    if (r.error().kind == "connector_down") print_steps(stderr, r.error().data, "  ");
    // A script asked for JSON: it gets the error as JSON too (kind, reason, steps), on stdout.
    if (as_json) fmt::print("{}", json_line(json::object{{"error", r.error().to_json()}}));
    // A definition that cannot be used is the caller's argument; a name that matches no
    // connector is a command that failed (as in `claude mcp`).
    if (r.error().kind == "invalid_definition") return kExitUsage;
    return kExitFailed;
  }
  (void)self;
  if (as_json) {
    fmt::print("{}", json_line(*r));
    return json_status ? json_status(*r) : kExitOk;
  }
  return show(*r);
}

std::string what_runs(const json::object& c) {
  if (str(c, "type") == "http") return str(c, "url");
  std::string what = shell_word(str(c, "command"));
  if (const json::value* a = c.if_contains("args"); a && a->is_array()) {
    for (auto& arg : a->as_array()) what += " " + shell_word(arg.as_string());
  }
  return what;
}

std::string pairs(const json::object& c, std::string_view key, std::string_view sep) {
  std::string out;
  if (const json::value* m = c.if_contains(key); m && m->is_object()) {
    for (auto& [k, v] : m->as_object()) {
      if (!out.empty()) out += ", ";
      out += std::string(k) + std::string(sep) + (v.is_string() ? std::string(v.as_string()) : "");
    }
  }
  return out;
}

std::string reads(const json::object& c) {
  std::string out;
  if (const json::value* r = c.if_contains("reads"); r && r->is_array()) {
    for (auto& v : r->as_array()) out += (out.empty() ? "${" : ", ${") + std::string(v.as_string()) + "}";
  }
  return out;
}

// The files of the repository it runs ("files" of a repository's connector), by path.
std::string runs(const json::object& c) {
  std::string out;
  if (const json::value* f = c.if_contains("files"); f && f->is_array()) {
    for (auto& file : f->as_array()) {
      if (file.is_object()) out += (out.empty() ? "" : ", ") + str(file.as_object(), "path");
    }
  }
  return out;
}

void print_entry(const json::object& c) {
  std::string name = str(c, "name");  // a name oppx cannot use is listed as written
  if (str(c, "source") == "project") name += " [repo]";
  bool cached = c.contains("cached") && c.at("cached") == json::value(true);
  fmt::print("{:<16} {:<9} {:>3} tools{}  {}\n", name, str(c, "state"), c.at("tools").as_int64(),
             cached ? " (last run)" : "", what_runs(c));
  if (str(c, "source") == "project" && c.contains("approve")) {
    // What the user is asked to approve, in full: environment and headers (values masked), the
    // variables it reads from the environment of the oppx command that starts it, and the files
    // of the repository it runs.
    if (std::string e = pairs(c, "env", "="); !e.empty()) fmt::print("    env: {}\n", e);
    if (std::string h = pairs(c, "headers", ": "); !h.empty()) fmt::print("    headers: {}\n", h);
    if (std::string r = reads(c); !r.empty()) fmt::print("    reads: {}\n", r);
    if (std::string r = runs(c); !r.empty()) fmt::print("    runs: {}\n", r);
  }
  if (!str(c, "reason").empty()) fmt::print("    {}\n", str(c, "reason"));
  print_steps(stdout, c, "    ");
}

void print_definition(const json::object& c, bool with_reason = true) {
  bool project = str(c, "source") == "project";
  fmt::print("{} ({} connector, from {})\n", str(c, "name"), project ? "repository" : "your own", str(c, "file"));
  fmt::print("  state:    {}\n", str(c, "state"));
  if (str(c, "type") == "http") {
    fmt::print("  url:      {}\n", str(c, "url"));
    if (std::string h = pairs(c, "headers", ": "); !h.empty()) fmt::print("  headers:  {}\n", h);
  } else {
    fmt::print("  command:  {}\n", what_runs(c));
    if (std::string e = pairs(c, "env", "="); !e.empty()) fmt::print("  env:      {}\n", e);
  }
  if (std::string r = reads(c); !r.empty())
    fmt::print("  reads:    {} (from the environment of the oppx command)\n", r);
  if (c.contains("tools") && c.at("tools").is_int64() && str(c, "state") == "running")
    fmt::print("  tools:    {}\n", c.at("tools").as_int64());
  if (project) {
    fmt::print("  root:     {}\n", str(c, "root"));
    fmt::print("  sha256:   {}\n", str(c, "sha256"));
    // The files of the repository it runs: the consent holds for them as they are.
    if (const json::value* f = c.if_contains("files"); f && f->is_array()) {
      std::string_view label = "  runs:     ";
      for (auto& file : f->as_array()) {
        if (!file.is_object()) continue;
        fmt::print("{}{} (sha256 {})\n", label, str(file.as_object(), "path"), str(file.as_object(), "sha256"));
        label = "            ";
      }
    }
    fmt::print("  consent:  {}\n", str(c, "consent"));
  }
  if (with_reason && !str(c, "reason").empty()) {
    fmt::print("  reason:   {}\n", str(c, "reason"));
    print_steps(stdout, c, "    ");
  }
  if (c.contains("log")) fmt::print("  log:      {}\n", str(c, "log"));
}

void print_list_notes(const json::object& o) {
  for (auto& w : o.at("warnings").as_array()) fmt::print(stderr, "oppx: warning: {}\n", std::string(w.as_string()));
  if (o.contains("error")) fmt::print(stderr, "oppx: {}\n", str(o, "error"));
  if (o.contains("consent_error")) fmt::print(stderr, "oppx: {}\n", str(o, "consent_error"));
  if (const json::value* p = o.if_contains("project"); p && p->is_object()) {
    if (const json::value* w = p->as_object().if_contains("warnings"); w && w->is_array()) {
      for (auto& s : w->as_array()) fmt::print(stderr, "oppx: warning: {}\n", std::string_view(s.as_string()));
    }
    if (p->as_object().contains("error")) fmt::print(stderr, "oppx: {}\n", str(p->as_object(), "error"));
  }
}

int list(Context& ctx) {
  const Command& self = *find_command("mcp", "list");
  bool as_json = take_flag(ctx.args, "--json");
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);
  return run(ctx, self, "mcp/list", {}, as_json, [](const json::value& v) {
    const json::object& o = v.as_object();
    print_list_notes(o);
    const json::array& list = o.at("connectors").as_array();
    if (list.empty()) {
      fmt::print("No connectors in {}", str(o, "config"));
      if (const json::value* p = o.if_contains("project"); p && p->is_object())
        fmt::print(" or {}", str(p->as_object(), "config"));
      fmt::print(".\n");
      return kExitOk;
    }
    for (auto& c : list) print_entry(c.as_object());
    return kExitOk;
  });
}

int get(Context& ctx) {
  const Command& self = *find_command("mcp", "get");
  bool as_json = take_flag(ctx.args, "--json");
  bool show_values = take_flag(ctx.args, "--show-values");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  json::object params{{"name", ctx.args[0]}};
  if (show_values) params["show_values"] = true;
  return run(ctx, self, "mcp/get", std::move(params), as_json, [](const json::value& v) {
    const json::object& o = v.as_object();
    print_definition(o);
    if (const json::value* h = o.if_contains("hides"); h && h->is_object()) {
      fmt::print("\nIt hides the repository's connector of the same name:\n");
      print_definition(h->as_object());
    }
    return kExitOk;
  });
}

// approve / deny: show the definition as the daemon has it, then decide on exactly that one (its
// sha256): a file changed in between is refused by the daemon, never approved unseen.
int decide(Context& ctx, std::string_view command, bool approve) {
  const Command& self = *find_command("mcp", command);
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  auto got = conn->client.call("mcp/get", json::object{{"name", ctx.args[0]}}, kMcpTimeout);
  if (!got) {
    fmt::print(stderr, "oppx: {}\n", got.error().message);
    if (as_json) fmt::print("{}", json_line(json::object{{"error", got.error().to_json()}}));
    return kExitFailed;
  }
  json::object def = got->as_object();
  if (str(def, "source") != "project") {
    if (const json::value* h = def.if_contains("hides"); h && h->is_object()) {
      def = h->as_object();
    } else {
      fmt::print(stderr, "oppx: {} is your own connector (from {}); only a repository's connectors need approval\n",
                 ctx.args[0], str(def, "file"));
      return kExitUsage;
    }
  }
  // Decided on the sha256 of what `def` shows, and of the files it runs; printed once the daemon
  // took it (a hidden or changed definition, or a file changed since, is refused, and then nothing
  // was approved to show).
  json::object params{{"name", ctx.args[0]}, {"sha256", str(def, "sha256")}};
  if (const json::value* f = def.if_contains("files"); f && f->is_array()) {
    json::object files;
    for (auto& file : f->as_array()) {
      if (file.is_object()) files[str(file.as_object(), "path")] = str(file.as_object(), "sha256");
    }
    params["files"] = std::move(files);
  }
  auto r = conn->client.call(approve ? "consent/approve" : "consent/deny", params, kMcpTimeout);
  if (!r) {
    fmt::print(stderr, "oppx: {}\n", r.error().message);
    if (as_json) fmt::print("{}", json_line(json::object{{"error", r.error().to_json()}}));
    return kExitFailed;
  }
  // The answer is the connector as it is now; a hidden repository's one is under `hides`.
  json::object now = r->as_object();
  if (const json::value* h = now.if_contains("hides"); h && h->is_object()) now = h->as_object();
  std::string state = str(now, "state");
  int rc = approve && state != "running" ? kExitFailed : kExitOk;
  if (as_json) {
    fmt::print("{}", json_line(*r));
    return rc;
  }
  fmt::print("{} this definition:\n", approve ? "Approved" : "Denied");
  print_definition(now, false);
  fmt::print("\n");
  if (state == "hidden") {
    fmt::print("{} stays off while your own connector of that name exists (remove or rename yours first).\n",
               ctx.args[0]);
  } else if (!approve) {
    fmt::print("{} stays waiting until you approve it (`oppx mcp approve {}`).\n", ctx.args[0], ctx.args[0]);
  } else if (state == "running") {
    std::int64_t n = now.at("tools").as_int64();
    fmt::print("{} is running with {} tool{}.\n", ctx.args[0], n, n == 1 ? "" : "s");
  } else {
    fmt::print("{} did not start ({}): {}\n", ctx.args[0], state, str(now, "reason"));
  }
  return rc;
}

int approve(Context& ctx) { return decide(ctx, "approve", true); }
int deny(Context& ctx) { return decide(ctx, "deny", false); }

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
      fmt::print(stderr, "oppx: {} is {}: {}\n", name, str(o, "state"), str(o, "reason"));
      print_steps(stderr, o, "  ");
      return kExitFailed;
    }
    for (auto& t : o.at("tools").as_array()) {
      const json::object& tool = t.as_object();
      fmt::print("{}\n", tool_line(name, tool));
    }
    return kExitOk;
  });
}

int call(Context& ctx) {
  const Command& self = *find_command("mcp", "call");
  bool as_json = take_flag(ctx.args, "--json");
  // The daemon's limit for the call (its default: 120 s); this command waits a little longer, so
  // that the daemon's answer (the tool did not answer in time, with the steps) is what is shown.
  std::chrono::milliseconds limit{120'000};
  if (auto t = std::find(ctx.args.begin(), ctx.args.end(), "--timeout"); t != ctx.args.end()) {
    std::string v = t + 1 != ctx.args.end() ? *(t + 1) : "";
    int seconds = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || seconds < 1 || seconds > 3600)
      return usage_error(self, "--timeout takes a number of seconds from 1 to 3600");
    limit = std::chrono::seconds(seconds);
    ctx.args.erase(t, t + 2);
  }
  if (ctx.args.size() < 2 || ctx.args.size() > 3)
    return usage_error(self, "give a connector, a tool and optionally JSON arguments");
  json::object params{{"connector", ctx.args[0]}, {"tool", ctx.args[1]}, {"timeout_ms", limit.count()}};
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
    fmt::print(stderr, "oppx: {}: {}{}{}\n", tool, number("progress"), total.empty() ? "" : "/" + total,
               message.empty() ? "" : " " + message);
  };
  // --json prints the reply (or the error) as it is, and keeps the exit status of isError as well.
  auto status = [](const json::value& v) {
    return v.as_object().at("isError") == json::value(true) ? kExitFailed : kExitOk;
  };
  return run(
      ctx, self, "tools/call", params, as_json,
      [status](const json::value& v) {
        fmt::print("{}\n", str(v.as_object(), "text"));
        return status(v);
      },
      progress, limit + std::chrono::seconds(15), status);
}

int reconnect(Context& ctx) {
  const Command& self = *find_command("mcp", "reconnect");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() > 1) return usage_error(self, "name at most one connector");
  json::object params;
  if (!ctx.args.empty()) params["name"] = ctx.args[0];
  // Exit status 1 when what was reconnected is not running afterwards (a named one), or when
  // any of them failed (all).
  std::string name = ctx.args.empty() ? "" : ctx.args[0];
  auto concerned = [name](const json::object& o) {
    return name.empty() || (str(o, "name") == name && str(o, "state") != "hidden");
  };
  auto status = [name, concerned](const json::value& v) {
    for (auto& c : v.as_object().at("connectors").as_array()) {
      const json::object& o = c.as_object();
      if (concerned(o) && (name.empty() ? str(o, "state") == "failed" : str(o, "state") != "running"))
        return kExitFailed;
    }
    return kExitOk;
  };
  return run(
      ctx, self, "mcp/reconnect", params, as_json,
      [concerned, status](const json::value& v) {
        print_list_notes(v.as_object());
        for (auto& c : v.as_object().at("connectors").as_array()) {
          if (concerned(c.as_object())) print_entry(c.as_object());
        }
        return status(v);
      },
      {}, kReconnectTimeout, status);
}

int send_add(Context& ctx, const Command& self, const std::string& name, json::object def, bool project, bool force,
             bool as_json) {
  json::object params{{"name", name}, {"definition", std::move(def)}, {"project", project}, {"force", force}};
  return run(ctx, self, "mcp/add", std::move(params), as_json, print_added, {}, kMcpTimeout, {}, complete_probe);
}

int add(Context& ctx) {
  const Command& self = *find_command("mcp", "add");
  std::vector<std::string> before, command;
  auto dash = std::find(ctx.args.begin(), ctx.args.end(), "--");
  before.assign(ctx.args.begin(), dash);
  if (dash != ctx.args.end()) command.assign(dash + 1, ctx.args.end());
  bool as_json = take_flag(before, "--json");
  bool project = take_flag(before, "--project");
  bool force = take_flag(before, "--force");
  std::string name, url;
  json::object env, headers;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const std::string& a = before[i];
    auto value = [&](std::string_view flag) -> std::optional<std::string> {
      if (i + 1 >= before.size()) return std::nullopt;
      (void)flag;
      return before[++i];
    };
    if (a == "-e" || a == "--env") {
      auto kv = value(a);
      auto eq = kv ? kv->find('=') : std::string::npos;
      if (!kv || eq == std::string::npos || eq == 0) return usage_error(self, a + " takes KEY=VALUE");
      if (env.contains(kv->substr(0, eq)))
        return usage_error(self, fmt::format("{} {} is given twice; give each variable once", a, kv->substr(0, eq)));
      env[kv->substr(0, eq)] = kv->substr(eq + 1);
    } else if (a == "-H" || a == "--header") {
      auto h = value(a);
      auto colon = h ? h->find(':') : std::string::npos;
      if (!h || colon == std::string::npos || colon == 0) return usage_error(self, a + " takes 'Name: value'");
      std::string v = h->substr(colon + 1);
      if (!v.empty() && v[0] == ' ') v.erase(0, 1);
      // Repeated exactly, one would overwrite the other here; in another case the daemon says so.
      if (headers.contains(h->substr(0, colon)))
        return usage_error(self, fmt::format("{} {} is given twice; give each header once", a, h->substr(0, colon)));
      headers[h->substr(0, colon)] = v;
    } else if (a == "--url") {
      auto u = value(a);
      if (!u) return usage_error(self, "--url takes a URL");
      url = *u;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error(self, "unknown option " + a);
    } else if (name.empty()) {
      name = a;
    } else {
      return usage_error(self, "unexpected argument " + a + " (put the command after --)");
    }
  }
  if (name.empty()) return usage_error(self, "name the connector");
  json::object def;
  if (!url.empty()) {
    if (!command.empty()) return usage_error(self, "give either --url or a command after --, not both");
    if (!env.empty()) return usage_error(self, "-e is for a command's environment; use -H for an HTTP connector");
    def = {{"type", "http"}, {"url", url}};
    if (!headers.empty()) def["headers"] = headers;
  } else {
    if (command.empty()) return usage_error(self, "give the command after --, or --url <url>");
    if (!headers.empty()) return usage_error(self, "-H is for an HTTP connector (--url)");
    def = {{"command", command[0]}};
    if (command.size() > 1) {
      json::array args;
      for (std::size_t i = 1; i < command.size(); ++i) args.emplace_back(command[i]);
      def["args"] = std::move(args);
    }
    if (!env.empty()) def["env"] = env;
  }
  return send_add(ctx, self, name, std::move(def), project, force, as_json);
}

int add_json(Context& ctx) {
  const Command& self = *find_command("mcp", "add-json");
  bool as_json = take_flag(ctx.args, "--json");
  bool project = take_flag(ctx.args, "--project");
  bool force = take_flag(ctx.args, "--force");
  if (ctx.args.size() != 2) return usage_error(self, "give a name and the JSON of its entry");
  boost::system::error_code ec;
  json::stream_parser parser;
  std::size_t used = parser.write(ctx.args[1].data(), ctx.args[1].size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) {
    return usage_error(self,
                       fmt::format("the definition is not valid JSON: {} at character {} (quote it in single "
                                   "quotes as one argument, e.g. '{{\"command\":\"npx\",\"args\":[\"-y\",\"pkg\"]}}')",
                                   ec.message(), used + 1));
  }
  json::value v = parser.release();
  if (!v.is_object())
    return usage_error(self,
                       "the definition must be a JSON object, e.g. '{\"command\":\"npx\",\"args\":[\"-y\",\"pkg\"]}'");
  // A whole pasted block works too: {"mcpServers":{"<name>":{…}}} (or VS Code's "servers"), its
  // entry of that name, or its only entry under the name given.
  const json::value* block = v.as_object().if_contains("mcpServers");
  if (!block) block = v.as_object().if_contains("servers");
  if (block && block->is_object()) {
    const json::object& entries = block->as_object();
    const json::value* e = entries.if_contains(ctx.args[0]);
    if (!e && entries.size() == 1) {
      e = &entries.begin()->value();
      fmt::print(stderr, "oppx: the pasted block's only entry is named {}; adding it as {}\n",
                 std::string_view(entries.begin()->key()), ctx.args[0]);
    }
    if (!e) {
      std::string names;
      for (auto& [k, val] : entries) names += (names.empty() ? "" : ", ") + std::string(k);
      return usage_error(self, entries.empty()
                                   ? "the pasted block has no entries"
                                   : fmt::format("the pasted block has {} entries ({}) and none named {}; give the "
                                                 "name of the one you want, or paste that entry alone",
                                                 entries.size(), names, ctx.args[0]));
    }
    if (!e->is_object()) return usage_error(self, "the pasted block's entry is not a JSON object");
    v = *e;
  }
  return send_add(ctx, self, ctx.args[0], v.as_object(), project, force, as_json);
}

int remove(Context& ctx) {
  const Command& self = *find_command("mcp", "remove");
  bool as_json = take_flag(ctx.args, "--json");
  bool project = take_flag(ctx.args, "--project");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  return run(ctx, self, "mcp/remove", {{"name", ctx.args[0]}, {"project", project}}, as_json, [](const json::value& v) {
    const json::object& o = v.as_object();
    if (o.contains("warning")) fmt::print(stderr, "oppx: warning: {}\n", str(o, "warning"));
    fmt::print("Removed {} from {}\n", str(o, "name"), str(o, "file"));
    return kExitOk;
  });
}

}  // namespace

std::vector<Command> mcp_commands() {
  return {
      {"mcp", "list", "[--json]",
       "List your connectors and this repository's, with state, tool count and, when not running, why.",
       "Yours are read from $OPPX_MCP_CONFIG, else mcp.json next to config.json\n"
       "($XDG_CONFIG_HOME/oppx/mcp.json); the repository's from .mcp.json at its root (the\n"
       "nearest folder above this one with .git, else this folder). Edits are picked up at the\n"
       "next command. A repository's connector runs only once you approve it: until then it is\n"
       "`waiting`, shown with its full command or URL, env, headers (values masked), the\n"
       "variables it reads, the files of the repository it runs, and the `oppx mcp approve <name>`\n"
       "line. On a shared name yours wins and the repository's is shown as hidden.",
       list},
      {"mcp", "add", "<name> [--project] [--force] [--json] [-e KEY=VALUE]... -- <command> [args...]",
       "Add a connector (a command over stdio, or --url <url> [-H 'Name: value']... over HTTP).",
       "Also: oppx mcp add <name> [--project] [--force] --url <https://…> [-H 'Name: value']...\n"
       "Saved to your mcp.json (0600), or with --project to the repository's .mcp.json, which\n"
       "counts as your consent to exactly that definition. --force replaces one of the same name.\n"
       "Values are written as given: single-quote '${VAR}' so that it stays a reference, expanded\n"
       "from the environment of the oppx command that starts the connector. Names: letters,\n"
       "digits, '-' and '_'. It then starts the connector once and prints its tools as the model\n"
       "sees them, their token cost, and their share of the model's context (asked of the model\n"
       "server in config.json \"server\" or $OPPX_SERVER, 4 s limit), with SMALL_CONTEXT and\n"
       "HEAVY_SHARE warnings. One that does not start is saved anyway, with the reason.",
       add},
      {"mcp", "add-json", "<name> '<json>' [--project] [--force] [--json]",
       "Add a connector from a pasted mcpServers entry (or a whole {\"mcpServers\":…} block).",
       "The same as `oppx mcp add`, with the entry's JSON as given. From a pasted block\n"
       "({\"mcpServers\":…}, or VS Code's {\"servers\":…}) it takes the entry named <name>, else\n"
       "the block's only entry, under <name> (and says so).",
       add_json},
      {"mcp", "remove", "<name> [--project] [--json]",
       "Remove a connector from your mcp.json (or, with --project, the repository's .mcp.json).", "", remove},
      {"mcp", "get", "<name> [--show-values] [--json]",
       "Show one connector: its definition (values masked), source, state, file.",
       "For a repository's connector also its root, the sha256 of its definition, the files of the\n"
       "repository it runs with theirs (runs:), and your consent.\n"
       "--show-values prints env, headers, args and URL unmasked, as written in the file (a\n"
       "${VAR} stays a reference, never its value): review a repository's connector so before\n"
       "you approve it, since a literal value (NODE_OPTIONS=--require …) changes what runs.",
       get},
      {"mcp", "approve", "<name> [--json]", "Allow this repository's connector <name> to run, as it is defined now.",
       "Run it inside the repository. It prints the definition it approves; the approval holds for\n"
       "exactly that definition (a sha256 kept in $XDG_STATE_HOME/oppx/mcp-approved.json) and for\n"
       "the files of the repository it runs (its command when that is a path, arguments that name\n"
       "a program or script there) as they are now: any change to either makes the connector wait\n"
       "for your approval again. Exit status 1 when it was approved but did not start (the reason\n"
       "is printed).",
       approve},
      {"mcp", "deny", "<name> [--json]", "Keep this repository's connector <name> from running.",
       "Recorded for exactly this definition; `oppx mcp approve <name>` changes your mind.", deny},
      {"mcp", "tools", "<name> [--json]", "Show a connector's tools, one line each, as the model sees them.",
       "While it is starting, its tools from its last run (same definition) are shown at once.", tools},
      {"mcp", "call", "<name> <tool> [json-arguments] [--timeout SECONDS] [--json]",
       "Call one tool and print its result.",
       "Progress the server reports is printed to stderr while the call runs (`oppx: <tool>: 2/5 …`).\n"
       "--timeout gives the tool up to SECONDS (1 to 3600; default 120) to answer; then the call is\n"
       "cancelled on the server. Exit status 1 when the tool reports an error (isError) or fails.",
       call},
      {"mcp", "reconnect", "[name] [--json]", "Start one connector again, or all of them.",
       "A named connector gets 3 minutes to start, time enough to log in in the browser (mcp-remote);\n"
       "all of them get 30 s each. Exit status 1 when the named one is not running afterwards, or\n"
       "when any of them failed.",
       reconnect},
  };
}

}  // namespace oppx::cli
