// The ${NAME} and ${NAME:-default} references of a connector's definition, and its values masked
// for display (`oppx mcp get`, a definition being imported): references shown as written, literal
// secrets hidden. Shared by oppxd (daemon/mcp_config.h) and the CLI; pure functions, no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx {

// One ${NAME} or ${NAME:-default} in a value. A default may hold references of its own, as in the
// shell: ${A:-${B}} reads B when A is unset or empty, and closes at the second "}".
struct Reference {
  std::string_view name;
  std::string_view fallback;  // the default as written, its own references unexpanded
  bool has_default = false;
  std::size_t end = 0;  // one past the closing "}"
};
// A name a reference may read: letters, digits and '_' ("${X${Y}sk-1}" is not one, and is never
// read or shown: it may hold a secret).
bool variable_name(std::string_view s);
// The reference whose "${" is at `open`, or nothing when no "}" closes it.
std::optional<Reference> reference_at(std::string_view s, std::size_t open);
// For display: a value with its secret part hidden ("Bearer lin_…***"), except ${VAR} references.
// Literal text beside a reference is hidden too ("Bearer ***${T}").
std::string mask_value(std::string_view value);
// A name that says it holds a secret (token, key, password, auth…), in any case.
bool secret_word(std::string_view name);

// A URL with a password and query values masked ("https://h/mcp?api_key=***").
std::string mask_url(std::string_view url);

// Arguments with the value after a flag that names a secret (--token, --api-key, --password=…),
// a "Authorization: …" header argument, and URLs masked; the rest as given.
std::vector<std::string> mask_args(const std::vector<std::string>& args);

}  // namespace oppx
