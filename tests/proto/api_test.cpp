// proto/mcp_api and proto/session_api: what a client encodes is what the daemon decodes, and a
// bad field is named, the first one only.
#include "proto/daemon_api.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"
#include "proto/session_api.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace oppx::proto {
namespace {

namespace json = boost::json;

template <class T>
Decoded<T> round_trip(const T& v) {
  return decode<T>(json::value_from(v));
}

std::string error_of_params(std::string_view text, auto tag) {
  auto r = decode<typename decltype(tag)::type>(json::parse(text));
  return r ? std::string("decoded") : r.error();
}

TEST(ProtoApi, ToolsCallParamsRoundTrip) {
  ToolsCallParams p;
  p.connector = "everything";
  p.tool = "echo";
  p.arguments = json::object{{"message", "hi"}};
  p.timeout_ms = 5000;
  p.progress_token = "p1";
  p.cwd = "/src/app";
  auto back = round_trip(p);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->connector, "everything");
  EXPECT_EQ(back->tool, "echo");
  EXPECT_EQ(back->arguments, p.arguments);
  EXPECT_EQ(back->timeout_ms, 5000);
  EXPECT_EQ(back->progress_token, json::value("p1"));
  EXPECT_EQ(back->cwd, "/src/app");

  auto defaults = decode<ToolsCallParams>(json::parse(R"({"connector":"a","tool":"b"})"));
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->arguments, json::value(json::object{}));
  EXPECT_EQ(defaults->timeout_ms, kCallTimeoutMs);
  EXPECT_TRUE(defaults->progress_token.is_null());
}

TEST(ProtoApi, ToolsCallParamsNameTheFirstFailingField) {
  using T = std::type_identity<ToolsCallParams>;
  EXPECT_EQ(error_of_params(R"({"connector":"a"})", T{}), "params.tool: required");
  EXPECT_EQ(error_of_params(R"({"connector":"a","tool":"b","arguments":[1]})", T{}),
            "params.arguments: expected object");
  EXPECT_EQ(error_of_params(R"({"connector":"a","tool":"b","timeout_ms":0})", T{}),
            "params.timeout_ms: expected 1 to 3600000");
  EXPECT_EQ(error_of_params(R"({"connector":"a","tool":"b","progress_token":true})", T{}),
            "params.progress_token: expected a string or an integer");
  EXPECT_EQ(error_of_params(R"({"connector":"a","tool":"b","cwd":"src"})", T{}),
            "params.cwd: expected an absolute path");
  EXPECT_EQ(error_of_params(R"({"connector":1,"tool":2})", T{}), "params.connector: expected string");
}

TEST(ProtoApi, McpParamsRoundTrip) {
  McpAddParams add;
  add.name = "linear";
  add.definition = json::object{{"type", "http"}, {"url", "https://example.test/mcp"}};
  add.project = true;
  add.force = true;
  auto a = round_trip(add);
  ASSERT_TRUE(a) << a.error();
  EXPECT_EQ(a->definition, add.definition);
  EXPECT_TRUE(a->project);
  EXPECT_TRUE(a->force);

  ConsentParams consent;
  consent.name = "notes";
  consent.sha256 = "5116";
  consent.files = StringMap{{"server.js", "abcd"}};
  auto c = round_trip(consent);
  ASSERT_TRUE(c) << c.error();
  ASSERT_TRUE(c->files);
  EXPECT_EQ(c->files->at("server.js"), "abcd");
  auto no_files = decode<ConsentParams>(json::parse(R"({"name":"notes"})"));
  ASSERT_TRUE(no_files);
  EXPECT_FALSE(no_files->files);  // absent is not "no files shown"

  McpReconnectParams all;
  EXPECT_EQ(json::value_from(all), json::value(json::object{}));
  EXPECT_TRUE(round_trip(McpListParams{true, "/src"})->wait);
  EXPECT_TRUE(round_trip(McpGetParams{"x", "", true})->show_values);
}

TEST(ProtoApi, McpParamsNameTheFailingField) {
  EXPECT_EQ(error_of_params(R"({"name":"x"})", std::type_identity<McpAddParams>{}),
            "params.definition: expected object");
  EXPECT_EQ(error_of_params(R"({"name":"x","files":{"a":1}})", std::type_identity<ConsentParams>{}),
            "params.files.a: expected string");
  EXPECT_EQ(error_of_params(R"({})", std::type_identity<McpToolsParams>{}), "params.name: required");
  EXPECT_EQ(error_of_params(R"({"wait":"yes"})", std::type_identity<McpListParams>{}), "params.wait: expected boolean");
  EXPECT_EQ(error_of_params(R"([1])", std::type_identity<McpRemoveParams>{}), "params: expected object");
  EXPECT_EQ(error_of_params(R"("x")", std::type_identity<NoParams>{}), "params: expected object");
  EXPECT_EQ(error_of_params(R"({"anything":1})", std::type_identity<NoParams>{}), "decoded");
}

TEST(ProtoApi, SessionAndRuleParams) {
  auto rule = round_trip(RuleParams{"everything.echo", "/src", true});
  ASSERT_TRUE(rule) << rule.error();
  EXPECT_TRUE(rule->session);
  EXPECT_EQ(
      error_of_params(R"({"rule":"nodot"})", std::type_identity<RuleParams>{}),
      "params.rule: \"nodot\" is not a rule: rules are <connector>.<tool>, <connector>.* or run:<command prefix>");
  EXPECT_EQ(error_of_params(R"({"rule":"run:  "})", std::type_identity<RuleParams>{}).substr(0, 41),
            "params.rule: \"run:\" needs the start of a ");
  EXPECT_EQ(error_of_params(R"({"cwd":"/src"})", std::type_identity<SessionOpenParams>{}), "decoded");
  EXPECT_EQ(round_trip(SessionOpenParams{"/src", "plan"})->mode, "plan");
  EXPECT_EQ(error_of_params(R"({"cwd":"/src","mode":"yolo"})", std::type_identity<SessionOpenParams>{}),
            "params.mode: expected chat, print, plan or editor");
  EXPECT_EQ(error_of_params(R"({"cwd":"src"})", std::type_identity<SessionOpenParams>{}),
            "params.cwd: expected an absolute path");
  EXPECT_EQ(error_of_params(R"({"connector":"a"})", std::type_identity<JudgeParams>{}),
            "params: expected either connector and tool, or command");
  auto judge = round_trip(JudgeParams{"", "", "git status", "/src"});
  ASSERT_TRUE(judge);
  EXPECT_EQ(judge->command, "git status");
}

TEST(ProtoApi, ConnectorEntriesRoundTripWithTheirOptionalParts) {
  ConnectorEntry repo;
  repo.name = "notes";
  repo.source = "project";
  repo.file = "/src/app/.mcp.json";
  repo.type = "stdio";
  repo.state = "waiting";
  repo.log = "/state/mcp-notes.log";
  repo.command = "node";
  repo.args = {"server.js", "--token", "****"};
  repo.env = {{"KEY", "****"}};
  repo.reads = {"HOME"};
  repo.root = "/src/app";
  repo.sha256 = "5116";
  repo.files = {{"server.js", "abcd"}};
  repo.consent = "none";
  repo.approve = "oppx mcp approve notes";
  repo.reason = "it waits for your approval";
  repo.reason_kind = "waiting";
  repo.steps = {"Run `oppx mcp approve notes`."};
  ConnectorEntry user;
  user.name = "notes";
  user.source = "user";
  user.file = "/config/mcp.json";
  user.type = "http";
  user.state = "running";
  user.url = "https://example.test/mcp";
  user.headers = {{"Authorization", "Bearer ****"}};
  user.tool_count = 3;
  user.hides = std::make_shared<const ConnectorEntry>(repo);

  auto back = round_trip(user);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->url, user.url);
  EXPECT_EQ(back->headers, user.headers);
  EXPECT_EQ(back->tool_count, 3);
  EXPECT_TRUE(back->command.empty());
  ASSERT_TRUE(back->hides);
  EXPECT_EQ(back->hides->args, repo.args);
  EXPECT_EQ(back->hides->env, repo.env);
  ASSERT_EQ(back->hides->files.size(), 1u);
  EXPECT_EQ(back->hides->files[0].sha256, "abcd");
  EXPECT_EQ(back->hides->steps, repo.steps);
  EXPECT_EQ(back->hides->approve, repo.approve);
  EXPECT_TRUE(back->hides->is_project());

  // A user's connector has no repository fields on the wire, and "tools" is a count or a list.
  json::object wire = json::value_from(user).as_object();
  EXPECT_FALSE(wire.contains("root"));
  EXPECT_FALSE(wire.contains("consent"));
  EXPECT_EQ(wire.at("tools"), json::value(3));
  user.tools = json::array{json::object{{"name", "echo"}}};
  auto listed = round_trip(user);
  ASSERT_TRUE(listed && listed->tools);
  EXPECT_EQ(listed->tools->size(), 1u);
  EXPECT_EQ(listed->tool_count, 1);
}

TEST(ProtoApi, ListResultsNameANestedFailingField) {
  McpListResult l;
  l.config = "/config/mcp.json";
  l.warnings = {"mcp.json is readable by others"};
  l.project = ProjectConnectors{"/src/app", "/src/app/.mcp.json", "", {}};
  l.connectors.push_back(ConnectorEntry{.name = "a", .source = "user", .state = "running"});
  auto back = round_trip(l);
  ASSERT_TRUE(back) << back.error();
  ASSERT_TRUE(back->project);
  EXPECT_EQ(back->project->root, "/src/app");
  EXPECT_EQ(back->warnings, l.warnings);
  ASSERT_EQ(back->connectors.size(), 1u);

  auto bad = decode<McpListResult>(json::parse(R"({"connectors":[{"name":"a","state":"running"},{"state":1}]})"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "result.connectors[1].name: required");
  auto call = decode<ToolsCallResult>(json::parse(R"({"text":"Echo: hi","isError":true})"));
  ASSERT_TRUE(call);
  EXPECT_TRUE(call->is_error);
  EXPECT_TRUE(call->untrusted);
}

}  // namespace
}  // namespace oppx::proto
