// The raw-mode line editor: keys in, one redraw of the whole input after each. Multi-line input
// is drawn with a two-space indent on its continuation rows. Everything drawn that is not the
// editor's own control (the prompt, the input, history, a paste, completions) passes drawn().
#include "cli/line_editor.h"

#include "common/text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::cli {

namespace json = boost::json;

namespace {

constexpr std::size_t kHistoryMax = 1000;

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Code points (a fair width for the text people type; wide characters count as one).
int width(std::string_view s) {
  int n = 0;
  for (unsigned char c : s) n += !continuation(c);
  return n;
}

// The editor's own drawing, terminal control included, straight to the terminal: stdout itself
// passes the escaping filter (cli/output.h), which is for text from elsewhere.
void out(std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::write(1, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string drawn(std::string_view text) {
  std::string spaced;
  spaced.reserve(text.size());
  for (char c : text) {
    if (c == '\t') {
      spaced += "    ";
    } else {
      spaced += c;
    }
  }
  return escape_controls(spaced);
}

Drawing draw_input(std::string_view prompt, std::string_view buf, std::size_t cursor, int from_row) {
  Drawing d;
  std::string& s = d.bytes;
  // Back to the prompt's row, then clear everything below.
  if (from_row > 0) s += fmt::format("\x1b[{}A", from_row);
  std::string p = drawn(prompt);
  s += "\r\x1b[J" + p;
  int col = width(p);
  bool placed = false;
  for (std::size_t start = 0;;) {
    std::size_t nl = buf.find('\n', start);
    std::string_view line = buf.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    int lead = d.rows == 0 ? width(p) : 2;
    s += drawn(line);
    if (!placed && cursor <= start + line.size()) {
      d.cursor_row = d.rows;
      col = lead + width(drawn(line.substr(0, cursor - start)));
      placed = true;
    }
    if (nl == std::string_view::npos) break;
    s += "\r\n  ";
    ++d.rows;
    start = nl + 1;
  }
  // From the end of the text to the cursor.
  if (d.rows > d.cursor_row) s += fmt::format("\x1b[{}A", d.rows - d.cursor_row);
  s += "\r";
  if (col > 0) s += fmt::format("\x1b[{}C", col);
  return d;
}

std::string completion_list(const std::vector<std::string>& options) {
  std::string list;
  for (const auto& o : options) list += drawn(o) + "  ";
  return list;
}

RawTerminal::RawTerminal() {
  if (::tcgetattr(0, &saved_) != 0) return;
  termios raw = saved_;
  raw.c_iflag &= ~static_cast<tcflag_t>(ICRNL | IXON | BRKINT | INPCK | ISTRIP);
  raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | ISIG | IEXTEN);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  ok_ = ::tcsetattr(0, TCSADRAIN, &raw) == 0;
}

RawTerminal::~RawTerminal() {
  if (ok_) ::tcsetattr(0, TCSADRAIN, &saved_);
}

std::string LineEditor::read_key(int timeout_ms) {
  pollfd p{0, POLLIN, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return {};
  char c;
  ssize_t got;
  do {
    got = ::read(0, &c, 1);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return std::string(kEndOfInput);
  std::string key(1, c);
  auto more = [&](int wait) {
    pollfd q{0, POLLIN, 0};
    if (::poll(&q, 1, wait) <= 0) return false;
    char d;
    if (::read(0, &d, 1) != 1) return false;
    key += d;
    return true;
  };
  auto u = static_cast<unsigned char>(c);
  if (c == '\x1b') {
    // An escape sequence: ESC [ … final byte, ESC O x, or ESC and one key (Alt).
    if (!more(30)) return key;
    if (key[1] == '[') {
      while (more(30)) {
        unsigned char last = static_cast<unsigned char>(key.back());
        if (last >= 0x40 && last <= 0x7e) break;
      }
    } else if (key[1] == 'O') {
      more(30);
    }
  } else if (u >= 0xC0) {
    int extra = u >= 0xF0 ? 3 : u >= 0xE0 ? 2 : 1;
    for (int i = 0; i < extra && more(30); ++i) {
    }
  }
  return key;
}

LineEditor::LineEditor(std::string history_file, Completer complete)
    : history_file_(std::move(history_file)), complete_(std::move(complete)) {
  if (history_file_.empty()) return;
  std::ifstream f(history_file_);
  for (std::string line; std::getline(f, line);) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (!ec && v.is_string()) history_.emplace_back(v.as_string());
  }
  if (history_.size() > kHistoryMax) history_.erase(history_.begin(), history_.end() - kHistoryMax);
}

void LineEditor::add_history(const std::string& line) {
  if (line.empty() || (!history_.empty() && history_.back() == line)) return;
  history_.push_back(line);
  if (history_file_.empty()) return;
  int fd = ::open(history_file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ::fchmod(fd, 0600);
  std::string entry = json::serialize(json::value(line)) + "\n";
  (void)!::write(fd, entry.data(), entry.size());
  ::close(fd);
}

void LineEditor::redraw() {
  Drawing d = draw_input(prompt_, buf_, cursor_, cursor_row_);
  rows_drawn_ = d.rows;
  cursor_row_ = d.cursor_row;
  out(d.bytes);
}

void LineEditor::insert(std::string_view text) {
  buf_.insert(cursor_, text);
  cursor_ += text.size();
}

void LineEditor::complete() {
  if (!complete_) return;
  std::string before = buf_.substr(0, cursor_);
  auto options = complete_(before);
  if (options.empty()) return;
  // The word being completed is the text after the last space.
  auto sp = before.rfind(' ');
  std::string word = sp == std::string::npos ? before : before.substr(sp + 1);
  std::string common = options[0];
  for (const auto& o : options) {
    std::size_t i = 0;
    while (i < common.size() && i < o.size() && common[i] == o[i]) ++i;
    common.resize(i);
  }
  if (common.size() > word.size()) {
    insert(common.substr(word.size()));
    if (options.size() == 1) insert(" ");
    return;
  }
  if (options.size() > 1) {
    // Below the input, then the input again.
    if (rows_drawn_ > cursor_row_) out(fmt::format("\x1b[{}B", rows_drawn_ - cursor_row_));
    out("\r\n" + completion_list(options) + "\r\n");
    cursor_row_ = 0;
  }
}

EditResult LineEditor::read(const std::string& prompt) {
  prompt_ = prompt;
  buf_.clear();
  cursor_ = 0;
  rows_drawn_ = cursor_row_ = 0;
  std::size_t hist = history_.size();
  std::string draft;
  out("\x1b[?2004h");  // bracketed paste on
  redraw();
  auto finish = [&](EditResult r) {
    cursor_ = buf_.size();
    redraw();
    out("\x1b[?2004l\r\n");
    return r;
  };
  for (;;) {
    std::string k;
    if (!queued_.empty()) {
      k = std::move(queued_.front());
      queued_.pop_front();
    } else {
      k = read_key(idle_ ? 200 : -1);
    }
    if (k.empty()) {
      std::vector<std::string> lines = idle_ ? idle_() : std::vector<std::string>{};
      if (lines.empty()) continue;
      std::string s = cursor_row_ > 0 ? fmt::format("\x1b[{}A", cursor_row_) : "";
      s += "\r\x1b[J";
      for (const auto& l : lines) {
        std::string text = escape_controls(l, true);  // from the daemon and its servers
        for (char ch : text) s += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
        s += "\r\n";
      }
      out(s);
      cursor_row_ = 0;
      redraw();
      continue;
    }
    unsigned char c = static_cast<unsigned char>(k[0]);
    if (k == "\x1b[200~") {  // a paste: everything up to its end, as typed text
      std::string pasted;
      for (;;) {
        std::string p = read_key(2000);
        if (p.empty() || p == "\x1b[201~" || p == kEndOfInput) break;
        pasted += p;
      }
      std::replace(pasted.begin(), pasted.end(), '\r', '\n');
      insert(pasted);
    } else if (k == "\r") {
      if (cursor_ == buf_.size() && !buf_.empty() && buf_.back() == '\\') {
        buf_.back() = '\n';
      } else {
        return finish({EditResult::kLine, buf_});
      }
    } else if (k == "\n" || k == "\x1b\r" || k == "\x1b\n") {
      insert("\n");
    } else if (k == "\x03") {
      buf_.clear();
      return finish({EditResult::kInterrupt, ""});
    } else if (k == kEndOfInput) {
      return finish({EditResult::kEof, ""});
    } else if (k == "\x04") {
      if (buf_.empty()) return finish({EditResult::kEof, ""});
      if (cursor_ < buf_.size()) {
        std::size_t end = cursor_ + 1;
        while (end < buf_.size() && continuation(static_cast<unsigned char>(buf_[end]))) ++end;
        buf_.erase(cursor_, end - cursor_);
      }
    } else if (k == "\x7f" || k == "\x08") {
      if (cursor_ > 0) {
        std::size_t start = cursor_ - 1;
        while (start > 0 && continuation(static_cast<unsigned char>(buf_[start]))) --start;
        buf_.erase(start, cursor_ - start);
        cursor_ = start;
      }
    } else if (k == "\x1b[D" || k == "\x02") {
      if (cursor_ > 0) {
        --cursor_;
        while (cursor_ > 0 && continuation(static_cast<unsigned char>(buf_[cursor_]))) --cursor_;
      }
    } else if (k == "\x1b[C" || k == "\x06") {
      if (cursor_ < buf_.size()) {
        ++cursor_;
        while (cursor_ < buf_.size() && continuation(static_cast<unsigned char>(buf_[cursor_]))) ++cursor_;
      }
    } else if (k == "\x01" || k == "\x1b[H" || k == "\x1bOH") {
      cursor_ = 0;
    } else if (k == "\x05" || k == "\x1b[F" || k == "\x1bOF") {
      cursor_ = buf_.size();
    } else if (k == "\x15") {
      buf_.erase(0, cursor_);
      cursor_ = 0;
    } else if (k == "\x0b") {
      buf_.erase(cursor_);
    } else if (k == "\x17") {
      std::size_t start = cursor_;
      while (start > 0 && buf_[start - 1] == ' ') --start;
      while (start > 0 && buf_[start - 1] != ' ' && buf_[start - 1] != '\n') --start;
      buf_.erase(start, cursor_ - start);
      cursor_ = start;
    } else if (k == "\x1b[A" || k == "\x10") {
      if (hist > 0) {
        if (hist == history_.size()) draft = buf_;
        buf_ = history_[--hist];
        cursor_ = buf_.size();
      }
    } else if (k == "\x1b[B" || k == "\x0e") {
      if (hist < history_.size()) {
        ++hist;
        buf_ = hist == history_.size() ? draft : history_[hist];
        cursor_ = buf_.size();
      }
    } else if (k == "\x1b[3~") {
      if (cursor_ < buf_.size()) {
        std::size_t end = cursor_ + 1;
        while (end < buf_.size() && continuation(static_cast<unsigned char>(buf_[end]))) ++end;
        buf_.erase(cursor_, end - cursor_);
      }
    } else if (k == "\t") {
      complete();
    } else if (k == "\x0c") {
      out("\x1b[H\x1b[2J");
      cursor_row_ = 0;
    } else if (c >= 0x20 && c != 0x7f && k[0] != '\x1b') {
      insert(k);
    }
    redraw();
  }
}

}  // namespace oppx::cli
