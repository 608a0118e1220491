// Why a connector is down and the steps back, in the user's words (docs/protocol.md, `mcp/list`:
// reason, reason_kind, steps): from the kind the connector gave, its message and its definition.
// Pure functions: no I/O, so every kind and every way of adding a connector has a unit test.
#pragma once

#include "daemon/mcp_config.h"

#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::daemon {

struct Diagnosis {
  std::string kind;                // a proto::kind value, refined (an mcp-remote that times out needs a login)
  std::string reason;              // one line: what happened and why
  std::vector<std::string> steps;  // what to do, in order (the CLI numbers them)
};

// A lost login, narrowly: HTTP 401/403, "unauthorized", "token expired" and their close kin.
// A tool refusing its arguments ("the login field is required") is not one.
bool looks_like_login(std::string_view message, int http_status = 0);
// The same for the error text of one call, narrower still: the words only. A tool's own error
// names the statuses of whatever it talks to ("API error 403: resource not accessible" is a
// permission of that API, not oppx's login), so a bare 401 or 403 there does not count.
bool tool_error_looks_like_login(std::string_view message);

// The connector runs mcp-remote (a stdio bridge that logs in through the browser and waits,
// silently, while nobody logs in).
bool uses_mcp_remote(const ConnectorDef& def);

// How many of a program's last stderr lines are kept for its reason: enough to reach node's
// "Error: Cannot find module …" above its stack and the "Node.js v20…" it ends with, and
// mcp-remote's "Fatal error: …" above the 22 lines of the error object it dumps after it.
inline constexpr std::size_t kKeptStderrLines = 40;

// The line of a program's last stderr lines that says most about why it stopped: npm's
// "npm error code E…", else the exception line of Python's last traceback (one printed after
// "Exception ignored in: …" at shutdown is noise), else the last one that reads like an error
// ("Error: …", "… No such file or directory"; stack frames and notices such as npm's "A complete
// log of this run can be found in: …" skipped), else the last one that is not a version banner
// ("Node.js v20.20.2") or a notice. With `errors_only` (a stop by a signal, where the last lines
// are whatever it printed at start, such as "Starting default (STDIO) server...") no fallback to
// the last line. Empty when none fits.
std::string telling_line(const std::deque<std::string>& lines, bool errors_only);

// What a program's last stderr lines say about its stop, read narrowly: the telling line and,
// when the lines name it for sure, the kind: not_installed for npm's E404 (no such package) and
// ETARGET (no such version) or a script its runtime cannot find (says_script_missing), login for
// mcp-remote whose login failed (its "Authentication required", a rejected client registration,
// an HTTP 401/403). Anything else is left to diagnose() on the telling line.
struct StderrReading {
  std::string line;       // as written: escaped when shown
  std::string_view kind;  // a proto::kind value, or empty
  std::string meaning;    // what the line means, when it is terse ("npm error code E404"), else empty
};
StderrReading read_stderr_lines(const std::deque<std::string>& lines, const ConnectorDef& def, bool errors_only);

// The program ran but its own runtime says the script or module it was given is missing (node's
// "Cannot find module", python's "can't open file" or "ModuleNotFoundError", a shell's
// "<program>: <file>: No such file or directory"): it is not installed, not broken.
bool says_script_missing(std::string_view message, const ConnectorDef& def);

// An HTTP status that, as the answer to initialize, says the URL is not the server's MCP endpoint
// (404 Not Found, 405 Method Not Allowed: no POST there, 410 Gone): the user's definition is wrong.
// A 400 is left out: it may as well be about the request (a version, a header) as the URL.
bool url_is_wrong(int http_status);

// `kind` is a proto::kind value; `message` the connector's own account (exit status, last stderr
// line, the unset variable…). `log_path` is where to look for more: a program's stderr log, or
// for an HTTP connector (no program, no log of its own) the daemon's log, where its failures are.
// `http_status`: the server's answer when that is why (kind config with a status for which
// url_is_wrong holds gets the steps to correct the URL).
Diagnosis diagnose(std::string_view kind, std::string_view message, const ConnectorDef& def, std::string_view log_path,
                   int http_status = 0);

}  // namespace oppx::daemon
