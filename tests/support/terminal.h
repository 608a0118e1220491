// The terminal chat's tests (and the zsh completion's) drive `oppx` (or a shell) in a real
// pseudo-terminal: a tmux server of the test's own (-L), one window running it with the test's
// HOME; keys sent with send-keys, the screen read with capture-pane each time the pane printed
// something (pipe-pane into a file).
#pragma once

#include "tests/support/harness.h"

#include <chrono>
#include <string>
#include <vector>

namespace oppx::test {

class Terminal {
 public:
  // `oppx <args>` (or `program <args>`) with the test's HOME and XDG folders and
  // OPPX_SERVER=`server_url`.
  Terminal(const TempHome& home, const std::string& server_url, const std::vector<std::string>& args = {},
           const std::string& program = OPPX_BIN);
  ~Terminal();
  bool started() const { return started_; }
  void keys(const std::vector<std::string>& k);  // tmux key names: "Enter", "C-c", …
  void type(const std::string& text);            // literally
  void paste(const std::string& text);           // as a bracketed paste
  std::string screen();                          // with 500 lines of history
  std::string title();                           // the pane's title, which OSC 0 and 2 set
  std::string buffers();                         // tmux's paste buffers, which OSC 52 sets
  int count(const std::string& text);            // how many times the screen shows `text`
  // Waits until the screen shows `text` (the n-th time, counting from 1).
  bool wait_for(const std::string& text, int nth = 1, std::chrono::milliseconds timeout = std::chrono::seconds(15));

 private:
  Result tmux(std::vector<std::string> args);
  static inline int count_ = 0;
  std::string name_;
  std::string output_;  // the pane's output, appended by tmux pipe-pane
  bool started_ = false;
};

}  // namespace oppx::test
