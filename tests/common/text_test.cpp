// common/text: control characters escaped for display; UTF-8 and (when asked) newlines kept.
#include "common/text.h"

#include <gtest/gtest.h>

namespace oppx {
namespace {

TEST(EscapeControls, AnsiAndNulBecomeVisible) {
  EXPECT_EQ(escape_controls("red \x1b[31mtext\x1b[0m"), "red \\x1b[31mtext\\x1b[0m");
  EXPECT_EQ(escape_controls(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escape_controls("line\nnext\x7f"), "line\\x0anext\\x7f");
  EXPECT_EQ(escape_controls("line\n\tnext", true), "line\n\tnext");
  EXPECT_EQ(escape_controls("ünïcode ✓"), "ünïcode ✓");
}

}  // namespace
}  // namespace oppx
