// Subprocess: one running child of a stdio connector, owned by one object (as ninja's Subprocess
// owns its pid and fds): its pidfd, its stderr drained into the capped log, its last stderr
// lines, the stop sequence and the reap. spawn_child (child_process.h) makes the process; this is
// its only caller. Everything runs on the daemon's io_context as callbacks; nothing blocks.
#pragma once

#include "daemon/child_process.h"

#include <boost/system/result.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

class Subprocess : public std::enable_shared_from_this<Subprocess> {
 public:
  struct Options {
    std::string name;                  // for log lines (the connector's name)
    std::string log_path;              // its stderr goes here, capped at 1 MiB and rotated to log_path.1
    std::vector<std::string> secrets;  // hidden in what is written to the log (mask_secrets)
  };
  // How it ended: its exit status (or why that could not be read: it was not ours to reap any
  // more) and its last stderr lines (diagnose.h: kKeptStderrLines), the reason of a stop.
  struct Finished {
    boost::system::result<ExitStatus, std::string> status;
    std::deque<std::string> last_lines;
  };
  using Started = std::function<void(boost::system::result<std::shared_ptr<Subprocess>, SpawnError>)>;

  // Starts `spec`; `started` runs on `io` (never within this call) with the running process or
  // why it could not start. A process nobody keeps (`started` drops it) is killed at once.
  static void spawn(boost::asio::io_context& io, const SpawnSpec& spec, Options options, Started started);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Its stdin and stdout, handed once to whoever speaks with it (the stdio link's transport).
  int take_stdin();
  int take_stdout();
  // Runs once, when it has exited and its stderr has ended (tmux's rule: both, so that the reason
  // read from its last lines is complete). Its group is killed and released by then. Never runs
  // after stop().
  void on_finished(std::function<void(Finished)> fn);
  // Ends it: its stderr closed, SIGTERM to its group after 1 s, SIGKILL 2 s later, reaped when it
  // goes (then its group is released). The process's stdin should be closed first (its transport).
  void stop();

  std::int64_t pid() const;  // 0 once it exited or was stopped
  const std::deque<std::string>& last_lines() const { return last_lines_; }

 private:
  struct Io;
  Subprocess(boost::asio::io_context& io, Child child, Options options);
  void read_stderr();
  void take_stderr(std::string_view data);
  std::size_t safe_cut(std::string_view text, std::size_t at) const;
  void keep_line(std::string_view line);
  void open_log();
  void append_log(std::string_view data);
  void exited(boost::system::result<ExitStatus, std::string> status);
  void stderr_ended();
  void finish();

  boost::asio::io_context& io_;
  Child child_;
  Options options_;
  std::unique_ptr<Io> io_objects_;
  bool running_ = true;  // neither exited nor stopped
  bool stderr_open_ = true;
  std::optional<boost::system::result<ExitStatus, std::string>> status_;  // once it exited
  std::function<void(Finished)> on_finished_;
  std::string partial_;  // a stderr line without its end yet
  std::deque<std::string> last_lines_;
  int log_fd_ = -1;
  std::size_t log_size_ = 0;
};

}  // namespace oppx::daemon
