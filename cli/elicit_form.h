// A connector's question to the user (mcp/elicit: a form, or an address to open) asked on a
// terminal, field by field, the way the chat asks a permission question: `oppx mcp call` reads
// the answers from stdin, the chat from its line editor. The server's words are escaped before
// they are shown; the address is shown and opened, never given to the model.
#pragma once

#include "proto/elicitation.h"

#include <functional>
#include <optional>
#include <string>

namespace oppx::cli {

// One line typed after `prompt`; nullopt when the user gave up (Ctrl-C, end of input): the
// question is then cancelled.
using AskLine = std::function<std::optional<std::string>(const std::string& prompt)>;
using Say = std::function<void(const std::string& text)>;

proto::ElicitAnswer ask_elicitation(const proto::ElicitQuestion& q, const AskLine& ask, const Say& say);

// What a command that cannot ask says when it answers by its policy (stderr).
std::string unasked_note(const proto::ElicitQuestion& q, const proto::ElicitAnswer& a, proto::ElicitPolicy policy);

}  // namespace oppx::cli
