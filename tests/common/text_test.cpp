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

TEST(EscapeControls, InvisibleCharactersBecomeVisible) {
  EXPECT_EQ(escape_controls("zero\u200bwidth"), "zero\\u{200b}width");
  EXPECT_EQ(escape_controls("\u202eevil\u2066"), "\\u{202e}evil\\u{2066}");
  EXPECT_EQ(escape_controls("bom\ufeff c1\u009b"), "bom\\u{feff} c1\\u{009b}");
  EXPECT_EQ(escape_controls("cut \xe2\x80"), "cut \xe2\x80") << "a cut sequence is passed as it is";
  EXPECT_EQ(escape_controls("— é ✓"), "— é ✓");
}

}  // namespace
}  // namespace oppx
