// The man pages and completion scripts as the real programs print them: every command of the table
// in `man oppx` as its `--help` says it, both pages rendered by man without a warning, and the
// bash script driven as bash drives it (COMP_WORDS in, COMPREPLY out), and the zsh one as a user
// drives it (Tab in a terminal), connector names included.
#include "cli/commands.h"
#include "tests/support/harness.h"
#include "tests/support/terminal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

// Roff source as a reader sees it: escapes undone, font changes dropped.
std::string unroff(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    char c = s[++i];
    if (c == 'e')
      out += '\\';
    else if (c == '-')
      out += '-';
    else if (c == 'f' && i + 1 < s.size())
      ++i;  // \fB, \fR, \fI, \fP
    else if (c != '&')
      out += std::string("\\") + c;
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    auto nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

std::string trimmed(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t") + 1);
  return s;
}

bool have(const std::string& program) { return run({"sh", "-c", "command -v \"$0\"", program}).exit_code == 0; }

std::string write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

std::string sh_quoted(const std::string& word) { return "'" + word + "'"; }

// What bash's completion offers for `words` with the cursor on the last one: the script sourced,
// COMP_WORDS and COMP_CWORD set as bash sets them, _oppx called, COMPREPLY one per line.
std::set<std::string> bash_offers(const std::string& script, const std::vector<std::string>& words) {
  std::string bin_dir = std::string(OPPX_BIN).substr(0, std::string(OPPX_BIN).rfind('/'));
  std::string folder = script.substr(0, script.rfind('/'));
  std::string line = "cd " + sh_quoted(folder) + " && PATH=" + sh_quoted(bin_dir) + ":$PATH; source " +
                     sh_quoted(script) + "; COMP_WORDS=(";
  for (const auto& w : words) line += sh_quoted(w) + " ";
  line += "); COMP_CWORD=" + std::to_string(words.size() - 1) + "; _oppx; printf '%s\\n' \"${COMPREPLY[@]}\"";
  Result r = run({"bash", "-c", line});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> out;
  for (auto& l : lines_of(r.out))
    if (!l.empty()) out.insert(l);
  return out;
}

TEST(ManPage, EveryCommandAsItsHelpSaysIt) {
  TempHome home;
  Result man = oppx({"help", "--man"});
  ASSERT_EQ(man.exit_code, 0) << man.err;
  const std::string page = unroff(man.out);
  int checked = 0;
  for (const cli::Command& c : cli::command_table()) {
    if (c.hidden) {
      EXPECT_EQ(page.find(std::string(c.name)), std::string::npos) << "the hidden " << c.name << " is in the page";
      continue;
    }
    std::vector<std::string> args;
    if (!c.group.empty()) args.emplace_back(c.group);
    if (!c.name.empty()) args.emplace_back(c.name);
    args.emplace_back("--help");
    Result help = oppx(args);
    ASSERT_EQ(help.exit_code, 0) << help.err;
    // "usage: oppx mcp get <name> …", a blank line, the summary, then the details after a blank line.
    std::vector<std::string> lines = lines_of(help.out);
    ASSERT_GE(lines.size(), 3u) << help.out;
    ASSERT_TRUE(lines[0].starts_with("usage: ")) << help.out;
    const std::string usage = lines[0].substr(7);
    EXPECT_NE(page.find("\n" + usage + "\n"), std::string::npos) << "usage not in the man page: " << usage;
    EXPECT_NE(page.find("\n" + lines[2] + "\n"), std::string::npos) << "summary not in the man page: " << lines[2];
    for (std::size_t i = 4; i < lines.size(); ++i) {
      std::string detail = trimmed(lines[i]);
      if (detail.empty()) continue;
      EXPECT_NE(page.find(detail), std::string::npos) << usage << ": detail missing: " << detail;
    }
    ++checked;
  }
  EXPECT_GE(checked, 30);
  // The overview's options and exit codes, and the sections a man page has.
  for (const char* text : {"--socket PATH", "$XDG_RUNTIME_DIR/oppx/oppxd.sock", "usage error", "OPPX_SOCKET"})
    EXPECT_NE(page.find(text), std::string::npos) << text;
  for (const char* section :
       {"NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "EXIT STATUS", "FILES", "ENVIRONMENT"})
    EXPECT_NE(page.find(std::string(".SH ") + section + "\n"), std::string::npos) << section;
}

TEST(ManPage, OppxdPageIsItsHelp) {
  TempHome home;
  Result man = run({OPPXD_BIN, "--man"});
  ASSERT_EQ(man.exit_code, 0) << man.err;
  const std::string page = unroff(man.out);
  Result help = run({OPPXD_BIN, "--help"});
  ASSERT_EQ(help.exit_code, 0);
  for (const std::string& line : lines_of(help.out)) {
    std::string text = trimmed(line);
    if (text.starts_with("usage: ")) text = text.substr(7 + std::string("oppxd ").size());
    if (text.starts_with("Exit codes:") || text.starts_with("Log:")) continue;  // laid out as lists
    // An option's tag and its text become two lines of a .TP item.
    auto gap = text.find("  ");
    if (gap != std::string::npos) {
      EXPECT_NE(page.find(text.substr(0, gap)), std::string::npos) << text;
      text = trimmed(text.substr(gap));
    }
    if (text.empty()) continue;
    EXPECT_NE(page.find(text), std::string::npos) << text;
  }
  for (const char* text : {".SH OPTIONS", ".SH EXIT STATUS", "another oppxd already serves it", ".SH FILES"})
    EXPECT_NE(page.find(text), std::string::npos) << text;
}

TEST(ManPage, ManRendersBothWithoutWarnings) {
  if (!have("man") || !have("groff")) GTEST_SKIP() << "man or groff is not installed: the pages are not rendered";
  TempHome home;
  std::string oppx_page = write(home.root() + "/oppx.1", oppx({"help", "--man"}).out);
  std::string oppxd_page = write(home.root() + "/oppxd.1", run({OPPXD_BIN, "--man"}).out);
  for (const auto& [page, expect] : {std::pair{oppx_page, "oppx mcp get <name>"}, {oppxd_page, "--foreground"}}) {
    // man-db's sandbox needs seccomp, which some containers refuse; the rendering is the same without it.
    Result r =
        run({"sh", "-c",
             "MAN_DISABLE_SECCOMP=1 MANWIDTH=80 LC_ALL=C.UTF-8 MANPAGER=cat PAGER=cat man --warnings -l \"$0\"", page});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "") << page << ": man warned";
    EXPECT_NE(r.out.find("EXIT STATUS"), std::string::npos) << r.out.substr(0, 2000);
    // The rendered page's dashes are ASCII, so that an option copied from it works.
    EXPECT_NE(r.out.find(expect), std::string::npos) << r.out.substr(0, 4000);
  }
}

TEST(Completion, BashCompletesCommandsAndFlags) {
  TempHome home;
  Result script = oppx({"completion", "bash"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  std::string path = write(home.root() + "/oppx.bash", script.out);
  Result syntax = run({"bash", "-n", path});
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;

  EXPECT_EQ(bash_offers(path, {"oppx", "mc"}), std::set<std::string>{"mcp"});
  EXPECT_EQ(bash_offers(path, {"oppx", "mcp", "g"}), std::set<std::string>{"get"});
  std::set<std::string> get_flags = bash_offers(path, {"oppx", "mcp", "get", "--"});
  EXPECT_EQ(get_flags, (std::set<std::string>{"--show-values", "--json", "--help"}));
  std::set<std::string> daemon = bash_offers(path, {"oppx", "daemon", ""});
  for (const char* c : {"status", "start", "stop", "restart", "logs"}) EXPECT_TRUE(daemon.count(c)) << c;
  EXPECT_EQ(bash_offers(path, {"oppx", "completion", ""}), (std::set<std::string>{"bash", "zsh"}));
  EXPECT_TRUE(bash_offers(path, {"oppx", "help", "mcp", ""}).count("get"));
  EXPECT_TRUE(bash_offers(path, {"oppx", "--socket", "/x", "mcp", "l"}).count("list"));
  // A flag's value is not an argument: nothing is offered for it, and the next word is one.
  EXPECT_EQ(bash_offers(path, {"oppx", "mcp", "call", "--timeout", ""}), std::set<std::string>{});
  EXPECT_TRUE(bash_offers(path, {"oppx", "-"}).count("--socket"));
  EXPECT_TRUE(bash_offers(path, {"oppx", "mcp", "call", "--t"}).count("--timeout"));
  // Hidden commands are not offered.
  EXPECT_FALSE(bash_offers(path, {"oppx", "_"}).count("__complete"));
  EXPECT_FALSE(daemon_pid(home.socket())) << "completing commands must not start a daemon";
}

TEST(Completion, ConnectorNamesComeFromTheRunningDaemon) {
  TempHome home;
  // Neither program exists: a connector that fails to start still has its name. The third name
  // would run a command if a script expanded it: it is never offered.
  home.write_mcp_config(stdio_entry("alpha", "/nonexistent/alpha-server", {}) + "," +
                        stdio_entry("beta-2", "/nonexistent/beta-server", {}) + "," +
                        stdio_entry("x$(touch pwned)", "/nonexistent/x", {}));
  std::string path = write(home.root() + "/oppx.bash", oppx({"completion", "bash"}).out);

  // No daemon: nothing, at once, and none is started.
  Result none = oppx({"__complete", "connectors"}, 5s);
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(bash_offers(path, {"oppx", "mcp", "get", ""}), std::set<std::string>{});
  EXPECT_FALSE(daemon_pid(home.socket())) << "completion must never start a daemon";

  DaemonProcess daemon(home);
  ASSERT_EQ(daemon.start_result().exit_code, 0) << daemon.start_result().err;
  Result names = oppx({"__complete", "connectors"}, 5s);
  EXPECT_EQ(names.exit_code, 0) << names.err;
  EXPECT_NE(names.out.find("alpha\n"), std::string::npos) << names.out;
  EXPECT_EQ(bash_offers(path, {"oppx", "mcp", "get", ""}), (std::set<std::string>{"alpha", "beta-2"}));
  EXPECT_EQ(bash_offers(path, {"oppx", "mcp", "tools", "b"}), std::set<std::string>{"beta-2"});
  EXPECT_EQ(bash_offers(path, {"oppx", "mcp", "reconnect", "a"}), std::set<std::string>{"alpha"});
  // Only the first argument is a connector's name.
  EXPECT_EQ(bash_offers(path, {"oppx", "mcp", "call", "alpha", ""}), std::set<std::string>{});
  struct stat st {};
  EXPECT_NE(::stat((home.root() + "/pwned").c_str(), &st), 0) << "a connector's name was run as a command";
}

// zsh as a user has it: the script installed as _oppx in $fpath, compinit, and Tab typed in a
// terminal; the line as zsh completed it, or the candidates it lists below it.
TEST(Completion, ZshCompletesCommandsFlagsAndConnectorNamesInARealTerminal) {
  if (!have("zsh")) GTEST_SKIP() << "zsh is not installed (packaging/bootstrap.sh installs it)";
  TempHome home;
  home.write_mcp_config(stdio_entry("alpha", "/nonexistent/alpha-server", {}) + "," +
                        stdio_entry("beta-2", "/nonexistent/beta-server", {}) + "," +
                        stdio_entry("x$(touch pwned)", "/nonexistent/x", {}));
  const std::string functions = home.root() + "/zfunc";
  const std::string bin = home.root() + "/bin";
  ASSERT_EQ(::mkdir(functions.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(bin.c_str(), 0700), 0);
  write(functions + "/_oppx", oppx({"completion", "zsh"}).out);
  ASSERT_EQ(::symlink(OPPX_BIN, (bin + "/oppx").c_str()), 0);
  Result syntax = run({"zsh", "-n", functions + "/_oppx"});
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;

  Terminal zsh(home, "", {"-f"}, "OPPX_SOCKET=" + home.socket() + " zsh");
  ASSERT_TRUE(zsh.started());
  // The line cleared (C-u: typed input, so it waits for a completion still running) and a command
  // run whose output, mark-100N, shows that zsh handled everything typed before it.
  int marks = 0;
  auto settle = [&] {
    zsh.keys({"C-u"});
    zsh.type("echo mark-$((" + std::to_string(++marks) + " + 1000))");
    zsh.keys({"Enter"});
    return zsh.wait_for("mark-" + std::to_string(1000 + marks));
  };
  zsh.type("PS1='zsh%% '; fpath=(" + functions + " $fpath); path=(" + bin +
           " $path); autoload -U compinit; compinit -u");
  zsh.keys({"Enter"});
  ASSERT_TRUE(settle()) << zsh.screen();
  // Types `text` and Tab, waits for `expect` to show once more, and returns the screen since the
  // last mark (the completed line, and the candidates listed below it).
  auto tab = [&](const std::string& text, const std::string& expect) {
    int seen = zsh.count(expect);
    zsh.type(text);
    zsh.keys({"Tab"});
    bool shown = zsh.wait_for(expect, seen + 1, std::chrono::seconds(10));
    std::string screen = zsh.screen();
    if (auto at = screen.rfind("mark-" + std::to_string(1000 + marks)); at != std::string::npos)
      screen = screen.substr(at);
    EXPECT_TRUE(settle()) << zsh.screen();
    return shown ? screen : "(not shown: " + expect + ")\n" + screen;
  };
  std::string s = tab("oppx mc", "zsh% oppx mcp ");
  EXPECT_NE(s.find("zsh% oppx mcp "), std::string::npos) << s;
  s = tab("oppx mcp get --", "--show-values");
  for (const char* f : {"--json", "--help"}) EXPECT_NE(s.find(f), std::string::npos) << f << "\n" << s;
  s = tab("oppx daemon ", "install-service");
  for (const char* c : {"status", "restart", "logs"}) EXPECT_NE(s.find(c), std::string::npos) << c << "\n" << s;
  s = tab("oppx completion z", "oppx completion zsh");
  EXPECT_NE(s.find("oppx completion zsh"), std::string::npos) << s;

  // No daemon: no names (Tab leaves the word as typed: the @@ typed after it follows it), and
  // completing starts none.
  s = tab("oppx mcp get al\t@@", "@@");
  EXPECT_NE(s.find("zsh% oppx mcp get al@@"), std::string::npos) << s;
  EXPECT_FALSE(daemon_pid(home.socket())) << "completion must never start a daemon";
  DaemonProcess daemon(home);
  ASSERT_EQ(daemon.start_result().exit_code, 0) << daemon.start_result().err;
  s = tab("oppx mcp tools b", "oppx mcp tools beta-2");
  EXPECT_NE(s.find("oppx mcp tools beta-2"), std::string::npos) << s;
  s = tab("oppx mcp get ", "beta-2");
  EXPECT_NE(s.find("alpha"), std::string::npos) << s;
  EXPECT_EQ(s.find("pwned"), std::string::npos) << s;
  struct stat st {};
  EXPECT_NE(::stat((home.root() + "/pwned").c_str(), &st), 0) << "a connector's name was run as a command";
}

}  // namespace
}  // namespace oppx::test
