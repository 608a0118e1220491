// escape_terminal_output: glibc's fopencookie gives a FILE whose writes call ours; stdout and
// stderr are plain variables in glibc, so fmt::print and fwrite reach the filter unchanged.
// Unbuffered: each print arrives whole, so a UTF-8 sequence is never split between two writes.
// shown_text: the text cut into pieces (a character as it is drawn, or a run of blanks as its
// marker), each knowing how many characters it stands for, so that a fold can count what it hides.
// wrap_line: the line cut into words (with the SGR sequences in them) and the blanks between them,
// then filled greedily; the style open at a break is known by the SGR sequences since the last reset.
#include "cli/output.h"

#include "common/text.h"
#include "proto/jsonrpc.h"

#include <boost/json/serialize.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <vector>
#include <sys/ioctl.h>
#include <unistd.h>

namespace oppx::cli {

namespace {

ssize_t write_escaped(void* cookie, const char* data, std::size_t size) {
  int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(cookie));
  std::string text = escape_controls(std::string_view(data, size), true);
  for (std::size_t off = 0; off < text.size();) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    off += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(size);
}

std::FILE* escaping_stream(int fd) {
  cookie_io_functions_t io{};
  io.write = write_escaped;
  std::FILE* f = ::fopencookie(reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)), "w", io);
  if (f) std::setvbuf(f, nullptr, _IONBF, 0);
  return f;
}

// A run of this many blanks, or with two newlines or more, is shown as a marker that counts it.
constexpr std::size_t kMarkedRun = 8;
// Folded, a text wider than kFoldAt shows its first kHead and last kTail columns.
constexpr std::size_t kFoldAt = 300, kHead = 180, kTail = 80;
constexpr std::size_t kNameFoldAt = 80;

struct Piece {
  std::string shown;
  std::size_t width = 0;  // columns (code points) of `shown`
  std::size_t chars = 0;  // code points of the text it stands for
};

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The length of the UTF-8 sequence at s[i] as its first byte says, 1 when it is not one.
std::size_t sequence_length(std::string_view s, std::size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  if (i + n > s.size()) return 1;
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

// Blanks that can pad a text: space, tab, newline, and the Unicode spaces that look like one.
enum class Blank { kNone, kSpace, kTab, kNewline, kOther };
Blank blank_at(std::string_view s, std::size_t i, std::size_t n) {
  std::string_view c = s.substr(i, n);
  if (c == " ") return Blank::kSpace;
  if (c == "\t") return Blank::kTab;
  if (c == "\n") return Blank::kNewline;
  static const std::string_view kUnicode[] = {"\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003",
                                              "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009",
                                              "\u200a", "\u202f", "\u205f", "\u3000"};
  for (auto u : kUnicode) {
    if (c == u) return Blank::kOther;
  }
  return Blank::kNone;
}

std::vector<Piece> pieces(std::string_view s, bool in_full, std::string_view indent) {
  std::vector<Piece> out;
  auto add = [&](std::string shown, std::size_t chars) {
    std::size_t w = code_points(shown);
    out.push_back({std::move(shown), w, chars});
  };
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = sequence_length(s, i);
    if (blank_at(s, i, n) == Blank::kNone) {
      add(escape_controls(s.substr(i, n)), 1);
      i += n;
      continue;
    }
    std::size_t spaces = 0, tabs = 0, newlines = 0, others = 0, end = i;
    std::vector<Blank> run;
    for (std::size_t m; end < s.size();) {
      m = sequence_length(s, end);
      Blank b = blank_at(s, end, m);
      if (b == Blank::kNone) break;
      run.push_back(b);
      spaces += b == Blank::kSpace;
      tabs += b == Blank::kTab;
      newlines += b == Blank::kNewline;
      others += b == Blank::kOther;
      end += m;
    }
    if (run.size() >= kMarkedRun || newlines >= 2) {
      std::vector<std::string> parts;
      if (spaces) parts.push_back(counted(spaces, "space", "spaces"));
      if (tabs) parts.push_back(counted(tabs, "tab", "tabs"));
      if (newlines) parts.push_back(counted(newlines, "newline", "newlines"));
      if (others) parts.push_back(counted(others, "other blank", "other blanks"));
      add(fmt::format("⟨{}⟩", fmt::join(parts, ", ")), run.size());
      // In full, the lines stay lines.
      if (in_full && newlines) out.push_back({"\n" + std::string(indent), indent.size(), 0});
    } else {
      for (Blank b : run) {
        if (b == Blank::kNewline) {
          if (in_full) {
            out.push_back({"\n" + std::string(indent), indent.size(), 1});
          } else {
            add("↵", 1);
          }
        } else {
          add(b == Blank::kTab ? "⇥" : " ", 1);
        }
      }
    }
    i = end;
  }
  return out;
}

Shown fold(std::string_view s, bool in_full, std::string_view indent, std::size_t fold_at) {
  std::vector<Piece> p = pieces(s, in_full, indent);
  std::size_t width = 0;
  for (const auto& x : p) width += x.width;
  Shown r;
  if (in_full || width <= fold_at) {
    for (const auto& x : p) r.text += x.shown;
    return r;
  }
  std::size_t head = 0, head_w = 0, tail = p.size(), tail_w = 0;
  std::size_t head_max = fold_at * kHead / kFoldAt, tail_max = fold_at * kTail / kFoldAt;
  while (head < p.size() && head_w + p[head].width <= head_max) head_w += p[head++].width;
  while (tail > head && tail_w + p[tail - 1].width <= tail_max) tail_w += p[--tail].width;
  std::size_t hidden = 0;
  for (std::size_t k = head; k < tail; ++k) hidden += p[k].chars;
  for (std::size_t k = 0; k < head; ++k) r.text += p[k].shown;
  r.text += fmt::format(" … {} more … ", counted(hidden, "character", "characters"));
  for (std::size_t k = tail; k < p.size(); ++k) r.text += p[k].shown;
  r.folded = true;
  return r;
}

// The code point at s[i] (its sequence `n` bytes long); U+FFFD for a byte that is not UTF-8.
char32_t code_point(std::string_view s, std::size_t i, std::size_t n) {
  auto c = static_cast<unsigned char>(s[i]);
  if (n == 1) return c < 0x80 ? c : 0xFFFD;
  char32_t cp = c & (0xFF >> (n + 1));
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

// Unicode's East Asian Wide and Fullwidth blocks and the emoji, as terminals draw them (wcwidth's
// table, in short); combining marks and variation selectors take no column of their own.
std::size_t columns_of(char32_t c) {
  auto in = [c](char32_t lo, char32_t hi) { return c >= lo && c <= hi; };
  if (in(0x0300, 0x036F) || in(0x1AB0, 0x1AFF) || in(0x1DC0, 0x1DFF) || in(0x20D0, 0x20FF) || in(0xFE00, 0xFE0F) ||
      in(0xFE20, 0xFE2F) || c == 0x200D)
    return 0;
  if (in(0x1100, 0x115F) || in(0x2E80, 0x303E) || in(0x3041, 0x33FF) || in(0x3400, 0x4DBF) || in(0x4E00, 0x9FFF) ||
      in(0xA000, 0xA4CF) || in(0xAC00, 0xD7A3) || in(0xF900, 0xFAFF) || in(0xFE30, 0xFE4F) || in(0xFF00, 0xFF60) ||
      in(0xFFE0, 0xFFE6) || in(0x1F300, 0x1F64F) || in(0x1F900, 0x1F9FF) || in(0x20000, 0x3FFFD))
    return 2;
  return 1;
}

// The length of the SGR or other CSI sequence at s[i] (ESC [ parameters, a final byte), 0 if none.
std::size_t csi_length(std::string_view s, std::size_t i) {
  if (s[i] != '\x1b' || i + 1 >= s.size() || s[i + 1] != '[') return 0;
  for (std::size_t k = i + 2; k < s.size(); ++k) {
    auto c = static_cast<unsigned char>(s[k]);
    if (c >= 0x40 && c <= 0x7E) return k + 1 - i;
  }
  return 0;
}

bool is_reset(std::string_view sgr) { return sgr == "\x1b[0m" || sgr == "\x1b[m"; }

}  // namespace

Shown shown_text(std::string_view text, bool in_full, std::string_view indent) {
  return fold(text, in_full, indent, kFoldAt);
}

Shown shown_arguments(const boost::json::object& arguments, bool in_full, std::string_view indent) {
  Shown r;
  std::string more(indent);
  more += "  ";
  for (const auto& [key, value] : arguments) {
    Shown name = fold(key, in_full, more, kNameFoldAt);
    std::string text = value.is_string() ? "\"" + std::string(value.get_string()) + "\"" : proto::json_text(value);
    Shown v = fold(text, in_full, more, kFoldAt);
    if (!r.text.empty()) r.text += "\n";
    r.text += std::string(indent) + name.text + ": " + v.text;
    r.folded = r.folded || name.folded || v.folded;
  }
  return r;
}

bool escape_terminal_output() {
  std::FILE* out = escaping_stream(STDOUT_FILENO);
  std::FILE* err = escaping_stream(STDERR_FILENO);
  if (!out || !err) return false;
  std::fflush(stdout);
  std::fflush(stderr);
  stdout = out;
  stderr = err;
  return true;
}

void write_styled(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(STDOUT_FILENO, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::size_t terminal_columns() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

std::size_t display_width(std::string_view text) {
  std::size_t w = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (std::size_t csi = csi_length(text, i)) {
      i += csi;
      continue;
    }
    std::size_t n = sequence_length(text, i);
    w += columns_of(code_point(text, i, n));
    i += n;
  }
  return w;
}

std::vector<std::string> wrap_line(std::string_view line, std::size_t width, std::string_view indent) {
  std::vector<std::string> out;
  // Leading blanks are the line's own indentation, not a place to break.
  std::size_t lead = line.find_first_not_of(' ');
  if (lead == std::string_view::npos) return {std::string(line)};
  std::string cur(line.substr(0, lead));
  std::size_t cur_w = lead, start_w = lead;  // columns used; of them, the indent's
  std::string open;                          // the SGR sequences since the last reset: the style here
  auto line_break = [&] {
    if (!open.empty()) cur += "\x1b[0m";
    out.push_back(std::move(cur));
    cur = std::string(indent) + open;
    cur_w = start_w = display_width(indent);
  };
  auto append = [&](std::string_view piece, std::size_t w) {
    cur += piece;
    cur_w += w;
    if (std::size_t csi = csi_length(piece, 0); csi && piece.back() == 'm') {
      if (is_reset(piece)) {
        open.clear();
      } else {
        open += piece;
      }
    }
  };
  for (std::size_t i = lead; i < line.size();) {
    std::size_t blanks = 0;
    while (i < line.size() && line[i] == ' ') ++blanks, ++i;
    if (i >= line.size()) break;  // trailing blanks are dropped
    // The word, up to the next blank: its characters (an SGR sequence as one, of no width).
    std::vector<std::pair<std::string_view, std::size_t>> chars;
    std::size_t word_w = 0;
    while (i < line.size() && line[i] != ' ') {
      std::size_t n = csi_length(line, i), w = 0;
      if (n == 0) {
        n = sequence_length(line, i);
        w = columns_of(code_point(line, i, n));
      }
      chars.push_back({line.substr(i, n), w});
      word_w += w;
      i += n;
    }
    bool has_word = cur_w > start_w;
    if (has_word && cur_w + blanks + word_w > width) {
      line_break();
      has_word = false;
    }
    if (has_word) append(std::string(blanks, ' '), blanks);
    bool fits = cur_w + word_w <= width;
    for (auto [c, w] : chars) {
      // A word longer than a whole line: cut where the line is full, the only break in a word.
      if (!fits && w > 0 && cur_w + w > width && cur_w > start_w) line_break();
      append(c, w);
    }
  }
  out.push_back(std::move(cur));
  return out;
}

std::string wrap_text(std::string_view text, std::size_t width, std::string_view hang) {
  std::string out;
  bool first = true;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    std::string indent(hang);
    if (!first) {
      // Under the line's own text: its leading blanks and a list marker ("1. ", "- ").
      std::size_t lead = std::min(line.find_first_not_of(' '), line.size()), marker = lead;
      while (marker < line.size() && std::isdigit(static_cast<unsigned char>(line[marker]))) ++marker;
      if (marker > lead && line.substr(marker, 2) == ". ") {
        marker += 2;
      } else if (line.substr(lead, 2) == "- " || line.substr(lead, 2) == "* ") {
        marker = lead + 2;
      } else {
        marker = lead;
      }
      indent.assign(marker, ' ');
    }
    std::vector<std::string> lines = wrap_line(line, width, indent);
    for (std::size_t k = 0; k < lines.size(); ++k) out += (k ? "\n" : "") + lines[k];
    first = false;
    if (end == std::string_view::npos) break;
    out += '\n';
    text.remove_prefix(end + 1);
  }
  return out;
}

std::string counted(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::vector<std::string> columns(const std::vector<std::vector<std::string>>& rows, std::string_view align) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], display_width(row[c]));
    }
  }
  std::vector<std::string> out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::string pad(widths[c] - display_width(row[c]), ' ');
      bool right = c < align.size() && align[c] == 'r';
      if (c) line += "  ";
      line += right ? pad + row[c] : c + 1 < row.size() ? row[c] + pad : row[c];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.push_back(std::move(line));
  }
  return out;
}

std::vector<std::string> right_aligned(std::vector<std::string> cells) {
  std::size_t widest = 0;
  for (const auto& c : cells) widest = std::max(widest, display_width(c));
  for (auto& c : cells) c.insert(0, widest - display_width(c), ' ');
  return cells;
}

std::string warning_text(std::string_view text, std::size_t width) {
  std::string shown = "warning: " + escape_controls(valid_utf8(std::string(text)), true);
  std::replace(shown.begin(), shown.end(), '\t', ' ');
  return wrap_text(shown, width, "         ");
}

std::string thinking_line(std::chrono::milliseconds elapsed, std::size_t width) {
  static constexpr std::string_view kFrames[] = {"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"};
  auto ms = elapsed.count();
  std::string text = fmt::format("{} thinking… {} s (Ctrl-C cancels)", kFrames[(ms / 80) % 10], ms / 1000);
  if (width < 2) return {};
  // One column short of the width: a line that fills it leaves the cursor waiting to wrap.
  while (!text.empty() && display_width(text) > width - 1) {
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();
    if (!text.empty()) text.pop_back();
  }
  return text;
}

std::string spinner_draw(std::string_view line) { return "\r\x1b[2K\x1b[2m" + std::string(line) + "\x1b[0m"; }

std::string_view spinner_erase() { return "\r\x1b[2K"; }

std::string json_line(const boost::json::value& v) { return json_escape_controls(proto::json_text(v)) + "\n"; }

}  // namespace oppx::cli
