// The CLI's command table and what a command gets to run. One file per command group
// (cmd_daemon.cpp, cmd_help.cpp, …) contributes its rows; commands.cpp joins them.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::cli {

// oppx's exit codes (also in `oppx help` and docs/protocol.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,    // the command ran and failed (the daemon said why)
  kExitUsage = 2,     // wrong arguments
  kExitNoDaemon = 3,  // the daemon could not be reached or started
  kExitMismatch = 4,  // the daemon speaks another protocol version: restart it
  kExitModel = 5,     // oppx -p: the model server failed
  kExitDeclined = 6,  // oppx -p: an action was declined (print mode cannot ask, or a deny rule)
  kExitShort = 7,     // oppx -p: a connector the turn needed was down, or the turn hit its bound of steps
};

struct Context {
  std::string socket;             // resolved socket path
  std::vector<std::string> args;  // what follows the command's name
  std::string self;               // argv[0]
};

struct Command {
  std::string_view group;    // "daemon", or empty for a top-level command
  std::string_view name;     // "status"; the group's default command has an empty name
  std::string_view usage;    // arguments, e.g. "[--json] [--no-start]"
  std::string_view summary;  // one line for listings
  std::string_view details;  // the rest of `--help`
  int (*run)(Context&);
  bool hidden = false;  // left out of the help, the man page and the completions (`oppx __complete`)
};

std::vector<Command> print_commands();
std::vector<Command> chat_commands();
std::vector<Command> daemon_commands();
std::vector<Command> daemon_service_commands();  // cmd_daemon_service.cpp
std::vector<Command> help_commands();
std::vector<Command> demo_commands();
std::vector<Command> mcp_commands();
std::vector<Command> mcp_offer_commands();   // cmd_mcp_offers.cpp
std::vector<Command> mcp_import_commands();  // cmd_mcp_import.cpp
std::vector<Command> mcp_serve_commands();   // cmd_mcp_serve.cpp
std::vector<Command> permissions_commands();
std::vector<Command> browser_commands();
std::vector<Command> completion_commands();

const std::vector<Command>& command_table();
const Command* find_command(std::string_view group, std::string_view name);
bool is_group(std::string_view name);

// The `--help` text of one command, and the overview (`oppx help`).
std::string command_help(const Command& c);
std::string group_help(std::string_view group);
std::string overview_help();

// The overview's parts around the table, which the man page lays out too (cli/man_page.cpp).
struct OverviewText {
  std::string_view synopsis;     // "oppx [--socket PATH] <command> [options]"
  std::string_view description;  // the paragraph under it
  std::string_view options;      // "  --socket PATH   …": a tag, two spaces or more, its text
  std::string_view exit_codes;   // "  0  success", the same layout
};
const OverviewText& overview_text();
// `man oppx` as roff, made from the command table and overview_text() (`oppx help --man`).
std::string man_page();

// Small helpers for argument parsing inside commands.
bool take_flag(std::vector<std::string>& args, std::string_view flag);
int usage_error(const Command& c, const std::string& message);

}  // namespace oppx::cli
