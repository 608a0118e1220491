// The engine folder's layout and the installed version of Playwright's MCP server.
#include "common/playwright.h"

#include "common/paths.h"

#include <boost/json/parse.hpp>

#include <fstream>
#include <sstream>

namespace oppx::playwright {

std::string engine_dir() { return paths::data_dir() + "/playwright"; }
std::string browsers_dir() { return engine_dir() + "/browsers"; }
std::string cli_js() { return engine_dir() + "/node_modules/" + std::string(kMcpPackage) + "/cli.js"; }

std::string installed_version() {
  std::ifstream f(engine_dir() + "/node_modules/" + std::string(kMcpPackage) + "/package.json");
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(ss.str(), ec);
  if (ec || !v.is_object()) return {};
  const boost::json::value* version = v.as_object().if_contains("version");
  return version && version->is_string() ? std::string(version->as_string()) : std::string();
}

}  // namespace oppx::playwright
