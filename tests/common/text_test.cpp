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

// Planted secrets of several lengths: long ones anywhere, short ones as words of their own, one
// or two characters never.
TEST(MaskSecrets, LongOnesAnywhereShortOnesAsWordsTinyOnesNot) {
  const std::string key = "sk-live-9f8e7d6c5b4a39281706";
  EXPECT_EQ(mask_secrets("Error: 401 invalid api key " + key, {key}), "Error: 401 invalid api key ***");
  EXPECT_EQ(mask_secrets("key=" + key + "&x=1 and again:" + key + ".", {key}), "key=***&x=1 and again:***.");
  EXPECT_EQ(mask_secrets("glued" + key + "glued", {key}), "glued***glued");  // 8 or more: anywhere
  EXPECT_EQ(mask_secrets("pw hunter22 in hunter22x", {"hunter22"}), "pw *** in ***x");
  // 3 to 7 characters: only as a word of their own.
  EXPECT_EQ(mask_secrets("token abc rejected; abcdef and xabc stay", {"abc"}),
            "token *** rejected; abcdef and xabc stay");
  EXPECT_EQ(mask_secrets("key 'a7Q9' bad, a7Q9b fine", {"a7Q9"}), "key '***' bad, a7Q9b fine");
  EXPECT_EQ(mask_secrets("dev device dev.", {"dev"}), "*** device ***.");
  // A secret that starts or ends with punctuation has no word edge there to look for.
  EXPECT_EQ(mask_secrets("x=-k9z-y", {"-k9z-"}), "x=***y");
  // One or two characters: left.
  EXPECT_EQ(mask_secrets("exit status 1, line 42", {"1", "42"}), "exit status 1, line 42");
  // The longest first; nothing to hide: the text as it is.
  EXPECT_EQ(mask_secrets("Bearer sk-abcdefghij", {"sk-abcdefghij", "Bearer sk-abcdefghij"}), "***");
  EXPECT_EQ(mask_secrets("plain", {}), "plain");
  EXPECT_EQ(mask_secrets("", {"secret-value"}), "");
}

// Found by fuzz/secret_mask: a short secret glued to a long one stood alone once the long one was
// hidden, and was shown.
TEST(MaskSecrets, AShortOneLeftStandingByAHiddenOneIsHiddenToo) {
  EXPECT_EQ(mask_secrets("LONGSECRETpin and pinLONGSECRET", {"LONGSECRET", "pin"}), "****** and ******");
  EXPECT_EQ(mask_secrets("LONGSECRETpinned", {"LONGSECRET", "pin"}), "***pinned") << "still part of a word";
  EXPECT_EQ(mask_secrets("a***b ***", {"***"}), "a***b ***") << "a secret that is the mask changes nothing";
}

// Found by fuzz/terminal_escape: a string holding bytes that are not UTF-8 (a server's stderr, a
// file name) made `--json` output that no JSON parser takes.
TEST(JsonEscapeControls, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  EXPECT_EQ(json_escape_controls("[\"a\xff\xc2\"]"), "[\"a\\ufffd\\ufffd\"]");
  EXPECT_EQ(json_escape_controls("\"\xe0\x82\x9b \xed\xa0\x80 \xf4\x90\x80\x80\""),
            "\"\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd\\ufffd\"")
      << "overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either";
  EXPECT_EQ(json_escape_controls("\"é ✓ 😀 \u200b\""), "\"é ✓ 😀 \\u200b\"") << "UTF-8 stays as it is";
}

}  // namespace
}  // namespace oppx
