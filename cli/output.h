// The one boundary between oppx and the terminal: main() puts stdout and stderr behind a filter
// that escapes control characters (common/text.h, newlines and tabs kept), so that a name from a
// repository's .mcp.json, a server's text or a daemon's message cannot drive the terminal,
// whichever line of which command prints it. --json output goes out through json_line(), which
// keeps it valid JSON through the filter. oppx's own terminal control (the chat's styles, its
// spinner) goes around it on purpose, through write_styled(), only ever around text escaped first.
// Below: how wide a text is on the terminal and how lines are broken to fit it.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::cli {

// Replaces stdout and stderr with unbuffered streams on the same descriptors whose every write
// is escaped first. Once, at the start of main; false (nothing replaced) when out of memory.
bool escape_terminal_output();

// `v` serialized as one line (with its newline), its control and invisible characters as JSON
// escapes: the filter then has nothing to change.
std::string json_line(const boost::json::value& v);

// What a question shows of a text from the model or a server (a tool's argument, a command),
// escaped like everything else printed, and with nothing hidden: a run of blanks long enough to
// push a payload out of sight is one visible marker that counts it ("⟨420 spaces⟩"), a tab is
// ⇥; folded, a newline is ↵ and a long text is its first and last part around "… N characters
// more …"; in full, it is all there, its newlines as new lines starting with `indent`.
struct Shown {
  std::string text;
  bool folded = false;  // something was left out: the full view would show more
};
Shown shown_text(std::string_view text, bool in_full, std::string_view indent = "");
// A tool's arguments, one per line ("<indent><name>: <value>", a string in quotes, anything else
// as JSON), each as shown_text shows it.
Shown shown_arguments(const boost::json::object& arguments, bool in_full, std::string_view indent);

// Writes `bytes` to stdout as they are, past the filter: only for text oppx built itself, its own
// SGR sequences and cursor moves around text that went through escape_controls first.
void write_styled(std::string_view bytes);

// The columns of the terminal on stdout (80 when it is not one or does not say), read each time:
// a resize counts from the next reply.
std::size_t terminal_columns();

// Columns a text takes on the terminal: East Asian wide characters and emoji two, combining marks
// none, SGR sequences (ESC [ … m, oppx's own: any other ESC was escaped) none.
std::size_t display_width(std::string_view text);

// One line (no newline) broken at spaces into lines of at most `width` columns, each after the
// first starting with `indent` (counted in the width); the spaces at a break are dropped. Never
// mid-word, but for a word longer than a line. An SGR style open at a break is closed at the end of
// the line and opened again after the indent, so that an indent is never underlined.
std::vector<std::string> wrap_line(std::string_view line, std::size_t width, std::string_view indent = "");

// A text of several lines, each wrapped so: the first line's continuation starts with `hang`;
// another line's under its own text (after its leading blanks and a list marker such as "1. ").
std::string wrap_text(std::string_view text, std::size_t width, std::string_view hang = "");

// "1 tool", "2 tools": a count with its noun as the count wants it.
std::string counted(std::size_t n, std::string_view one, std::string_view many);

// Rows as columns: each cell padded to its column's widest (display_width), cells two spaces
// apart, no blanks at a line's end; `align` has 'r' at a column to right-align.
std::vector<std::string> columns(const std::vector<std::vector<std::string>>& rows, std::string_view align = "");

// Numbers (or any cells) padded on the left to the widest of them, to stand right-aligned.
std::vector<std::string> right_aligned(std::vector<std::string> cells);

// The chat's one style for a warning (its own, the agent's notices, a connector gone down):
// "warning: <text>", escaped, broken at `width` with the first line's rest under the text and
// each later line under its own; no newline at the end.
std::string warning_text(std::string_view text, std::size_t width);

// The line the chat shows while the model thinks: a spinner's frame (by the time) and the seconds
// so far, dim, "⠹ thinking… 4 s (Ctrl-C cancels)"; cut to `width` so that it never wraps (erasing
// it then leaves nothing behind). Drawn and erased with spinner_draw() and spinner_erase().
std::string thinking_line(std::chrono::milliseconds elapsed, std::size_t width);
// The bytes that draw `line` over the cursor's line (which must be empty), and that erase it.
std::string spinner_draw(std::string_view line);
std::string_view spinner_erase();

}  // namespace oppx::cli
