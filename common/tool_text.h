// A tool in the one-line form the model sees, shared by the daemon (the probe in an mcp/add
// reply) and the CLI (what `oppx mcp add` prints and counts).
#pragma once

#include <boost/json/fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oppx {

// `<connector>.<tool>: <first sentence of its description, at most 140 characters>`, escaped.
std::string tool_line(std::string_view connector, const boost::json::object& tool);

// One line each, newline-terminated; tools that are not objects are skipped.
std::string tool_list_text(std::string_view connector, const boost::json::array& tools);

// The stated estimate when no tokenizer counts them: about 4 characters a token, rounded up.
std::int64_t estimate_tokens(std::string_view text);

// A count of tokens as every warning prints it: exact below 10,000 ("1500"); from there in
// thousands, "32k" for 32768 and for 32000 alike, as model cards name them.
std::string token_count(std::int64_t n);
// The percentage `tokens` takes of `context`.
double share_of(std::int64_t tokens, std::int64_t context);

// SMALL_CONTEXT and HEAVY_SHARE (the kind, then the seed's wording) for a tool list of `tokens` in
// a context window of `context`: `subject` opens the cost sentence ("This connector's tool list
// takes"), `hint` says how to drop some ("`oppx mcp remove x` drops this one").
std::vector<std::pair<std::string, std::string>> cost_warnings(std::int64_t tokens, std::int64_t context,
                                                               std::string_view subject, std::string_view hint);

}  // namespace oppx
