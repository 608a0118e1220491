// A tool's arguments as the agent loop asks a model for them (SPEC §4, MODEL-SERVERS.md): the
// tool's inputSchema made into one that the servers' grammars take, the model's answer checked
// against the original schema here (a 200 may carry unconstrained text), and an answer shaped like
// the whole action unwrapped. Pure functions over JSON: no I/O.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <set>
#include <string>

namespace oppx::chat {

// The schema sent to the model server as response_format: `$schema`, `$id` and `$comment`
// dropped; local `$ref`s (#/$defs/…, #/definitions/…) inlined (a recursive one, past a few levels,
// becomes an unconstrained object); an anyOf/oneOf of one type and null reduced to that type; the
// keywords servers commonly refuse (format, pattern, uniqueItems, multipleOf, contains,
// propertyNames, patternProperties, not, if/then/else) dropped. A schema that is not an object
// becomes {"type": "object"}.
boost::json::value simplify_schema(const boost::json::value& schema);

// Checks `arguments` against the tool's own schema: a JSON object, every required key present,
// each declared property of the declared type (and in its enum, when it has one). Returns the
// first problem in words ("the required key \"title\" is missing"), or nothing.
std::optional<std::string> check_arguments(const boost::json::value& arguments, const boost::json::value& schema);

// The action's own keys, which a model sometimes copies into the arguments.
inline const std::set<std::string>& action_keys() {
  static const std::set<std::string> keys{"action", "tool",  "arguments", "enough",  "reason", "thought",
                                          "text",   "reply", "path",      "pattern", "command"};
  return keys;
}

// An answer shaped like the whole action ({"tool": …, "arguments": {…}}) gives its inner
// arguments; then the action's keys are dropped unless the tool's schema declares them.
boost::json::object clean_arguments(const boost::json::value& answer, const boost::json::value& schema);

}  // namespace oppx::chat
