// The consent store ($XDG_STATE_HOME/oppx/mcp-approved.json): which repository connector
// definitions the user approved, per repository root and name, as the sha256 of the definition's
// canonical unexpanded JSON, and the sha256 of each file of the repository that it runs
// (files_it_runs). The daemon is its only writer (changed on its loop, written by its worker), so
// a read-modify-write here never races; a corrupt or unsafe file counts as nothing approved. file_sha256 reads a whole
// file: blocking, so it is asked only at an approval, at a start, and when a file's stamp changed.
#pragma once

#include "common/fs.h"
#include "daemon/mcp_config.h"
#include "daemon/state_file.h"

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::daemon {

std::string sha256_hex(std::string_view data);
// The sha256 of a regular file's bytes; the error says why it cannot be read.
boost::system::result<std::string, std::string> file_sha256(const std::string& path);

// The files of repository `root` that a stdio connector runs: its command when that is a path
// ("./bin/server"), and each argument that names an existing regular file that is a program or
// a script ("tools/server.py", "dist/index.js": executable, or named .js, .py, .sh …; not data
// such as a database it writes), both taken from the folder it starts in; each only when it lies
// under `root` (a value with a ${VAR} in it is known only at start, and is left out). Relative to
// `root`, each once.
std::vector<std::string> files_it_runs(const ConnectorDef& def, const std::string& root);

// Those files (relative to the root) and their sha256.
using FileHashes = std::map<std::string, std::string>;

// The first difference between the files approved and those now, for a reason ("bin/server
// changed <since>", "… appeared <since>", "… is gone <since>"); empty when there is none.
std::string file_change(const FileHashes& approved, const FileHashes& now, std::string_view since);

// The repository a folder belongs to (common/fs.h): the chat's workspace starts there too.
using oppx::repository_root;

// kChanged: approved once, for another definition than this one (it changed since): not approved.
enum class Consent { kNone, kApproved, kDenied, kChanged };

class ConsentStore {
 public:
  // `worker`: where its writes go (state_file.h); without one they happen at once.
  explicit ConsentStore(std::string path, Worker* worker = nullptr);
  using Saved = StateFile::Saved;

  const std::string& path() const { return file_.path(); }
  // What the user decided for exactly this definition; another hash counts as no decision.
  Consent lookup(const std::string& root, const std::string& name, const std::string& sha256);
  // Each decision counts at once (lookup sees it); `done` says whether it was written.
  // `files`: the files of the repository it runs, as they are now; the approval holds for them only.
  void approve(const std::string& root, const std::string& name, const std::string& sha256, const FileHashes& files,
               Saved done);
  // The files recorded with the approval of (root, name); empty when none were.
  FileHashes approved_files(const std::string& root, const std::string& name);
  void deny(const std::string& root, const std::string& name, const std::string& sha256, Saved done);
  // Forgets the decision on (root, name), e.g. when the connector is removed.
  void forget(const std::string& root, const std::string& name, Saved done);
  // The last problem met with the file (corrupt, unsafe, moved aside), for `mcp list`; empty if none.
  const std::string& problem() const { return file_.problem(); }

 private:
  void record(const std::string& root, const std::string& name, boost::json::value decision, Saved done);

  StateFile file_;
};

}  // namespace oppx::daemon
