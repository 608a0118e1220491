// `oppx mcp import`'s reading side: where Claude Code, Claude Desktop, VS Code, Cursor and Codex
// keep their MCP servers, those files read, and each entry translated into an oppx mcpServers
// entry or refused with the reason. ${VAR} references are kept as written, never expanded. Reads
// files only; the daemon is cmd_mcp_import.cpp's business.
#pragma once

#include <boost/json/object.hpp>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::cli::mcp_import {

enum class Client { kClaudeCode, kClaudeDesktop, kVsCode, kCursor, kCodex };
std::string_view client_id(Client c);     // "claude-code", as --from takes it
std::string_view client_title(Client c);  // "Claude Code"
std::optional<Client> client_named(std::string_view id);

// Where to look: HOME, $XDG_CONFIG_HOME (else ~/.config), $CODEX_HOME (else ~/.codex), the
// current folder and its repository's root.
struct Places {
  std::string home, config_home, codex_home, cwd, root;
};
Places places_here();

// One place that may hold servers: a file and where in it (a JSON key path; Codex's TOML has its
// mcp_servers tables). `scope` is the client's word: user, local (Claude Code's entry for this
// folder in ~/.claude.json) or project.
struct Source {
  Client client = Client::kClaudeCode;
  std::string path;
  std::vector<std::string> section;  // {"mcpServers"}, {"projects", "<folder>", "mcpServers"}, {"mcp", "servers"}
  std::string scope;
  std::string label() const;  // the path, with the section when it is not the whole file's usual key
};
// The user's places (project false) or the repository's (true), of one client or of all.
std::vector<Source> sources(const Places& places, std::optional<Client> only, bool project);

// One entry found.
struct Candidate {
  std::string name;
  Source source;
  boost::json::object definition;  // the oppx entry, as it would be written (unmasked)
  std::string refused;             // why it cannot be imported; empty when it can
  std::vector<std::string> notes;  // what changed on the way (a key left out, ${env:X} written ${X})
};

struct FileRead {
  Source source;
  bool found = false;
  std::string error;  // "<path>:<line>: why" when it could not be read
  std::size_t entries = 0;
};

struct Scan {
  std::vector<FileRead> files;
  std::vector<Candidate> candidates;  // in the order of `sources`
};
Scan scan(const std::vector<Source>& sources);

// The entries of one source's text (JSON with comments and trailing commas, or Codex's TOML);
// an error message without the path when the text cannot be read at all.
struct Entries {
  std::vector<Candidate> candidates;
  std::string error;    // "<line>: why" or "why"
  bool present = true;  // the section exists in the file
};
Entries read_source(const Source& source, std::string_view text);

// What would happen to each candidate, given the names the target file already has.
enum class Action { kAdd, kReplace, kExists, kDuplicate, kRefused };
std::string_view action_id(Action a);  // "add", "replace", "exists", "duplicate", "refused"
struct Planned {
  const Candidate* candidate = nullptr;
  Action action = Action::kRefused;
  std::string why;  // for exists, duplicate and refused
};
std::vector<Planned> plan(const std::vector<Candidate>& candidates, const std::set<std::string>& existing, bool force);

// The definition as `oppx mcp get` shows it: env and header values, arguments and the URL masked
// (common/masking.h), references as written.
boost::json::object masked(const boost::json::object& definition);

}  // namespace oppx::cli::mcp_import

namespace oppx::cli {
struct Command;
}  // namespace oppx::cli
