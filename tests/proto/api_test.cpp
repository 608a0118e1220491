// proto/mcp_api, proto/session_api and proto/browser_api: what a client encodes is what the daemon
// decodes and the other way round, results keep the documented keys (docs/protocol.md's examples,
// byte for byte), and a bad field is named, the first one only, with its path in nested objects.
#include "proto/browser_api.h"
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

template <class T>
std::string error_of(std::string_view text) {
  return error_of_params(text, std::type_identity<T>{});
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
      "params.rule: \"nodot\" is not a rule: rules are <connector>.<tool>, <connector>.*, run:<command prefix> or "
      "sandbox:network");
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

// mcp/changed for a connector that is gone: what docs/protocol.md shows, read by clients as an entry.
TEST(ProtoApi, ARemovedConnectorIsTheDocumentedNoticeAndReadsAsAnEntry) {
  EXPECT_EQ(json::value_from(ConnectorRemoved{"linear", ""}),
            json::parse(R"({"name":"linear","source":"user","state":"removed"})"));
  auto project = decode<ConnectorEntry>(json::value_from(ConnectorRemoved{"notes", "/src/app"}));
  ASSERT_TRUE(project) << project.error();
  EXPECT_EQ(project->name, "notes");
  EXPECT_EQ(project->state, "removed");
  EXPECT_EQ(project->root, "/src/app");
  EXPECT_TRUE(project->is_project());
}

TEST(ProtoApi, AnUnreadableReplyNamesTheFieldAndTheWayOut) {
  auto listed = decode<McpListResult>(json::parse(R"({"connectors":[{"name":"a","state":"running"},{}]})"));
  ASSERT_FALSE(listed);
  EXPECT_EQ(unreadable_reply(listed.error()),
            "the daemon's answer is not what this oppx reads (result.connectors[1].name: required): the daemon is "
            "likely from another build; run `oppx daemon restart`");
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

TEST(ProtoSessionApi, SessionOpenResultRoundTrip) {
  SessionOpenResult s{"4821-3-1", "/src/app/lib", "/src/app", "plan", true};
  json::value wire = json::value_from(s);
  EXPECT_EQ(json::serialize(wire),
            R"({"session":"4821-3-1","cwd":"/src/app/lib","project":"/src/app","mode":"plan","replaced":true})");
  auto back = decode<SessionOpenResult>(wire);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->session, "4821-3-1");
  EXPECT_EQ(back->project, "/src/app");
  EXPECT_EQ(back->mode, "plan");
  EXPECT_TRUE(back->replaced);
  EXPECT_EQ(error_of<SessionOpenResult>(R"({"cwd":"/src"})"), "result.session: required");
  EXPECT_EQ(error_of<SessionOpenResult>(R"({"session":"a","replaced":"no"})"), "result.replaced: expected boolean");
}

TEST(ProtoSessionApi, RuleResultIsTheDocumentedReply) {
  RuleResult r;
  r.project = "/home/ana/src/app";
  r.file = "/home/ana/.local/state/oppx/permissions.json";
  r.allow = {"linear.*"};
  r.rule = "linear.*";
  r.changed = true;
  EXPECT_EQ(json::serialize(json::value_from(r)),
            R"({"project":"/home/ana/src/app","file":"/home/ana/.local/state/oppx/permissions.json",)"
            R"("allow":["linear.*"],"deny":[],"rule":"linear.*","changed":true})");
  // A session allow: the session's list and `session` come along; a set-aside file its problem.
  r.session_allow = std::vector<std::string>{"fake.write"};
  r.session = true;
  r.problem = "moved aside";
  auto back = decode<RuleResult>(json::value_from(r));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->allow, std::vector<std::string>{"linear.*"});
  EXPECT_TRUE(back->deny.empty());
  ASSERT_TRUE(back->session_allow);
  EXPECT_EQ(*back->session_allow, std::vector<std::string>{"fake.write"});
  EXPECT_EQ(back->problem, "moved aside");
  EXPECT_EQ(back->rule, "linear.*");
  EXPECT_TRUE(back->changed);
  EXPECT_TRUE(back->session);
}

TEST(ProtoSessionApi, PermissionsListResultKeepsNoSessionApartFromAnEmptyOne) {
  PermissionsListResult l{"/src", "/state/permissions.json", {}, {"run:rm"}, std::nullopt, ""};
  EXPECT_EQ(json::serialize(json::value_from(l)),
            R"({"project":"/src","file":"/state/permissions.json","allow":[],"deny":["run:rm"]})");
  auto none = decode<PermissionsListResult>(json::value_from(l));
  ASSERT_TRUE(none) << none.error();
  EXPECT_FALSE(none->session_allow);
  l.session_allow.emplace();
  auto empty = decode<PermissionsListResult>(json::value_from(l));
  ASSERT_TRUE(empty) << empty.error();
  ASSERT_TRUE(empty->session_allow);
  EXPECT_TRUE(empty->session_allow->empty());
}

TEST(ProtoSessionApi, RuleResultsNameTheFailingField) {
  EXPECT_EQ(error_of<PermissionsListResult>(R"({"file":"/f"})"), "result.project: required");
  EXPECT_EQ(error_of<PermissionsListResult>(R"({"project":"/p","allow":["a.b",3]})"),
            "result.allow: expected an array of strings");
  EXPECT_EQ(error_of<PermissionsListResult>(R"({"project":"/p","session_allow":"a.b"})"),
            "result.session_allow: expected an array of strings");
  EXPECT_EQ(error_of<RuleResult>(R"({"project":"/p","rule":"a.b"})"), "result.changed: required");
  EXPECT_EQ(error_of<RuleResult>(R"({"project":"/p","changed":true})"), "result.rule: required");
  EXPECT_EQ(error_of<RuleResult>(R"([])"), "result: expected object");
  EXPECT_EQ(error_of<RuleResult>(R"({"project":"/p","rule":"a.b","changed":false,"later":{}})"), "decoded");
}

TEST(ProtoSessionApi, JudgeResultIsTheDocumentedReply) {
  JudgeResult tool{"allow", "allowed by the rule linear.*", "/home/ana/src/app", "linear.*", false};
  EXPECT_EQ(json::serialize(json::value_from(tool)),
            R"({"decision":"allow","why":"allowed by the rule linear.*","project":"/home/ana/src/app",)"
            R"("rule":"linear.*","read_only":false})");
  // A command: no rule decided it, and read_only is left out.
  JudgeResult command{"ask", "not allowed by any rule", "/src", "", std::nullopt};
  EXPECT_EQ(json::serialize(json::value_from(command)),
            R"({"decision":"ask","why":"not allowed by any rule","project":"/src"})");
  auto back = decode<JudgeResult>(json::value_from(tool));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->decision, "allow");
  EXPECT_EQ(back->rule, "linear.*");
  ASSERT_TRUE(back->read_only);
  EXPECT_FALSE(*back->read_only);
  EXPECT_FALSE(decode<JudgeResult>(json::value_from(command))->read_only);
  EXPECT_EQ(error_of<JudgeResult>(R"({"why":"x"})"), "result.decision: required");
  EXPECT_EQ(error_of<JudgeResult>(R"({"decision":"maybe"})"), "result.decision: expected allow, ask or deny");
  EXPECT_EQ(error_of<JudgeResult>(R"({"decision":"deny","read_only":1})"), "result.read_only: expected boolean");
}

BrowserProblem no_browser() {
  return {"no_browser", "no Google Chrome or Chromium was found", {"install Chromium", "or let Playwright download"}};
}

TEST(ProtoBrowserApi, StartResultIsTheDocumentedReply) {
  BrowserStartResult r;
  r.state = "running";
  r.folder = "/home/ana/.cache/oppx/browser/48213-4-1";
  r.tools = 21;
  r.pid = 48377;
  r.log = "/home/ana/.cache/oppx/browser/48213-4-1/server.log";
  r.session_allow = "playwright.*";
  json::value wire = json::value_from(r);
  EXPECT_EQ(json::serialize(wire),
            R"({"state":"running","folder":"/home/ana/.cache/oppx/browser/48213-4-1","tools":21,"pid":48377,)"
            R"("log":"/home/ana/.cache/oppx/browser/48213-4-1/server.log","session_allow":"playwright.*"})");
  auto back = decode<BrowserStartResult>(wire);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->state, "running");
  EXPECT_EQ(back->tools, 21);
  ASSERT_TRUE(back->pid);
  EXPECT_EQ(*back->pid, 48377);
  EXPECT_EQ(back->session_allow, "playwright.*");
  EXPECT_FALSE(back->failed);
}

TEST(ProtoBrowserApi, SessionStatusAfterAFailedStartCarriesTheProblem) {
  SessionBrowserStatus s;
  s.state = "failed";
  s.folder = "/cache/browser/1-2-3";
  s.failed = no_browser();
  json::value wire = json::value_from(s);
  EXPECT_EQ(
      json::serialize(wire),
      R"({"state":"failed","folder":"/cache/browser/1-2-3","tools":0,"reason_kind":"no_browser",)"
      R"("reason":"no Google Chrome or Chromium was found","steps":["install Chromium","or let Playwright download"]})");
  auto back = decode<SessionBrowserStatus>(wire);
  ASSERT_TRUE(back) << back.error();
  ASSERT_TRUE(back->failed);
  EXPECT_EQ(back->failed->kind, "no_browser");
  EXPECT_EQ(back->failed->steps.size(), 2u);
  EXPECT_TRUE(back->reason.empty());
  // A server that stopped on its own: its reason, no problem.
  s.failed.reset();
  s.pid = 7;
  s.reason = "exited with status 1";
  back = decode<SessionBrowserStatus>(json::value_from(s));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->reason, "exited with status 1");
  EXPECT_FALSE(back->failed);
  // A session that never had a browser: its state alone.
  EXPECT_EQ(json::serialize(json::value_from(SessionBrowserStatus{})), R"({"state":"off"})");
}

TEST(ProtoBrowserApi, StatusResultRoundTrip) {
  BrowserStatusResult r;
  r.version = "0.0.83";
  r.engine = "/data/oppx/playwright";
  r.sandbox = "on";
  r.browser.problem = no_browser();
  r.spare = {"running", 99, "/cache/browser/spare-1.log", 600000};
  json::value wire = json::value_from(r);
  const json::object& o = wire.as_object();
  EXPECT_TRUE(o.at("installed").is_null());
  EXPECT_TRUE(o.at("session").is_null());
  EXPECT_EQ(o.at("browser").at("reason_kind"), "no_browser");
  EXPECT_EQ(json::serialize(o.at("spare")),
            R"({"state":"running","pid":99,"log":"/cache/browser/spare-1.log","idle_ms":600000})");
  auto back = decode<BrowserStatusResult>(wire);
  ASSERT_TRUE(back) << back.error();
  EXPECT_FALSE(back->installed);
  EXPECT_FALSE(back->session);
  ASSERT_TRUE(back->browser.problem);
  EXPECT_EQ(back->browser.problem->message, "no Google Chrome or Chromium was found");
  EXPECT_EQ(back->spare.idle_ms, 600000);

  r.installed = "0.0.83";
  r.browser = {"chromium", "/usr/bin/chromium", std::nullopt};
  r.session = SessionBrowserStatus{};
  r.spare = {};
  wire = json::value_from(r);
  EXPECT_EQ(json::serialize(wire.at("browser")), R"({"kind":"chromium","path":"/usr/bin/chromium"})");
  EXPECT_EQ(json::serialize(wire.at("spare")), R"({"state":"off"})");
  back = decode<BrowserStatusResult>(wire);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->installed.value_or(""), "0.0.83");
  EXPECT_EQ(back->browser.path, "/usr/bin/chromium");
  EXPECT_FALSE(back->browser.problem);
  ASSERT_TRUE(back->session);
  EXPECT_EQ(back->session->state, "off");
  EXPECT_EQ(back->spare.state, "off");
}

TEST(ProtoBrowserApi, DecodersNameTheFailingFieldInsideNestedObjects) {
  const std::string found = R"("browser":{"kind":"chrome","path":"/opt/chrome"})";
  EXPECT_EQ(error_of<BrowserStatusResult>(R"({"installed":3})"), "result.installed: expected string");
  EXPECT_EQ(error_of<BrowserStatusResult>(R"({"browser":{"kind":"chrome"}})"), "result.browser.path: required");
  EXPECT_EQ(error_of<BrowserStatusResult>(R"({"browser":{"reason_kind":"no_browser","steps":"x"}})"),
            "result.browser.steps: expected an array of strings");
  EXPECT_EQ(error_of<BrowserStatusResult>("{" + found + R"(,"session":{"state":"running","pid":"7"}})"),
            "result.session.pid: expected integer");
  EXPECT_EQ(error_of<BrowserStatusResult>("{" + found + R"(,"session":[]})"), "result.session: expected object");
  EXPECT_EQ(error_of<BrowserStatusResult>("{" + found + R"(,"spare":{"state":"running","idle_ms":true}})"),
            "result.spare.idle_ms: expected integer");
  EXPECT_EQ(error_of<BrowserStatusResult>("{" + found + "}"), "decoded");
  EXPECT_EQ(error_of<BrowserStartResult>(R"({"tools":21})"), "result.state: required");
  EXPECT_EQ(error_of<BrowserStopResult>(R"({"state":"off","was_running":"yes"})"),
            "result.was_running: expected boolean");
  EXPECT_EQ(error_of<BrowserProblem>(R"({"reason":"x"})"), "data.reason_kind: required");
}

TEST(ProtoBrowserApi, StopResultRoundTrip) {
  json::value wire = json::value_from(BrowserStopResult{"off", true});
  EXPECT_EQ(json::serialize(wire), R"({"state":"off","was_running":true})");
  auto back = decode<BrowserStopResult>(wire);
  ASSERT_TRUE(back) << back.error();
  EXPECT_TRUE(back->was_running);
}

}  // namespace
}  // namespace oppx::proto
