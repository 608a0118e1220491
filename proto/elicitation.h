// Elicitation (MCP "Elicitation", both eras): a connector's server asks the user for a form's
// fields or to open an address. The daemon passes the question to the client whose call caused
// it (mcp/elicit, docs/protocol.md) and the answer back; the form's rules live here, once, for the
// daemon (defaults applied, the answer checked before it goes) and the front ends (the form asked
// field by field). No I/O.
#pragma once

#include "proto/decode.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::proto {

// mcp/elicit (daemon → client, request): answered with an ElicitAnswer. A client that does not
// serve it (method not found) declines.
inline constexpr std::string_view kMcpElicit = "mcp/elicit";

struct ElicitQuestion {
  std::string connector, tool;  // whose call asks ("" when it could not be told)
  std::string mode = "form";    // form | url
  std::string message;          // the server's words (text from outside: escape before display)
  boost::json::object schema;   // form: the requested schema, as the server wrote it
  std::string url;              // url: the address to open, never given to the model
};

// accept (with the form's content), decline or cancel, as MCP defines them.
struct ElicitAnswer {
  std::string action = "decline";
  boost::json::object content;
};

// How a client that cannot ask answers (`oppx -p --elicit`, agent/open `elicit`).
enum class ElicitPolicy { kAsk, kDecline, kAcceptDefaults };
std::optional<ElicitPolicy> elicit_policy(std::string_view name);  // ask | decline | accept-defaults

// One field of a form, as a front end asks it.
struct FormField {
  std::string name, title, description;
  // string | number | integer | boolean | choice (one of `choices`) | choices (several of them)
  std::string type;
  std::vector<std::string> choices, choice_titles;  // the values, and their titles ("" for none)
  std::optional<boost::json::value> default_value;
  bool required = false;
};
// The form's fields in the schema's order; a property of a kind MCP does not define is left out.
std::vector<FormField> form_fields(const boost::json::object& schema);
// `content` with each default the schema gives for a field left empty.
boost::json::object with_defaults(const boost::json::object& schema, boost::json::object content);
// "" when `content` fits the schema (required fields, types, choices, bounds, lengths), else the
// first problem in words.
std::string form_problem(const boost::json::object& schema, const boost::json::object& content);
// "" when `value` fits the schema's field `field` (its type, choices, bounds, lengths, format), else why not.
std::string field_problem(const boost::json::object& schema, const FormField& field, const boost::json::value& value);
// A field's value from what the user typed ("" leaves it empty: nullopt with no error); for
// `choices`, comma-separated; a choice may be given by its number (from 1) or its value.
std::optional<boost::json::value> field_value(const FormField& field, std::string_view typed, std::string& error);
// The answer a client that cannot ask gives: decline, or accept with the defaults when they
// complete the form (else decline).
ElicitAnswer unasked_answer(ElicitPolicy policy, const ElicitQuestion& q);

Decoded<ElicitQuestion> decode(const boost::json::value& v, std::type_identity<ElicitQuestion>);
Decoded<ElicitAnswer> decode(const boost::json::value& v, std::type_identity<ElicitAnswer>);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ElicitQuestion& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ElicitAnswer& v);

}  // namespace oppx::proto
