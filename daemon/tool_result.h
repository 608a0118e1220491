// What a tools/call result gives the model and the user: its text parts joined, other parts
// described (images, audio, binary resources: their kind and size, never their bytes), and its
// structuredContent as compact JSON once it fits the tool's outputSchema; each cut at the
// connector's limit with a visible marker, the whole kept for a file (the caller writes it).
// No I/O.
#pragma once

#include <boost/json/fwd.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace oppx::daemon {

inline constexpr std::size_t kResultLimit = 12'000;  // characters kept from a result, unless the entry says

// One result as the daemon answers it.
struct ResultForModel {
  std::string text;        // the content, described and joined; cut at the limit
  std::string whole_text;  // the content uncut, when `text` was cut (else empty)
  // structuredContent as compact JSON, when the result has one that fits the tool's outputSchema
  // (or the tool has none); cut at the limit, the uncut in `whole_structured`.
  std::string structured, whole_structured;
  std::string structured_problem;  // why a structuredContent was not given: where it breaks the schema
  std::size_t text_chars = 0, structured_chars = 0;  // the uncut sizes, in characters
};
// `output_schema`: the tool's, from its list (null: none).
ResultForModel result_for_model(const boost::json::value& result, std::size_t limit,
                                const boost::json::value* output_schema);

// "" when `v` fits `schema`, else where and how it does not ("$.items[2].id: expected string"):
// type (one or a list), enum, const, required, properties, additionalProperties (false or a
// schema), items, minItems/maxItems, minimum/maximum, minLength/maxLength, and local "$ref"s into
// "$defs"/"definitions"; other keywords are not checked.
std::string schema_problem(const boost::json::value& v, const boost::json::value& schema);

// One content part as text (a text part as it is, binary described, an embedded text resource
// under its address): what resources/read's contents and a prompt's messages show too.
std::string part_text(const boost::json::object& part);

// `text` cut at `limit` characters; the count before the cut, and the whole in `whole` when cut.
std::size_t cut_keeping(std::string& text, std::string& whole, std::size_t limit);

// The marker that replaces what was cut, naming the file that holds the whole.
std::string cut_marker(std::size_t kept, std::size_t total, const std::string& file);

}  // namespace oppx::daemon
