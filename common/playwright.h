// Where the browser's engine lives (SPEC §5): Playwright's MCP server, pinned here and nowhere
// else in the code, installed with npm into the engine folder; what is installed there now.
#pragma once

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

}  // namespace oppx::playwright
