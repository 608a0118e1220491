// Handlers of mcp/resources, mcp/read, mcp/prompts and mcp/prompt (docs/protocol.md, "Resources
// and prompts"): what a connector's server offers besides tools, asked of it as it runs (a lazy
// connector starts for it), its text described and cut like a tool result's.
#pragma once

#include "daemon/router.h"
#include "proto/resources_api.h"

namespace oppx::daemon {

class Server;

void mcp_resources(Server& s, const proto::McpOffersParams& p, Reply reply, Client& client);
void mcp_read(Server& s, const proto::McpReadParams& p, Reply reply, Client& client);
void mcp_prompts(Server& s, const proto::McpOffersParams& p, Reply reply, Client& client);
void mcp_prompt(Server& s, const proto::McpPromptParams& p, Reply reply, Client& client);

}  // namespace oppx::daemon
