// Tab completion of what connectors offer besides tools, in the chat: `@<connector>:<uri>` (a
// resource to attach) and `/<connector>:<prompt>` (a prompt to send). Connector names come from
// the agent's list; a connector's resource addresses and prompt names are asked of the daemon
// (mcp/resources, mcp/prompts, 1 s at most) the first time, and kept for the chat.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::cli {

class OfferCompletion {
 public:
  explicit OfferCompletion(std::string socket) : socket_(std::move(socket)) {}
  // Whole-word candidates for the last word of `before` when it is `@…` (or, as the line's first
  // word, `/<connector>:…`); none otherwise.
  std::vector<std::string> complete(std::string_view before, const std::set<std::string>& connectors);

 private:
  const std::vector<std::string>& offers(bool prompts, const std::string& connector);

  std::string socket_;
  std::map<std::string, std::vector<std::string>> cache_;  // "r:<name>" or "p:<name>" → uris or prompt names
};

}  // namespace oppx::cli
