// Where the browser's engine lives (SPEC §5): Playwright's MCP server, pinned here and nowhere
// else in the code, installed with npm into the engine folder; what is installed there now.
#pragma once

#include <boost/system/result.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace oppx::playwright {

inline constexpr std::string_view kMcpPackage = "@playwright/mcp";
inline constexpr std::string_view kMcpVersion = "0.0.83";
inline constexpr int kNodeMajorNeeded = 18;

std::string engine_dir();    // paths::data_dir()/playwright: npm's --prefix
std::string browsers_dir();  // engine_dir()/browsers: Playwright's own Chrome for Testing, when downloaded
std::string cli_js();        // the server's entry point inside engine_dir()
// The version in the installed package.json; empty when nothing is installed.
std::string installed_version();

// The major version of `node` on PATH; 0 when there is none (or it does not answer).
int node_major();

// What the install says as it goes (a line each: what it installs where, that it is done); npm's
// own report goes to this process's stderr.
using Say = std::function<void(std::string_view line)>;

// Installs (or, with `update`, refreshes) the pinned server into engine_dir() with npm. The error
// says what to do (no Node.js, the wrong version, npm failed).
boost::system::result<void, std::string> install(bool update, const Say& say);

// Ready to start: the pinned server installed (installed now when it is not, or is another
// version). "" or why not, with what to do.
std::string prepare(const Say& say);

}  // namespace oppx::playwright
