// Fuzz target, a property: a secret oppx gave a server never survives the masking of what the
// server says (mask_secrets, common/text.h, which the log applies to every line). The input is
// "secret\0secret\0…\0text": secrets of 8 bytes or more must be gone wherever they occur; shorter
// ones (3 to 7) wherever they stand as a word of their own in what is shown. A secret holding '*'
// is left out: the mask itself is "***".
#include "common/text.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "secret_mask: %s\n", what.c_str());
  std::abort();
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Where `secret` occurs in `text` as a word of its own (or anywhere, for a long one).
bool shows(std::string_view text, std::string_view secret) {
  for (auto at = text.find(secret); at != std::string_view::npos; at = text.find(secret, at + 1)) {
    std::size_t end = at + secret.size();
    bool alone = (at == 0 || !word_char(text[at - 1]) || !word_char(secret.front())) &&
                 (end == text.size() || !word_char(text[end]) || !word_char(secret.back()));
    if (secret.size() >= 8 || alone) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> secrets;
  while (true) {
    auto nul = in.find('\0');
    if (nul == std::string_view::npos) break;
    if (nul >= 3 && in.substr(0, nul).find('*') == std::string_view::npos) secrets.emplace_back(in.substr(0, nul));
    in.remove_prefix(nul + 1);
  }
  std::string masked = oppx::mask_secrets(in, secrets);
  for (auto& s : secrets) {
    if (shows(masked, s)) broken("the secret \"" + s + "\" survived in \"" + masked + "\"");
  }
  return 0;
}
