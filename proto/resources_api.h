// Wire structs of what a connector's server offers besides tools (docs/protocol.md, "Resources
// and prompts"): mcp/resources (its resources and resource templates), mcp/read (one resource as
// text), mcp/prompts (its prompts) and mcp/prompt (one prompt with its arguments, as messages).
// Decoders in proto/decode.h's form, encoders as tag_invoke for boost::json::value_from.
#pragma once

#include "proto/decode.h"

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace oppx::proto {

// mcp/resources and mcp/prompts.
struct McpOffersParams {
  std::string name, cwd;
};
struct McpReadParams {
  std::string name, uri, cwd;
};
struct McpPromptParams {
  std::string name, prompt, cwd;
  StringMap arguments;
};

struct McpResourcesResult {
  std::string connector;
  boost::json::array resources;  // as the server listed them: uri, name, title, description, mimeType
  boost::json::array templates;  // resources/templates/list: uriTemplate, name, …
};
struct McpReadResult {
  std::string connector, uri;
  std::string text;  // the contents as text (binary described), cut at the connector's limit
  bool truncated = false;
  bool untrusted = true;
};
struct McpPromptsResult {
  std::string connector;
  boost::json::array prompts;  // name, title, description, arguments [{name, description, required}]
};
struct PromptMessage {
  std::string role, text;  // text: the content as text (binary described)
};
struct McpPromptResult {
  std::string connector, prompt, description;
  std::vector<PromptMessage> messages;
  bool untrusted = true;
};

Decoded<McpOffersParams> decode(const boost::json::value& v, std::type_identity<McpOffersParams>);
Decoded<McpReadParams> decode(const boost::json::value& v, std::type_identity<McpReadParams>);
Decoded<McpPromptParams> decode(const boost::json::value& v, std::type_identity<McpPromptParams>);
Decoded<McpResourcesResult> decode(const boost::json::value& v, std::type_identity<McpResourcesResult>);
Decoded<McpReadResult> decode(const boost::json::value& v, std::type_identity<McpReadResult>);
Decoded<McpPromptsResult> decode(const boost::json::value& v, std::type_identity<McpPromptsResult>);
Decoded<PromptMessage> decode(const boost::json::value& v, std::type_identity<PromptMessage>);
Decoded<McpPromptResult> decode(const boost::json::value& v, std::type_identity<McpPromptResult>);

void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpOffersParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpReadParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpPromptParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpResourcesResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpReadResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpPromptsResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const PromptMessage& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpPromptResult& v);

inline constexpr std::string_view kMcpResources = "mcp/resources";
inline constexpr std::string_view kMcpRead = "mcp/read";
inline constexpr std::string_view kMcpPrompts = "mcp/prompts";
inline constexpr std::string_view kMcpPrompt = "mcp/prompt";

}  // namespace oppx::proto
