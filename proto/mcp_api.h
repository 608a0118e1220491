// Wire structs of the mcp/…, consent/… and tools/call methods (docs/protocol.md, "Methods"):
// the params the daemon decodes and the results its clients decode. Each has its decoder
// (proto/decode.h) and its encoder, a tag_invoke for boost::json::value_from.
#pragma once

#include "proto/decode.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::proto {

// A tools/call's time limit when the caller names none, and the most it may name.
inline constexpr std::int64_t kCallTimeoutMs = 120'000;
inline constexpr std::int64_t kMaxCallTimeoutMs = 3'600'000;

// ---- Params ----

struct McpListParams {
  bool wait = false;  // answer once no connector is still starting
  std::string cwd;    // the repository whose connectors are visible (else hello's cwd)
};
struct McpToolsParams {
  std::string name, cwd;
};
struct McpReconnectParams {
  std::string name;  // empty: every connector
  std::string cwd;
};
// mcp/login: starts the OAuth login of connector `name`; mcp/logout forgets its tokens.
struct McpLoginParams {
  std::string name, cwd;
};
// What the user's browser opens, and where its redirect comes back (mcp/login's result).
struct McpLoginStart {
  std::string login;            // names it to mcp/login/wait and mcp/login/redirect
  std::string url;              // the authorization URL
  std::string redirect_uri;     // http://127.0.0.1:<port>/callback
  std::string issuer;           // the authorization server
  std::string scope;            // asked for (empty: none)
  std::int64_t expires_in = 0;  // seconds the login waits for the redirect
};
// mcp/login/wait: answers once the login ended (an McpListResult of the connector, as after
// mcp/reconnect), or fails with kind login and why.
struct McpLoginWaitParams {
  std::string login;
};
// mcp/login/redirect: the address the browser was sent to, pasted by the user (the browser is on
// another machine); the waiting mcp/login/wait then ends with it.
struct McpLoginRedirectParams {
  std::string login, url;
};
struct McpLogoutResult {
  std::string name;
  std::int64_t forgotten = 0;  // tokens forgotten
};
struct McpGetParams {
  std::string name, cwd;
  bool show_values = false;  // values as written in the file, unmasked
};
struct McpAddParams {
  std::string name, cwd;
  boost::json::value definition;  // one mcpServers entry, written as given
  bool project = false, force = false;
  bool consent = true;  // with project: adding it is consent; false leaves it waiting for consent/approve
};
struct McpRemoveParams {
  std::string name, cwd;
  bool project = false;
};
// consent/approve and consent/deny.
struct ConsentParams {
  std::string name, sha256, cwd;
  std::optional<StringMap> files;  // the files it runs as shown (mcp/get "files"), path → sha256
};
struct ToolsCallParams {
  std::string connector, tool, cwd;
  boost::json::value arguments = boost::json::object();
  std::int64_t timeout_ms = kCallTimeoutMs;
  boost::json::value progress_token;  // null: the caller wants no progress
};

Decoded<McpListParams> decode(const boost::json::value& v, std::type_identity<McpListParams>);
Decoded<McpToolsParams> decode(const boost::json::value& v, std::type_identity<McpToolsParams>);
Decoded<McpReconnectParams> decode(const boost::json::value& v, std::type_identity<McpReconnectParams>);
Decoded<McpLoginParams> decode(const boost::json::value& v, std::type_identity<McpLoginParams>);
Decoded<McpLoginStart> decode(const boost::json::value& v, std::type_identity<McpLoginStart>);
Decoded<McpLoginWaitParams> decode(const boost::json::value& v, std::type_identity<McpLoginWaitParams>);
Decoded<McpLoginRedirectParams> decode(const boost::json::value& v, std::type_identity<McpLoginRedirectParams>);
Decoded<McpLogoutResult> decode(const boost::json::value& v, std::type_identity<McpLogoutResult>);
Decoded<McpGetParams> decode(const boost::json::value& v, std::type_identity<McpGetParams>);
Decoded<McpAddParams> decode(const boost::json::value& v, std::type_identity<McpAddParams>);
Decoded<McpRemoveParams> decode(const boost::json::value& v, std::type_identity<McpRemoveParams>);
Decoded<ConsentParams> decode(const boost::json::value& v, std::type_identity<ConsentParams>);
Decoded<ToolsCallParams> decode(const boost::json::value& v, std::type_identity<ToolsCallParams>);

void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpListParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpToolsParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpReconnectParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpLoginParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpLoginStart& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpLoginWaitParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpLoginRedirectParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpLogoutResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpGetParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpAddParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpRemoveParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ConsentParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ToolsCallParams& v);

// The method names, declared once for the router and the clients. The daemon's notifications
// mcp/changed and tools/progress are beside their params, in proto/mcp_results.h.
inline constexpr std::string_view kMcpList = "mcp/list";
inline constexpr std::string_view kMcpGet = "mcp/get";
inline constexpr std::string_view kMcpTools = "mcp/tools";
inline constexpr std::string_view kMcpAdd = "mcp/add";
inline constexpr std::string_view kMcpRemove = "mcp/remove";
inline constexpr std::string_view kMcpReconnect = "mcp/reconnect";
inline constexpr std::string_view kMcpSubscribe = "mcp/subscribe";
inline constexpr std::string_view kMcpLogin = "mcp/login";
inline constexpr std::string_view kMcpLoginWait = "mcp/login/wait";
inline constexpr std::string_view kMcpLoginRedirect = "mcp/login/redirect";
inline constexpr std::string_view kMcpLogout = "mcp/logout";
inline constexpr std::string_view kMcpUnsubscribe = "mcp/unsubscribe";
inline constexpr std::string_view kConsentApprove = "consent/approve";
inline constexpr std::string_view kConsentDeny = "consent/deny";
inline constexpr std::string_view kToolsCall = "tools/call";
// mcp/add's error kinds: a bad name or entry (invalid_definition), a name the file has already
// when force is not set (exists).
namespace kind {
inline constexpr std::string_view kInvalidDefinition = "invalid_definition";
inline constexpr std::string_view kExists = "exists";
}  // namespace kind

}  // namespace oppx::proto
