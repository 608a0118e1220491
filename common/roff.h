// Man pages as roff, from the help texts the programs print (so that `man oppx` and `--help`
// cannot drift): escaping of one line, prose, two-column lists, and oppxd's whole page from its
// usage text. Pure functions, no I/O.
#pragma once

#include <string>
#include <string_view>

namespace oppx::roff {

// One text line for roff: backslashes as \e, '-' as \- (so that copied options stay ASCII), and a
// leading '.' or '\'' made literal with \&. No newline is added.
std::string escape(std::string_view line);

// The page's head: the UTF-8 coding line for preconv, .TH, no hyphenation, left-adjusted, and
// NAME. `title` is upper case ("OPPX"); `what` is NAME's text after "name \-".
std::string head(std::string_view title, std::string_view name, std::string_view version, std::string_view what);

// Prose as the help prints it, wrapped at ~95 columns: lines are filled into paragraphs, a blank
// line starts a new one, a line that begins "- " or "1. " starts a new line, and indented lines
// (option lists, continued commands) are kept as they are (no fill).
std::string text(std::string_view prose);

// "  TAG   its text\n        continued\n" (a tag, then two spaces or more) as .TP items.
std::string columns(std::string_view list);

// The man page of a program whose `--help` reads "usage: NAME …", paragraphs, an indented option
// list, "Exit codes: …" and "Log: …" lines (oppxd's): SYNOPSIS, DESCRIPTION, OPTIONS, EXIT
// STATUS, FILES and SEE ALSO (`see_also`, e.g. "oppx(1)"), in that order.
std::string page_from_usage(std::string_view usage, std::string_view version, std::string_view what,
                            std::string_view see_also);

}  // namespace oppx::roff
