// The paths the agent never reads and a sandboxed command never sees: the user's credentials
// (secret_paths) and oppx's own folders (oppx_private_paths). One list, shared by the workspace
// read rule (chat/workspace.cpp) and the command sandbox (chat/sandbox.cpp), so that they cannot
// drift apart. Pure string work: nothing here touches the disk.
#pragma once

#include "common/paths.h"

#include <string>
#include <vector>

namespace oppx {

// Credentials under `home`, folders and files alike (each absolute, no trailing slash): ssh and
// gpg keys, cloud and registry logins, the git credential store, kubeconfigs.
inline std::vector<std::string> secret_paths(const std::string& home) {
  static constexpr const char* kRelative[] = {
      ".ssh",    ".gnupg",           ".aws",           ".netrc", ".config/gh",      ".docker", ".kube", ".npmrc",
      ".pypirc", ".git-credentials", ".config/gcloud", ".azure", ".password-store",
  };
  std::string base = home;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base == "/") base.clear();
  std::vector<std::string> out;
  for (const char* r : kRelative) out.push_back(base + "/" + r);
  return out;
}

// oppx's own folders: config (mcp.json with its tokens, permissions.json), state (conversations,
// logs), cache, data, and the daemon's socket folder. A socket set with $OPPX_SOCKET may sit in
// any folder (a project's, even): then only the socket itself is listed, not its folder.
inline std::vector<std::string> oppx_private_paths() {
  std::vector<std::string> out = {paths::config_dir(), paths::state_dir(), paths::cache_dir(), paths::data_dir()};
  std::string socket = paths::socket_path();
  auto slash = socket.rfind('/');
  std::string folder = slash == std::string::npos ? std::string() : socket.substr(0, slash);
  std::string name = folder.substr(folder.rfind('/') + 1);
  out.push_back(!folder.empty() && name.starts_with("oppx") ? folder : socket);
  return out;
}

}  // namespace oppx
