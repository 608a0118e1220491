// The CLI's side of the browser (SPEC §5): installing Playwright's MCP server with npm into the
// engine folder, with npm's progress on the terminal; Node.js's version. The `browser_auto`
// setting is chat/browser.h's; the daemon starts and stops the browser itself (browser/start).
#pragma once

#include <boost/system/result.hpp>

#include <string>

namespace oppx::cli {

// The major version of `node` on PATH; 0 when there is none (or it does not answer).
int node_major();

// Installs (or, with `update`, refreshes) the pinned server. Prints what it does; npm's own output
// goes to stderr as it works. The error says what to do.
boost::system::result<void, std::string> install_browser(bool update);

// Ready for browser/start: the pinned server installed (installed now when it is not, or is
// another version, with npm's progress). "" or why not, with what to do (no Node.js, the
// install failed).
std::string prepare_browser();

}  // namespace oppx::cli
