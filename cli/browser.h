// The CLI's side of the browser (SPEC §5): installing Playwright's MCP server with npm into the
// engine folder, with npm's progress on the terminal; Node.js's version; the `browser_auto`
// setting in config.json. The daemon starts and stops the browser itself (browser/start).
#pragma once

#include <boost/system/result.hpp>

#include <string>

namespace oppx::cli {

// The major version of `node` on PATH; 0 when there is none (or it does not answer).
int node_major();

// Installs (or, with `update`, refreshes) the pinned server. Prints what it does; npm's own output
// goes to stderr as it works. The error says what to do.
boost::system::result<void, std::string> install_browser(bool update);

// config.json's "browser_auto": the browser starts with every session, without asking.
bool browser_auto();
boost::system::result<void, std::string> set_browser_auto(bool on);

}  // namespace oppx::cli
