// The one boundary between oppx and the terminal: main() puts stdout and stderr behind a filter
// that escapes control characters (common/text.h, newlines and tabs kept), so that a name from a
// repository's .mcp.json, a server's text or a daemon's message cannot drive the terminal,
// whichever line of which command prints it. --json output goes out through json_line(), which
// keeps it valid JSON through the filter. Output that is oppx's own terminal control (a later
// chat's colours) would need a way around it, on purpose.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <string_view>

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

}  // namespace oppx::cli
