// escape_controls: C0 controls and DEL, byte by byte; UTF-8 passes through unchanged.
#include "common/text.h"

#include <fmt/format.h>

namespace oppx {

std::string escape_controls(std::string_view s, bool keep_newlines_and_tabs) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    bool kept = keep_newlines_and_tabs && (c == '\n' || c == '\t');
    if ((c < 0x20 || c == 0x7f) && !kept) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace oppx
