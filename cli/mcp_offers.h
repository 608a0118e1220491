// `oppx mcp resources`, `oppx mcp read`, `oppx mcp prompts` and `oppx mcp prompt`: what a
// connector's server offers besides tools (mcp/resources, mcp/read, mcp/prompts, mcp/prompt).
#pragma once

#include "cli/commands.h"

#include <vector>

namespace oppx::cli {

int mcp_resources(Context& ctx);
int mcp_read(Context& ctx);
int mcp_prompts(Context& ctx);
int mcp_prompt(Context& ctx);

}  // namespace oppx::cli
