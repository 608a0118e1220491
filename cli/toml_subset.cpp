// The TOML reader of cli/toml_subset.h: one pass over the text, a table path for the current
// [header], and an exception inside the parser only (turned into a TomlError at its one entry).
#include "cli/toml_subset.h"

#include "common/text.h"

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <set>

namespace oppx::cli {

namespace json = boost::json;

int TomlDocument::line_of(TomlPath path) const {
  for (;;) {
    if (auto it = lines.find(path); it != lines.end()) return it->second;
    if (path.empty()) return 0;
    path.pop_back();
  }
}

namespace {

constexpr int kMaxDepth = 64;

struct Failure {
  std::size_t at;
  std::string message;
};

std::string shown_key(const TomlPath& path) {
  std::string out;
  for (const auto& k : path) out += (out.empty() ? "" : ".") + k;
  return out;
}

bool bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {
    if (s_.starts_with("\xEF\xBB\xBF")) i_ = 3;  // a byte order mark
  }

  TomlDocument run() {
    while (!at_end()) {
      skip_blanks();
      if (at_end()) break;
      if (peek() == '[') {
        header();
      } else if (peek() != '#' && peek() != '\n' && !looking_at("\r\n")) {
        key_value();
      }
      end_of_line();
    }
    return std::move(doc_);
  }

  int line_at(std::size_t offset) {
    if (offset < counted_to_) counted_to_ = 0, lines_counted_ = 1;
    for (; counted_to_ < offset && counted_to_ < s_.size(); ++counted_to_) lines_counted_ += s_[counted_to_] == '\n';
    return lines_counted_;
  }

 private:
  bool at_end() const { return i_ >= s_.size(); }
  char peek(std::size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  bool looking_at(std::string_view w) const { return s_.substr(i_, w.size()) == w; }
  [[noreturn]] void fail(std::string message) const { throw Failure{i_, std::move(message)}; }
  [[noreturn]] void fail_at(std::size_t at, std::string message) const { throw Failure{at, std::move(message)}; }

  void skip_blanks() {
    while (peek() == ' ' || peek() == '\t') ++i_;
  }
  void skip_comment() {
    if (peek() != '#') return;
    while (!at_end() && peek() != '\n') ++i_;
  }
  // Inside an array or an inline table: blanks, newlines and comments.
  void skip_space() {
    for (;;) {
      skip_blanks();
      skip_comment();
      if (peek() == '\n') {
        ++i_;
      } else if (looking_at("\r\n")) {
        i_ += 2;
      } else {
        return;
      }
    }
  }
  void end_of_line() {
    skip_blanks();
    skip_comment();
    if (at_end()) return;
    if (peek() == '\n') {
      ++i_;
    } else if (looking_at("\r\n")) {
      i_ += 2;
    } else {
      fail("expected the end of the line here (one key = value, or one [table], per line)");
    }
  }

  // ---- keys

  std::string simple_key() {
    if (peek() == '"' && !looking_at("\"\"\"")) return basic_string();
    if (peek() == '\'' && !looking_at("'''")) return literal_string();
    std::size_t from = i_;
    while (bare_key_char(peek())) ++i_;
    if (i_ == from) fail("expected a key (letters, digits, '_' and '-', or a \"quoted key\")");
    return std::string(s_.substr(from, i_ - from));
  }
  TomlPath key() {
    TomlPath parts;
    for (;;) {
      skip_blanks();
      parts.push_back(simple_key());
      skip_blanks();
      if (peek() != '.') return parts;
      ++i_;
    }
  }

  // ---- strings

  void escape(std::string& out) {
    std::size_t at = i_;
    ++i_;  // the backslash
    char c = peek();
    ++i_;
    switch (c) {
      case 'b':
        out += '\b';
        return;
      case 't':
        out += '\t';
        return;
      case 'n':
        out += '\n';
        return;
      case 'f':
        out += '\f';
        return;
      case 'r':
        out += '\r';
        return;
      case 'e':
        out += '\x1b';
        return;
      case '"':
        out += '"';
        return;
      case '\\':
        out += '\\';
        return;
      case 'u':
      case 'U': {
        std::size_t n = c == 'u' ? 4 : 8;
        std::uint32_t cp = 0;
        auto [end, ec] = std::from_chars(s_.data() + i_, s_.data() + std::min(s_.size(), i_ + n), cp, 16);
        if (ec != std::errc() || end != s_.data() + i_ + n || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
          fail_at(at, fmt::format("\\{} takes {} hex digits of a Unicode scalar value", c, n));
        i_ += n;
        append_utf8(out, cp);
        return;
      }
      default:
        fail_at(at, "unknown escape in a string; write a backslash as \\\\, or use a 'literal string'");
    }
  }
  void check_plain(char c) const {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7F)
      fail("a control character in a string; write it as an escape (\\n, \\t, \\u0001)");
  }
  // One line, "…" with escapes.
  std::string basic_string() {
    std::size_t open = i_++;
    std::string out;
    for (;;) {
      if (at_end() || peek() == '\n' || looking_at("\r\n"))
        fail_at(open, "a string is not closed on its line; end it with \" (or use \"\"\" for several lines)");
      if (peek() == '"') {
        ++i_;
        return out;
      }
      if (peek() == '\\') {
        escape(out);
      } else {
        check_plain(peek());
        out += s_[i_++];
      }
    }
  }
  // One line, '…' as written.
  std::string literal_string() {
    std::size_t open = i_++;
    std::string out;
    for (;;) {
      if (at_end() || peek() == '\n' || looking_at("\r\n"))
        fail_at(open, "a string is not closed on its line; end it with ' (or use ''' for several lines)");
      if (peek() == '\'') {
        ++i_;
        return out;
      }
      check_plain(peek());
      out += s_[i_++];
    }
  }
  // """…""" or '''…''': a newline right after the opening is dropped; up to two quotes may end
  // the text just before the closing three.
  std::string multiline(char quote) {
    std::size_t open = i_;
    i_ += 3;
    if (peek() == '\n') {
      ++i_;
    } else if (looking_at("\r\n")) {
      i_ += 2;
    }
    std::string out;
    const std::string close(3, quote);
    for (;;) {
      if (at_end()) fail_at(open, fmt::format("a {} string is not closed; end it with {}", close, close));
      if (looking_at(close)) {
        std::size_t run = 0;
        while (peek(run) == quote && run < 5) ++run;
        out.append(run - 3, quote);
        i_ += run;
        return out;
      }
      char c = peek();
      if (quote == '"' && c == '\\') {
        // A backslash at the end of a line joins it to the next one, blanks and newlines dropped.
        std::size_t k = 1;
        while (peek(k) == ' ' || peek(k) == '\t') ++k;
        if (peek(k) == '\n' || (peek(k) == '\r' && peek(k + 1) == '\n')) {
          i_ += k;
          while (peek() == ' ' || peek() == '\t' || peek() == '\n' || looking_at("\r\n")) ++i_;
          continue;
        }
        escape(out);
        continue;
      }
      if (c != '\n' && !looking_at("\r\n")) check_plain(c);
      out += c;
      ++i_;
    }
  }

  // ---- other values

  // A bare word: true, false, a number; a date or time is refused by name.
  json::value scalar() {
    std::size_t from = i_;
    while (bare_key_char(peek()) || peek() == '+' || peek() == '.' || peek() == ':') ++i_;
    std::string_view word = s_.substr(from, i_ - from);
    if (word == "true") return true;
    if (word == "false") return false;
    if (word.empty())
      fail_at(from, "expected a value: a \"string\", a number, true or false, an [array] or an {inline table}");
    if (word.find(':') != std::string_view::npos ||
        (word.size() >= 5 && word[4] == '-' && word.substr(0, 4).find_first_not_of("0123456789") == std::string::npos))
      fail_at(from, "dates and times are not read here; write the value as a \"string\"");
    std::string digits;
    bool after_digit = false;
    for (std::size_t k = 0; k < word.size(); ++k) {
      if (word[k] == '_') {
        bool next_digit = k + 1 < word.size() && std::isxdigit(static_cast<unsigned char>(word[k + 1]));
        if (!after_digit || !next_digit) fail_at(from + k, "an underscore in a number goes between two digits");
        continue;
      }
      after_digit = std::isxdigit(static_cast<unsigned char>(word[k])) != 0;
      digits += word[k];
    }
    std::string_view d = digits;
    auto bad = [&] { fail_at(from, fmt::format("\"{}\" is not a number, true or false; quote text", word)); };
    if (d == "inf" || d == "+inf") return std::numeric_limits<double>::infinity();
    if (d == "-inf") return -std::numeric_limits<double>::infinity();
    if (d == "nan" || d == "+nan" || d == "-nan") return std::numeric_limits<double>::quiet_NaN();
    if (d.size() > 2 && d[0] == '0' && (d[1] == 'x' || d[1] == 'o' || d[1] == 'b')) {
      int base = d[1] == 'x' ? 16 : d[1] == 'o' ? 8 : 2;
      std::int64_t n = 0;
      auto [end, ec] = std::from_chars(d.data() + 2, d.data() + d.size(), n, base);
      if (ec != std::errc() || end != d.data() + d.size()) bad();
      return n;
    }
    bool is_float = d.find_first_of(".eE") != std::string_view::npos;
    std::string_view unsigned_part = d.substr(d[0] == '+' || d[0] == '-' ? 1 : 0);
    if (unsigned_part.empty() || !std::isdigit(static_cast<unsigned char>(unsigned_part[0]))) bad();
    if (unsigned_part.size() > 1 && unsigned_part[0] == '0' &&
        std::isdigit(static_cast<unsigned char>(unsigned_part[1])))
      fail_at(from, "a number may not start with 0 (write 7, not 07)");
    if (d[0] == '+') d.remove_prefix(1);
    if (is_float) {
      double x = 0;
      auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), x);
      if (ec != std::errc() || end != d.data() + d.size()) bad();
      return x;
    }
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), n);
    if (ec == std::errc::result_out_of_range) fail_at(from, "the integer does not fit in 64 bits");
    if (ec != std::errc() || end != d.data() + d.size()) bad();
    return n;
  }

  json::value value(const TomlPath& at, int depth) {
    if (depth > kMaxDepth) fail("arrays and inline tables nested more than 64 deep");
    if (looking_at("\"\"\"")) return json::string(multiline('"'));
    if (looking_at("'''")) return json::string(multiline('\''));
    if (peek() == '"') return json::string(basic_string());
    if (peek() == '\'') return json::string(literal_string());
    if (peek() == '[') return array(at, depth);
    if (peek() == '{') return inline_table(at, depth);
    return scalar();
  }

  // The end of the text inside an array or an inline table opened at `open`.
  void still_open(std::size_t open, std::string_view what, char close) const {
    if (at_end()) fail_at(open, fmt::format("{} is not closed; end it with {}", what, close));
  }

  json::value array(const TomlPath& at, int depth) {
    std::size_t open = i_++;
    json::array out;
    for (;;) {
      skip_space();
      still_open(open, "an array", ']');
      if (peek() == ']') break;
      out.push_back(value(at, depth + 1));
      skip_space();
      still_open(open, "an array", ']');
      if (peek() == ',') {
        ++i_;
      } else if (peek() != ']') {
        fail("expected , or ] after an element of an array");
      }
    }
    ++i_;
    return out;
  }

  json::value inline_table(const TomlPath& at, int depth) {
    std::size_t open = i_++;
    json::object out;
    for (;;) {
      skip_space();
      still_open(open, "an inline table", '}');
      if (peek() == '}') break;
      std::size_t key_at = i_;
      TomlPath k = key();
      if (peek() != '=') fail("expected = after the key");
      ++i_;
      skip_blanks();
      TomlPath full = at;
      full.insert(full.end(), k.begin(), k.end());
      json::value v = value(full, depth + 1);
      put(out, at, k, std::move(v), key_at);
      skip_space();
      still_open(open, "an inline table", '}');
      if (peek() == ',') {
        ++i_;
      } else if (peek() != '}') {
        fail("expected , or } after a value of an inline table");
      }
    }
    ++i_;
    return out;
  }

  // ---- tables

  // The table at `path` (created as needed); through an array of tables, its last table.
  json::object& walk(const TomlPath& path, std::size_t at) {
    json::object* t = &doc_.root;
    TomlPath here;
    for (const auto& k : path) {
      here.push_back(k);
      json::value* v = t->if_contains(k);
      if (!v) v = &t->emplace(k, json::object()).first->value();
      if (v->is_array() && arrays_.contains(here)) v = &v->as_array().back();
      if (!v->is_object() || closed_.contains(here))
        fail_at(at, fmt::format("{} is already a value (line {}); a table cannot be added to it", shown_key(here),
                                doc_.line_of(here)));
      t = &v->as_object();
    }
    return *t;
  }

  // `key` (dotted: through tables it creates) set to `v` in `table`, whose path is `base`.
  void put(json::object& table, const TomlPath& base, const TomlPath& key, json::value v, std::size_t at) {
    json::object* t = &table;
    TomlPath here = base;
    for (std::size_t n = 0; n + 1 < key.size(); ++n) {
      here.push_back(key[n]);
      json::value* next = t->if_contains(key[n]);
      if (!next) next = &t->emplace(key[n], json::object()).first->value();
      if (!next->is_object() || closed_.contains(here))
        fail_at(at, fmt::format("{} is already a value (line {})", shown_key(here), doc_.line_of(here)));
      t = &next->as_object();
    }
    here.push_back(key.back());
    if (t->contains(key.back()))
      fail_at(at, fmt::format("{} is given twice (first on line {})", shown_key(here), doc_.line_of(here)));
    doc_.lines[here] = line_at(at);
    if (v.is_object() || v.is_array()) closed_.insert(here);
    t->emplace(key.back(), std::move(v));
  }

  void key_value() {
    std::size_t at = i_;
    TomlPath k = key();
    if (peek() != '=') fail("expected = after the key (key = value)");
    ++i_;
    skip_blanks();
    TomlPath full = current_;
    full.insert(full.end(), k.begin(), k.end());
    json::value v = value(full, 0);
    put(walk(current_, at), current_, k, std::move(v), at);
  }

  void header() {
    std::size_t at = i_;
    bool many = looking_at("[[");
    i_ += many ? 2 : 1;
    TomlPath path = key();
    if (many ? !looking_at("]]") : peek() != ']')
      fail(many ? "expected ]] to end the [[array of tables]] header" : "expected ] to end the [table] header");
    i_ += many ? 2 : 1;
    int line = line_at(at);
    if (!many) {
      if (headers_.contains(path))
        fail_at(at, fmt::format("[{}] is given twice (first on line {})", shown_key(path), doc_.line_of(path)));
      walk(path, at);
      headers_.insert(path);
      doc_.lines.emplace(path, line);
    } else {
      TomlPath parent(path.begin(), path.end() - 1);
      json::object& t = walk(parent, at);
      json::value* v = t.if_contains(path.back());
      if (!v) {
        v = &t.emplace(path.back(), json::array()).first->value();
        arrays_.insert(path);
        doc_.lines.emplace(path, line);
      } else if (!arrays_.contains(path)) {
        fail_at(at, fmt::format("{} is already a value (line {}), not an array of tables", shown_key(path),
                                doc_.line_of(path)));
      }
      v->as_array().push_back(json::object());
      // The tables of the previous element may be given again for this one.
      for (auto it = headers_.lower_bound(path);
           it != headers_.end() && it->size() > path.size() && std::equal(path.begin(), path.end(), it->begin());)
        it = headers_.erase(it);
    }
    current_ = path;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::size_t counted_to_ = 0;
  int lines_counted_ = 1;
  TomlDocument doc_;
  TomlPath current_;
  std::set<TomlPath> headers_;  // tables given a [header]: a second one is an error
  std::set<TomlPath> arrays_;   // arrays of tables ([[header]])
  std::set<TomlPath> closed_;   // inline tables and arrays given as values: nothing may be added to them
};

}  // namespace

boost::system::result<TomlDocument, TomlError> parse_toml(std::string_view text) {
  if (text.size() > kMaxTomlBytes)
    return TomlError{0, fmt::format("larger than {} MiB; this is not a config file", kMaxTomlBytes >> 20)};
  Parser p(text);
  try {
    return p.run();
  } catch (const Failure& f) {
    return TomlError{p.line_at(f.at), f.message};
  }
}

}  // namespace oppx::cli
