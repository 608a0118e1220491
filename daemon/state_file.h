// A JSON file in user state that grants something (the consent store, the permission rules): only
// the daemon changes it (on its loop, so a read-modify-write never races) and writes it, atomically
// and 0600, keeping keys it does not know: the daemon's through its worker (worker.h), so a slow
// disk holds up no one else's call. Read again when it changed on disk (a hand edit counts), but
// never while a write of it is on its way: what memory holds then is newer than the file.
// Fail closed: a file that is a symlink, not ours, readable by others, too large or not a JSON
// object is moved aside to <path>.bad-<time>, and until the next write it grants nothing, except
// what keep_when_set_aside() keeps of one that is only untrusted (a link, not ours, or readable by
// others) but still reads as JSON: what can only take away (the deny rules), written anew, 0600.
#pragma once

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <functional>
#include <optional>
#include <string>

namespace oppx::daemon {

std::string utc_now(const char* format);

class Worker;

class StateFile {
 public:
  // `what` names the file in messages ("the consent store"); `lost` says what setting it aside
  // means and how to recover, as a clause ("nothing in it counts as approved any more. …");
  // `section`: the top-level key that must be an object when present ("repositories").
  // Without `worker`, save() writes at once, on the caller's thread.
  StateFile(std::string path, std::string what, std::string lost, std::string section, Worker* worker = nullptr);

  const std::string& path() const { return path_; }
  // The section after a load(), created when `create` (null when missing and not created).
  boost::json::object* section(bool create);
  // Re-reads the file when it changed on disk; a file it cannot trust is set aside. Nothing is read
  // while a save is on its way.
  void load();
  using Saved = std::function<void(boost::system::result<void, std::string>)>;
  // Writes the document whole (atomic, 0600), as it is now, and forgets an earlier problem; then
  // `done` (on the loop, once written). A failed write makes the next load() read the file again.
  void save(Saved done);
  // The last problem met with the file (set aside), said until the next write; empty if none.
  const std::string& problem() const { return problem_; }

  // What an untrusted file may still say, given what it held: the document written in its place
  // and what that means, as a clause replacing `lost` in problem(); nothing when none of it counts.
  struct Kept {
    boost::json::value doc;
    std::string said;
  };
  using Keep = std::function<std::optional<Kept>(const boost::json::value&)>;
  void keep_when_set_aside(Keep keep) { keep_ = std::move(keep); }

 private:
  // `untrusted`: the file may still be read for what keep_ keeps of it.
  void set_aside(const std::string& why, bool untrusted = false);
  void write(Saved done, bool keep_problem);
  void saved(const boost::system::result<void, std::string>& r);

  std::string path_, what_, lost_, section_;
  Worker* worker_;
  int saving_ = 0;     // saves on their way
  std::string stamp_;  // inode, size and mtime of what was read last
  boost::json::value doc_;
  std::string problem_;
  bool keep_problem_ = false;  // the last write was of what keep_ kept: problem_ still holds
  Keep keep_;
};

}  // namespace oppx::daemon
