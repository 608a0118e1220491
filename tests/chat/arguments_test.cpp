// chat/arguments: the schema a model server's grammar takes, the answer checked against the
// tool's own schema, and an answer shaped like the whole action unwrapped (the seed's Linear case).
#include "chat/arguments.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

namespace oppx::chat {
namespace {

namespace json = boost::json;

TEST(Arguments, TheSchemaIsSimplifiedForTheServerAndRefsInlined) {
  json::value schema = json::parse(R"({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
      "url": {"type": "string", "format": "uri", "pattern": "^https?://", "maxLength": 200},
      "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
      "due": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}], "description": "when"},
      "owner": {"$ref": "#/$defs/person"},
      "format": {"type": "string"},
      "tree": {"$ref": "#/definitions/node"}
    },
    "required": ["url"],
    "$defs": {"person": {"type": "object", "properties": {"name": {"type": "string"}}}},
    "definitions": {"node": {"type": "object", "properties": {"child": {"$ref": "#/definitions/node"}}}}
  })");
  json::value s = simplify_schema(schema);
  const json::object& o = s.as_object();
  EXPECT_FALSE(o.contains("$schema"));
  EXPECT_FALSE(o.contains("$defs"));
  EXPECT_FALSE(o.contains("definitions"));
  const json::object& props = o.at("properties").as_object();
  EXPECT_EQ(props.at("url"), json::parse(R"({"type": "string", "maxLength": 200})"));
  EXPECT_FALSE(props.at("tags").as_object().contains("uniqueItems"));
  EXPECT_EQ(props.at("due"), json::parse(R"({"type": "string", "description": "when"})"));
  EXPECT_EQ(props.at("owner"), json::parse(R"({"type": "object", "properties": {"name": {"type": "string"}}})"));
  EXPECT_EQ(props.at("format"), json::parse(R"({"type": "string"})")) << "a property named like a keyword stays";
  EXPECT_EQ(json::serialize(s).find("$ref"), std::string::npos) << "a recursive ref ends: " << json::serialize(s);
  EXPECT_EQ(o.at("required"), json::parse(R"(["url"])"));
  EXPECT_EQ(simplify_schema(json::value(nullptr)), json::parse(R"({"type": "object"})"));
}

TEST(Arguments, TheAnswerIsCheckedAgainstTheOriginalSchema) {
  json::value schema = json::parse(R"({"type": "object", "required": ["title", "priority"],
    "properties": {"title": {"type": "string"}, "priority": {"type": "integer", "enum": [1, 2, 3]},
                   "labels": {"type": ["array", "null"]}, "note": {"type": "string"}}})");
  EXPECT_FALSE(check_arguments(json::parse(R"({"title": "x", "priority": 2})"), schema));
  EXPECT_FALSE(check_arguments(json::parse(R"({"title": "x", "priority": 2, "labels": null, "note": null})"), schema));
  EXPECT_EQ(*check_arguments(json::parse(R"({"priority": 2})"), schema), "the required key \"title\" is missing");
  EXPECT_EQ(*check_arguments(json::parse(R"({"title": "x", "priority": "2"})"), schema),
            "\"priority\" should be integer but is a string");
  EXPECT_EQ(*check_arguments(json::parse(R"({"title": "x", "priority": 7})"), schema),
            "\"priority\" is 7, which is not one of 1, 2, 3");
  EXPECT_EQ(*check_arguments(json::parse(R"(["title"])"), schema), "the arguments are an array, not a JSON object");
  EXPECT_EQ(*check_arguments(json::parse(R"({"title": 5, "priority": 1})"), schema),
            "\"title\" should be string but is a number");
}

// The seed: merged into the action, the arguments taught the model to write the whole action as
// them ({"enough": false, "tool": …, "arguments": {"id": "CHO-7", …}}); such output is unwrapped.
TEST(Arguments, AnAnswerShapedLikeTheActionIsUnwrappedAndItsKeysDropped) {
  json::value schema = json::parse(R"({"type": "object", "properties": {"id": {"type": "string"}, "state": {}}})");
  auto cleaned = clean_arguments(
      json::parse(R"({"enough": false, "tool": "linear.save_issue", "arguments": {"id": "CHO-7", "state": "Done"}})"),
      schema);
  EXPECT_EQ(json::value(cleaned), json::parse(R"({"id": "CHO-7", "state": "Done"})"));
  auto flat =
      clean_arguments(json::parse(R"({"id": "CHO-7", "action": "linear.save_issue", "reason": "asked"})"), schema);
  EXPECT_EQ(json::value(flat), json::parse(R"({"id": "CHO-7"})"));
  // A tool that declares one of those keys keeps it.
  json::value with_text = json::parse(R"({"type": "object", "properties": {"text": {"type": "string"}}})");
  EXPECT_EQ(json::value(clean_arguments(json::parse(R"({"text": "hello", "tool": "x"})"), with_text)),
            json::parse(R"({"text": "hello"})"));
  EXPECT_TRUE(clean_arguments(json::parse("[1]"), schema).empty());
}

}  // namespace
}  // namespace oppx::chat
