// A command line read as POSIX sh reads it, so that a rule can be judged on the words a program
// will get rather than on the text the model wrote: quotes and escapes taken off, adjacent quoted
// parts joined into one word, and everything that makes it more than one plain command named.
//
// Not plain (a rule never allows it without asking), with why:
// - operators: ; & | && || ;; |& ( ) and a line break: more than one command, or a subshell;
// - redirections: < > >> >| <> <& >& &> << (a here-document's body is not read: incomplete);
// - substitutions: $( ) ` ` $(( )) and bash's <( ) >(): the inner commands are read too;
// - expansions in unquoted or double-quoted text: $NAME ${…} $1 $@ $? $'…' …, because the word
//   that runs is not the word judged;
// - pathname expansion (unquoted * ? [), a leading ~ and unquoted { (bash's brace expansion):
//   `git pu*` or `git {push,x}` becomes `git push` by the files or the shell, not by the text;
// - a comment (#…): text that looks like part of the command and is not;
// - leading NAME=value assignments: they change the program's environment (GIT_SSH_COMMAND=…);
// - a shell keyword as the program (if, while, {, !, …).
// Incomplete (the words may be wrong; nothing can be allowed): an unterminated quote or
// substitution, a trailing backslash, a here-document.
#pragma once

#include "common/text.h"

#include <string>
#include <string_view>
#include <vector>

namespace oppx {

struct ShellParse {
  // The words of each simple command, in order, those inside substitutions after the command
  // that holds them; redirections and their targets are not words. Assignments are kept.
  std::vector<std::vector<std::string>> commands;
  std::vector<std::string> not_plain;  // why it is not one plain command, in words, each once
  std::string incomplete;              // why it cannot be read whole; empty when it can
  bool complete() const { return incomplete.empty(); }
  // One command, nothing in it but words.
  bool plain() const { return complete() && not_plain.empty() && commands.size() == 1; }
};

ShellParse parse_shell(std::string_view text);

// The last part of a program's path: "git" for "/usr/bin/git".
std::string_view program_name(std::string_view word);

// A string quoted so that pasting it into sh gives back exactly that one word, wherever it stands:
// as it is when it holds only safe characters (shell_word), else in single quotes with each '
// written '\'', and quoted too when it would read as an assignment (NAME=value) in first place.
std::string shell_quote(std::string_view word);

}  // namespace oppx
