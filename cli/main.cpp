// oppx: global options, then the command table does the rest. Everything it prints passes the
// escaping filter of cli/output.h.
#include "cli/commands.h"
#include "cli/output.h"
#include "common/paths.h"
#include "proto/daemon_api.h"

#include <fmt/format.h>

#include <algorithm>

#include <csignal>

using namespace oppx::cli;

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  if (!escape_terminal_output()) return kExitFailed;
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string socket;
  // Global options come before the command.
  while (!args.empty() && args[0].rfind("-", 0) == 0) {
    if (args[0] == "--socket" && args.size() > 1) {
      socket = args[1];
      args.erase(args.begin(), args.begin() + 2);
    } else if (args[0].rfind("--socket=", 0) == 0) {
      socket = args[0].substr(9);
      args.erase(args.begin());
    } else if (args[0] == "--version" || args[0] == "-V") {
      fmt::print("oppx {} (build {})\n", OPPX_VERSION, oppx::kBuildId);
      return kExitOk;
    } else if (args[0] == "-c" || args[0] == "--continue" || args[0] == "--resume") {
      args.insert(args.begin(), "chat");  // the chat, continuing or resuming a conversation
      break;
    } else if (args[0] == "-p" || args[0] == "--print") {
      args[0] = "-p";  // the command of one headless turn; its own options follow
      break;
    } else if (args[0] == "--help" || args[0] == "-h") {
      args[0] = "help";
      break;
    } else {
      fmt::print(stderr, "oppx: unknown option {}\n\n{}", args[0], overview_help());
      return kExitUsage;
    }
  }
  if (args.empty()) args.push_back("chat");  // in a terminal the chat; else one message from stdin

  std::string group;
  std::string name = args[0];
  args.erase(args.begin());
  if (is_group(name)) {
    group = name;
    name.clear();
    if (!args.empty() && args[0].rfind("-", 0) != 0) {
      name = args[0];
      args.erase(args.begin());
    }
  }
  // Bare `oppx mcp` (and `oppx mcp --json`) lists, as in SPEC §3; so does `oppx permissions`.
  if ((group == "mcp" || group == "permissions") && name.empty() &&
      (args.empty() || (args.size() == 1 && args[0] == "--json")))
    name = "list";
  const Command* cmd = find_command(group, name);
  if (!cmd) {
    if (!group.empty() && (name.empty() || name == "help")) {
      // `oppx daemon`, `oppx daemon --help`: the group's help; `oppx daemon --bogus`: a usage error.
      bool asked = name == "help" || args.empty() || args[0] == "--help" || args[0] == "-h";
      fmt::print(asked ? stdout : stderr, "{}", group_help(group));
      return asked ? kExitOk : kExitUsage;
    }
    std::string what = group.empty() ? name : group + " " + name;
    fmt::print(stderr, "oppx: unknown command `{}`\n\n{}", what, group.empty() ? overview_help() : group_help(group));
    return kExitUsage;
  }
  // Only before `--`: what follows is a connector's own command line (`mcp add x -- node --help`).
  auto dash = std::find(args.begin(), args.end(), "--");
  if (std::find(args.begin(), dash, "--help") != dash || std::find(args.begin(), dash, "-h") != dash) {
    fmt::print("{}", command_help(*cmd));
    return kExitOk;
  }
  Context ctx{oppx::paths::socket_path(socket), std::move(args), argv[0]};
  return cmd->run(ctx);
}
