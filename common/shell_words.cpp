// parse_shell: one pass over the text as sh's tokenizer reads it (POSIX XCU 2.2-2.3), with the
// substitutions read again as commands of their own, at most a few levels deep.
#include "common/shell_words.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace oppx {

namespace {

constexpr int kMaxDepth = 8;

bool blank(char c) { return c == ' ' || c == '\t'; }
bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool keyword(std::string_view w) {
  static constexpr std::array<std::string_view, 22> kKeywords = {
      "!",    "{",  "}",     "if",    "then", "else",     "elif",   "fi",   "do", "done", "case",
      "esac", "in", "while", "until", "for",  "function", "select", "time", "[[", "]]",   "coproc"};
  return std::find(kKeywords.begin(), kKeywords.end(), w) != kKeywords.end();
}

ShellParse parse_at(std::string_view text, int depth);

class Reader {
 public:
  Reader(std::string_view text, ShellParse& out, int depth) : t_(text), out_(out), depth_(depth) {}

  void run() {
    while (i_ < t_.size() && out_.complete()) step();
    end_command();
  }

 private:
  char at(std::size_t k) const { return k < t_.size() ? t_[k] : '\0'; }

  void because(std::string why) {
    if (std::find(out_.not_plain.begin(), out_.not_plain.end(), why) == out_.not_plain.end())
      out_.not_plain.push_back(std::move(why));
  }
  void fail(std::string why) {
    if (out_.incomplete.empty()) out_.incomplete = std::move(why);
    i_ = t_.size();
  }

  void add(char c, bool quoted) {
    word_ += c;
    in_word_ = true;
    if (quoted) unquoted_ = false;
    if (unquoted_) unquoted_prefix_ = word_.size();
  }
  void add_expansion(std::string_view raw) {
    word_ += raw;
    in_word_ = true;
    unquoted_ = false;
  }

  void end_word() {
    if (!in_word_) return;
    std::string w = std::move(word_);
    bool whole_unquoted = unquoted_;
    std::size_t prefix = unquoted_prefix_;
    word_.clear();
    in_word_ = false;
    unquoted_ = true;
    unquoted_prefix_ = 0;
    if (drop_next_) {  // a redirection's target
      drop_next_ = false;
      return;
    }
    if (assignments_only_) {
      auto eq = w.find('=');
      if (eq != std::string::npos && eq > 0 && eq < prefix && name_start(w[0]) &&
          std::all_of(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(eq), name_char)) {
        because("it sets a variable for the command (NAME=value)");
      } else {
        assignments_only_ = false;
        if (whole_unquoted && keyword(w)) because("it starts with the shell keyword " + w);
      }
    }
    words_.push_back(std::move(w));
  }

  void end_command() {
    end_word();
    drop_next_ = false;
    if (!words_.empty()) out_.commands.push_back(std::move(words_));
    for (auto& c : inner_) out_.commands.push_back(std::move(c));
    words_.clear();
    inner_.clear();
    assignments_only_ = true;
  }

  // The index of the `close` that matches the `open` at `from`, skipping quoted text; npos if none.
  std::size_t matching(std::size_t from, char open, char close) const {
    int depth = 0;
    for (std::size_t k = from; k < t_.size(); ++k) {
      char c = t_[k];
      if (c == '\\') {
        ++k;
      } else if (c == '\'') {
        k = t_.find('\'', k + 1);
        if (k == std::string_view::npos) return k;
      } else if (c == '"') {
        for (++k; k < t_.size() && t_[k] != '"'; ++k)
          if (t_[k] == '\\') ++k;
        if (k >= t_.size()) return std::string_view::npos;
      } else if (c == open) {
        ++depth;
      } else if (c == close && --depth == 0) {
        return k;
      }
    }
    return std::string_view::npos;
  }

  // The commands inside a substitution are commands too (a deny rule judges them).
  void inner_commands(std::string_view text) {
    if (depth_ >= kMaxDepth) return fail("its substitutions are nested too deep to read");
    ShellParse sub = parse_at(text, depth_ + 1);
    for (auto& c : sub.commands) inner_.push_back(std::move(c));
    for (auto& w : sub.not_plain) because(std::move(w));
    if (!sub.complete()) fail(std::move(sub.incomplete));
  }

  void dollar(bool in_double_quotes) {
    char next = at(i_ + 1);
    if (next == '(') {
      std::size_t close = matching(i_ + 1, '(', ')');
      if (close == std::string_view::npos) return fail("a $( is not closed");
      if (at(i_ + 2) == '(') {
        because("it computes arithmetic ($(( )))");
      } else {
        because("it substitutes a command's output ($( ))");
        inner_commands(t_.substr(i_ + 2, close - i_ - 2));
      }
      add_expansion(t_.substr(i_, close + 1 - i_));
      i_ = close + 1;
      return;
    }
    std::size_t end = i_ + 1;
    if (next == '{') {
      end = matching(i_ + 1, '{', '}');
      if (end == std::string_view::npos) return fail("a ${ is not closed");
      ++end;
    } else if (name_start(next)) {
      while (name_char(at(end))) ++end;
    } else if (std::isdigit(static_cast<unsigned char>(next)) ||
               (next && std::string_view("@*#?-$!").find(next) != std::string_view::npos)) {
      end = i_ + 2;
    } else if (!in_double_quotes && (next == '\'' || next == '"')) {
      because("it uses bash's $'…' or $\"…\" quoting");
      add('$', false);
      ++i_;
      return;
    } else {
      add('$', in_double_quotes);  // a lone $ is itself
      ++i_;
      return;
    }
    because("it expands a variable ($NAME, ${…}, $1, …)");
    add_expansion(t_.substr(i_, end - i_));
    i_ = end;
  }

  void backtick() {
    std::string inner;
    std::size_t k = i_ + 1;
    for (; k < t_.size() && t_[k] != '`'; ++k) {
      if (t_[k] == '\\' && k + 1 < t_.size() && std::string_view("`\\$").find(t_[k + 1]) != std::string_view::npos) ++k;
      inner += t_[k];
    }
    if (k >= t_.size()) return fail("a ` is not closed");
    because("it substitutes a command's output (` `)");
    inner_commands(inner);
    add_expansion(t_.substr(i_, k + 1 - i_));
    i_ = k + 1;
  }

  void double_quoted() {
    in_word_ = true;
    unquoted_ = false;
    ++i_;
    while (i_ < t_.size() && t_[i_] != '"' && out_.complete()) {
      char c = t_[i_];
      if (c == '\\' && i_ + 1 < t_.size() && std::string_view("$`\"\\\n").find(t_[i_ + 1]) != std::string_view::npos) {
        if (t_[i_ + 1] != '\n') add(t_[i_ + 1], true);
        i_ += 2;
      } else if (c == '$') {
        dollar(true);
      } else if (c == '`') {
        backtick();
      } else {
        add(c, true);
        ++i_;
      }
    }
    if (!out_.complete()) return;
    if (i_ >= t_.size()) return fail("a double quote is not closed");
    ++i_;
  }

  void redirection() {
    // A word of digits just before (2>) is the descriptor, not a word.
    if (in_word_ && unquoted_ && !word_.empty() &&
        std::all_of(word_.begin(), word_.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      word_.clear();
      in_word_ = false;
      unquoted_prefix_ = 0;
    } else {
      end_word();
    }
    std::size_t start = i_;
    if (t_[i_] == '&') ++i_;  // bash's &> and &>>
    char c = t_[i_++];
    if (c == '<' && at(i_) == '<') {
      if (at(i_ + 1) != '<') return fail("it has a here-document, whose text oppx does not read");
      i_ += 2;  // bash's here-string <<< word
    } else if (at(i_) == '>' || at(i_) == '&' || (c == '>' && at(i_) == '|') || (c == '<' && at(i_) == '>')) {
      ++i_;
    }
    because("it redirects input or output (" + std::string(t_.substr(start, i_ - start)) + ")");
    drop_next_ = true;
  }

  void step() {
    char c = t_[i_];
    if (blank(c)) {
      end_word();
      ++i_;
    } else if (c == '#' && !in_word_) {
      because("it has a comment (#…)");
      while (i_ < t_.size() && t_[i_] != '\n') ++i_;
    } else if (c == '\\') {
      if (i_ + 1 >= t_.size()) return fail("it ends with a backslash");
      if (t_[i_ + 1] != '\n') add(t_[i_ + 1], true);
      i_ += 2;
    } else if (c == '\'') {
      std::size_t close = t_.find('\'', i_ + 1);
      if (close == std::string_view::npos) return fail("a single quote is not closed");
      in_word_ = true;
      unquoted_ = false;
      for (std::size_t k = i_ + 1; k < close; ++k) add(t_[k], true);
      i_ = close + 1;
    } else if (c == '"') {
      double_quoted();
    } else if (c == '`') {
      backtick();
    } else if (c == '$') {
      dollar(false);
    } else if ((c == '<' || c == '>') && at(i_ + 1) == '(') {
      std::size_t close = matching(i_ + 1, '(', ')');
      if (close == std::string_view::npos) return fail(std::string("a ") + c + "( is not closed");
      because("it substitutes a command's output (bash's <( ) or >( ))");
      inner_commands(t_.substr(i_ + 2, close - i_ - 2));
      add_expansion(t_.substr(i_, close + 1 - i_));
      i_ = close + 1;
    } else if (c == '<' || c == '>' || (c == '&' && at(i_ + 1) == '>')) {
      redirection();
    } else if (c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
      end_command();
      std::size_t len = 1;
      char next = at(i_ + 1);
      if ((c == ';' || c == '&' || c == '|') && (next == c || (c != '&' && next == '&'))) len = 2;
      std::string op = c == '\n' ? "a line break" : std::string(t_.substr(i_, len));
      because(c == '(' || c == ')'   ? "it runs a subshell (( ))"
              : c == '&' && len == 1 ? "it runs a command in the background (&)"
                                     : "it runs more than one command (" + op + ")");
      i_ += len;
    } else {
      if (c == '*' || c == '?' || c == '[') because("the shell expands * ? [ ] to file names");
      if (c == '~' && !in_word_) because("the shell expands a leading ~ to a home folder");
      if (c == '{') because("bash expands { } (brace expansion)");
      add(c, false);
      ++i_;
    }
  }

  std::string_view t_;
  std::size_t i_ = 0;
  ShellParse& out_;
  int depth_;
  std::vector<std::string> words_;               // the command being read
  std::vector<std::vector<std::string>> inner_;  // commands in its substitutions
  std::string word_;
  bool in_word_ = false;
  bool unquoted_ = true;             // nothing in word_ came from quotes or an escape
  std::size_t unquoted_prefix_ = 0;  // how much of word_ came before the first quoted part
  bool drop_next_ = false;           // the next word is a redirection's target
  bool assignments_only_ = true;     // every word of this command so far is NAME=value
};

ShellParse parse_at(std::string_view text, int depth) {
  ShellParse out;
  Reader(text, out, depth).run();
  return out;
}

}  // namespace

ShellParse parse_shell(std::string_view text) { return parse_at(text, 0); }

std::string shell_quote(std::string_view word) {
  std::string q = shell_word(word);
  auto eq = word.find('=');
  bool assignment = eq != std::string_view::npos && eq > 0 && name_start(word[0]) &&
                    std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(eq), name_char);
  return assignment && q == word ? "'" + q + "'" : q;  // bare means no ' in it
}

std::string_view program_name(std::string_view word) {
  auto slash = word.find_last_of('/');
  return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

}  // namespace oppx
