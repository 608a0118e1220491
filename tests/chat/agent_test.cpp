// The agent loop as `oppx -p` runs it (and, for the answers only a chat can give, in-process):
// the scripted model server, the real daemon and a real stdio connector (agent_connector.js),
// whose tools are read-only or not, with an enum, optional arguments, none at all and a $ref.
#include "chat/agent.h"
#include "common/text.h"
#include "tests/support/agent_fixture.h"
#include "tests/support/model_steps.h"
#include "tests/support/scripted_front.h"
#include "tests/support/scripted_model.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <thread>

namespace oppx::test {
namespace {

namespace json = boost::json;

std::string system_of(const json::object& body) {
  return std::string(body.at("messages").as_array().at(0).at("content").as_string());
}
const json::value* response_schema(const json::object& body) {
  const json::value* rf = body.if_contains("response_format");
  return rf ? &rf->at("json_schema").at("schema") : nullptr;
}
json::array action_enum(const json::object& body) {
  return response_schema(body)->at("properties").at("action").at("enum").as_array();
}
std::string all_text(const json::object& body) { return json::serialize(body.at("messages")); }

struct AgentTurn : AgentFixture {
  std::vector<json::object> tool_calls() const {
    std::vector<json::object> out;
    std::istringstream in(read_file(calls));
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line).as_object());
    return out;
  }
};

TEST_F(AgentTurn, TheToolsAreInThePromptAndTheEnumNeverInTheToolsParameter) {
  serve({reply("Nothing to do.")});
  Result r = print({"say", "hello"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Nothing to do.\n");
  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 1u);
  const json::object& b = bodies[0];
  EXPECT_FALSE(b.contains("tools"));
  EXPECT_FALSE(b.contains("tool_choice"));
  EXPECT_EQ(b.at("stream"), true);
  EXPECT_EQ(b.at("model"), "m1");
  EXPECT_EQ(b.at("response_format").at("type"), "json_schema");
  EXPECT_EQ(b.at("response_format").at("json_schema").at("name"), "action");
  EXPECT_EQ(action_enum(b), json::parse(R"(["reply","read","grep","run","agentc.lookup","agentc.save_issue",
                                           "agentc.ping","agentc.fail","agentc.crash","agentc.hang"])"));
  std::string system = system_of(b);
  EXPECT_NE(system.find("\n- agentc.lookup: Looks up an issue by its id\n"), std::string::npos) << system;
  EXPECT_NE(system.find("\n- agentc.ping: Pings the service.\n"), std::string::npos) << system;
  EXPECT_EQ(b.at("messages").as_array().back().at("content"), "say hello");
  // The models list is asked once: the model and the context length both come from it.
  int lists = 0;
  for (const auto& req : model->requests()) lists += req.at("url") == "/v1/models";
  EXPECT_EQ(lists, 1);

  // The message may come on stdin.
  serve({reply("From stdin.")});
  Result piped = run({"sh", "-c", "printf 'what is here\\n' | " OPPX_BIN " -p"}, 60s);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, "From stdin.\n");
  EXPECT_EQ(model->completions().at(0).at("messages").as_array().back().at("content"), "what is here");
}

TEST_F(AgentTurn, TheArgumentsAreWrittenUnderTheToolsOwnSchemaAndKeptWithTheResult) {
  ASSERT_EQ(oppx({"permissions", "allow", "agentc.save_issue"}).exit_code, 0);
  json::object counted = json::parse(reply("Saved it.")).as_object();
  counted["usage"] = {{"prompt_tokens", 900}, {"completion_tokens", 12}, {"total_tokens", 912}};
  json::object first = json::parse(action("agentc.save_issue")).as_object();
  first["usage"] = {{"prompt_tokens", 800}, {"completion_tokens", 8}, {"total_tokens", 808}};
  serve({json::serialize(first), says(R"({"issue":{"title":"Blank login page","priority":2}})"),
         json::serialize(counted)});
  json::object out = print_json({"file", "the", "bug"}, 0);
  EXPECT_EQ(out.at("reply"), "Saved it.");
  EXPECT_EQ(out.at("usage"), json::parse(R"({"prompt_tokens":1700,"completion_tokens":20,"total_tokens":1720})"));
  ASSERT_EQ(out.at("actions").as_array().size(), 1u);
  const json::value& a = out.at("actions").as_array()[0];
  EXPECT_EQ(a.at("name"), "agentc.save_issue");
  EXPECT_EQ(a.at("status"), "ran");
  EXPECT_EQ(a.at("arguments"), json::parse(R"({"issue":{"title":"Blank login page","priority":2}})"));
  EXPECT_EQ(a.at("text"), "saved \"Blank login page\"");
  EXPECT_TRUE(out.at("duration_ms").is_int64());
  ASSERT_EQ(tool_calls().size(), 1u);

  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 3u);
  // The arguments request: the tool's schema, $schema dropped, the $ref inlined, format dropped.
  const json::object& args = bodies[1];
  EXPECT_EQ(args.at("response_format").at("json_schema").at("name"), "arguments");
  json::value schema = *response_schema(args);
  EXPECT_FALSE(schema.as_object().contains("$schema"));
  EXPECT_EQ(schema.at("properties").at("issue").at("properties").at("priority").at("enum"), json::parse("[1,2,3]"));
  EXPECT_FALSE(schema.at("properties").at("team").as_object().contains("format"));
  const json::array& m = args.at("messages").as_array();
  EXPECT_EQ(m.at(m.size() - 2).at("content"), "I'll call agentc.save_issue now.");
  std::string ask(m.back().at("content").as_string());
  EXPECT_NE(ask.find("Saves an issue. Creates it when it has no id, otherwise updates it."), std::string::npos);
  // The prefix stays byte-identical: the same system prompt in every request.
  for (const auto& b : bodies) EXPECT_EQ(system_of(b), system_of(bodies[0]));
  // The result goes back marked untrusted, with the arguments used; never merged into the action.
  std::string last = all_text(bodies[2]);
  EXPECT_NE(last.find("untrusted reference text"), std::string::npos);
  EXPECT_NE(last.find(R"(saved \"Blank login page\")"), std::string::npos) << last;
  EXPECT_EQ(last.find(R"(\"action\":\"agentc.save_issue\")"), std::string::npos) << last;
}

TEST_F(AgentTurn, ARefusedSchemaIsAskedAgainUnconstrainedAndTheAnswerCheckedHere) {
  // 400, then an unconstrained answer shaped like the whole action (unwrapped); 500, then one
  // with the required key missing and a good one; an error inside the stream, then a good one.
  serve(
      {action("agentc.lookup"),
       json::serialize(json::object{{"status", 400}, {"body", {{"error", "Grammar error: Unknown format"}}}}),
       says(R"({"action":"agentc.lookup","arguments":{"id":"CHO-7"}})"), action("agentc.lookup"),
       json::serialize(json::object{{"status", 500}, {"body", {{"error", "invalid JSON schema in format"}}}}),
       says(R"({"detail":"full"})"), says(R"(Here: {"id":"CHO-8","detail":"full"})"), action("agentc.lookup"),
       json::serialize(json::object{{"deltas", json::array{"{"}}, {"error_event", {{"message", "grammar rejected"}}}}),
       says(R"({"id":"CHO-9"})"), reply("Three looked up.")});
  json::object out = print_json({"look", "them", "up"}, 0);
  const json::array& actions = out.at("actions").as_array();
  ASSERT_EQ(actions.size(), 3u) << json::serialize(out);
  EXPECT_EQ(actions[0].at("arguments"), json::parse(R"({"id":"CHO-7"})"));
  EXPECT_EQ(actions[1].at("arguments"), json::parse(R"({"id":"CHO-8","detail":"full"})"));
  EXPECT_EQ(actions[2].at("arguments"), json::parse(R"({"id":"CHO-9"})"));
  for (const auto& a : actions) EXPECT_EQ(a.at("status"), "ran");
  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 11u);
  for (int unconstrained : {2, 5, 6, 9}) EXPECT_FALSE(bodies[unconstrained].contains("response_format"));
  // The second unconstrained request says what was wrong with the first answer.
  EXPECT_NE(all_text(bodies[6]).find("the required key \\\"id\\\" is missing"), std::string::npos)
      << all_text(bodies[6]);
}

TEST_F(AgentTurn, TwoUnusableAnswersMakeAFailedCallTheModelIsToldAbout) {
  serve({action("agentc.lookup"), json::serialize(json::object{{"status", 400}, {"body", {{"error", "no"}}}}),
         says("not json at all"), says(R"({"detail":"wrong"})"), reply("I could not look it up.")});
  json::object out = print_json({"look", "it", "up"}, 0);
  const json::array& actions = out.at("actions").as_array();
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].at("status"), "failed");
  EXPECT_NE(std::string(actions[0].at("text").as_string()).find("did not write usable arguments"), std::string::npos);
  EXPECT_TRUE(tool_calls().empty());
  EXPECT_NE(all_text(model->completions().back()).find("did not write usable arguments"), std::string::npos);
}

TEST_F(AgentTurn, PrintModeDeclinesWhatItWouldAskAndSaysSoInItsExitStatus) {
  serve({action("agentc.ping"), reply("I could not ping it.")});
  Result r = print({"ping", "the", "service"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  EXPECT_EQ(r.out, "I could not ping it.\n");
  EXPECT_NE(r.err.find("agentc.ping not run: it needs your permission"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("oppx permissions allow agentc.ping"), std::string::npos) << r.err;
  EXPECT_TRUE(tool_calls().empty());
  // The model was told, and so is a script reading --json.
  EXPECT_NE(all_text(model->completions().back()).find("agentc.ping was not run"), std::string::npos);
  serve({action("agentc.ping"), reply("Declined.")});
  json::object out = print_json({"ping"}, 6);
  EXPECT_EQ(out.at("actions").at(0).at("status"), "declined");
  // A rule lets the next run through.
  ASSERT_EQ(oppx({"permissions", "allow", "agentc.*"}).exit_code, 0);
  serve({action("agentc.ping"), reply("Pong.")});
  EXPECT_EQ(print_json({"ping"}, 0).at("actions").at(0).at("status"), "ran");
  EXPECT_EQ(tool_calls().size(), 1u);
}

TEST_F(AgentTurn, ADenyRuleWinsOverReadOnly) {
  ASSERT_EQ(oppx({"permissions", "deny", "agentc.lookup"}).exit_code, 0);
  ASSERT_EQ(oppx({"permissions", "deny", "agentc.fail"}).exit_code, 0);
  // The model names it anyway (a server that does not enforce the schema).
  serve({action("agentc.lookup"), reply("Not allowed.")});
  json::object out = print_json({"look", "up", "CHO-7"}, 6);
  // Denied tools are not offered: the model is only told their names.
  json::object first = model->completions().at(0);
  EXPECT_EQ(
      action_enum(first),
      json::parse(R"(["reply","read","grep","run","agentc.save_issue","agentc.ping","agentc.crash","agentc.hang"])"));
  std::string system = system_of(first);
  EXPECT_EQ(system.find("- agentc.lookup:"), std::string::npos) << system;
  EXPECT_NE(system.find("Denied by the user's rules, so not offered (say so if the user asks for them): agentc.lookup, "
                        "agentc.fail.\n"),
            std::string::npos)
      << system;
  const json::value& a = out.at("actions").at(0);
  EXPECT_EQ(a.at("status"), "declined");
  EXPECT_NE(std::string(a.at("text").as_string()).find("denied by the rule agentc.lookup"), std::string::npos);
  EXPECT_TRUE(tool_calls().empty());
  EXPECT_EQ(model->completions().size(), 2u) << "no arguments are asked for a denied tool";
}

TEST_F(AgentTurn, PlanModeOffersOnlyWhatReads) {
  serve({action("run", R"("command":"touch x")"), reply("Here is the plan.")});
  json::object out = print_json({"--plan", "plan", "the", "fix"}, 0);
  auto bodies = model->completions();
  EXPECT_EQ(action_enum(bodies[0]),
            json::parse(R"(["reply","read","grep","agentc.lookup","agentc.fail","agentc.hang"])"));
  EXPECT_NE(system_of(bodies[0]).find("plan mode"), std::string::npos);
  EXPECT_EQ(system_of(bodies[0]).find("agentc.ping"), std::string::npos);
  EXPECT_TRUE(out.at("actions").as_array().empty()) << "run is not an action of plan mode";
  struct stat st {};
  EXPECT_NE(::stat((repo.root() + "/x").c_str(), &st), 0);
}

TEST_F(AgentTurn, ARepeatIsNotRunAndAFailedCallIsRefusedWithItsError) {
  serve({action("agentc.lookup"), says(R"({"id":"CHO-7"})"), action("agentc.lookup"), says(R"({"id":"CHO-7"})"),
         action("agentc.fail"), says(R"({"x":"1"})"), action("agentc.fail"), says(R"({"x":"1"})"), reply("Done.")});
  json::object out = print_json({"look", "twice"}, 0);
  const json::array& a = out.at("actions").as_array();
  ASSERT_EQ(a.size(), 4u) << json::serialize(out);
  EXPECT_EQ(a[0].at("status"), "ran");
  EXPECT_EQ(a[1].at("status"), "repeat");
  EXPECT_EQ(a[2].at("status"), "failed");
  EXPECT_EQ(a[2].at("text"), "the x field is wrong: 1");
  EXPECT_EQ(a[3].at("status"), "refused");
  EXPECT_NE(std::string(a[3].at("text").as_string()).find("the x field is wrong: 1"), std::string::npos);
  EXPECT_EQ(tool_calls().size(), 2u) << read_file(calls);
}

TEST_F(AgentTurn, AConnectorDownForGoodMidTurnIsNoticedAndNeverCalledAgain) {
  ASSERT_EQ(oppx({"permissions", "allow", "agentc.*"}).exit_code, 0);
  serve({action("agentc.crash"), reply("The crash call failed."), reply("unused")});
  json::object out = print_json({"crash", "it"}, 7);
  EXPECT_EQ(out.at("connectors_down"), json::parse(R"(["agentc"])"));
  const json::value& a = out.at("actions").at(0);
  EXPECT_EQ(a.at("status"), "down");
  std::string reply_text(out.at("reply").as_string());
  EXPECT_NE(reply_text.find("The crash call failed."), std::string::npos);
  EXPECT_NE(lower(reply_text).find("once it is back, ask me to continue"), std::string::npos) << reply_text;
  EXPECT_EQ(tool_calls().size(), 1u);
  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 2u);
  // Its tools left the action list and the prompt; the model is told not to retry.
  for (const auto& n : action_enum(bodies[1]))
    EXPECT_EQ(std::string(n.as_string()).rfind("agentc.", 0), std::string::npos);
  EXPECT_EQ(system_of(bodies[1]).find("agentc."), std::string::npos);
  EXPECT_NE(all_text(bodies[1]).find("Do not retry it or work around it"), std::string::npos);

  // On stderr: the notice with numbered steps at once, and that the next request is uncached.
  ::unlink((calls + ".broken").c_str());
  ASSERT_EQ(oppx({"mcp", "reconnect", "agentc"}).exit_code, 0);
  serve({action("agentc.crash"), reply("It stopped.")});
  Result r = print({"crash", "again"});
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_NE(r.err.find("oppx: agentc is down: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\n  1. "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the next request is not served from the model server's prefix cache"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("Once it is back, ask me to continue."), std::string::npos) << r.out;
}

TEST_F(AgentTurn, ARepositoryConnectorWaitingForConsentIsNotOfferedAndSaidOnStderr) {
  std::ofstream(repo.root() + "/.mcp.json") << R"({"mcpServers":{"notes":{"command":"node","args":[")"
                                            << OPPX_TEST_SUPPORT << R"(/agent_connector.js","notes-calls.jsonl"]}}})";
  serve({reply("ok")});
  Result r = print({"hi"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("notes (this repository's connector) waits for your consent and is not offered: run `oppx mcp "
                       "approve notes`"),
            std::string::npos)
      << r.err;
  for (const auto& n : action_enum(model->completions()[0]))
    EXPECT_EQ(std::string(n.as_string()).rfind("notes.", 0), std::string::npos);
}

TEST_F(AgentTurn, ATurnStopsAtItsBoundOfStepsAndSaysSo) {
  std::ofstream(repo.root() + "/a.txt") << "alpha\n";
  std::vector<std::string> steps;
  for (int i = 0; i < 24; ++i) steps.push_back(action("grep", R"("pattern":"alpha)" + std::to_string(i) + "\""));
  steps.push_back(reply("I ran out of steps; the search is not finished."));
  serve(steps);
  json::object out = print_json({"search", "forever"}, 7);
  EXPECT_EQ(out.at("actions").as_array().size(), 24u);
  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 25u);
  EXPECT_EQ(action_enum(bodies[24]), json::parse(R"(["reply"])"));
  EXPECT_NE(all_text(bodies[24]).find("the most a turn may take"), std::string::npos);
  EXPECT_EQ(out.at("reply"), "I ran out of steps; the search is not finished.");
}

TEST_F(AgentTurn, TheOldestResultsAreShortenedBeforeTheContextOverflows) {
  std::string big(9000, 'x');
  for (const char* f : {"one.txt", "two.txt", "three.txt"}) std::ofstream(repo.root() + "/" + f) << big;
  serve({action("read", R"("path":"one.txt")"), action("read", R"("path":"two.txt")"),
         action("read", R"("path":"three.txt")"), reply("Read them.")},
        8192);
  Result r = print({"read", "the", "files"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the oldest tool results were shortened"), std::string::npos) << r.err;
  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 4u);
  for (const auto& b : bodies) EXPECT_LT(json::serialize(b.at("messages")).size() / 4, 8192u);
  std::string last = all_text(bodies[3]);
  EXPECT_NE(last.find("shortened from"), std::string::npos);
  EXPECT_NE(last.find(std::string(8000, 'x')), std::string::npos) << "the newest result stays whole";
}

TEST_F(AgentTurn, MinusCContinuesTheLastConversationOfThisFolder) {
  serve({reply("The first answer.")});
  ASSERT_EQ(print({"first", "question"}).exit_code, 0);
  serve({reply("The second answer.")});
  Result r = print({"-c", "second", "question"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string sent = all_text(model->completions()[0]);
  EXPECT_NE(sent.find("first question"), std::string::npos);
  EXPECT_NE(sent.find("The first answer."), std::string::npos);
  // Kept in user state, private.
  std::string dir = home.root() + "/state/oppx/conversations";
  Result ls = run({"sh", "-c", "stat -c '%a %n' " + dir + "/*/*.json"});
  EXPECT_NE(ls.out.find("600 "), std::string::npos) << ls.out;
  // A new conversation without -c.
  serve({reply("Fresh.")});
  ASSERT_EQ(print({"third"}).exit_code, 0);
  EXPECT_EQ(all_text(model->completions()[0]).find("first question"), std::string::npos);
}

TEST_F(AgentTurn, AModelsEscapeSequencesNeverReachTheTerminal) {
  std::string evil = "Done.\x1b]0;PWNED\x07\x1b[2J\u202e";
  serve({reply(evil), reply(evil)});
  Result r = print({"hi"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Done."), std::string::npos);
  json::object out = print_json({"hi"}, 0);
  EXPECT_EQ(out.at("reply"), json::value(evil)) << "--json keeps the text, as JSON escapes";
}

TEST_F(AgentTurn, AHeavyToolListIsWarnedAboutAtStartOnce) {
  serve({reply("ok")}, 32768);
  Result light = print({"hi"});
  ASSERT_EQ(light.exit_code, 0) << light.err;
  EXPECT_EQ(light.err.find("HEAVY"), std::string::npos);
  EXPECT_EQ(light.err.find("a tenth or more"), std::string::npos) << light.err;
  // Six tools of about 8 tokens each are more than a tenth of a 300-token window.
  serve({reply("ok")}, 300);
  Result heavy = print({"hi"});
  ASSERT_EQ(heavy.exit_code, 0) << heavy.err;
  std::string warning = "warning: the tool list takes a tenth or more of the server's model's context window";
  auto at = heavy.err.find(warning);
  ASSERT_NE(at, std::string::npos) << heavy.err;
  EXPECT_EQ(heavy.err.find(warning, at + 1), std::string::npos) << "once";
  EXPECT_NE(heavy.err.find("The connectors' tool lists take about"), std::string::npos) << heavy.err;
}

TEST_F(AgentTurn, AModelServerThatFailsGivesItsOwnExitStatusAndWhatToDo) {
  ::setenv("OPPX_SERVER", "http://127.0.0.1:9/v1", 1);
  Result r = print({"hi"});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find("  1. "), std::string::npos) << r.err;
  ::unsetenv("OPPX_SERVER");
  Result none = print({"hi"});
  EXPECT_EQ(none.exit_code, 5) << none.err;
  EXPECT_NE(none.err.find("no model server is configured"), std::string::npos) << none.err;
}

// The answers only a front end that can ask gives (the terminal chat's keys).

TEST_F(AgentTurn, AnswersAskedInAChatAreHonouredAndAlwaysRulesLastIntoTheNextRun) {
  serve({action("agentc.ping"), action("agentc.save_issue"), says(R"({"issue":{"title":"T"}})"),
         action("run", R"("command":"echo hi")"), action("agentc.ping"), reply("Done."), action("agentc.ping"),
         reply("Done again.")});
  auto client = hello_client(home);
  ASSERT_TRUE(client);
  chat::DaemonTools daemon(*client, repo.root());
  ASSERT_EQ(daemon.open_session("chat"), "");
  chat::ModelConfig mc;
  mc.server = model->url();
  mc.model = "m1";
  chat::ModelClient mclient(mc);
  ScriptedFront front;
  front.answers = {{chat::Answer::kNo, ""},
                   {chat::Answer::kText, "file it in the web form instead"},
                   {chat::Answer::kYes, ""},
                   {chat::Answer::kAlwaysConnector, ""},
                   {chat::Answer::kAlwaysTool, ""}};
  chat::Agent agent(mclient, daemon, front, chat::AgentOptions{"chat"});
  ASSERT_EQ(agent.start(), "");
  chat::TurnResult t = agent.turn("do things");
  ASSERT_FALSE(t.error) << t.error->message;
  ASSERT_EQ(t.actions.size(), 4u);
  EXPECT_EQ(t.actions[0].status, "declined");  // N
  EXPECT_EQ(t.actions[1].status, "declined");  // text
  EXPECT_EQ(t.actions[1].arguments, json::parse(R"({"issue":{"title":"T"}})"));
  EXPECT_EQ(t.actions[2].status, "ran");  // y, for run
  EXPECT_EQ(t.actions[2].text, "hi\n");
  EXPECT_EQ(t.actions[3].status, "ran");  // c
  EXPECT_EQ(front.asked.at(1).action, "agentc.save_issue");
  EXPECT_EQ(front.asked.at(2).command, "echo hi");
  EXPECT_NE(all_text(model->completions()[4]).find("file it in the web form instead"), std::string::npos);
  // c wrote agentc.*: the next turn does not ask.
  chat::TurnResult again = agent.turn("once more");
  EXPECT_EQ(again.actions.at(0).status, "ran");
  EXPECT_EQ(front.asked.size(), 4u);
  json::object rules = json::parse(oppx({"permissions", "list", "--json"}).out).as_object();
  EXPECT_EQ(rules.at("allow"), json::parse(R"(["agentc.*"])"));
  // And `oppx -p` honours it.
  serve({action("agentc.ping"), reply("Pong.")});
  EXPECT_EQ(print_json({"ping"}, 0).at("actions").at(0).at("status"), "ran");
}

TEST_F(AgentTurn, AChangedToolListRebuildsThePromptOnceAndSaysTheNextRequestIsUncached) {
  serve({reply("ok")});
  auto client = hello_client(home);
  ASSERT_TRUE(client);
  chat::DaemonTools daemon(*client, repo.root());
  chat::ModelConfig mc;
  mc.server = model->url();
  mc.model = "m1";
  chat::ModelClient mclient(mc);
  ScriptedFront front;
  chat::Agent agent(mclient, daemon, front, chat::AgentOptions{"chat"});
  ASSERT_EQ(agent.start(), "");
  std::string before = agent.system_prompt();
  ASSERT_EQ(agent.refresh(), "");
  EXPECT_EQ(agent.system_prompt(), before) << "nothing changed: byte-identical";
  EXPECT_EQ(front.notices, "");
  Result added = oppx({"mcp", "add", "more", "--", "node", std::string(OPPX_TEST_SUPPORT) + "/agent_connector.js",
                       home.root() + "/more-calls.jsonl"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  ASSERT_EQ(agent.refresh(), "");
  EXPECT_NE(agent.system_prompt().find("\n- more.ping: Pings the service.\n"), std::string::npos);
  EXPECT_NE(front.notices.find("the next request is not served from the model server's prefix cache"),
            std::string::npos)
      << front.notices;
}

// Ctrl-C during a call cancels only that call ($/cancelRequest): the connector is told, and the
// connection and its session stay, with what the session allowed (and its browser, if any).
TEST_F(AgentTurn, ACancelledCallLeavesTheSessionAndItsAllowsInPlace) {
  serve({action("agentc.hang"), reply("After the cancel.")});
  auto client = hello_client(home);
  ASSERT_TRUE(client);
  chat::DaemonTools daemon(*client, repo.root());
  ASSERT_EQ(daemon.open_session("chat"), "");
  ASSERT_EQ(daemon.allow("agentc.ping", true), "");
  chat::ModelConfig mc;
  mc.server = model->url();
  mc.model = "m1";
  chat::ModelClient mclient(mc);
  ScriptedFront front;
  chat::Agent agent(mclient, daemon, front, chat::AgentOptions{"chat"});
  ASSERT_EQ(agent.start(), "");
  std::thread canceller([&] {
    when_file_changes(calls, [&] { return read_file(calls).find("\"hang\"") != std::string::npos; });
    agent.cancel();
  });
  chat::TurnResult t = agent.turn("wait for the service");
  canceller.join();
  EXPECT_TRUE(t.cancelled);
  EXPECT_TRUE(when_file_changes(calls, [&] { return read_file(calls).find("\"cancelled\"") != std::string::npos; }))
      << read_file(calls);
  // The same connection and session: the session's allow still holds, and the next turn runs.
  chat::ToolInfo ping{"agentc", "ping"};
  EXPECT_EQ(daemon.judge_tool(ping).decision, "allow");
  chat::TurnResult next = agent.turn("and now?");
  ASSERT_FALSE(next.error) << next.error->message;
  EXPECT_EQ(next.reply, "After the cancel.");
}

}  // namespace
}  // namespace oppx::test
