// The command table, built once from each group's rows, and the help texts made from it, so
// that `--help` cannot drift from what the commands take.
#include "cli/commands.h"

#include <fmt/format.h>

#include <algorithm>

namespace oppx::cli {

const std::vector<Command>& command_table() {
  static const std::vector<Command> table = [] {
    std::vector<Command> t;
    // A group's rows from several files stand together, in this order.
    for (auto part : {chat_commands(), print_commands(), mcp_commands(), mcp_offer_commands(), mcp_import_commands(),
                      mcp_serve_commands(), permissions_commands(), browser_commands(), daemon_commands(),
                      daemon_service_commands(), demo_commands(), help_commands(), completion_commands()})
      t.insert(t.end(), part.begin(), part.end());
    return t;
  }();
  return table;
}

const Command* find_command(std::string_view group, std::string_view name) {
  for (const Command& c : command_table()) {
    if (c.group == group && c.name == name) return &c;
  }
  return nullptr;
}

bool is_group(std::string_view name) {
  return std::any_of(command_table().begin(), command_table().end(),
                     [&](const Command& c) { return !c.group.empty() && c.group == name; });
}

static std::string full_name(const Command& c) {
  std::string n = "oppx";
  if (!c.group.empty()) n += fmt::format(" {}", c.group);
  if (!c.name.empty()) n += fmt::format(" {}", c.name);
  return n;
}

std::string command_help(const Command& c) {
  std::string out = fmt::format("usage: {}{}{}\n\n{}\n", full_name(c), c.usage.empty() ? "" : " ", c.usage, c.summary);
  if (!c.details.empty()) out += fmt::format("\n{}\n", c.details);
  return out;
}

std::string group_help(std::string_view group) {
  std::string out = fmt::format("usage: oppx {} <command> [options]\n\nCommands:\n", group);
  for (const Command& c : command_table()) {
    if (c.group == group && !c.hidden)
      out += fmt::format("  {:<28} {}\n", fmt::format("{} {}", c.name, c.usage), c.summary);
  }
  out += fmt::format("\nRun `oppx {} <command> --help` for one command.\n", group);
  return out;
}

const OverviewText& overview_text() {
  static const OverviewText text{
      "oppx [--socket PATH] <command> [options]",
      "oppx is the client of oppxd, the per-user daemon that keeps MCP connectors warm for every\n"
      "session. Commands that need the daemon start it when none answers.\n"
      "`oppx` alone, in a terminal, opens the chat (`oppx chat`); `oppx -p MESSAGE` runs one turn of\n"
      "the agent headless.\n",
      "  --socket PATH   the daemon's socket (default: $OPPX_SOCKET, else\n"
      "                  $XDG_RUNTIME_DIR/oppx/oppxd.sock, else /tmp/oppx-$UID/oppxd.sock)\n"
      "  --version       print the version and build id\n"
      "  -h, --help      help; also after any command\n",
      "  0  success\n"
      "  1  the command failed (the message says why)\n"
      "  2  usage error\n"
      "  3  the daemon could not be reached or started\n"
      "  4  the daemon speaks another protocol version: run `oppx daemon restart`\n"
      "  5  (-p) the model server failed (the message says what to do)\n"
      "  6  (-p) an action was declined: print mode cannot ask, or a deny rule\n"
      "  7  (-p) the turn stopped short: a connector it needed was down, or the bound of steps\n"};
  return text;
}

std::string overview_help() {
  const OverviewText& text = overview_text();
  std::string out = fmt::format("usage: {}\n\n{}\nCommands:\n", text.synopsis, text.description);
  for (const Command& c : command_table()) {
    if (c.hidden) continue;
    std::string name = c.group.empty() ? std::string(c.name) : fmt::format("{} {}", c.group, c.name);
    out += fmt::format("  {:<34} {}\n", fmt::format("{} {}", name, c.usage), c.summary);
  }
  out += fmt::format("\nOptions:\n{}\nExit codes:\n{}", text.options, text.exit_codes);
  return out;
}

bool take_flag(std::vector<std::string>& args, std::string_view flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  if (it == args.end()) return false;
  args.erase(it);
  return true;
}

int usage_error(const Command& c, const std::string& message) {
  fmt::print(stderr, "oppx: {}\n\n{}", message, command_help(c));
  return kExitUsage;
}

}  // namespace oppx::cli
