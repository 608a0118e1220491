// The probe `oppx mcp add` prints: a connector's tools in the one-line form the model sees, what
// that list costs in tokens, and its share of the server model's context (asked of the model
// server named in config.json or $OPPX_SERVER). Blocking, with a 4 s limit: it runs in the CLI,
// never in the daemon, whose one thread must not wait on a model server.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "proto/mcp_results.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oppx::cli {

// The model server: $OPPX_SERVER, else "server" in $XDG_CONFIG_HOME/oppx/config.json; empty if none.
std::string model_server_url();

struct ProbeReport {
  std::int64_t tokens = 0;
  bool estimated = true;                // no tokenizer endpoint: about 4 characters a token
  std::optional<std::int64_t> context;  // the model's context window, when the server said
  std::string context_note;             // why the share is unknown, when it is
  // SMALL_CONTEXT, HEAVY_SHARE (the kind) with the seed's wording (the message)
  std::vector<std::pair<std::string, std::string>> warnings;
};

// Counts `list_text` and asks the server (when there is one) for its context.
ProbeReport probe_cost(std::string_view connector, const std::string& list_text, const std::string& server);

// What `oppx mcp add` (and the demo) print from an mcp/add result: where it was saved, then the
// probe (the tools, their cost and share), or why it did not start. Returns the exit status.
int print_added(const boost::json::value& add_result);

// Adds to an mcp/add result's `probe` (when it has one) what the model server says, the same for
// the text and --json: `tokens` (its tokenizer's count, then `estimated` false), `context` and
// `share` (percent, one decimal) or `context_note` (why the share is unknown), and `warnings`
// ([{"kind": "SMALL_CONTEXT" or "HEAVY_SHARE", "message": …}]). Done once: a completed one is left.
void complete_probe(boost::json::value& add_result);

// The lines printed after the tool list, from a completed `probe`.
std::vector<std::string> probe_lines(const proto::AddProbe& probe);

}  // namespace oppx::cli
