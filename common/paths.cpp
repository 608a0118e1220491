// XDG Base Directory rules: a variable that is unset, empty or relative is ignored.
#include "common/paths.h"

#include <cstdlib>
#include <pwd.h>
#include <unistd.h>

namespace oppx::paths {

namespace {

std::string absolute_env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || v[0] != '/') return {};
  return v;
}

std::string xdg(const char* var, const char* fallback) {
  std::string base = absolute_env(var);
  if (base.empty()) base = home() + "/" + fallback;
  return base + "/oppx";
}

}  // namespace

std::string home() {
  std::string h = absolute_env("HOME");
  if (!h.empty()) return h;
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "/";
}

std::string state_dir() { return xdg("XDG_STATE_HOME", ".local/state"); }
std::string config_dir() { return xdg("XDG_CONFIG_HOME", ".config"); }
std::string daemon_log() { return state_dir() + "/oppxd.log"; }
std::string data_dir() { return xdg("XDG_DATA_HOME", ".local/share"); }
std::string results_dir() { return cache_dir() + "/results"; }

std::string cache_dir() { return xdg("XDG_CACHE_HOME", ".cache"); }

std::string user_mcp_config() {
  if (const char* p = std::getenv("OPPX_MCP_CONFIG"); p && *p) return p;
  return config_dir() + "/mcp.json";
}

namespace {
// The daemon leaves its start folder when it detaches: a relative path must be made absolute first.
std::string absolute(std::string p) {
  if (p.empty() || p[0] == '/') return p;
  char cwd[4096];
  if (!::getcwd(cwd, sizeof cwd)) return p;
  return std::string(cwd) + "/" + p;
}
}  // namespace

std::string socket_path(std::string_view explicit_path) {
  if (!explicit_path.empty()) return absolute(std::string(explicit_path));
  if (const char* s = std::getenv("OPPX_SOCKET"); s && *s) return absolute(s);
  if (std::string rt = absolute_env("XDG_RUNTIME_DIR"); !rt.empty()) return rt + "/oppx/oppxd.sock";
  return "/tmp/oppx-" + std::to_string(::geteuid()) + "/oppxd.sock";
}

std::string lock_path(const std::string& socket) { return socket + ".lock"; }
std::string start_lock_path(const std::string& socket) { return socket + ".start"; }
std::string mcp_http_socket(const std::string& socket) {
  constexpr std::string_view kSuffix = ".sock";
  std::string_view s = socket;
  if (s.size() > kSuffix.size() && s.substr(s.size() - kSuffix.size()) == kSuffix) s.remove_suffix(kSuffix.size());
  return std::string(s) + "-mcp.sock";
}

}  // namespace oppx::paths
