// MarkdownRenderer (markdown.h). Inline text is parsed into spans, each with a set of styles, and
// written with one SGR sequence at each change of style, after a reset: cli/output.h's wrap_line
// carries a style over a break by the sequences since the last reset. The parse is CommonMark's
// rules in short: a delimiter opens when text follows it, closes after text; `_` never inside a
// word (snake_case stays); a run of backticks closes only with a run as long; anything unmatched
// is literal.
#include "cli/markdown.h"

#include "cli/output.h"
#include "common/text.h"

#include <algorithm>
#include <cctype>

namespace oppx::cli {

namespace {

enum Style : unsigned {
  kBold = 1,
  kItalic = 2,
  kCode = 4,
  kStrike = 8,
  kDim = 16,
  kUnderline = 32,
};

struct Span {
  std::string text;
  unsigned style = 0;
};

bool blank(char c) { return c == ' ' || c == '\t'; }
bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || (static_cast<unsigned char>(c) & 0x80); }

std::size_t run_of(std::string_view s, std::size_t i, char c) {
  std::size_t n = 0;
  while (i + n < s.size() && s[i + n] == c) ++n;
  return n;
}

// The closing run of exactly `n` of `c` after `from`, for an opener of that run: after text (not
// a blank), and for `_` not followed by a word character.
std::size_t closer(std::string_view s, std::size_t from, char c, std::size_t n) {
  for (std::size_t j = from; j < s.size();) {
    if (s[j] != c) {
      ++j;
      continue;
    }
    std::size_t m = run_of(s, j, c);
    bool after_text = j > from && !blank(s[j - 1]);
    bool word_follows = j + m < s.size() && word_char(s[j + m]);
    if (m == n && after_text && !(c == '_' && word_follows)) return j;
    j += m;
  }
  return std::string_view::npos;
}

void parse_inline(std::string_view s, unsigned style, std::vector<Span>& out) {
  std::string lit;
  auto flush = [&] {
    if (!lit.empty()) out.push_back({std::move(lit), style});
    lit.clear();
  };
  for (std::size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '\\' && i + 1 < s.size() && std::ispunct(static_cast<unsigned char>(s[i + 1]))) {
      lit += s[i + 1];
      i += 2;
      continue;
    }
    if (c == '`') {
      std::size_t n = run_of(s, i, '`'), close = i + n;
      while ((close = s.find('`', close)) != std::string_view::npos && run_of(s, close, '`') != n)
        close += run_of(s, close, '`');
      if (close == std::string_view::npos) {
        lit.append(n, '`');
        i += n;
        continue;
      }
      std::string_view code = s.substr(i + n, close - i - n);
      if (code.size() >= 2 && code.front() == ' ' && code.back() == ' ' &&
          code.find_first_not_of(' ') != std::string_view::npos)
        code = code.substr(1, code.size() - 2);
      flush();
      out.push_back({std::string(code), style | kCode});
      i = close + n;
      continue;
    }
    if (c == '*' || c == '_' || c == '~') {
      std::size_t n = run_of(s, i, c);
      bool text_follows = i + n < s.size() && !blank(s[i + n]);
      bool in_word = c == '_' && i > 0 && word_char(s[i - 1]);
      bool usable = c == '~' ? n == 2 : n <= 3;
      std::size_t close = usable && text_follows && !in_word ? closer(s, i + n, c, n) : std::string_view::npos;
      if (close == std::string_view::npos) {
        lit.append(n, c);
        i += n;
        continue;
      }
      unsigned add = c == '~' ? kStrike : n == 1 ? kItalic : n == 2 ? kBold : kBold | kItalic;
      flush();
      parse_inline(s.substr(i + n, close - i - n), style | add, out);
      i = close + n;
      continue;
    }
    if (c == '[') {
      // [text](url): the text, then the address dim, unless the text is the address.
      std::size_t rb = s.find("](", i + 1), rp = rb == std::string_view::npos ? rb : s.find(')', rb + 2);
      if (rp != std::string_view::npos && s.substr(i + 1, rb - i - 1).find('[') == std::string_view::npos) {
        std::string_view text = s.substr(i + 1, rb - i - 1), url = s.substr(rb + 2, rp - rb - 2);
        flush();
        parse_inline(text, style | kUnderline, out);
        if (url != text && !url.empty()) out.push_back({" (" + std::string(url) + ")", style | kDim});
        i = rp + 1;
        continue;
      }
    }
    if (c == '<' && (s.substr(i + 1, 7) == "http://" || s.substr(i + 1, 8) == "https://")) {
      if (std::size_t gt = s.find('>', i); gt != std::string_view::npos && s.substr(i, gt - i).find(' ') == s.npos) {
        flush();
        out.push_back({std::string(s.substr(i + 1, gt - i - 1)), style | kUnderline});
        i = gt + 1;
        continue;
      }
    }
    lit += c;
    ++i;
  }
  flush();
}

std::string sgr(unsigned style, bool colour) {
  std::string codes;
  auto add = [&](std::string_view code) { codes += (codes.empty() ? "" : ";") + std::string(code); };
  if (style & kBold) add("1");
  if (style & kDim) add("2");
  if (style & kItalic) add("3");
  if (style & kUnderline) add("4");
  if (style & kStrike) add("9");
  if ((style & kCode) && colour) add("36");
  return codes.empty() ? std::string() : "\x1b[" + codes + "m";
}

// Text from the model as the terminal may show it: tabs as spaces, every control escaped.
std::string escaped(std::string_view s) {
  std::string out;
  for (char c : escape_controls(s, true)) out += c == '\t' ? std::string(4, ' ') : std::string(1, c);
  return out;
}

std::string styled_spans(const std::vector<Span>& spans, bool colour) {
  std::string out;
  std::string open;
  for (const auto& sp : spans) {
    std::string want = sgr(sp.style, colour);
    if (want != open) {
      if (!open.empty()) out += "\x1b[0m";
      out += want;
      open = want;
    }
    bool ticks = (sp.style & kCode) && !colour;
    out += ticks ? "`" + escaped(sp.text) + "`" : escaped(sp.text);
  }
  if (!open.empty()) out += "\x1b[0m";
  return out;
}

std::string inline_styled(std::string_view text, bool colour, unsigned base) {
  std::vector<Span> spans;
  parse_inline(text, base, spans);
  return styled_spans(spans, colour);
}

// Tabs to spaces at stops of 4, so that code keeps its columns behind an indent.
std::string expand_tabs(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\t') {
      out.append(4 - out.size() % 4, ' ');
    } else {
      out += c;
    }
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && (blank(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A thematic break: three or more of one of - * _, blanks between allowed.
bool is_rule(std::string_view t) {
  if (t.empty() || (t[0] != '-' && t[0] != '*' && t[0] != '_')) return false;
  std::size_t marks = 0;
  for (char c : t) {
    if (c == t[0]) {
      ++marks;
    } else if (!blank(c)) {
      return false;
    }
  }
  return marks >= 3;
}

// A list item's marker at the start of `t`: its length with the blank after it, 0 when none;
// `number` gets an ordered item's "12." (as written, with `.` for `)`).
std::size_t list_marker(std::string_view t, std::string& number) {
  if (t.size() >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && blank(t[1])) return 2;
  std::size_t d = 0;
  while (d < t.size() && d < 9 && std::isdigit(static_cast<unsigned char>(t[d]))) ++d;
  if (d > 0 && d + 1 < t.size() && (t[d] == '.' || t[d] == ')') && blank(t[d + 1])) {
    number = std::string(t.substr(0, d)) + ".";
    return d + 2;
  }
  return 0;
}

std::vector<std::string> table_cells(std::string_view row) {
  row = trim(row);
  if (!row.empty() && row.front() == '|') row.remove_prefix(1);
  if (!row.empty() && row.back() == '|' && (row.size() < 2 || row[row.size() - 2] != '\\')) row.remove_suffix(1);
  std::vector<std::string> cells;
  std::string cell;
  bool code = false;
  for (std::size_t i = 0; i < row.size(); ++i) {
    char c = row[i];
    if (c == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (c == '|' && !code) {
      cells.push_back(std::string(trim(cell)));
      cell.clear();
    } else {
      if (c == '`') code = !code;
      cell += c;
    }
  }
  cells.push_back(std::string(trim(cell)));
  return cells;
}

bool is_delimiter_row(const std::vector<std::string>& cells) {
  for (const auto& c : cells) {
    std::string_view t = c;
    if (!t.empty() && t.front() == ':') t.remove_prefix(1);
    if (!t.empty() && t.back() == ':') t.remove_suffix(1);
    if (t.empty() || t.find_first_not_of('-') != std::string_view::npos) return false;
  }
  return !cells.empty();
}

std::string repeat(std::string_view s, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

std::string render_inline(std::string_view text, bool colour) {
  return inline_styled(valid_utf8(std::string(text)), colour, 0);
}

std::string MarkdownRenderer::wrapped(const std::string& styled, std::string_view indent) const {
  std::string out;
  for (const auto& l : wrap_line(styled, style_.width, indent)) out += l + "\n";
  return out;
}

std::string MarkdownRenderer::feed(std::string_view piece) {
  held_ += piece;
  std::string out;
  for (std::size_t nl; (nl = held_.find('\n')) != std::string::npos;) {
    std::string raw = held_.substr(0, nl);
    held_.erase(0, nl + 1);
    out += line(raw);
  }
  return out;
}

std::string MarkdownRenderer::finish() {
  std::string out;
  if (!held_.empty()) out += line(std::exchange(held_, {}));
  out += table();
  fence_.reset();
  lists_.clear();
  return out;
}

std::string MarkdownRenderer::line(std::string_view raw_line) {
  std::string raw = expand_tabs(valid_utf8(std::string(raw_line)));
  if (!raw.empty() && raw.back() == '\r') raw.pop_back();
  std::size_t lead = std::min(raw.find_first_not_of(' '), raw.size());
  std::string_view t = std::string_view(raw).substr(lead);
  std::string code_style = style_.colour ? sgr(kCode, true) : std::string();

  if (fence_) {
    if (run_of(t, 0, fence_->c) >= fence_->length && trim(t.substr(run_of(t, 0, fence_->c))).empty()) {
      fence_.reset();
      return {};
    }
    // Verbatim, never wrapped: the code's own indent (less the fence's) kept behind four columns.
    std::string_view code = std::string_view(raw).substr(std::min(lead, fence_->indent));
    std::string shown = escaped(code);
    if (shown.empty()) return "\n";
    return std::string(4 + fence_->indent, ' ') + code_style + shown + (code_style.empty() ? "" : "\x1b[0m") + "\n";
  }

  // A table's rows are held: its columns are known only once it is whole.
  if (!t.empty() && t.front() == '|') {
    rows_.push_back(raw);
    return {};
  }
  std::string out = table();

  if (std::size_t n = std::max(run_of(t, 0, '`'), run_of(t, 0, '~')); n >= 3) {
    char c = t[0];
    if (c == '~' || t.substr(n).find('`') == std::string_view::npos) {
      fence_ = Fence{c, n, lead};
      return out;
    }
  }
  if (t.empty()) return out + "\n";

  std::size_t hashes = run_of(t, 0, '#');
  if (hashes >= 1 && hashes <= 6 && (t.size() == hashes || blank(t[hashes]))) {
    std::string_view text = trim(t.substr(hashes));
    // A closing run of # after a blank is not the heading's ("## C#" keeps its #).
    std::size_t closing = run_of(std::string(text.rbegin(), text.rend()), 0, '#');
    if (closing == text.size() || (closing > 0 && blank(text[text.size() - closing - 1]))) text.remove_suffix(closing);
    lists_.clear();
    return out + wrapped(inline_styled(trim(text), style_.colour, hashes == 1 ? kBold | kUnderline : kBold), "");
  }
  if (is_rule(t)) {
    lists_.clear();
    return out + "\x1b[2m" + repeat("─", std::min<std::size_t>(style_.width, 40)) + "\x1b[0m\n";
  }
  if (t.front() == '>') {
    std::size_t depth = 0;
    while (!t.empty() && t.front() == '>') {
      ++depth;
      t.remove_prefix(1);
      if (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    }
    std::string bar = "\x1b[2m" + repeat("│ ", depth) + "\x1b[0m";
    return out + wrapped(bar + inline_styled(t, style_.colour, 0), bar);
  }

  std::string number;
  if (std::size_t m = list_marker(t, number)) {
    while (!lists_.empty() && lists_.back().source > lead) lists_.pop_back();
    if (lists_.empty() || lists_.back().source < lead) lists_.push_back({lead, 0});
    std::size_t level = lists_.size() - 1;
    static const char* const kBullets[] = {"•", "◦", "▪"};
    std::string marker = number.empty() ? kBullets[level % 3] : number;
    std::string_view text = t.substr(m);
    while (!text.empty() && blank(text.front())) text.remove_prefix(1);
    if (number.empty() && text.size() >= 3 && text[0] == '[' && text[2] == ']' &&
        (text[1] == ' ' || text[1] == 'x' || text[1] == 'X')) {
      marker = text[1] == ' ' ? "☐" : "☑";
      text.remove_prefix(std::min<std::size_t>(4, text.size()));
    }
    // A nested item's marker under its parent's text.
    std::string pad(level == 0 ? 2 : lists_[level - 1].column, ' ');
    std::string indent(pad.size() + display_width(marker) + 1, ' ');
    lists_.back().column = indent.size();
    return out + wrapped(pad + marker + " " + inline_styled(text, style_.colour, 0), indent);
  }
  if (lead > 0 && !lists_.empty()) {
    // An item's next paragraph: under the text of the deepest item it is indented into.
    while (lists_.size() > 1 && lists_.back().source >= lead) lists_.pop_back();
    std::string indent(lists_.back().column, ' ');
    return out + wrapped(indent + inline_styled(t, style_.colour, 0), indent);
  }
  if (lead == 0) lists_.clear();
  std::string indent(lead, ' ');
  return out + wrapped(indent + inline_styled(t, style_.colour, 0), indent);
}

std::string MarkdownRenderer::table() {
  if (rows_.empty()) return {};
  std::vector<std::string> rows = std::exchange(rows_, {});
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) cells.push_back(table_cells(r));
  auto as_lines = [&] {
    std::string out;
    for (const auto& r : rows) out += wrapped(inline_styled(trim(r), style_.colour, 0), "");
    return out;
  };
  if (cells.size() < 2 || !is_delimiter_row(cells[1])) return as_lines();
  std::size_t columns = cells[0].size();
  std::vector<char> align(columns, 'l');
  for (std::size_t c = 0; c < columns && c < cells[1].size(); ++c) {
    const std::string& d = cells[1][c];
    bool left = d.front() == ':', right = d.back() == ':';
    align[c] = left && right ? 'c' : right ? 'r' : 'l';
  }
  std::vector<std::vector<std::string>> shown;
  std::vector<std::size_t> widths(columns, 0);
  for (std::size_t r = 0; r < cells.size(); ++r) {
    if (r == 1) continue;
    std::vector<std::string> row;
    for (std::size_t c = 0; c < columns; ++c) {
      std::string text = c < cells[r].size() ? cells[r][c] : "";
      row.push_back(inline_styled(text, style_.colour, r == 0 ? unsigned{kBold} : 0u));
      widths[c] = std::max(widths[c], display_width(row.back()));
    }
    shown.push_back(std::move(row));
  }
  std::size_t total = 0;
  for (auto w : widths) total += w + 3;
  if (total - 3 > style_.width) return as_lines();  // too wide for columns: each row as a line
  std::string out;
  for (std::size_t r = 0; r < shown.size(); ++r) {
    std::string line;
    for (std::size_t c = 0; c < columns; ++c) {
      std::size_t room = widths[c] - display_width(shown[r][c]);
      std::size_t before = align[c] == 'r' ? room : align[c] == 'c' ? room / 2 : 0;
      if (c) line += " \x1b[2m│\x1b[0m ";
      line += std::string(before, ' ') + shown[r][c] + std::string(room - before, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (r == 0) {
      std::string rule;
      for (std::size_t c = 0; c < columns; ++c) rule += (c ? "─┼─" : "") + repeat("─", widths[c]);
      out += "\x1b[2m" + rule + "\x1b[0m\n";
    }
  }
  return out;
}

std::string sectioned_result_summary(std::string_view tool, std::string_view text) {
  if (!text.starts_with("### ")) return {};
  // The sections in order: a title, then the lines that say something (no fences, no blanks).
  std::vector<std::pair<std::string, std::vector<std::string>>> sections;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view l = trim(text.substr(start, end - start));
    if (l.starts_with("### ")) {
      sections.push_back({std::string(trim(l.substr(4))), {}});
    } else if (!sections.empty() && !l.empty() && !l.starts_with("```")) {
      sections.back().second.push_back(std::string(l));
    }
    start = end + 1;
  }
  auto first = [&](std::string_view title) -> std::string {
    for (const auto& [t, lines] : sections) {
      if (t == title && !lines.empty()) return lines.front();
    }
    return {};
  };
  if (std::string error = first("Error"); !error.empty()) {
    if (error.starts_with("Error: ")) error.erase(0, 7);
    return "error: " + error;
  }
  std::string url, title;
  for (const auto& [t, lines] : sections) {
    if (t != "Page") continue;
    for (const auto& l : lines) {
      if (l.starts_with("- Page URL: ")) url = l.substr(12);
      if (l.starts_with("- Page Title: ")) title = l.substr(14);
    }
  }
  std::string page = url.empty() ? "" : url + (title.empty() ? "" : " — " + title);
  std::string_view name = tool.substr(tool.rfind('.') + 1);
  if (!page.empty() && name == "browser_navigate") return "navigated to " + page;
  if (!page.empty() && name == "browser_navigate_back") return "went back to " + page;
  // What the tool gave back: the first section that is not the page's state.
  static const std::string_view kState[] = {"Page",        "Snapshot", "Events", "Open tabs", "Ran Playwright code",
                                            "Modal state", "Console"};
  std::string result;
  for (const auto& [t, lines] : sections) {
    if (lines.empty() || std::find(std::begin(kState), std::end(kState), t) != std::end(kState)) continue;
    result = lines.front();
    break;
  }
  if (!result.empty()) return page.empty() ? result : result + " (on " + page + ")";
  if (!page.empty()) return "done; the page is " + page;
  return sections.front().second.empty() ? sections.front().first : sections.front().second.front();
}

std::string render_markdown(std::string_view text, MarkdownStyle style) {
  MarkdownRenderer r(style);
  std::string out = r.feed(text);
  return out + r.finish();
}

}  // namespace oppx::cli
