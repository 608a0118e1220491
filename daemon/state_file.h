// A JSON file in user state that grants something (the consent store, the permission rules): only
// the daemon writes it (on its one thread, so a read-modify-write never races), atomically and
// 0600, keeping keys it does not know. Read again when it changed on disk (a hand edit counts).
// Fail closed: a file that is a symlink, not ours, readable by others, too large or not a JSON
// object is moved aside to <path>.bad-<time>, and until the next write it grants nothing.
#pragma once

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <string>

namespace oppx::daemon {

std::string utc_now(const char* format);

class StateFile {
 public:
  // `what` names the file in messages ("the consent store"); `lost` says what setting it aside
  // means and how to recover, as a clause ("nothing in it counts as approved any more. …");
  // `section`: the top-level key that must be an object when present ("repositories").
  StateFile(std::string path, std::string what, std::string lost, std::string section);

  const std::string& path() const { return path_; }
  // The section after a load(), created when `create` (null when missing and not created).
  boost::json::object* section(bool create);
  // Re-reads the file when it changed on disk; a file it cannot trust is set aside.
  void load();
  // Writes the document whole (atomic, 0600) and forgets an earlier problem.
  boost::system::result<void, std::string> save();
  // The last problem met with the file (set aside), said until the next write; empty if none.
  const std::string& problem() const { return problem_; }

 private:
  void set_aside(const std::string& why);

  std::string path_, what_, lost_, section_;
  std::string stamp_;  // inode, size and mtime of what was read last
  boost::json::value doc_;
  std::string problem_;
};

}  // namespace oppx::daemon
