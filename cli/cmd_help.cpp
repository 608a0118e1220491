// oppx help [group] [command]: the same texts as --help, made from the command table; `--man`
// prints them all as the man page (cli/man_page.cpp).
#include "cli/commands.h"

#include <fmt/format.h>

namespace oppx::cli {

namespace {

int help(Context& ctx) {
  if (take_flag(ctx.args, "--man")) {
    if (!ctx.args.empty())
      return usage_error(*find_command("", "help"), "--man prints the whole page; drop " + ctx.args[0]);
    fmt::print("{}", man_page());
    return kExitOk;
  }
  if (ctx.args.empty()) {
    fmt::print("{}", overview_help());
    return kExitOk;
  }
  std::string group = is_group(ctx.args[0]) ? ctx.args[0] : "";
  std::string name = group.empty() ? ctx.args[0] : (ctx.args.size() > 1 ? ctx.args[1] : "");
  if (!group.empty() && name.empty()) {
    fmt::print("{}", group_help(group));
    return kExitOk;
  }
  if (const Command* c = find_command(group, name)) {
    fmt::print("{}", command_help(*c));
    return kExitOk;
  }
  fmt::print(stderr, "oppx: no command `{}{}{}`\n\n{}", group, group.empty() ? "" : " ", name, overview_help());
  return kExitUsage;
}

}  // namespace

std::vector<Command> help_commands() {
  return {{"", "help", "[command] [--man]", "Show the commands, or the help of one (`oppx help daemon status`).",
           "--man prints all of them as the man page, in roff (`oppx help --man | man -l -`).", help}};
}

}  // namespace oppx::cli
