// The chat's line editor, our own (a small raw-mode editor rather than libedit: libedit's
// bracketed paste, multi-line buffer and Ctrl-C handling would each need working around, and
// those are what the chat needs most). UTF-8, history saved per user (0600), multi-line input
// (Alt+Enter, `\` then Enter, Ctrl+J), bracketed paste kept as one message, Tab completion,
// Ctrl-C and Ctrl-D reported to the caller. Long lines that wrap are redrawn approximately.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <termios.h>

namespace oppx::cli {

// The terminal on stdin in raw mode (no echo, no signals from Ctrl-C, output processing kept)
// while it lives; restored by the destructor, also after an exception.
class RawTerminal {
 public:
  RawTerminal();
  ~RawTerminal();
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;
  bool ok() const { return ok_; }

 private:
  termios saved_{};
  bool ok_ = false;
};

// What the editor draws of `text` (the prompt, the input, a history entry, a paste, a
// completion, which may come from a repository's .mcp.json): escaped as everything oppx prints
// (common/text.h's escape_controls; a tab as four spaces), so that none of it drives the terminal.
std::string drawn(std::string_view text);

// The input drawn at the prompt, the cursor `from_row` rows below the prompt's row: the bytes to
// write, the rows below the prompt's row they use, and the row the cursor is left on.
struct Drawing {
  std::string bytes;
  int rows = 0;
  int cursor_row = 0;
};
Drawing draw_input(std::string_view prompt, std::string_view buf, std::size_t cursor, int from_row);

// The completions listed below the input when Tab has several.
std::string completion_list(const std::vector<std::string>& options);

struct EditResult {
  enum Kind { kLine, kEof, kInterrupt } kind = kEof;
  std::string text;
};

class LineEditor {
 public:
  using Completer = std::function<std::vector<std::string>(std::string_view before_cursor)>;
  // `history_file`: one JSON string per line, kept 0600; empty for none.
  LineEditor(std::string history_file, Completer complete);

  // Reads one message at `prompt` (the terminal must be raw). kInterrupt: Ctrl-C (the input is
  // dropped); kEof: Ctrl-D on an empty line, or the end of stdin.
  EditResult read(const std::string& prompt);
  void add_history(const std::string& line);
  // Called while the editor waits for a key (every 200 ms): lines it returns are printed above
  // the input, which is drawn again below them (notices as they happen).
  void on_idle(std::function<std::vector<std::string>()> fn) { idle_ = std::move(fn); }
  // A key read elsewhere (typed while a turn ran), taken before the terminal's at the next read.
  void queue_key(std::string key) { queued_.push_back(std::move(key)); }

  // Reads one key's bytes with a deadline (ms, -1: none); empty at the deadline, kEndOfInput at
  // the end of stdin. Used while a turn runs, to see Ctrl-C.
  static std::string read_key(int timeout_ms);
  static constexpr std::string_view kEndOfInput = "\x1b<end of input>";

 private:
  void redraw();
  void insert(std::string_view text);
  void complete();
  std::string history_file_;
  Completer complete_;
  std::vector<std::string> history_;
  std::deque<std::string> queued_;
  std::function<std::vector<std::string>()> idle_;
  std::string prompt_, buf_;
  std::size_t cursor_ = 0;  // a byte offset at a code point boundary
  int rows_drawn_ = 0;      // rows below the prompt's row in the last drawing
  int cursor_row_ = 0;      // the row the cursor was left on
};

}  // namespace oppx::cli
