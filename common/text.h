// Text from outside (a client's bytes, a server's stderr or tool descriptions) shown to a person:
// control characters become \xNN, so it can neither drive a terminal nor forge log lines.
#pragma once

#include <string>
#include <string_view>

namespace oppx {

std::string escape_controls(std::string_view s, bool keep_newlines_and_tabs = false);

}  // namespace oppx
