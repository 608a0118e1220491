// The one boundary between oppx and the terminal: main() puts stdout and stderr behind a filter
// that escapes control characters (common/text.h, newlines and tabs kept), so that a name from a
// repository's .mcp.json, a server's text or a daemon's message cannot drive the terminal,
// whichever line of which command prints it. --json output goes out through json_line(), which
// keeps it valid JSON through the filter. Output that is oppx's own terminal control (a later
// chat's colours) would need a way around it, on purpose.
#pragma once

#include <boost/json/value.hpp>

#include <string>

namespace oppx::cli {

// Replaces stdout and stderr with unbuffered streams on the same descriptors whose every write
// is escaped first. Once, at the start of main; false (nothing replaced) when out of memory.
bool escape_terminal_output();

// `v` serialized as one line (with its newline), its control and invisible characters as JSON
// escapes: the filter then has nothing to change.
std::string json_line(const boost::json::value& v);

}  // namespace oppx::cli
