// Text from outside (a client's bytes, a server's stderr or tool descriptions) shown to a person:
// control characters become \xNN, so it can neither drive a terminal nor forge log lines.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oppx {

std::string escape_controls(std::string_view s, bool keep_newlines_and_tabs = false);

// Serialized JSON with the characters escape_controls would escape (control characters, DEL, the
// invisible ones) written as \uXXXX escapes: the same JSON value, still valid JSON, nothing in it
// that a terminal would obey. (A serializer leaves DEL and the invisible characters as they are.)
// Bytes that are not UTF-8 (a serializer copies them too) become \ufffd, so that it stays JSON.
std::string json_escape_controls(std::string_view json_text);

// `s` with each byte that is not part of well-formed UTF-8 replaced by U+FFFD; `s` itself (moved,
// not copied) when it is all UTF-8. For JSON written on a wire: a string the daemon made from raw
// bytes (a server's stderr line, a file name) would otherwise make the whole line unparseable.
std::string valid_utf8(std::string s);

// Appends the UTF-8 of a code point (a \u escape decoded); the caller checks it is a scalar value.
void append_utf8(std::string& out, std::uint32_t cp);

// ASCII letters in lower case (header names, words matched without regard to case).
std::string lower(std::string_view s);

// Text from a server (its stderr, its errors) with the secrets oppx gave it hidden, each as
// "***", before it is shown or logged. A secret of 8 characters or more is hidden wherever it
// occurs; a shorter one only where it stands as a word of its own (not inside a longer run of
// letters and digits), so that "dev" leaves "device" alone; one of 1 or 2 characters is left as
// it is: it hides nothing that a guess would not find, and hiding every "1" would garble the text.
// A short one that stands alone only once a long one beside it is hidden ("***pin") is hidden too.
std::string mask_secrets(std::string_view text, const std::vector<std::string>& secrets);

// One word for a POSIX shell: as it is when it holds only safe characters, else in single quotes.
std::string shell_word(std::string_view w);

}  // namespace oppx
