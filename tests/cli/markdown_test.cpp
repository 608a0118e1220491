// cli/markdown.h: the model's markdown as the terminal chat draws it, line by line as it streams,
// wrapped at the width, with nothing from the model able to drive the terminal.
#include "cli/markdown.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace oppx::test {
namespace {

using cli::MarkdownRenderer;
using cli::MarkdownStyle;
using cli::render_markdown;

// What the screen shows: the text without the renderer's SGR sequences.
std::string plain(const std::string& s) { return std::regex_replace(s, std::regex("\x1b\\[[0-9;]*m"), ""); }

std::string drawn(std::string_view md, std::size_t width = 80) { return render_markdown(md, {width, true}); }

TEST(Markdown, HeadingsAreBoldWithoutTheirMarks) {
  EXPECT_EQ(drawn("# Title\n"), "\x1b[1;4mTitle\x1b[0m\n");
  EXPECT_EQ(drawn("### Plan ###\n"), "\x1b[1mPlan\x1b[0m\n");
  EXPECT_EQ(plain(drawn("## Notes on C#\n")), "Notes on C#\n");
  EXPECT_EQ(plain(drawn("#hashtag\n")), "#hashtag\n") << "no blank after #: not a heading";
}

TEST(Markdown, ListsHaveBulletsNumbersAndIndentsAndWrapUnderTheirText) {
  EXPECT_EQ(plain(drawn("- one\n- two\n  - nested\n    - deeper\n- three\n")),
            "  • one\n  • two\n    ◦ nested\n      ▪ deeper\n  • three\n");
  EXPECT_EQ(plain(drawn("1. first\n2. second\n10) tenth\n")), "  1. first\n  2. second\n  10. tenth\n");
  EXPECT_EQ(plain(drawn("- [ ] todo\n- [x] done\n")), "  ☐ todo\n  ☑ done\n");
  EXPECT_EQ(plain(drawn("- alpha beta gamma delta\n", 16)), "  • alpha beta\n    gamma delta\n");
  EXPECT_EQ(plain(drawn("1. alpha beta gamma\n   more of it\n", 16)), "  1. alpha beta\n     gamma\n     more of it\n");
}

TEST(Markdown, FencedCodeIsVerbatimIndentedAndNeverWrapped) {
  std::string code = "int main() {   return 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10; }";
  std::string out = drawn("Look:\n```cpp\n" + code + "\n\tx  =  *y*;\n\n```\nAfter **it**.\n", 30);
  EXPECT_EQ(plain(out), "Look:\n    " + code + "\n        x  =  *y*;\n\nAfter it.\n") << out;
  EXPECT_NE(out.find("\x1b[36m    x  =  *y*;"), std::string::npos) << "in the code colour, emphasis left alone";
  EXPECT_EQ(plain(drawn("~~~\n# not a heading\n~~~\n")), "    # not a heading\n");
  EXPECT_EQ(plain(drawn("```\nunclosed at the end")), "    unclosed at the end\n");
}

TEST(Markdown, InlineCodeBoldItalicStrikeAndLinks) {
  EXPECT_EQ(drawn("Run `make -j` **now** and *then* ~~never~~.\n"),
            "Run \x1b[36mmake -j\x1b[0m \x1b[1mnow\x1b[0m and \x1b[3mthen\x1b[0m \x1b[9mnever\x1b[0m.\n");
  EXPECT_EQ(drawn("***both*** and **bold `code`**\n"),
            "\x1b[1;3mboth\x1b[0m and \x1b[1mbold \x1b[0m\x1b[1;36mcode\x1b[0m\n");
  EXPECT_EQ(plain(drawn("See [the docs](https://x.dev/a) or <https://y.dev>.\n")),
            "See the docs (https://x.dev/a) or https://y.dev.\n");
  EXPECT_EQ(plain(drawn("``a ` b``\n")), "a ` b\n");
  EXPECT_EQ(plain(drawn("Without colour\n")), "Without colour\n");
  EXPECT_EQ(render_markdown("Use `x`.\n", {80, false}), "Use `x`.\n") << "NO_COLOR: the backticks stay";
}

TEST(Markdown, WhatIsNotMarkupStaysAsWritten) {
  for (std::string s : {"snake_case_name and a_b_c stay", "2 * 3 * 4 = 24", "a ** b", "an `unclosed span",
                        "price: $5 \\*not italic\\*", "~single~ tilde", "[not a link] (x)"}) {
    std::string expected = s == "price: $5 \\*not italic\\*" ? "price: $5 *not italic*" : s;
    EXPECT_EQ(plain(drawn(s + "\n")), expected + "\n") << s;
  }
}

TEST(Markdown, QuotesRulesAndTables) {
  EXPECT_EQ(plain(drawn("> quoted text\n")), "│ quoted text\n");
  EXPECT_EQ(plain(drawn("---\n", 10)), "──────────\n");
  std::string table = "| Name | Tools |\n|:-----|------:|\n| agentc | 6 |\n| **b** | 12 |\nafter\n";
  EXPECT_EQ(plain(drawn(table)), "Name   │ Tools\n───────┼──────\nagentc │     6\nb      │    12\nafter\n");
  // Wider than the terminal: each row as a line.
  EXPECT_EQ(plain(drawn("| a long cell | another long cell |\n|---|---|\n| x | y |\n", 20)),
            "| a long cell |\nanother long cell |\n|---|---|\n| x | y |\n");
}

TEST(Markdown, NothingFromTheModelDrivesTheTerminal) {
  std::string evil = "\x1b]0;pwned\x07\x1b[2J\u202e\r\x9b";
  for (std::string md : {"# " + evil, "- " + evil, "`" + evil + "`", "```\n" + evil + "\n```", "**" + evil + "**",
                         "| " + evil + " |\n|---|\n| x |", "[" + evil + "](" + evil + ")"}) {
    std::string out = plain(render_markdown(md + "\n", {80, true}));
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << md << " → " << out;
    EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
    EXPECT_EQ(out.find('\r'), std::string::npos) << out;
    EXPECT_EQ(out.find("\u202e"), std::string::npos) << out;
    EXPECT_NE(out.find("\\x1b]0;pwned"), std::string::npos) << out;
  }
}

TEST(Markdown, AStreamIsDrawnALineAtATimeTheSameInAnyPieces) {
  std::string md = "# Title\nSome **bold** text\n- a\n- b\n```\ncode\n```\n| x | y |\n|---|---|\n| 1 | 2 |\nend";
  std::string whole = drawn(md);
  MarkdownRenderer r({80, true});
  std::string pieces;
  for (char c : md) pieces += r.feed(std::string_view(&c, 1));
  EXPECT_TRUE(r.holding()) << "the last line has not ended";
  pieces += r.finish();
  EXPECT_EQ(pieces, whole);
  EXPECT_FALSE(r.holding());
  // An open line is held until it ends; the table until a line that is not one of its rows.
  MarkdownRenderer s({80, true});
  EXPECT_EQ(s.feed("Hel"), "");
  EXPECT_EQ(s.feed("lo **wor"), "");
  EXPECT_EQ(s.feed("ld**\n| a |\n"), "Hello \x1b[1mworld\x1b[0m\n");
  EXPECT_EQ(plain(s.feed("ok\n")), "| a |\nok\n");
  // After finish(), a new reply starts clean: no code block left open.
  EXPECT_EQ(plain(s.feed("```\nx\n")), "    x\n");
  s.finish();
  EXPECT_EQ(plain(s.feed("# y\n")), "y\n");
}

// Playwright's MCP server answers in markdown sections; the chat's line for the call says what
// happened instead of "### Page" (issue 26).
TEST(MarkdownResultSummary, ABrowserResultIsOneLineThatSaysWhatHappened) {
  std::string page = "### Page\n- Page URL: http://127.0.0.1:5173/\n- Page Title: Counter\n";
  std::string snapshot = "### Snapshot\n```yaml\n- button \"Add\" [ref=e3]\n```\n";
  EXPECT_EQ(cli::sectioned_result_summary("playwright.browser_navigate", page + snapshot),
            "navigated to http://127.0.0.1:5173/ — Counter");
  EXPECT_EQ(cli::sectioned_result_summary("playwright.browser_navigate_back", page),
            "went back to http://127.0.0.1:5173/ — Counter");
  EXPECT_EQ(cli::sectioned_result_summary("playwright.browser_click",
                                          page + snapshot + "### Events\n- New console entries: x.log\n"),
            "done; the page is http://127.0.0.1:5173/ — Counter");
  EXPECT_EQ(cli::sectioned_result_summary("playwright.browser_evaluate", "### Result\n42\n" + page),
            "42 (on http://127.0.0.1:5173/ — Counter)");
  EXPECT_EQ(
      cli::sectioned_result_summary(
          "playwright.browser_navigate",
          "### Error\nError: page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:9/\nCall log:\n  - navigating"),
      "error: page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:9/");
  EXPECT_EQ(cli::sectioned_result_summary("playwright.browser_snapshot", snapshot), "- button \"Add\" [ref=e3]");
  EXPECT_EQ(cli::sectioned_result_summary("agentc.ping", "pong"), "") << "not sections: the caller's own line";
}

}  // namespace
}  // namespace oppx::test
