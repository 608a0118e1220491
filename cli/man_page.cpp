// `man oppx` (`oppx help --man`): the command table and the overview's parts laid out as roff, so
// that the page says exactly what `--help` says. FILES and ENVIRONMENT are the only text of its own.
#include "cli/commands.h"
#include "common/roff.h"

#include <fmt/format.h>

namespace oppx::cli {

namespace {

constexpr std::string_view kFiles =
    "  $XDG_CONFIG_HOME/oppx/mcp.json  your connectors (~/.config/oppx/mcp.json; $OPPX_MCP_CONFIG\n"
    "                                  names another)\n"
    "  $XDG_CONFIG_HOME/oppx/config.json  the model server, the model and oppx's settings\n"
    "  .mcp.json  a repository's connectors, run only with your consent (oppx mcp approve)\n"
    "  $XDG_STATE_HOME/oppx/  the daemon's log (oppxd.log), permission rules, consent, the chat's\n"
    "                         history and conversations (~/.local/state/oppx)\n"
    "  $XDG_CACHE_HOME/oppx/  tool lists from the last run, whole tool results, browser output\n"
    "                         (~/.cache/oppx)\n"
    "  $XDG_RUNTIME_DIR/oppx/oppxd.sock  the daemon's socket (else /tmp/oppx-$UID/oppxd.sock)\n";

constexpr std::string_view kEnvironment =
    "  OPPX_SOCKET  the daemon's socket, unless --socket names one\n"
    "  OPPX_SERVER  the OpenAI-compatible model server (else config.json \"server\")\n"
    "  OPPX_MODEL  the model (else config.json \"model\", else the server's first)\n"
    "  OPPX_MCP_CONFIG  your connectors file instead of $XDG_CONFIG_HOME/oppx/mcp.json\n"
    "  BROWSER  the program that opens an OAuth login's address (else xdg-open with a display)\n"
    "  XDG_CONFIG_HOME, XDG_STATE_HOME, XDG_CACHE_HOME, XDG_RUNTIME_DIR  where the files above\n"
    "                  are kept\n";

std::string full_name(const Command& c) {
  std::string n = "oppx";
  if (!c.group.empty()) n += fmt::format(" {}", c.group);
  if (!c.name.empty()) n += fmt::format(" {}", c.name);
  return n;
}

}  // namespace

std::string man_page() {
  const OverviewText& overview = overview_text();
  std::string out =
      roff::head("OPPX", "oppx", OPPX_VERSION, "the client of oppxd: MCP connectors, the agent and its chat");
  std::string_view synopsis = overview.synopsis;
  synopsis.remove_prefix(synopsis.find(' ') + 1);
  out += fmt::format(".SH SYNOPSIS\n.B oppx\n{}\n", roff::escape(synopsis));
  out += ".SH DESCRIPTION\n" + roff::text(overview.description);
  out += ".SH COMMANDS\n";
  for (const Command& c : command_table()) {
    if (c.hidden) continue;
    // The usage line as `--help` prints it, filled like prose so that a long one wraps.
    out += fmt::format(".SS \"{}\"\n\\fB{}\\fR{}{}\n.PP\n{}\n", roff::escape(full_name(c)), roff::escape(full_name(c)),
                       c.usage.empty() ? "" : " ", roff::escape(c.usage), roff::escape(c.summary));
    if (!c.details.empty()) out += ".PP\n" + roff::text(c.details);
  }
  out += ".SH OPTIONS\n" + roff::columns(overview.options);
  out += ".SH EXIT STATUS\n" + roff::columns(overview.exit_codes);
  out += ".SH FILES\n" + roff::columns(kFiles);
  out += ".SH ENVIRONMENT\n" + roff::columns(kEnvironment);
  out += ".SH SEE ALSO\n" + roff::escape("oppxd(1); `oppx completion bash|zsh` prints a completion script.") + "\n";
  return out;
}

}  // namespace oppx::cli
