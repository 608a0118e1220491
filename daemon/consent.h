// The consent store ($XDG_STATE_HOME/oppx/mcp-approved.json): which repository connector
// definitions the user approved, per repository root and name, as the sha256 of the definition's
// canonical unexpanded JSON. The daemon is its only writer (on its one thread), so a
// read-modify-write here never races; a corrupt or unsafe file counts as nothing approved.
#pragma once

#include "daemon/state_file.h"

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <string>
#include <string_view>

namespace oppx::daemon {

std::string sha256_hex(std::string_view data);

// The repository a folder belongs to: the nearest folder at or above it holding `.git` (a folder,
// or the file a worktree or submodule has), else the folder itself. Git is not run.
std::string repository_root(const std::string& folder);

// kChanged: approved once, for another definition than this one (it changed since): not approved.
enum class Consent { kNone, kApproved, kDenied, kChanged };

class ConsentStore {
 public:
  explicit ConsentStore(std::string path);

  const std::string& path() const { return file_.path(); }
  // What the user decided for exactly this definition; another hash counts as no decision.
  Consent lookup(const std::string& root, const std::string& name, const std::string& sha256);
  boost::system::result<void, std::string> approve(const std::string& root, const std::string& name,
                                                   const std::string& sha256);
  boost::system::result<void, std::string> deny(const std::string& root, const std::string& name,
                                                const std::string& sha256);
  // Forgets the decision on (root, name), e.g. when the connector is removed.
  boost::system::result<void, std::string> forget(const std::string& root, const std::string& name);
  // The last problem met with the file (corrupt, unsafe, moved aside), for `mcp list`; empty if none.
  const std::string& problem() const { return file_.problem(); }

 private:
  boost::system::result<void, std::string> record(const std::string& root, const std::string& name,
                                                  boost::json::value decision);

  StateFile file_;
};

}  // namespace oppx::daemon
