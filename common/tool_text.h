// A tool in the one-line form the model sees, shared by the daemon (the probe in an mcp/add
// reply) and the CLI (what `oppx mcp add` prints and counts).
#pragma once

#include <boost/json/fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace oppx {

// `<connector>.<tool>: <first sentence of its description, at most 140 characters>`, escaped.
std::string tool_line(std::string_view connector, const boost::json::object& tool);

// One line each, newline-terminated; tools that are not objects are skipped.
std::string tool_list_text(std::string_view connector, const boost::json::array& tools);

// The stated estimate when no tokenizer counts them: about 4 characters a token, rounded up.
std::int64_t estimate_tokens(std::string_view text);

}  // namespace oppx
