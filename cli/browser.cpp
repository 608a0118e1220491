// npm for the browser's engine, Node.js's version, and browser_auto in config.json.
#include "cli/browser.h"

#include "common/fs.h"
#include "common/paths.h"
#include "common/playwright.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>

extern char** environ;

namespace oppx::cli {

namespace json = boost::json;

namespace {

std::string config_file() { return paths::config_dir() + "/config.json"; }

boost::system::result<json::object, std::string> read_config() {
  std::ifstream f(config_file());
  if (!f) return json::object{};
  std::stringstream ss;
  ss << f.rdbuf();
  if (ss.str().find_first_not_of(" \t\r\n") == std::string::npos) return json::object{};
  boost::system::error_code ec;
  json::value v = json::parse(ss.str(), ec);
  if (ec || !v.is_object())
    return fmt::format("{} is not a JSON object ({}); fix it first", config_file(),
                       ec ? ec.message() : "another JSON value");
  return v.as_object();
}

// Runs a program found on PATH with the terminal's stdout going to stderr; its exit status, or -1.
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

boost::system::result<void, std::string> install_browser(bool update) {
  std::string installed = playwright::installed_version();
  if (update && installed.empty())
    return std::string("the browser is not installed, so there is nothing to update: `oppx browser install`");
  int major = node_major();
  if (major == 0)
    return fmt::format(
        "the browser needs Node.js {}+ (`node` and `npm` on PATH) and none was found; install it "
        "(Debian: `sudo apt install nodejs npm`), then run `oppx browser install` again",
        playwright::kNodeMajorNeeded);
  if (major < playwright::kNodeMajorNeeded)
    return fmt::format(
        "the browser needs Node.js {}+; `node` on PATH is version {}: update it, then run `oppx "
        "browser install` again",
        playwright::kNodeMajorNeeded, major);
  std::string dir = playwright::engine_dir();
  if (auto r = ensure_private_dir(dir); !r) return "cannot make " + dir + ": " + r.error();
  std::string package = fmt::format("{}@{}", playwright::kMcpPackage, playwright::kMcpVersion);
  fmt::print(stderr, "{} {} into {} with npm (about 20 MB)…\n", installed.empty() ? "Installing" : "Refreshing",
             package, dir);
  std::fflush(stderr);
  int rc = run({"npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=http", package});
  if (rc != 0)
    return rc < 0 ? std::string("npm could not be run: install npm (Debian: `sudo apt install npm`)")
                  : fmt::format(
                        "npm install failed (exit status {}); its messages are above. Check the network "
                        "and npm's registry setting (`npm config get registry`), then try again",
                        rc);
  std::string now = playwright::installed_version();
  if (now != playwright::kMcpVersion)
    return fmt::format("npm finished but {} holds version '{}', not {}", dir, now, playwright::kMcpVersion);
  fmt::print(stderr, "Installed {} in {}\n", package, dir);
  return {};
}

bool browser_auto() {
  auto c = read_config();
  if (!c) return false;
  const json::value* v = c->if_contains("browser_auto");
  return v && v->is_bool() && v->as_bool();
}

boost::system::result<void, std::string> set_browser_auto(bool on) {
  auto c = read_config();
  if (!c) return c.error();
  (*c)["browser_auto"] = on;
  if (auto r = ensure_private_dir(paths::config_dir()); !r) return r.error();
  if (auto r = atomic_write(config_file(), json::serialize(*c) + "\n", 0600); !r) return r.error();
  return {};
}

}  // namespace oppx::cli
