// Writing connectors files (the user's mcp.json, a repository's .mcp.json): the daemon is their
// single writer. An edit reads the whole file, changes one mcpServers entry, keeps every other key
// and entry, and writes it back atomically as 2-space JSON (the user's 0600; a repository's keeps
// its mode). Blocking file I/O, small files.
#pragma once

#include "daemon/mcp_config.h"

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <string>
#include <string_view>

namespace oppx::daemon {

// JSON as `JSON.stringify(v, null, 2)` writes it, with a final newline.
std::string pretty_json(const boost::json::value& v);

struct EditError {
  std::string kind;  // "exists", "not_found", "invalid" (the definition or the name), "io" (the file)
  std::string message;
};

// Checks a definition as `mcp add` takes it: a valid name, the mcpServers entry format, an
// http(s) URL, and no CR, LF or NUL in any value (they would split a header or an env line).
boost::system::result<ConnectorDef, EditError> check_definition(std::string_view name, const boost::json::value& entry);

struct EditOutcome {
  bool replaced = false;  // the name was there before (with --force)
  std::string warning;    // e.g. the file was readable by others
  std::string canonical;  // the entry as it now reads from the file (ConnectorDef::canonical)
};

// Adds or (with `force`) replaces one entry. Without `force` an existing name is an "exists" error.
// `users_file`: the user's own mcp.json, which may be a link into their dotfiles (the edit goes to
// its target) and may hold tokens (written 0600, with a warning when it was readable by others).
// Else a repository's .mcp.json: never written through a link (an "io" error says so), so a
// repository cannot point an edit at a file outside it, and it keeps its mode (a team's shared
// file holds references, not secrets; a new one is 0644, as git checks files out).
boost::system::result<EditOutcome, EditError> add_entry(const std::string& path, std::string_view name,
                                                        const boost::json::value& entry, bool force, bool users_file);
// Removes one entry; a missing name is a "not_found" error.
boost::system::result<EditOutcome, EditError> remove_entry(const std::string& path, std::string_view name,
                                                           bool users_file);

}  // namespace oppx::daemon
