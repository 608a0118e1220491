// common/shell_words: a command split into words as sh splits it (checked against the real
// /bin/sh), each thing that makes it more than one plain command named, the commands inside
// substitutions read too, and shell_quote giving back exactly one word when pasted into sh.
#include "common/shell_words.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace oppx {
namespace {

using Words = std::vector<std::string>;

Words words_of(std::string_view text) {
  ShellParse p = parse_shell(text);
  EXPECT_TRUE(p.complete()) << text << ": " << p.incomplete;
  EXPECT_EQ(p.commands.size(), 1u) << text;
  return p.commands.empty() ? Words{} : p.commands[0];
}

// What the real sh makes of `args` as the arguments of printf: each word, then \x01.
Words sh_words(const std::string& args) {
  std::string cmd = "printf '%s\\001' " + args;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return {};
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  ::pclose(f);
  Words w;
  for (std::size_t start = 0, end; (end = out.find('\x01', start)) != std::string::npos; start = end + 1)
    w.push_back(out.substr(start, end - start));
  return w;
}

TEST(ShellWords, QuotesAndEscapesSplitAsShDoesThem) {
  EXPECT_EQ(words_of("git status"), (Words{"git", "status"}));
  EXPECT_EQ(words_of("  git \t status  -s "), (Words{"git", "status", "-s"}));
  EXPECT_EQ(words_of("git 'status'"), (Words{"git", "status"}));
  EXPECT_EQ(words_of("git st\"at\"'us'"), (Words{"git", "status"}));
  EXPECT_EQ(words_of("git p\\ush"), (Words{"git", "push"}));
  EXPECT_EQ(words_of("git commit -m 'a b' \"c 'd'\" e\\ f ''"),
            (Words{"git", "commit", "-m", "a b", "c 'd'", "e f", ""}));
  EXPECT_EQ(words_of("echo \"a\\\"b\\\\c\\d\""), (Words{"echo", "a\"b\\c\\d"}));
  EXPECT_EQ(words_of("git \\\nstatus"), (Words{"git", "status"})) << "a backslash-newline joins lines";
  EXPECT_EQ(words_of("echo 'it'\\''s'"), (Words{"echo", "it's"}));
  // The same as /bin/sh, word for word.
  for (const char* text : {"a 'b c' \"d e\" f\\ g", "x\"y\"'z' '' \"\"", "'\\' \"\\$\" \"\\x\" \\\\", "a\"'\"b 'c\"d'",
                           "tab\\\tsep  \t end"}) {
    Words sh = sh_words(text);
    ASSERT_FALSE(sh.empty()) << text;
    EXPECT_EQ(words_of(std::string("printf ") + text), [&] {
      Words w{"printf"};
      w.insert(w.end(), sh.begin(), sh.end());
      return w;
    }()) << text;
  }
}

TEST(ShellWords, APlainCommandIsOnlyWords) {
  for (const char* plain : {"git status", "npm test -- --watch=false", "grep -rn 'a|b;c' src", "echo \"a > b\"",
                            "ls a=b", "echo it\\'s", "printf '$HOME'", "echo \\$HOME \\* \\~", "make -j4 all"}) {
    ShellParse p = parse_shell(plain);
    EXPECT_TRUE(p.plain()) << plain << ": " << (p.not_plain.empty() ? p.incomplete : p.not_plain[0]);
  }
}

TEST(ShellWords, EverythingThatIsNotAPlainCommandIsNamed) {
  struct Case {
    const char* text;
    const char* why;
  };
  for (const auto& c : std::vector<Case>{
           {"git status; rm x", "more than one command (;)"},
           {"a && b", "more than one command (&&)"},
           {"a || b", "more than one command (||)"},
           {"a | b", "more than one command (|)"},
           {"a |& b", "more than one command (|&)"},
           {"a & b", "in the background"},
           {"a\nb", "more than one command (a line break)"},
           {"(git push)", "subshell"},
           {"git status > f", "redirects input or output (>)"},
           {"git status >> f", "(>>)"},
           {"cat < f", "(<)"},
           {"git status 2> f", "(>)"},
           {"git status &> f", "(&>)"},
           {"git status 2>&1", "(>&)"},
           {"cat <<< word", "(<<<)"},
           {"echo $(rm x)", "command's output ($( ))"},
           {"echo \"$(rm x)\"", "command's output ($( ))"},
           {"echo `rm x`", "(` `)"},
           {"diff <(ls) f", "bash's <( )"},
           {"echo $((1+2))", "arithmetic"},
           {"git $SUB", "expands a variable"},
           {"git ${SUB}", "expands a variable"},
           {"git \"$1\"", "expands a variable"},
           {"echo $@", "expands a variable"},
           {"echo $'\\x41'", "bash's $'…'"},
           {"git pu*", "file names"},
           {"git pus?", "file names"},
           {"git [p]ush", "file names"},
           {"ls ~/x", "leading ~"},
           {"git {push,x}", "brace expansion"},
           {"git status # note", "comment"},
           {"GIT_SSH_COMMAND=x git fetch", "sets a variable"},
           {"A=1 B=2 make", "sets a variable"},
           {"if true", "keyword if"},
           {"! git push", "keyword !"},
       }) {
    ShellParse p = parse_shell(c.text);
    EXPECT_FALSE(p.plain()) << c.text;
    std::string all;
    for (const auto& w : p.not_plain) all += w + "|";
    EXPECT_NE(all.find(c.why), std::string::npos) << c.text << ": " << all;
  }
  // An assignment only counts at the start, and only with an unquoted name.
  EXPECT_TRUE(parse_shell("git log --format=x").plain());
  EXPECT_TRUE(parse_shell("'A=1' git").plain());
}

TEST(ShellWords, WhatCannotBeReadWholeSaysWhy) {
  for (const auto& [text, why] : std::vector<std::pair<const char*, const char*>>{
           {"git 'push", "single quote is not closed"},
           {"git \"push", "double quote is not closed"},
           {"echo $(ls", "$( is not closed"},
           {"echo `ls", "` is not closed"},
           {"echo ${X", "${ is not closed"},
           {"git push\\", "ends with a backslash"},
           {"cat <<EOF\nx\nEOF", "here-document"},
       }) {
    ShellParse p = parse_shell(text);
    EXPECT_FALSE(p.complete()) << text;
    EXPECT_FALSE(p.plain()) << text;
    EXPECT_NE(p.incomplete.find(why), std::string::npos) << text << ": " << p.incomplete;
  }
}

TEST(ShellWords, CommandsAreSplitAtOperatorsAndReadInsideSubstitutions) {
  ShellParse p = parse_shell("true && git  'push' > log; echo \"$(git push --force)\" `rm -rf x` 2>/dev/null");
  ASSERT_TRUE(p.complete()) << p.incomplete;
  EXPECT_EQ(p.commands, (std::vector<Words>{{"true"},
                                            {"git", "push"},
                                            {"echo", "$(git push --force)", "`rm -rf x`"},
                                            {"git", "push", "--force"},
                                            {"rm", "-rf", "x"}}));
  EXPECT_EQ(parse_shell("A=1 git -c x=y push").commands, (std::vector<Words>{{"A=1", "git", "-c", "x=y", "push"}}));
}

TEST(ShellWords, ProgramNameIsThePathsLastPart) {
  EXPECT_EQ(program_name("/usr/bin/git"), "git");
  EXPECT_EQ(program_name("./git"), "git");
  EXPECT_EQ(program_name("git"), "git");
}

TEST(ShellQuote, PastedIntoShItGivesBackExactlyThatWord) {
  EXPECT_EQ(shell_quote("status"), "status");
  EXPECT_EQ(shell_quote("run:git"), "run:git");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("A=1"), "'A=1'");
  EXPECT_EQ(shell_quote("--a=1"), "--a=1");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("run:git status -s; pwd > x"), "'run:git status -s; pwd > x'");
  for (const char* w : {"run:git status -s; pwd > /tmp/x", "a'b\"c", "$(touch /tmp/pwned)", "`id`", "~/x", "*", "a\\b",
                        "line\nnext", "'", "''", "#x", "a b\tc", "$HOME", "!x", "{a,b}", "x=1", "x=it's"}) {
    std::string q = shell_quote(w);
    ShellParse p = parse_shell(q);
    EXPECT_TRUE(p.plain()) << q;
    EXPECT_EQ(p.commands, (std::vector<Words>{{w}})) << q;
    EXPECT_EQ(sh_words(q), Words{w}) << q;
  }
}

}  // namespace
}  // namespace oppx
