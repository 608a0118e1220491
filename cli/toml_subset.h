// A reader of the TOML that MCP clients' config files use (Codex's config.toml): key/values,
// [tables] and [[arrays of tables]], dotted and quoted keys, basic and literal strings (one line
// or three-quoted), integers, floats, booleans, arrays and inline tables, comments. Dates and
// times are refused. The document comes back as JSON values, with the line of every key, so that
// a caller can say "config.toml:12: mcp_servers.x.args: …". Pure: no I/O.
#pragma once

#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::cli {

using TomlPath = std::vector<std::string>;

struct TomlDocument {
  boost::json::object root;
  // The line each key (or table header) was written on, by its path: {"mcp_servers","x","args"}.
  // An array of tables counts once, at its first header.
  std::map<TomlPath, int> lines;
  // The line of `path`, else of its nearest parent that has one; 0 when none has.
  int line_of(TomlPath path) const;
};

struct TomlError {
  int line = 0;
  std::string message;  // what is wrong and how to write it instead; no file name
};

// At most kMaxTomlBytes of text; nesting (arrays, inline tables) at most 64 deep.
inline constexpr std::size_t kMaxTomlBytes = 4 << 20;
boost::system::result<TomlDocument, TomlError> parse_toml(std::string_view text);

}  // namespace oppx::cli
