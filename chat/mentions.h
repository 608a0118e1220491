// What a user's message names of a connector's offers besides tools: `@<connector>:<uri>`
// attaches that resource (read through oppxd, mcp/read) below the message, and a message that
// starts with `/<connector>:<prompt> [name=value …]` is that prompt's messages (mcp/prompt), as
// Claude Code and Gemini CLI do. Only names of the session's connectors count: an e-mail address
// or a path with a colon stays text.
#pragma once

#include "chat/daemon_tools.h"

#include <set>
#include <string>
#include <vector>

namespace oppx::chat {

struct ExpandedMessage {
  std::string content;               // the message as the model gets it
  std::vector<std::string> notices;  // what was attached or fetched, for the front end
  std::string error;                 // a prompt that could not be fetched: the turn does not go ahead
  bool sensitive = false;            // an attachment looks secret (workspace.h's looks_sensitive)
};

ExpandedMessage expand_message(const std::string& message, const std::set<std::string>& connectors,
                               DaemonTools& daemon);

}  // namespace oppx::chat
