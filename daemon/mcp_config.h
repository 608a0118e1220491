// Connector definitions: the `mcpServers` block every MCP client reads, from the user's mcp.json
// (and, later, a repository's .mcp.json). Parsing reports file:line:col; ${VAR} and
// ${VAR:-default} are expanded at start from the asking client's environment, never written back.
#pragma once

#include "common/masking.h"

#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::daemon {

using EnvMap = std::map<std::string, std::string, std::less<>>;
using Pairs = std::vector<std::pair<std::string, std::string>>;

// An HTTP connector's "oauth" block (as the peers' configs write it): a client registered with the
// server beforehand, the scopes to ask for, the loopback port its redirect comes back to. Without
// it, oppx finds the rest on the server (daemon/oauth.h).
struct OAuthDef {
  std::string client_id;      // "clientId": empty: oppx registers itself
  std::string client_secret;  // "clientSecret": as written (normally a ${VAR}), expanded at login
  std::vector<std::string> scopes;
  int callback_port = 0;  // "callbackPort": 0: any free port
};

struct ConnectorDef {
  enum class Kind { kStdio, kHttp };
  std::string name;
  Kind kind = Kind::kStdio;
  std::string command;
  std::vector<std::string> args;
  Pairs env;
  std::string url;
  Pairs headers;
  OAuthDef oauth;
  std::string cwd;        // "cwd" as written: a stdio program's folder, relative to the file's
  bool disabled = false;  // "disabled": true (as in Claude Desktop and Cline): it never starts
  // "alwaysLoad": true (every tool, as "*") or the names of tools the agent lists even when it
  // searches for the others (its tool search)
  std::vector<std::string> always_load;
  // "resultLimit": characters of a result the model is given (the rest kept in a file); 0: the
  // daemon's default (daemon/tool_result.h)
  std::size_t result_limit = 0;
  // "lazy": true: not started with the daemon while a tool list is cached for this definition;
  // that list is offered, and the first call starts it (config.json "lazy_connectors": all of them)
  bool lazy = false;
  // Why oppx cannot use the entry ("<file>:<line>:<col>: mcpServers.x.type: …") and what to do
  // instead; empty when it can. Such an entry is listed `unsupported` and never starts.
  std::string unsupported, fix;
  std::string canonical;  // the entry as written (unexpanded, key order kept): its identity
  std::string file;       // the file it came from (not part of its identity)
  bool project = false;   // from a repository's .mcp.json: it starts in the repository's root

  bool never_starts() const { return disabled || !unsupported.empty(); }
};

// An HTTP connector without an Authorization header of its own logs in with OAuth when its
// server asks for a login.
bool logs_in_with_oauth(const ConnectorDef& def);

// "/a/./b/../c" as "/a/c", without asking the file system (a symlink is not followed).
std::string normal_path(std::string_view path);

// A repository's stdio connector whose "cwd" leaves its repository `root` (its folder's real path,
// symlinks followed, relative to the file's folder, outside root's real path) or holds a ${VAR}
// (known only at start) is set `unsupported`, with why and what to do: the program that runs there
// would be neither shown nor hashed for consent. The user's own connectors are never passed here.
void keep_cwd_in_repository(ConnectorDef& def, const std::string& root);

// "mcp.json" or ".mcp.json": the file a definition came from, as a person names it in a step.
std::string file_name_of(const ConnectorDef& def);

struct McpConfig {
  std::vector<ConnectorDef> connectors;
  std::vector<std::string> warnings;  // e.g. the file is readable by others
  std::vector<std::string> notes;     // about its shape: a "servers" key and no "mcpServers"
};

inline constexpr std::size_t kMaxConfigBytes = 4u << 20;

// A missing file is an empty config. Errors start with "<path>:<line>:<col>: " or "<path>: ". An
// entry that is wrong on its own is no error of the file: it comes with `unsupported` set.
boost::system::result<McpConfig, std::string> load_mcp_config(const std::string& path);
boost::system::result<McpConfig, std::string> parse_mcp_config(std::string_view text, const std::string& path);

// The user's connectors file: $OPPX_MCP_CONFIG, else mcp.json next to config.json.
std::string user_mcp_config_path(const EnvMap& env);

// The ${VAR} grammar and the masking for display live in common/masking.h, which the CLI uses too.
using oppx::mask_args;
using oppx::mask_url;
using oppx::mask_value;
using oppx::Reference;
using oppx::reference_at;
using oppx::secret_word;
using oppx::variable_name;

// How deep defaults may hold defaults (${A:-${B:-${C}}} is 2): deeper is an error, not a recursion.
inline constexpr int kMaxDefaultNesting = 8;

// Expands ${VAR} and ${VAR:-default}. The error names the variable, never a value: unset
// without a default, or a value holding CR, LF or NUL.
struct ExpandError {
  enum class Problem { kUnset, kLineBreak, kUnclosed, kNotAName, kTooDeep };
  std::string variable;  // the name (empty when the definition itself is wrong)
  Problem problem = Problem::kUnset;
  // What is wrong, for a reason: "it needs ${X}, which is not set in …" and the like.
  std::string describe() const;
  // The definition must change (unclosed, not a name, nested too deep), not the environment.
  bool written_wrong() const { return problem != Problem::kUnset && problem != Problem::kLineBreak; }
};
boost::system::result<std::string, ExpandError> expand(std::string_view s, const EnvMap& env);

// The variables a definition reads (${NAME} and ${NAME:-default}, in command, args, cwd, env, url
// and headers, and those in defaults), each once, in order of first use.
std::vector<std::string> referenced_variables(const ConnectorDef& def);

// One mcpServers entry. Its own error type: a result<ConnectorDef, std::string> could not tell a
// message from a definition. The message starts with the key path ("mcpServers.x.url: …").
struct EntryError {
  std::string message;
  std::string fix;  // what to do instead, when the message alone does not say it
};
boost::system::result<ConnectorDef, EntryError> parse_mcp_entry(std::string_view name, const boost::json::value& v);

// Valid connector names: letters, digits, '-' and '_', 1 to 64 of them.
bool valid_name(std::string_view name);

}  // namespace oppx::daemon
