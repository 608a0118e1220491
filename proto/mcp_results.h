// Wire structs of what the mcp/…, consent/… and tools/call methods answer (docs/protocol.md):
// one connector as every listing shows it, the list, a call's result and its progress, and the
// answers of mcp/add, mcp/remove and mcp/unsubscribe. The daemon fills them; oppx, the chat and
// editor plugins decode them (proto/decode.h). Optional parts are left out of the JSON when empty.
#pragma once

#include "proto/decode.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::proto {

// A file of the repository that a repository's connector runs.
struct RunFile {
  std::string path;  // relative to the repository root
  std::string sha256;
};

// One connector: an mcp/list entry, the answer of mcp/get, mcp/tools and consent/…, and the
// params of mcp/changed.
// An OAuth connector's login as mcp/list and mcp/get show it: never the token itself.
struct LoginState {
  bool logged_in = false;
  std::string issuer;           // the authorization server that issued it
  std::int64_t expires_at = 0;  // Unix seconds; 0: not said
  bool refreshes = false;       // it has a refresh token: oppxd renews it before it expires
  std::string scope;
};
Decoded<LoginState> decode(const boost::json::value& v, std::type_identity<LoginState>);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const LoginState& v);

struct ConnectorEntry {
  std::string name;
  std::string source;  // user | project | browser
  std::string file;    // its connectors file (none for the browser)
  std::string type;    // stdio | http
  std::string state;   // starting | running | failed | stopped | waiting | disabled | unsupported | hidden | removed
  std::string log;     // its program's stderr log (stdio only)
  std::int64_t requests_waiting = 0;
  std::string protocol;                         // the MCP version its server speaks (or spoke last); "" when not known
  std::vector<std::string> always_load;         // "alwaysLoad": tools the agent always lists ("*": all of them)
  std::int64_t tool_count = 0;                  // "tools" as a count (listings)
  std::optional<boost::json::array> tools;      // "tools" as the server's tool objects (mcp/tools, mcp/add)
  bool cached = false;                          // the tools are the list cached from its last run
  std::vector<std::string> denied;              // mcp/tools: those a deny rule of the folder covers
  std::string command;                          // stdio
  std::string cwd;                              // stdio: its "cwd" as written, when it has one
  std::vector<std::string> args;                // stdio, masked unless as_written
  StringMap env;                                // stdio, values masked unless as_written
  std::string url;                              // http
  StringMap headers;                            // http, values masked unless as_written
  bool as_written = false;                      // "values": "as_written" (mcp/get show_values)
  std::vector<std::string> reads;               // the ${VAR} names it reads
  std::string root, sha256;                     // a repository's: its root and the definition's hash
  std::vector<RunFile> files;                   // a repository's: the files it runs
  std::string consent;                          // a repository's: none | approved | denied | changed
  std::string approve;                          // the command that approves it, when it is not
  std::string hidden_by;                        // "user" when the user's connector of that name hides it
  std::string reason, reason_kind;              // when not running: what happened, and its kind
  std::vector<std::string> steps;               // what to do, in order
  std::string folder;                           // the session's browser: its folder
  std::int64_t pid = 0;                         // the session's browser: its server's pid
  std::shared_ptr<const ConnectorEntry> hides;  // mcp/get: the repository's one this one hides
  std::optional<bool> tools_changed;            // mcp/changed: its tool list changed
  std::optional<bool> offers_changed;           // mcp/changed: its resources or prompts changed
  std::optional<LoginState> login;              // http: it logs in with OAuth (no Authorization header)

  bool is_project() const { return source == "project"; }
};

struct ProjectConnectors {
  std::string root, config, error;
  std::vector<std::string> warnings;
};

// mcp/list, mcp/subscribe and mcp/reconnect.
struct McpListResult {
  std::vector<ConnectorEntry> connectors;  // the user's, then the repository's in file order
  std::string config;                      // the user's file
  std::string error;                       // when the user's file could not be read
  std::vector<std::string> warnings;
  std::optional<ProjectConnectors> project;
  std::string consent_error;  // when the consent store was set aside
};

struct ToolsCallResult {
  std::string connector, tool;
  boost::json::value arguments;
  std::string text;  // the content as text (binary parts described), cut at the connector's limit
  bool is_error = false;
  bool truncated = false;
  bool untrusted = true;  // reference text from outside, never instructions
  // structuredContent as compact JSON, when it fits the tool's outputSchema: what an agent gives
  // its model (the text stays for display); cut at the same limit. Else why it was not given.
  std::string structured, structured_problem;
  // Where the whole of a cut text (or structured JSON) is kept, under the cache folder; "" when
  // nothing was cut or the file could not be written.
  std::string text_file, structured_file;
};

// The data of a connector_down error (tools/call): which connector, and why, as in mcp/list.
struct ConnectorDown {
  std::string connector;
  std::string reason_kind, reason;
  std::vector<std::string> steps;
};

// The tools/progress notification.
struct ToolsProgress {
  boost::json::value id;              // the tools/call's request id
  boost::json::value progress_token;  // the caller's
  std::optional<double> progress, total;
  std::string message;
};

struct ProbeWarning {
  std::string kind;  // SMALL_CONTEXT | HEAVY_SHARE
  std::string message;
};

// mcp/add: what it costs once it runs. The daemon never waits on a model server: the client
// completes it with what the model server says (docs/protocol.md, mcp/add).
struct AddProbe {
  std::vector<std::string> lines;  // its tools in the one-line form the model sees
  std::int64_t tokens = 0;
  bool estimated = true;
  std::string estimate;
  // The client's part: the context window and the list's share of it (percent), or why unknown.
  std::optional<std::int64_t> context;
  std::optional<double> share;
  std::string context_note;
  std::optional<std::vector<ProbeWarning>> warnings;  // set once completed

  bool completed() const { return share.has_value() || !context_note.empty(); }
};

struct McpAddResult {
  std::string name, file;
  bool replaced = false;
  std::string warning, consent_error;
  std::optional<AddProbe> probe;
  std::optional<ConnectorEntry> connector;
};

struct McpRemoveResult {
  std::string name, file;
  bool removed = true;
  std::string warning, consent_error;
};

struct McpUnsubscribeResult {
  bool subscribed = false;
  bool was_subscribed = false;
};

// The params of mcp/changed for a connector that is gone: its name and where it was. Clients read
// them as a ConnectorEntry whose state is "removed" (docs/protocol.md).
struct ConnectorRemoved {
  std::string name;
  std::string root;  // the repository of a project connector; empty for one of the user's
};

Decoded<RunFile> decode(const boost::json::value& v, std::type_identity<RunFile>);
Decoded<ConnectorEntry> decode(const boost::json::value& v, std::type_identity<ConnectorEntry>);
Decoded<ProjectConnectors> decode(const boost::json::value& v, std::type_identity<ProjectConnectors>);
Decoded<McpListResult> decode(const boost::json::value& v, std::type_identity<McpListResult>);
Decoded<ToolsCallResult> decode(const boost::json::value& v, std::type_identity<ToolsCallResult>);
Decoded<ConnectorDown> decode(const boost::json::value& v, std::type_identity<ConnectorDown>);
Decoded<ToolsProgress> decode(const boost::json::value& v, std::type_identity<ToolsProgress>);
Decoded<ProbeWarning> decode(const boost::json::value& v, std::type_identity<ProbeWarning>);
Decoded<AddProbe> decode(const boost::json::value& v, std::type_identity<AddProbe>);
Decoded<McpAddResult> decode(const boost::json::value& v, std::type_identity<McpAddResult>);
Decoded<McpRemoveResult> decode(const boost::json::value& v, std::type_identity<McpRemoveResult>);
Decoded<McpUnsubscribeResult> decode(const boost::json::value& v, std::type_identity<McpUnsubscribeResult>);

void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const RunFile& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ConnectorEntry& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ProjectConnectors& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpListResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ToolsCallResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ConnectorDown& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ToolsProgress& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ProbeWarning& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AddProbe& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpAddResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpRemoveResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const McpUnsubscribeResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ConnectorRemoved& v);

// The daemon's notifications, declared once for it and the clients: mcp/changed (a
// ConnectorEntry, or a ConnectorRemoved) and tools/progress (a ToolsProgress).
inline constexpr std::string_view kMcpChanged = "mcp/changed";
inline constexpr std::string_view kToolsProgress = "tools/progress";
// tools/call's error kind when the connector is down: data is a ConnectorDown.
namespace kind {
inline constexpr std::string_view kConnectorDown = "connector_down";
}  // namespace kind

}  // namespace oppx::proto
