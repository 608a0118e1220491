// `oppx mcp login` and `oppx mcp logout`: an HTTP connector's OAuth login, run by the daemon
// (mcp/login, docs/protocol.md) and finished in the user's browser. login_flow is also what
// `oppx mcp call` runs in place when a tool needs a wider login (a step-up).
#pragma once

#include "cli/commands.h"
#include "proto/mcp_results.h"

#include <cstdio>
#include <functional>
#include <string>

namespace oppx::cli {

// Logs connector `name` in: prints the authorization URL, opens it with $BROWSER (a command given
// the URL as its argument) or, with a display, xdg-open, and waits for the browser's redirect
// (on a terminal the user may paste the address it was sent to instead). Exit status 0 once the
// login is kept and the connector runs. What it says goes to `say` (stderr when the command's
// stdout is for something else: --json, or the result of `oppx mcp call`).
// `keys` (the chat's: a terminal in raw mode) reads the paste key by key, and Ctrl-C stops waiting.
using ReadKey = std::function<std::string(int timeout_ms)>;
int login_flow(Context& ctx, const std::string& name, bool as_json, std::FILE* say = stdout,
               const ReadKey* keys = nullptr);

// Who is logged in and until when, in words ("logged in at https://as.example until 14:05,
// renewed automatically"); never a token.
std::string login_text(const proto::LoginState& l);

// Opens `url` with $BROWSER, else xdg-open when there is a display: runs `sh -c 'exec <command>
// "$1"' sh URL` (the URL one argument, never read by the shell) and reaps it on a thread of its
// own. How it was opened, in words ("with $BROWSER"), or empty when it could not be.
std::string open_browser(const std::string& url);
bool found_on_path(const std::string& program);

int mcp_login(Context& ctx);
int mcp_logout(Context& ctx);

}  // namespace oppx::cli
