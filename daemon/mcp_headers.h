// MCP 2026-07-28's headers over HTTP that come from a request's body (SEP-2243): which version
// and name a request carries, a value as a header carries it (plain, or "=?base64?…?="), the tool
// parameters a server marks with `x-mcp-header` in its inputSchema, checked when the tools are
// listed (a tool whose marks are invalid is left out) and mirrored as Mcp-Param-{Name} on each
// call, and the version refusal that is answered by sending again. Pure: no I/O.
#pragma once

#include <boost/json/fwd.hpp>
#include <boost/system/result.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oppx::daemon::mcp_headers {

// What a request (its JSON text, its method) says of itself for its headers: the version its
// params._meta names, and the name (tools/call, prompts/get) or URI (resources/read) that
// Mcp-Name carries. Nothing for a request without the 2026-07-28 _meta.
struct StatelessRequest {
  std::string version, name;
};
std::optional<StatelessRequest> stateless_request(std::string_view text, std::string_view method);

// A 400's body in which the server refused `version` (-32022) while listing it among those it
// supports: the request is sent once more (a server may refuse a first request so).
bool version_refused_but_listed(std::string_view body, std::string_view version);

// A header value: as it is when it is visible ASCII and inner spaces (no space or tab at either
// end, not itself shaped like "=?base64?…?="), else "=?base64?<its UTF-8 in Base64>?=".
std::string header_value(std::string_view v);

// One parameter mirrored into a header: Mcp-Param-{name}, from the value at `path` (a chain of
// `properties` keys from the schema's root).
struct ParamHeader {
  std::string name;
  std::vector<std::string> path;
};
// The marked parameters of a tool's inputSchema, or why its marks are invalid (empty, not a
// token, duplicated ignoring case, on a type other than string, integer or boolean, or anywhere
// but a chain of `properties` from the root).
boost::system::result<std::vector<ParamHeader>, std::string> param_headers(const boost::json::value& input_schema);
// The headers of one call: each marked parameter present and not null in `arguments`, its value
// as text (a string as it is, an integer in decimal, true/false), encoded by header_value.
std::vector<std::pair<std::string, std::string>> param_header_values(const std::vector<ParamHeader>& marks,
                                                                     const boost::json::value& arguments);

}  // namespace oppx::daemon::mcp_headers
