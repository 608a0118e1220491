// The MCP versions oppx speaks (the specification's dated revisions), newest first, written once:
// initialize asks for the first, and a server's answer must be one of them (docs/protocol.md,
// "Connectors"). What changed between them that the HTTP link acts on is named here too.
#pragma once

#include <algorithm>
#include <iterator>
#include <string_view>

namespace oppx::proto::mcp {

inline constexpr std::string_view kVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
inline constexpr std::string_view kLatest = kVersions[0];
// 2025-03-26 has no MCP-Protocol-Version header (its servers assume that version without one).
inline constexpr std::string_view kWithoutVersionHeader = "2025-03-26";
// From 2025-11-25 (SEP-1699) a server may end a stream early and the client polls.
inline constexpr std::string_view kFirstWithPolling = "2025-11-25";

// MCP 2026-07-28: stateless, no initialize and no session. Every request carries the protocol's
// metadata in params._meta (these keys); over HTTP also the MCP-Protocol-Version, Mcp-Method and
// Mcp-Name headers. oppx asks a server for it first (server/discover) and speaks the versions above
// to a server that does not know it.
inline constexpr std::string_view kStateless = "2026-07-28";
inline constexpr std::string_view kMetaVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";
// On each notification of a subscriptions/listen stream: that request's id.
inline constexpr std::string_view kMetaSubscriptionId = "io.modelcontextprotocol/subscriptionId";

inline bool supported(std::string_view version) {
  return std::find(std::begin(kVersions), std::end(kVersions), version) != std::end(kVersions);
}

}  // namespace oppx::proto::mcp
