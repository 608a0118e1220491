// proto/elicitation: the form's rules, shared by the daemon (defaults, the check before an answer
// goes) and the front ends (the fields asked one by one, what the user typed).
#include "proto/elicitation.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace oppx::proto {
namespace {

namespace json = boost::json;

json::object schema() {
  return json::parse(R"({"type":"object","required":["name","size"],"properties":{
    "name":{"type":"string","title":"Name","minLength":2},
    "size":{"type":"integer","minimum":1,"maximum":10,"default":3},
    "ratio":{"type":"number","default":0.5},
    "ok":{"type":"boolean","default":true},
    "color":{"type":"string","enum":["r","g"],"enumNames":["Red","Green"]},
    "hero":{"type":"string","oneOf":[{"const":"h1","title":"Superman"},{"const":"h2","title":"Batman"}]},
    "tags":{"type":"array","minItems":1,"items":{"type":"string","enum":["a","b","c"]}},
    "mail":{"type":"string","format":"email"},
    "nested":{"type":"object"}}})")
      .as_object();
}

TEST(Elicitation, ReadsTheFieldsOfAFormInOrderLeavingOutKindsMcpDoesNotDefine) {
  auto fields = form_fields(schema());
  ASSERT_EQ(fields.size(), 8u);  // "nested" is no form field
  EXPECT_EQ(fields[0].name, "name");
  EXPECT_TRUE(fields[0].required);
  EXPECT_EQ(fields[1].type, "integer");
  EXPECT_EQ(*fields[1].default_value, json::value(3));
  EXPECT_EQ(fields[4].type, "choice");
  EXPECT_EQ(fields[4].choice_titles, (std::vector<std::string>{"Red", "Green"}));
  EXPECT_EQ(fields[5].choices, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_EQ(fields[5].choice_titles, (std::vector<std::string>{"Superman", "Batman"}));
  EXPECT_EQ(fields[6].type, "choices");
}

TEST(Elicitation, DefaultsFillWhatIsLeftEmptyAndTheAnswerIsChecked) {
  json::object filled = with_defaults(schema(), json::object{{"name", "Ann"}, {"size", 7}});
  EXPECT_EQ(filled.at("size"), 7);  // given, kept
  EXPECT_EQ(filled.at("ratio"), 0.5);
  EXPECT_EQ(filled.at("ok"), true);
  EXPECT_EQ(form_problem(schema(), filled), "");
  EXPECT_EQ(form_problem(schema(), json::object{{"size", 2}}), "Name is required");
  EXPECT_EQ(form_problem(schema(), json::object{{"name", "A"}, {"size", 2}}), "Name: at least 2 characters please");
  EXPECT_EQ(form_problem(schema(), json::object{{"name", "Ann"}, {"size", 11}}), "size: at most 10 please");
  EXPECT_EQ(form_problem(schema(), json::object{{"name", "Ann"}, {"size", 2.5}}), "size: expected a whole number");
  EXPECT_EQ(form_problem(schema(), json::object{{"name", "Ann"}, {"size", 2}, {"color", "blue"}}),
            "color: not one of the choices");
  EXPECT_EQ(form_problem(schema(), json::object{{"name", "Ann"}, {"size", 2}, {"tags", json::array{}}}),
            "tags: choose at least 1");
  EXPECT_EQ(form_problem(schema(), json::object{{"name", "Ann"}, {"size", 2}, {"mail", "nope"}}),
            "mail: expected an email address");
}

TEST(Elicitation, WhatTheUserTypedBecomesTheFieldsValue) {
  auto fields = form_fields(schema());
  std::string error;
  EXPECT_EQ(*field_value(fields[1], " 4 ", error), json::value(4));
  EXPECT_FALSE(field_value(fields[1], "4.5", error));
  EXPECT_EQ(error, "expected a whole number");
  EXPECT_FALSE(field_value(fields[1], "", error));  // left empty: its default, later
  EXPECT_EQ(error, "");
  EXPECT_EQ(*field_value(fields[3], "No", error), json::value(false));
  EXPECT_EQ(*field_value(fields[4], "2", error), json::value("g"));        // by its number
  EXPECT_EQ(*field_value(fields[5], "Batman", error), json::value("h2"));  // by its title
  EXPECT_EQ(*field_value(fields[6], "1, c,1", error), (json::array{"a", "c"}));
  EXPECT_FALSE(field_value(fields[6], "1,z", error));
  EXPECT_EQ(error, "not one of the choices: z");
}

TEST(Elicitation, AClientThatCannotAskDeclinesOrAcceptsCompleteDefaults) {
  ElicitQuestion q{"c", "t", "form", "?", schema(), ""};
  EXPECT_EQ(unasked_answer(ElicitPolicy::kDecline, q).action, "decline");
  EXPECT_EQ(unasked_answer(ElicitPolicy::kAcceptDefaults, q).action, "decline");  // "name" has no default
  q.schema.at("properties").as_object().at("name").as_object()["default"] = "Ann";
  ElicitAnswer a = unasked_answer(ElicitPolicy::kAcceptDefaults, q);
  EXPECT_EQ(a.action, "accept");
  EXPECT_EQ(a.content.at("name"), "Ann");
  EXPECT_EQ(a.content.at("size"), 3);
  ElicitQuestion url{"c", "t", "url", "?", {}, "https://example.com/x"};
  EXPECT_EQ(unasked_answer(ElicitPolicy::kAcceptDefaults, url).action, "decline");
  EXPECT_EQ(json::value_from(url).as_object().at("url"), "https://example.com/x");
  EXPECT_FALSE(decode<ElicitAnswer>(json::parse(R"({"action":"maybe"})")));
}

}  // namespace
}  // namespace oppx::proto
