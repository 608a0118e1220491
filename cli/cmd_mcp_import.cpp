// `oppx mcp import`: the servers another MCP client has (cli/mcp_import.h) set beside the
// connectors oppx has (mcp/list), shown with their values masked; with --yes each one is added
// through mcp/add, the daemon's own checked and atomic write, one at a time. A repository's
// servers (--project) are added without consent: each waits for `oppx mcp approve <name>`, which
// shows it unmasked, since this preview masks its values.
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/mcp_import.h"
#include "cli/output.h"
#include "common/text.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <chrono>

namespace oppx::cli {

namespace json = boost::json;
using namespace mcp_import;

namespace {

constexpr std::chrono::milliseconds kListTimeout{60'000};
// mcp/add answers once the connector runs or has failed: a first `npx` may download for a while.
constexpr std::chrono::milliseconds kAddTimeout{90'000};

struct Options {
  std::optional<Client> from;
  bool project = false, yes = false, force = false, as_json = false;
  std::string again() const {  // this command with --yes
    return fmt::format("oppx mcp import{}{}{} --yes", from ? " --from " + std::string(client_id(*from)) : "",
                       project ? " --project" : "", force ? " --force" : "");
  }
};

std::string str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::string what_runs(const json::object& def) {
  if (def.contains("url")) return str(def, "url");
  std::string what = shell_word(str(def, "command"));
  if (const json::value* a = def.if_contains("args"); a && a->is_array()) {
    for (const auto& x : a->as_array()) what += " " + shell_word(x.is_string() ? x.as_string() : "");
  }
  return what;
}

std::string pairs(const json::object& def, std::string_view key, std::string_view sep) {
  std::string out;
  const json::value* m = def.if_contains(key);
  for (const auto& [k, v] : m && m->is_object() ? m->as_object() : json::object{})
    out += fmt::format("{}{}{}{}", out.empty() ? "" : ", ", std::string_view(k), sep,
                       v.is_string() ? std::string_view(v.as_string()) : "");
  return out;
}

std::string counted(std::size_t n, std::string_view one) { return fmt::format("{} {}{}", n, one, n == 1 ? "" : "s"); }

void print_files(const std::vector<FileRead>& files) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> missing;
  for (const auto& f : files) {
    std::string who = fmt::format("{} ({})", client_title(f.source.client), f.source.scope);
    if (!f.error.empty()) {
      rows.push_back({who, escape_controls(f.error)});
    } else if (f.found) {
      rows.push_back({who, fmt::format("{}: {}", escape_controls(f.source.label()), counted(f.entries, "server"))});
    } else if (f.source.section.size() < 3) {  // this folder's entry in ~/.claude.json is no file of its own
      missing.push_back(fmt::format("{} ({})", client_title(f.source.client), escape_controls(f.source.path)));
    }
  }
  if (!rows.empty()) fmt::print("Found:\n");
  for (const auto& line : columns(rows)) fmt::print("  {}\n", line);
  if (!missing.empty()) {
    fmt::print("Nothing found in:\n");
    for (const auto& m : missing) fmt::print("  {}\n", m);
  }
}

// A repository's server is added unapproved: it runs once the user has seen it in full.
std::string waits(std::string_view name, bool project) {
  return project ? fmt::format(", to wait for `oppx mcp approve {}`", escape_controls(name)) : std::string();
}

void print_candidate(const Planned& p, const Options& opt) {
  const Candidate& c = *p.candidate;
  fmt::print("\n{}  from {} ({})\n", escape_controls(c.name), escape_controls(c.source.label()),
             client_title(c.source.client));
  if (p.action != Action::kRefused) {
    json::object shown = masked(c.definition);
    fmt::print("  {}{}\n", shown.contains("url") ? "url:     " : "command: ", escape_controls(what_runs(shown)));
    if (std::string e = pairs(shown, "env", "="); !e.empty()) fmt::print("  env:     {}\n", escape_controls(e));
    if (std::string h = pairs(shown, "headers", ": "); !h.empty()) fmt::print("  headers: {}\n", escape_controls(h));
    if (shown.contains("cwd")) fmt::print("  cwd:     {}\n", escape_controls(str(shown, "cwd")));
    if (shown.contains("disabled")) fmt::print("  disabled (it will not start until you enable it)\n");
    for (const auto& n : c.notes) fmt::print("  note:    {}\n", escape_controls(n));
  }
  switch (p.action) {
    case Action::kAdd:
      fmt::print("  -> {}{}\n", opt.yes ? "adding" : "would be added", waits(c.name, opt.project));
      break;
    case Action::kReplace:
      fmt::print("  -> {} oppx's connector of that name (--force){}\n", opt.yes ? "replacing" : "would replace",
                 waits(c.name, opt.project));
      break;
    case Action::kExists:
    case Action::kDuplicate:
      fmt::print("  -> skipped: {}\n", escape_controls(p.why));
      break;
    case Action::kRefused:
      fmt::print("  -> not importable: {}\n", escape_controls(p.why));
      break;
  }
}

// One mcp/add; the daemon's answer (or its error) as JSON, and a line that says how it went.
bool add_one(SyncClient& client, const Candidate& c, bool project, bool replace, bool as_json, json::object& record) {
  proto::McpAddParams params{
      .name = c.name, .definition = c.definition, .project = project, .force = replace, .consent = !project};
  auto r = client.call(proto::kMcpAdd, json::value_from(params), kAddTimeout);
  if (!r) {
    record["error"] = r.error().to_json();
    if (!as_json)
      fmt::print(stderr, "oppx: {} was not added: {}\n", escape_controls(c.name), escape_controls(r.error().message));
    return false;
  }
  record["result"] = *r;
  if (as_json) return true;
  auto added = proto::decode<proto::McpAddResult>(*r);
  if (!added) {
    unreadable_answer(added.error());
    return false;
  }
  if (!added->warning.empty()) fmt::print(stderr, "oppx: warning: {}\n", escape_controls(added->warning));
  if (!added->consent_error.empty()) fmt::print(stderr, "oppx: {}\n", escape_controls(added->consent_error));
  std::string how;
  if (const auto& e = added->connector; project && !(e && e->state == "running")) {
    how = fmt::format("; it waits for `oppx mcp approve {}`, which shows it in full", c.name);
  } else if (e && e->state == "running") {
    how = fmt::format(": running, {}", counted(e->tools ? e->tools->size() : e->tool_count, "tool"));
  } else if (e) {
    how = fmt::format("; it did not start ({}): {}", e->state, e->reason);
  }
  fmt::print("{} {} in {}{}\n", added->replaced ? "Replaced" : "Added", escape_controls(c.name),
             escape_controls(added->file), escape_controls(how));
  return true;
}

json::object file_json(const FileRead& f) {
  json::object o{{"client", client_id(f.source.client)},
                 {"scope", f.source.scope},
                 {"path", f.source.path},
                 {"where", f.source.label()},
                 {"found", f.found},
                 {"entries", f.entries}};
  if (!f.error.empty()) o["error"] = f.error;
  return o;
}

int import_command(Context& ctx) {
  const Command& self = *find_command("mcp", "import");
  Options opt;
  opt.as_json = take_flag(ctx.args, "--json");
  opt.project = take_flag(ctx.args, "--project");
  opt.yes = take_flag(ctx.args, "--yes");
  opt.force = take_flag(ctx.args, "--force");
  for (std::size_t i = 0; i < ctx.args.size(); ++i) {
    if (ctx.args[i] != "--from") return usage_error(self, "unexpected argument " + ctx.args[i]);
    if (opt.from || i + 1 >= ctx.args.size() || !(opt.from = client_named(ctx.args[i + 1])))
      return usage_error(self, "--from takes one of claude-code, claude-desktop, vscode, cursor, codex");
    ++i;
  }
  if (opt.project && opt.from == Client::kClaudeDesktop)
    return usage_error(self, "Claude Desktop has no project files; leave out --project");

  Scan found = scan(sources(places_here(), opt.from, opt.project));
  bool any_file = std::any_of(found.files.begin(), found.files.end(), [](const FileRead& f) { return f.found; });
  bool unreadable =
      std::any_of(found.files.begin(), found.files.end(), [](const FileRead& f) { return !f.error.empty(); });

  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  auto listed = conn->client.call(proto::kMcpList, json::object{}, kListTimeout);
  auto list = listed ? proto::decode<proto::McpListResult>(*listed)
                     : proto::Decoded<proto::McpListResult>(boost::system::in_place_error, listed.error().message);
  if (!list) {
    fmt::print(stderr, "oppx: could not ask oppxd which connectors it has: {}\n", list.error());
    return kExitFailed;
  }
  std::string target = opt.project ? (list->project ? list->project->config : ".mcp.json") : list->config;
  std::set<std::string> existing;
  for (const auto& c : list->connectors) {
    if (c.source == (opt.project ? "project" : "user")) existing.insert(c.name);
  }
  std::vector<Planned> planned = plan(found.candidates, existing, opt.force);

  if (!opt.as_json) {
    print_files(found.files);
    if (!list->error.empty() && !opt.project) fmt::print(stderr, "oppx: {}\n", escape_controls(list->error));
    for (const auto& p : planned) print_candidate(p, opt);
    if (!planned.empty()) fmt::print("\n");
  }
  bool failed = false;
  std::size_t to_add = 0, skipped = 0, refused = 0;
  json::array records;
  for (const auto& p : planned) {
    const Candidate& c = *p.candidate;
    json::object record{{"name", c.name},
                        {"client", client_id(c.source.client)},
                        {"from", c.source.label()},
                        {"action", action_id(p.action)}};
    if (!p.why.empty()) record["why"] = p.why;
    if (!c.notes.empty()) record["notes"] = json::value_from(c.notes);
    if (p.action != Action::kRefused) record["definition"] = masked(c.definition);
    bool adds = p.action == Action::kAdd || p.action == Action::kReplace;
    to_add += adds;
    skipped += p.action == Action::kExists || p.action == Action::kDuplicate;
    refused += p.action == Action::kRefused;
    if (adds && opt.yes)
      failed |= !add_one(conn->client, c, opt.project, p.action == Action::kReplace, opt.as_json, record);
    records.push_back(std::move(record));
  }

  int rc = failed || unreadable ? kExitFailed : kExitOk;
  if (opt.from && !any_file) rc = kExitFailed;
  if (opt.as_json) {
    json::array files;
    for (const auto& f : found.files) files.push_back(file_json(f));
    fmt::print("{}", json_line(json::object{{"target", target},
                                            {"project", opt.project},
                                            {"written", opt.yes},
                                            {"files", std::move(files)},
                                            {"candidates", std::move(records)}}));
    return rc;
  }
  if (!any_file) {
    fmt::print("No {} MCP servers found{}.\n", opt.from ? client_title(*opt.from) : std::string_view("other client's"),
               opt.project ? " in this repository" : "");
    return rc;
  }
  fmt::print("{} to add, {} skipped, {} not importable.\n", to_add, skipped, refused);
  if (opt.yes) return rc;
  if (to_add > 0) {
    fmt::print("Nothing was written. To add {} to {}, run: {}\n", to_add == 1 ? "it" : "them", escape_controls(target),
               opt.again());
  } else if (skipped > 0 && !opt.force) {
    fmt::print("Nothing to add. To replace oppx's connectors of the same names, run: {}\n",
               Options{opt.from, opt.project, false, true, false}.again());
  } else {
    fmt::print("Nothing to add.\n");
  }
  return rc;
}

}  // namespace

std::vector<Command> mcp_import_commands() {
  return {
      {"mcp", "import", "[--from CLIENT] [--project] [--yes] [--force] [--json]",
       "Add the MCP servers of Claude Code, Claude Desktop, VS Code, Cursor or Codex to oppx.",
       "CLIENT is claude-code, claude-desktop, vscode, cursor or codex; without --from all five are\n"
       "read. Yours: ~/.claude.json (its servers, and this folder's), $XDG_CONFIG_HOME/Claude/\n"
       "claude_desktop_config.json, $XDG_CONFIG_HOME/Code/User/mcp.json and settings.json,\n"
       "~/.cursor/mcp.json, $CODEX_HOME/config.toml; they go to your mcp.json. With --project the\n"
       "repository's .mcp.json, .vscode/mcp.json, .cursor/mcp.json and .codex/config.toml, into its\n"
       ".mcp.json. It shows each server (values masked) and whether it would be added, is skipped\n"
       "(oppx has one of that name: --force replaces it) or cannot be imported, and why (SSE, VS\n"
       "Code's ${input:…}, a value of the wrong type). ${VAR} stays a reference; ${env:VAR} is\n"
       "written ${VAR}; Codex's bearer_token_env_var becomes 'Authorization: Bearer ${VAR}'.\n"
       "Nothing is written without --yes; with it each is added as `oppx mcp add` does, except that\n"
       "a repository's (--project) are not approved: each waits for `oppx mcp approve NAME`, which\n"
       "shows it in full. Exit status 1 when a file could not be read, an add failed, or --from found\n"
       "no file.",
       import_command},
  };
}

}  // namespace oppx::cli
