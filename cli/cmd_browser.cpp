// oppx browser status | on | off | install [--update]: the headless browser's engine and setting.
// A session's browser itself is started by the chat (`/browser start`, or the agent's `browser`
// action) and by `oppx -p` when it is on; the daemon runs it (browser/start).
#include "chat/browser.h"
#include "cli/browser.h"
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/output.h"
#include "common/playwright.h"
#include "common/text.h"
#include "proto/browser_api.h"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace oppx::cli {

namespace json = boost::json;

namespace {

constexpr std::string_view kAbout =
    "The browser is Playwright's MCP server on Chrome or Chromium, headless, started by oppxd for one\n"
    "session and ended with it. It is off by default: the chat asks once a session when the agent\n"
    "wants it (y, a = always, N, or text for the model). `oppx browser on` starts it with every\n"
    "session without asking (also in `oppx -p`); `off` goes back to asking.";

int fail(const std::string& message) {
  fmt::print(stderr, "oppx: {}\n", escape_controls(message));
  return kExitFailed;
}

int status(Context& ctx) {
  const Command& self = *find_command("browser", "status");
  bool as_json = take_flag(ctx.args, "--json");
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) return fail(conn.error().message);
  auto r = conn->client.call(proto::kBrowserStatus, json::object{}, kCallTimeout);
  if (!r) return fail(r.error().message);
  auto st = proto::decode<proto::BrowserStatusResult>(*r);
  if (!st) return unreadable_answer(st.error());
  if (as_json) {
    json::object o = r->as_object();  // the reply as the daemon sent it
    o.erase("session");               // this command has no session of its own
    o["auto"] = chat::browser_auto();
    o["node_major"] = node_major();
    fmt::print("{}", json_line(o));
    return kExitOk;
  }
  std::string installed = st->installed.value_or("");
  fmt::print("Browser: {}\n", chat::browser_auto() ? "on (starts with every session)" : "off (asked once a session)");
  fmt::print("Engine:  {} {} in {}\n", playwright::kMcpPackage,
             installed.empty() ? "not installed (`oppx browser install`)"
             : installed == playwright::kMcpVersion
                 ? installed
                 : installed + " (this oppx uses " + std::string(playwright::kMcpVersion) +
                       ": `oppx browser install --update`)",
             escape_controls(st->engine));
  int major = node_major();
  fmt::print("Node.js: {}\n", major == 0 ? "not found on PATH (the browser needs Node.js 18+)"
                                         : fmt::format("{}{}", major, major < 18 ? " (too old: 18+ needed)" : ""));
  if (const auto& problem = st->browser.problem) {
    fmt::print("Chrome:  {}\n", escape_controls(problem->message));
    for (const auto& step : problem->steps) fmt::print("  - {}\n", escape_controls(step));
  } else {
    fmt::print("Chrome:  {} ({})\n", escape_controls(st->browser.path), st->browser.kind);
  }
  fmt::print("Sandbox: {}\n", st->sandbox);
  if (const auto& spare = st->spare; spare.state != "off") {
    std::int64_t ms = spare.idle_ms;
    fmt::print("Spare:   a server {} (pid {}) for the next session's browser, stopped after {} unused\n", spare.state,
               spare.pid, ms >= 60000 ? fmt::format("{} min", ms / 60000) : fmt::format("{} s", ms / 1000));
  }
  return kExitOk;
}

int install(Context& ctx) {
  const Command& self = *find_command("browser", "install");
  bool update = take_flag(ctx.args, "--update");
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);
  if (auto r = install_browser(update); !r) return fail(r.error());
  return kExitOk;
}

int set_auto(Context& ctx, std::string_view name, bool on) {
  const Command& self = *find_command("browser", name);
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);
  if (on && playwright::installed_version().empty()) {
    if (auto r = install_browser(false); !r) return fail(r.error());
  }
  if (auto r = chat::set_browser_auto(on); !r) return fail(r.error());
  fmt::print("Browser {}: {}\n", on ? "on" : "off",
             on ? "it starts with every session, without asking" : "the chat asks once a session");
  return kExitOk;
}

int on(Context& ctx) { return set_auto(ctx, "on", true); }
int off(Context& ctx) { return set_auto(ctx, "off", false); }

}  // namespace

std::vector<Command> browser_commands() {
  return {
      {"browser", "status", "[--json]",
       "Show the browser setting, its engine, Node.js, which Chrome it uses and the spare server.", kAbout, status},
      {"browser", "on", "", "Start the browser with every session, without asking (installs it first).", kAbout, on},
      {"browser", "off", "", "Ask once a session again before the browser starts.", kAbout, off},
      {"browser", "install", "[--update]",
       "Install Playwright's MCP server with npm (--update: refresh an installed one).", kAbout, install},
  };
}

}  // namespace oppx::cli
