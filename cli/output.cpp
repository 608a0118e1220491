// escape_terminal_output: glibc's fopencookie gives a FILE whose writes call ours; stdout and
// stderr are plain variables in glibc, so fmt::print and fwrite reach the filter unchanged.
// Unbuffered: each print arrives whole, so a UTF-8 sequence is never split between two writes.
// shown_text: the text cut into pieces (a character as it is drawn, or a run of blanks as its
// marker), each knowing how many characters it stands for, so that a fold can count what it hides.
#include "cli/output.h"

#include "common/text.h"
#include "proto/jsonrpc.h"

#include <boost/json/serialize.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <vector>
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

std::string counted(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
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
    std::string text =
        value.is_string() ? "\"" + std::string(value.get_string()) + "\"" : boost::json::serialize(value);
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

std::string json_line(const boost::json::value& v) { return json_escape_controls(proto::json_text(v)) + "\n"; }

}  // namespace oppx::cli
