// Text from outside (a client's bytes, a server's stderr or tool descriptions) shown to a person:
// control characters become \xNN, so it can neither drive a terminal nor forge log lines.
#pragma once

#include <string>
#include <string_view>

namespace oppx {

std::string escape_controls(std::string_view s, bool keep_newlines_and_tabs = false);

// ASCII letters in lower case (header names, words matched without regard to case).
std::string lower(std::string_view s);

// One word for a POSIX shell: as it is when it holds only safe characters, else in single quotes.
std::string shell_word(std::string_view w);

}  // namespace oppx
