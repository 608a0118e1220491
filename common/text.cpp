// escape_controls: C0 controls and DEL byte by byte, and the invisible characters that can hide
// or reorder text on a terminal (C1 controls, zero-width and bidirectional marks, BOM) as \u{…};
// other UTF-8 passes through unchanged.
#include "common/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace oppx {

namespace {

bool invisible(char32_t c) {
  return (c >= 0x80 && c <= 0x9f) || (c >= 0x200b && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
         (c >= 0x2060 && c <= 0x2064) || (c >= 0x2066 && c <= 0x2069) || c == 0xfeff || c == 0x00ad;
}

// The code point of a 2- or 3-byte UTF-8 sequence at s[i] (all the invisible ones are), and its length.
std::size_t decode(std::string_view s, std::size_t i, char32_t* c) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  if ((b(0) & 0xE0) == 0xC0 && cont(1)) {
    *c = (char32_t(b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    return 2;
  }
  if ((b(0) & 0xF0) == 0xE0 && cont(1) && cont(2)) {
    *c = (char32_t(b(0) & 0x0F) << 12) | (char32_t(b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    return 3;
  }
  return 0;
}

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlong form, no
// surrogate, nothing past U+10FFFF), 0 when there is none: the sequences a JSON parser accepts.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return b(k) >= lo && b(k) <= hi; };
  unsigned c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c >= 0xE1 && c <= 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

}  // namespace

std::string escape_controls(std::string_view s, bool keep_newlines_and_tabs) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    bool kept = keep_newlines_and_tabs && (c == '\n' || c == '\t');
    if ((c < 0x20 || c == 0x7f) && !kept) {
      out += fmt::format("\\x{:02x}", c);
      continue;
    }
    char32_t cp = 0;
    if (std::size_t n = c >= 0xC0 ? decode(s, i, &cp) : 0; n && invisible(cp)) {
      out += fmt::format("\\u{{{:04x}}}", static_cast<std::uint32_t>(cp));
      i += n - 1;
      continue;
    }
    out += static_cast<char>(c);
  }
  return out;
}

std::string json_escape_controls(std::string_view json_text) {
  std::string out;
  out.reserve(json_text.size());
  for (std::size_t i = 0; i < json_text.size();) {
    unsigned char c = static_cast<unsigned char>(json_text[i]);
    // A serializer copies a string's bytes as they are, invalid UTF-8 too, which no JSON parser
    // takes; such a byte (only ever inside a string) becomes U+FFFD, the replacement character.
    std::size_t n = utf8_length(json_text, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    char32_t cp = c;
    if (n == 2 || n == 3) decode(json_text, i, &cp);
    if (c < 0x20 || c == 0x7f || (n > 1 && invisible(cp))) {
      out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(cp));
    } else {
      out.append(json_text.substr(i, n));
    }
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string valid_utf8(std::string s) {
  std::size_t i = 0;
  for (std::size_t n; i < s.size() && (n = utf8_length(s, i)) != 0;) i += n;
  if (i == s.size()) return s;
  std::string out(s, 0, i);
  while (i < s.size()) {
    std::size_t n = utf8_length(s, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {

std::string mask_secrets_once(std::string_view text, const std::vector<std::string_view>& by_length) {
  constexpr std::size_t kAnywhere = 8;
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t hidden = 0;
    for (auto s : by_length) {
      if (text.compare(i, s.size(), s) != 0) continue;
      std::size_t end = i + s.size();
      bool alone = (i == 0 || !word_char(text[i - 1]) || !word_char(s.front())) &&
                   (end == text.size() || !word_char(text[end]) || !word_char(s.back()));
      if (s.size() >= kAnywhere || alone) {
        hidden = s.size();
        break;
      }
    }
    if (hidden) {
      out += "***";
      i += hidden;
    } else {
      out += text[i++];
    }
  }
  return out;
}

}  // namespace

std::string mask_secrets(std::string_view text, const std::vector<std::string>& secrets) {
  constexpr std::size_t kShortest = 3;
  std::vector<std::string_view> by_length;
  for (auto& s : secrets) {
    if (s.size() >= kShortest) by_length.emplace_back(s);
  }
  if (by_length.empty()) return std::string(text);
  // The longest first: a secret that holds another is hidden whole.
  std::sort(by_length.begin(), by_length.end(), [](auto a, auto b) { return a.size() > b.size(); });
  // Again until nothing changes: a short secret glued to a long one ("LONGSECRETpin") stands alone
  // once the long one is hidden ("***pin"), and must go too. Each pass that changes the text makes
  // it shorter or adds a '*', so this ends.
  std::string out = mask_secrets_once(text, by_length);
  for (std::string again = mask_secrets_once(out, by_length); again != out; again = mask_secrets_once(out, by_length))
    out = std::move(again);
  return out;
}

std::string shell_word(std::string_view w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") ==
                        std::string_view::npos)
    return std::string(w);
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace oppx
