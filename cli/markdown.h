// The model's markdown drawn for the terminal, as the reply streams in pieces: whole lines only (a
// line is held until it ends or the reply does; a table until its last row), each drawn by what it
// is (heading, list item, quote, rule, table, fenced code, paragraph) and wrapped at the width.
// Every character from the model is escaped (common/text.h escape_controls): the only terminal
// control in what it returns is its own SGR styles, which is why that goes out by write_styled().
// Pure functions of their input: no terminal is read or written here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::cli {

struct MarkdownStyle {
  std::size_t width = 80;  // columns: lines are broken at spaces to fit (code is never broken)
  bool colour = true;      // code in a colour; without (NO_COLOR), inline code keeps its backticks
};

class MarkdownRenderer {
 public:
  explicit MarkdownRenderer(MarkdownStyle style) : style_(style) {}
  // A piece of the reply: the lines it completes, drawn, each ending in a newline ("" while the
  // line is still open).
  std::string feed(std::string_view piece);
  // The reply's end: the open line (and a table held) drawn; ready for the next reply.
  std::string finish();
  bool holding() const { return !held_.empty() || !rows_.empty(); }

 private:
  struct Fence {
    char c;
    std::size_t length, indent;
  };
  std::string line(std::string_view raw);
  std::string table();
  std::string wrapped(const std::string& styled, std::string_view indent) const;
  MarkdownStyle style_;
  std::string held_;               // the line not ended yet
  std::optional<Fence> fence_;     // inside a fenced code block
  std::vector<std::string> rows_;  // a table's rows, held until the table ends
  struct Level {
    std::size_t source, column;  // the item's indent in the text; its text's column on the screen
  };
  std::vector<Level> lists_;  // the open list levels
};

// One line's inline markdown (code spans, bold, italic, strikethrough, links, backslash escapes)
// with SGR styles, every character of the text escaped.
std::string render_inline(std::string_view text, bool colour);

// A whole text at once.
std::string render_markdown(std::string_view text, MarkdownStyle style);

// A tool's result whose text is markdown sections ("### Page", "### Error", as Playwright's MCP
// server writes them) said in one line: the error's first line, "navigated to <url> — <title>",
// a result's first line and the page it is on; "" when the text is not such sections.
std::string sectioned_result_summary(std::string_view tool, std::string_view text);

}  // namespace oppx::cli
