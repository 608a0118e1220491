// The engine folder's layout, the installed version of Playwright's MCP server, and its install
// with npm (for `oppx browser install`, and for a session whose user said yes to the browser).
#include "common/playwright.h"

#include "common/fs.h"
#include "common/paths.h"

#include <boost/json/parse.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

extern char** environ;

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

namespace {

// Runs a program found on PATH with its stdout going to stderr; its exit status, or -1.
int run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, 2, 1);  // npm's report is progress, not the command's output
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int node_major() {
  FILE* p = ::popen("node --version 2>/dev/null", "r");
  if (!p) return 0;
  char buf[64] = {};
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, p);
  ::pclose(p);
  std::string v(buf, n);
  if (v.empty() || v[0] != 'v') return 0;
  return std::atoi(v.c_str() + 1);
}

boost::system::result<void, std::string> install(bool update, const Say& say) {
  std::string installed = installed_version();
  if (update && installed.empty())
    return std::string("the browser is not installed, so there is nothing to update: `oppx browser install`");
  int major = node_major();
  if (major == 0)
    return fmt::format(
        "the browser needs Node.js {}+ (`node` and `npm` on PATH) and none was found; install it "
        "(Debian: `sudo apt install nodejs npm`), then run `oppx browser install` again",
        kNodeMajorNeeded);
  if (major < kNodeMajorNeeded)
    return fmt::format(
        "the browser needs Node.js {}+; `node` on PATH is version {}: update it, then run `oppx "
        "browser install` again",
        kNodeMajorNeeded, major);
  std::string dir = engine_dir();
  if (auto r = ensure_private_dir(dir); !r) return "cannot make " + dir + ": " + r.error();
  std::string package = fmt::format("{}@{}", kMcpPackage, kMcpVersion);
  say(fmt::format("{} {} into {} with npm (about 20 MB)…", installed.empty() ? "Installing" : "Refreshing", package,
                  dir));
  int rc = run({"npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=http", package});
  if (rc != 0)
    return rc < 0 ? std::string("npm could not be run: install npm (Debian: `sudo apt install npm`)")
                  : fmt::format(
                        "npm install failed (exit status {}); its messages are above. Check the network "
                        "and npm's registry setting (`npm config get registry`), then try again",
                        rc);
  std::string now = installed_version();
  if (now != kMcpVersion) return fmt::format("npm finished but {} holds version '{}', not {}", dir, now, kMcpVersion);
  say(fmt::format("Installed {} in {}", package, dir));
  return {};
}

std::string prepare(const Say& say) {
  if (installed_version() != kMcpVersion) {
    if (auto r = install(false, say); !r) return r.error();
  }
  return {};
}

}  // namespace oppx::playwright
