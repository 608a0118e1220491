// The terminal chat as a person uses it: `oppx` in a real pseudo-terminal (a tmux server of the
// test's own), keys sent with send-keys, the screen read with capture-pane; the scripted model
// server, the real daemon and a real stdio connector (agent_connector.js).
#include "tests/support/browser_support.h"
#include "tests/support/model_steps.h"
#include "tests/support/scripted_model.h"
#include "tests/support/terminal.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

int occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct Chat : ::testing::Test {
  TempHome home;
  InRepository repo{home};
  std::string calls = home.root() + "/calls.jsonl";
  std::optional<ScriptedModel> model;
  void SetUp() override {
    home.write_mcp_config(
        stdio_entry("agentc", "node", {std::string(OPPX_TEST_SUPPORT) + "/agent_connector.js", calls}));
  }
  void TearDown() override { oppx({"daemon", "stop"}); }
  void serve(const std::vector<std::string>& steps) {
    std::string list;
    for (const auto& s : steps) list += (list.empty() ? "" : ",") + s;
    model.emplace(home.root(), R"({"models": [{"id": "m1", "max_model_len": 32768}], "completions": [)" + list + "]}");
    ASSERT_TRUE(model->started()) << model->err();
    connectors_settled(home, repo.root());
  }
  // The repository's .mcp.json defines "notes", which waits for consent.
  void repository_connector_notes() {
    std::ofstream(repo.root() + "/.mcp.json") << R"({"mcpServers":{"notes":{"command":"node","args":[")"
                                              << OPPX_TEST_SUPPORT << R"(/agent_connector.js","notes.jsonl"]}}})";
  }
  // Connectors start beside the chat (no session waits for one): a test that uses agentc's tools
  // waits until the chat has said that it runs, in the welcome box or in a notice after it.
  static bool ready(Terminal& t) {
    if (!t.wait_for("/help for commands")) return false;
    return std::regex_search(t.screen(), std::regex("agentc +running")) || t.wait_for("agentc is running");
  }
  std::string last_user_message() {
    auto bodies = model->completions();
    if (bodies.empty()) return {};
    return std::string(bodies.back().at("messages").as_array().back().at("content").as_string());
  }
};

TEST_F(Chat, TheWelcomeBoxAReplyAndAlwaysThatHoldsInTheNextChat) {
  serve({reply("Hello there."), action("agentc.ping"), reply("Pinged."), action("agentc.ping"), reply("Again.")});
  {
    Terminal t(home, model->url());
    ASSERT_TRUE(t.started());
    ASSERT_TRUE(ready(t)) << t.screen();
    std::string s = t.screen();
    EXPECT_NE(s.find("╭"), std::string::npos);
    EXPECT_NE(s.find("m1 at " + model->url()), std::string::npos) << s;
    EXPECT_NE(s.find("context 32768 tokens"), std::string::npos) << s;
    EXPECT_TRUE(s.find("agentc  running, 6 tools") != std::string::npos ||
                s.find("agentc is running (6 tools)") != std::string::npos)
        << s;
    t.type("hello");
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("Hello there.")) << t.screen();
    t.type("ping it");
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("Call agentc.ping (it may change something)?")) << t.screen();
    EXPECT_NE(t.screen().find("[c] always, every agentc tool"), std::string::npos);
    t.type("a");
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("Pinged.")) << t.screen();
    EXPECT_NE(t.screen().find("ran (0."), std::string::npos) << t.screen();
    t.keys({"C-d"});
    ASSERT_TRUE(t.wait_for("oppx-exited-0")) << t.screen();
  }
  // A new chat: the rule `a` wrote lets it run without a question.
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("ping again");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Again.")) << t.screen();
  EXPECT_EQ(t.screen().find("Call agentc.ping"), std::string::npos) << t.screen();
}

TEST_F(Chat, NoAndTextDeclineAndTheTextIsPassedOn) {
  serve({action("agentc.ping"), reply("Not pinged."), action("agentc.ping"), reply("Doing it your way."),
         action("agentc.ping"), reply("Every one.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("ping");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("answer ›")) << t.screen();
  t.keys({"Enter"});  // N, the default
  ASSERT_TRUE(t.wait_for("Not pinged.")) << t.screen();
  EXPECT_NE(t.screen().find("declined"), std::string::npos);
  t.type("ping");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("answer ›", 2)) << t.screen();
  t.type("use the status page instead");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Doing it your way.")) << t.screen();
  EXPECT_NE(json::serialize(model->completions().back()).find("use the status page instead"), std::string::npos);
  t.type("ping");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("answer ›", 3)) << t.screen();
  t.type("c");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Every one.")) << t.screen();
  EXPECT_NE(oppx({"permissions", "list"}).out.find("agentc.*"), std::string::npos);
  std::ifstream f(calls);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 1) << "only the third ran: " << all;
}

TEST_F(Chat, CtrlCCancelsASlowReplyAndAHangingCallAndTheChatAnswersNext) {
  serve({json::serialize(
             json::object{{"deltas", json::array{R"({"action":"reply","text":"Thinking)"}}, {"hang_after", 1}}),
         reply("After the first."), action("agentc.hang"), reply("After the second.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("slow");
  t.keys({"Enter"});
  // The reply's line has not ended: it is held (to be wrapped whole) while the model hangs.
  ASSERT_TRUE(when_file_changes(model->log(), [&] { return !model->completions().empty(); })) << t.screen();
  t.keys({"C-c"});
  ASSERT_TRUE(t.wait_for("(cancelled)")) << t.screen();
  t.type("next");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("After the first.")) << t.screen();
  t.type("hang");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("> agentc.hang")) << t.screen();
  ASSERT_TRUE(t.wait_for("… 1/3 waiting for the service")) << t.screen();
  t.keys({"C-c"});
  ASSERT_TRUE(t.wait_for("(cancelled)", 2)) << t.screen();
  // The connector was told.
  EXPECT_TRUE(when_file_changes(calls, [&] { return read_file(calls).find("\"cancelled\"") != std::string::npos; }))
      << read_file(calls);
  t.type("again");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("After the second.")) << t.screen();
}

TEST_F(Chat, CtrlCTwiceOrCtrlDExitsAndOnceClearsTheInput) {
  serve({reply("unused")});
  {
    Terminal t(home, model->url());
    ASSERT_TRUE(ready(t)) << t.screen();
    t.type("half a thought");
    t.keys({"C-c"});
    ASSERT_TRUE(t.wait_for("(Ctrl-C again to exit)")) << t.screen();
    t.keys({"C-c"});
    ASSERT_TRUE(t.wait_for("oppx-exited-0")) << t.screen();
    EXPECT_TRUE(model->completions().empty()) << "the cleared input was never sent";
  }
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.keys({"C-d"});
  ASSERT_TRUE(t.wait_for("oppx-exited-0")) << t.screen();
}

TEST_F(Chat, APastedBlockIsOneMessageAndBackslashEnterStartsANewLine) {
  serve({reply("Got the block."), reply("Got two lines.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.paste("first line\nsecond line\nthird line");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Got the block.")) << t.screen();
  EXPECT_EQ(last_user_message(), "first line\nsecond line\nthird line");
  t.type("one\\");
  t.keys({"Enter"});
  t.type("two");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Got two lines.")) << t.screen();
  EXPECT_EQ(last_user_message(), "one\ntwo");
}

TEST_F(Chat, SlashCommandsListConnectorsToolsContextAndAddRebuildsThePrompt) {
  serve({reply("unused")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("/mcp");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("agentc  costs about")) << t.screen();
  t.type("/mcp tools ag");
  t.keys({"Tab", "Enter"});  // Tab completes the connector's name
  ASSERT_TRUE(t.wait_for("agentc.lookup: Looks up an issue by its id")) << t.screen();
  t.type("/context");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("free")) << t.screen();
  EXPECT_NE(t.screen().find("of 32768 tokens"), std::string::npos);
  t.type("/mcp add more -- node " + std::string(OPPX_TEST_SUPPORT) + "/agent_connector.js " + home.root() +
         "/more.jsonl");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("the system prompt was rebuilt")) << t.screen();
  EXPECT_TRUE(t.wait_for("The connectors' tool lists take")) << "after /mcp add, the total's cost: " << t.screen();
  // One warning style (issue 26): the chat's, the agent's and `oppx mcp add`'s say "warning:".
  EXPECT_NE(t.screen().find("\nwarning: the server's model has a small context window"), std::string::npos)
      << t.screen();
  EXPECT_NE(t.screen().find("\nwarning: The tool list changed"), std::string::npos) << t.screen();
  EXPECT_EQ(t.screen().find("oppx: warning"), std::string::npos) << t.screen();
  EXPECT_EQ(t.screen().find(" ! "), std::string::npos) << t.screen();
  t.type("/help");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("/permissions [remove R]")) << t.screen();
}

TEST_F(Chat, TheOtherSlashCommands) {
  ASSERT_EQ(oppx({"permissions", "allow", "agentc.ping"}).exit_code, 0);
  serve({reply("A plan."), reply("Fresh start.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("/status");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("mode chat · 6 tools offered")) << t.screen();
  ASSERT_TRUE(t.wait_for("uptime")) << t.screen();  // the daemon's own status follows
  // The connectors by name, with state and tools (issue 26).
  EXPECT_NE(t.screen().find("connectors:\n  agentc  running, 6 tools\n"), std::string::npos) << t.screen();
  t.type("/permissions");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("    agentc.ping")) << t.screen();
  t.type("/permissions remove agentc.ping");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("allow: none")) << t.screen();
  t.type("/plan");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Read-only turns")) << t.screen();
  t.type("plan it");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("A plan.")) << t.screen();
  auto first = model->completions().at(0);
  std::string enumerated = json::serialize(first.at("response_format"));
  EXPECT_EQ(enumerated.find("agentc.ping"), std::string::npos) << enumerated;
  EXPECT_EQ(enumerated.find("\"run\""), std::string::npos) << enumerated;
  t.type("/ask");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Back to normal turns.")) << t.screen();
  t.type("/clear");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("A new conversation.")) << t.screen();
  t.type("again");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Fresh start.")) << t.screen();
  EXPECT_EQ(json::serialize(model->completions().back()).find("plan it"), std::string::npos);
  int said = occurrences(t.screen(), "agentc is running");
  t.type("/mcp reconnect agentc");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("agentc is running", said + 1)) << t.screen();
  t.type("/mcp auth agentc");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("agentc is running", said + 2)) << t.screen();
  t.type("/mcp remove agentc");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("the system prompt was rebuilt")) << t.screen();
  // The small-context warning follows /mcp add only (issue 26): not a reconnect, a login, a removal.
  EXPECT_EQ(t.screen().find("The connectors' tool lists take"), std::string::npos) << t.screen();
  t.type("/exit");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("oppx-exited-0")) << t.screen();
}

TEST_F(Chat, ARepositoryConnectorIsAskedForAtStartOnce) {
  repository_connector_notes();
  serve({reply("unused")});
  {
    Terminal t(home, model->url());
    ASSERT_TRUE(t.wait_for("Let this repository's connector notes run? [y/N]")) << t.screen();
    EXPECT_NE(t.screen().find("agent_connector.js"), std::string::npos) << "the command is shown";
    t.type("y");
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("notes is running")) << t.screen();
    // The definition once, before the question (issue 26: `oppx mcp approve` printed it again).
    std::string s = t.screen();
    EXPECT_NE(s.find("│   agentc  running, 6 tools"), std::string::npos) << s;
    EXPECT_NE(s.find("│   notes   waiting for your consent"), std::string::npos) << "in columns: " << s;
    EXPECT_EQ(occurrences(s, "agent_connector.js"), 1) << s;
    EXPECT_EQ(s.find("Approved this definition"), std::string::npos) << s;
    EXPECT_NE(s.find("notes is running with 6 tools.\n"), std::string::npos) << s;
    t.type("/mcp");
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("notes   costs about")) << t.screen();
    t.keys({"C-d"});
    ASSERT_TRUE(t.wait_for("oppx-exited-0")) << t.screen();
  }
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  EXPECT_EQ(t.screen().find("Let this repository's connector"), std::string::npos) << "asked once";
}

TEST_F(Chat, AConnectorKilledMidChatIsANoticeWithItsSteps) {
  ASSERT_EQ(oppx({"permissions", "allow", "agentc.*"}).exit_code, 0);
  serve({action("agentc.crash"), reply("The crash call did not finish.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("crash it");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Once it is back, ask me to continue.")) << t.screen();
  std::string s = t.screen();
  // One warning style (issue 26): the connector down and the prompt rebuilt alike.
  EXPECT_NE(s.find("\nwarning: agentc is down: "), std::string::npos) << s;
  EXPECT_NE(s.find("\nwarning: The tool list changed"), std::string::npos) << s;
  EXPECT_EQ(s.find(" ! "), std::string::npos) << s;
  EXPECT_NE(s.find("  1. "), std::string::npos) << s;
  EXPECT_NE(s.find("the system prompt was rebuilt"), std::string::npos) << s;
}

TEST_F(Chat, AConnectorThatComesUpElsewhereIsANoticeAtTheIdlePromptAndInTheNextRequest) {
  serve({reply("I see it.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  Result added = oppx({"mcp", "add", "more", "--", "node", std::string(OPPX_TEST_SUPPORT) + "/agent_connector.js",
                       home.root() + "/more.jsonl"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  ASSERT_TRUE(t.wait_for("\n  more is running (6 tools)")) << t.screen();
  t.type("what is new");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("I see it.")) << t.screen();
  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_NE(json::serialize(bodies[0]).find("more.ping"), std::string::npos);
}

// The chat listens for changes from before it lists the connectors: one that comes up while the
// consent question waits (after the listing) is a notice, and its tools are in the first request.
// The approved connector's start is said once, by `oppx mcp approve`.
TEST_F(Chat, AConnectorThatComesUpDuringTheConsentQuestionIsHeardOf) {
  repository_connector_notes();
  serve({reply("I see it.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(t.wait_for("Let this repository's connector notes run? [y/N]")) << t.screen();
  Result added = oppx({"mcp", "add", "more", "--", "node", std::string(OPPX_TEST_SUPPORT) + "/agent_connector.js",
                       home.root() + "/more.jsonl"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  Result more = oppx({"mcp", "tools", "more", "--json"});  // answers once it is no longer starting
  ASSERT_EQ(json::parse(more.out).at("state"), json::value("running")) << more.out << more.err;
  t.type("y");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("notes is running with 6 tools.")) << t.screen();
  ASSERT_TRUE(t.wait_for("\n  more is running (6 tools)")) << t.screen();
  t.type("what is new");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("I see it.")) << t.screen();
  EXPECT_EQ(t.screen().find("notes is running ("), std::string::npos) << t.screen();
  auto bodies = model->completions();
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_NE(json::serialize(bodies[0]).find("more.ping"), std::string::npos);
  EXPECT_NE(json::serialize(bodies[0]).find("notes.ping"), std::string::npos);
}

// /mcp reconnect waits on the daemon (a start, up to minutes after a login): Ctrl-C stops the
// waiting at once and the prompt is back, and the key is not replayed at the prompt afterwards.
TEST_F(Chat, CtrlCStopsWaitingForASlashMcpCommandAndThePromptStaysUsable) {
  std::string hold = home.root() + "/hold";
  home.write_mcp_config(stdio_entry("agentc", "node", {std::string(OPPX_TEST_SUPPORT) + "/agent_connector.js", calls}) +
                        "," +
                        stdio_entry("slow", FAKE_MCP_SERVER, {"ok", home.root() + "/slow", "--hang-init-if=" + hold}));
  serve({reply("Still here.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  std::ofstream(hold) << "x";  // from now on its start never ends
  t.type("/mcp reconnect slow");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("(Ctrl-C stops waiting)")) << t.screen();
  // How long it has waited, redrawn in place (issue 26: progress while a slash command waits).
  ASSERT_TRUE(t.wait_for("reconnecting slow… 2 s")) << t.screen();
  EXPECT_EQ(t.screen().find("reconnecting slow… 1 s"), std::string::npos) << "one line, redrawn: " << t.screen();
  t.keys({"C-c"});
  ASSERT_TRUE(t.wait_for("^C stopped waiting; it goes on in the daemon")) << t.screen();
  t.type("hello");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Still here.")) << t.screen();
  EXPECT_EQ(t.screen().find("oppx-exited"), std::string::npos) << t.screen();
}

TEST_F(Chat, MinusCContinuesTheLastConversation) {
  serve({reply("The first answer."), reply("The second answer.")});
  {
    Terminal t(home, model->url());
    ASSERT_TRUE(ready(t)) << t.screen();
    t.type("first question");
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("The first answer.")) << t.screen();
    t.keys({"C-d"});
    ASSERT_TRUE(t.wait_for("oppx-exited-0")) << t.screen();
  }
  Terminal t(home, model->url(), {"-c"});
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("second");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("The second answer.")) << t.screen();
  EXPECT_NE(json::serialize(model->completions().back()).find("first question"), std::string::npos);
}

// Issue 26: the agent lives in the daemon, so `oppx daemon restart` (what the README says to run
// after an update) takes it away from an open chat. The chat says so, connects again and goes on
// with the conversation as saved; a turn the restart cut is reported as cut, its message kept.
TEST_F(Chat, ADaemonRestartIsSaidAndTheChatGoesOnWithItsConversation) {
  serve({reply("The first answer."), reply("The second answer."),
         json::serialize(
             json::object{{"deltas", json::array{R"({"action":"reply","text":"Halfway)"}}, {"hang_after", 1}}),
         reply("The fourth answer.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("first question");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("The first answer.")) << t.screen();
  ASSERT_EQ(oppx({"daemon", "restart"}).exit_code, 0);
  t.type("second question");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("The second answer.")) << t.screen();
  EXPECT_NE(t.screen().find("warning: the daemon stopped or restarted; connecting again"), std::string::npos)
      << t.screen();
  EXPECT_NE(t.screen().find("connected again; the conversation goes on"), std::string::npos) << t.screen();
  EXPECT_NE(json::serialize(model->completions().back()).find("first question"), std::string::npos)
      << "the conversation was taken up from disk";
  // A restart while the model writes: the turn is cut, said, and the next one runs.
  t.type("third question");
  t.keys({"Enter"});
  ASSERT_TRUE(when_file_changes(model->log(), [&] { return model->completions().size() == 3; })) << t.screen();
  ASSERT_EQ(oppx({"daemon", "restart"}).exit_code, 0);
  ASSERT_TRUE(t.wait_for("the daemon stopped during the turn: it was cut")) << t.screen();
  ASSERT_TRUE(t.wait_for("connected again; the conversation goes on", 2)) << t.screen();
  EXPECT_EQ(occurrences(t.screen(), "connecting again"), 2) << "said once each time: " << t.screen();
  t.type("fourth question");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("The fourth answer.")) << t.screen();
  std::string last = json::serialize(model->completions().back());
  EXPECT_NE(last.find("second question"), std::string::npos) << last;
  EXPECT_NE(last.find("third question"), std::string::npos) << "the cut turn's message is kept: " << last;
  EXPECT_NE(last.find("(This turn was cut: oppxd stopped.)"), std::string::npos) << last;
}

TEST_F(Chat, ResumeListsThisFoldersConversationsAndPicksOne) {
  serve({reply("About apples."), reply("About pears."), reply("Back to apples.")});
  for (const char* topic : {"apples please", "pears please"}) {
    Terminal t(home, model->url());
    ASSERT_TRUE(ready(t)) << t.screen();
    t.type(topic);
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("About")) << t.screen();
    t.keys({"C-d"});
    ASSERT_TRUE(t.wait_for("oppx-exited-0")) << t.screen();
  }
  Terminal t(home, model->url(), {"--resume"});
  ASSERT_TRUE(t.wait_for("Resume which (number)?")) << t.screen();
  std::string s = t.screen();
  auto pears = s.find("1. "), apples = s.find("2. ");
  ASSERT_NE(apples, std::string::npos) << s;
  EXPECT_NE(s.find("pears please", pears), std::string::npos) << "the newest first: " << s;
  t.type("2");
  t.keys({"Enter"});
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("more");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Back to apples.")) << t.screen();
  std::string sent = json::serialize(model->completions().back());
  EXPECT_NE(sent.find("apples please"), std::string::npos);
  EXPECT_EQ(sent.find("pears please"), std::string::npos);
}

TEST_F(Chat, TheBrowserIsAskedForOnceAndSlashBrowserShowsStopsAndStartsIt) {
  link_engine(home);
  serve({action("browser"), reply("Started."), reply("Still here.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("/browser");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Browser: off; the agent asks before it starts one")) << t.screen();
  t.type("look at http://127.0.0.1:9/");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Start a headless browser (Playwright) for this session?")) << t.screen();
  EXPECT_NE(t.screen().find("[a] always (oppx browser on)"), std::string::npos) << t.screen();
  t.type("y");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Started.", 1, 60s)) << t.screen();
  EXPECT_NE(t.screen().find("  > browser\n"), std::string::npos) << t.screen();
  EXPECT_NE(t.screen().find("started; its tools (playwright.browser_navigate"), std::string::npos) << t.screen();
  EXPECT_NE(t.screen().find("the system prompt was rebuilt"), std::string::npos)
      << "the prompt was rebuilt once: " << t.screen();
  t.type("/browser");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Browser: running in this session")) << t.screen();
  t.type("/mcp");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("playwright  costs about")) << t.screen();
  t.type("/browser stop");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("The browser is stopped.")) << t.screen();
  t.type("/browser start");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("The browser is running; its tools are offered.", 1, 60s)) << t.screen();
  t.type("thanks");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Still here.")) << t.screen();
  EXPECT_EQ(t.screen().find("Start a headless browser", t.screen().find("thanks")), std::string::npos);
  t.keys({"C-d"});
  ASSERT_TRUE(t.wait_for("oppx-exited-0")) << t.screen();
}

// Issue 25, finding 5: the question cut a tool's arguments at 400 characters, and a write whose
// payload sat after 420 spaces was shown as harmless. Now the padding is a marker that counts it,
// a long value is its head and tail with what is left out counted, and `v` shows all of it.
TEST_F(Chat, TheQuestionShowsAPayloadBehindPaddingAndVShowsEveryArgumentInFull) {
  std::string title = "Fix a typo" + std::string(420, ' ') + "PAYLOAD-AFTER-PADDING " + std::string(400, 'x') +
                      " MIDDLE-OF-IT " + std::string(400, 'y') + " THE-END";
  std::string command = "echo hi" + std::string(420, ' ') + "; touch pwned";
  serve({action("agentc.save_issue"), says(json::serialize(json::object{{"issue", json::object{{"title", title}}}})),
         reply("Saved."), action("run", R"("command":)" + json::serialize(json::value(command))), reply("Not run.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("save it");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("answer ›")) << t.screen();
  std::string s = t.screen();
  EXPECT_NE(s.find("issue: {\"title\":\"Fix a typo⟨420 spaces⟩PAYLOAD-AFTER-PADDING xxx"), std::string::npos) << s;
  EXPECT_NE(s.find("characters more … yyy"), std::string::npos) << s;
  EXPECT_NE(s.find("y THE-END\"}"), std::string::npos) << s;
  EXPECT_EQ(s.find("MIDDLE-OF-IT"), std::string::npos) << "folded: " << s;
  EXPECT_NE(s.find("[v] view every argument in full"), std::string::npos) << s;
  t.type("v");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("answer ›", 2)) << t.screen();
  s = t.screen();
  EXPECT_NE(s.find("xxx MIDDLE-OF-IT yyy"), std::string::npos) << "in full: " << s;
  t.type("y");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Saved.")) << t.screen();
  EXPECT_NE(read_file(calls).find("MIDDLE-OF-IT"), std::string::npos) << read_file(calls);
  // A command: the same.
  t.type("run it");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("answer ›", 3)) << t.screen();
  EXPECT_NE(t.screen().find("echo hi⟨420 spaces⟩; touch pwned"), std::string::npos) << t.screen();
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Not run.")) << t.screen();
}

// Issue 25, finding 7: a connector name in a repository's .mcp.json that sets the clipboard (OSC
// 52) and the terminal's title (OSC 0) was drawn raw by Tab's list of completions, before any
// consent. History and pastes pass the same escaping.
TEST_F(Chat, TabHistoryAndPastesDrawWhatTheyHoldEscaped) {
  const std::string evil = "notes\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07";
  std::ofstream(repo.root() + "/.mcp.json") << json::serialize(json::object{
      {"mcpServers",
       json::object{{evil, json::object{{"command", "node"},
                                        {"args", json::array{std::string(OPPX_TEST_SUPPORT) + "/agent_connector.js",
                                                             "notes.jsonl"}}}}}}});
  std::filesystem::create_directories(home.root() + "/state/oppx");
  ASSERT_EQ(::chmod((home.root() + "/state/oppx").c_str(), 0700), 0);
  std::ofstream(home.root() + "/state/oppx/history")
      << json::serialize(json::value("old \x1b]0;from-history\x07 entry")) << "\n";
  serve({reply("unused")});
  Terminal t(home, model->url());
  ASSERT_TRUE(t.started());
  std::string title = t.title();
  // A name the daemon does not take ("unsupported"), listed all the same, with no question.
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("/mcp tools ");
  t.keys({"Tab"});
  ASSERT_TRUE(t.wait_for("agentc  notes\\x1b]52;c;cHduZWQ=\\x07\\x1b]0;pwned\\x07")) << t.screen();
  t.keys({"C-u", "Up"});
  ASSERT_TRUE(t.wait_for("old \\x1b]0;from-history\\x07 entry")) << t.screen();
  t.keys({"C-u"});
  t.paste("pasted \x1b]0;from-paste\x07 text");
  ASSERT_TRUE(t.wait_for("pasted \\x1b]0;from-paste\\x07 text")) << t.screen();
  EXPECT_EQ(t.title(), title);
  EXPECT_EQ(t.buffers().find("cHduZWQ"), std::string::npos) << t.buffers();
  EXPECT_EQ(t.buffers().find("pwned"), std::string::npos) << t.buffers();
}

// The processes whose command line holds `marker` (a shell running it, bwrap, the command itself).
std::set<pid_t> processes_with(const std::string& marker) {
  std::set<pid_t> found;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(e.path().string() + "/cmdline");
    if (cmdline.find(marker) != std::string::npos) found.insert(static_cast<pid_t>(std::stoi(name)));
  }
  return found;
}

// Issue 25, finding 4: Ctrl-C during a `run` said "cancelling the turn…" while the command ran on
// to its end. Now the command and everything it started are ended, and the prompt is back.
TEST_F(Chat, CtrlCStopsARunningCommandAndLeavesNothingRunning) {
  const std::string marker = "100.4711" + std::to_string(::getpid());
  serve({action("run", R"("command":"touch started; sleep )" + marker + "\""), reply("After.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("wait a while");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("answer ›")) << t.screen();
  t.type("y");
  t.keys({"Enter"});
  std::set<pid_t> running;
  ASSERT_TRUE(when_files_change(repo.root(), [&] {
    running = processes_with("sleep " + marker);
    return std::filesystem::exists(repo.root() + "/started") && !running.empty();
  })) << t.screen();
  t.keys({"C-c"});
  ASSERT_TRUE(t.wait_for("(cancelled)", 1, 5s)) << t.screen();
  EXPECT_TRUE(t.wait_for("stopped: cancelled by the user", 1, 5s)) << "the run's line says why: " << t.screen();
  EXPECT_TRUE(wait_for_exits(running, 5s)) << "still running: " << running.size() << " processes";
  EXPECT_TRUE(processes_with("sleep " + marker).empty());
  t.type("next");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("After.")) << t.screen();
}

// Code points: the columns of the plain text a capture holds.
std::size_t columns(const std::string& line) {
  return static_cast<std::size_t>(
      std::count_if(line.begin(), line.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Issue 26: a long reply was broken by the terminal, mid-word. Now at spaces, within the pane's
// 120 columns (capture-pane -J joins what the terminal wrapped itself, so such a line would be
// longer), every word whole on its line.
TEST_F(Chat, AReplyIsWrappedAtTheTerminalsWidthBetweenWords) {
  std::string text;
  for (int i = 1; i <= 60; ++i) text += fmt::format("{}word{:03}", i == 1 ? "" : " ", i);
  serve({reply(text + " END.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("talk");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("END.")) << t.screen();
  std::string s = t.screen();
  std::istringstream lines(s);
  int reply_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(columns(line), 120u) << line;
    if (line.rfind("word", 0) == 0) ++reply_lines;
  }
  EXPECT_GE(reply_lines, 4) << s;
  for (int i = 1; i <= 60; ++i) EXPECT_NE(s.find(fmt::format("word{:03}", i)), std::string::npos) << i << "\n" << s;
}

// Issue 26: the model's markdown was printed raw. Now drawn for the terminal: a heading without its
// marks, bullets, code indented as written, inline code and bold without their marks; and an
// escape in the reply is shown, not obeyed.
TEST_F(Chat, AReplysMarkdownIsDrawnForTheTerminalAndItsEscapesShown) {
  serve(
      {reply("# The plan\n\n1. Read `main.cpp` **first**\n2. Then:\n   - fix it\n\n```sh\nmake  -j  all\n```\n"
             "Done \x1b]0;pwned\x07 now.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(t.started());
  std::string title = t.title();
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("plan");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("now.")) << t.screen();
  std::string s = t.screen();
  EXPECT_NE(s.find("\nThe plan\n"), std::string::npos) << s;
  EXPECT_NE(s.find("\n  1. Read main.cpp first\n  2. Then:\n     ◦ fix it\n"), std::string::npos) << s;
  EXPECT_NE(s.find("\n    make  -j  all\n"), std::string::npos) << s;
  EXPECT_NE(s.find("Done \\x1b]0;pwned\\x07 now."), std::string::npos) << s;
  for (std::string_view raw : {"#", "**", "`", "```"})
    EXPECT_EQ(s.find(std::string(raw) + " "), std::string::npos) << s;
  EXPECT_EQ(t.title(), title);
}

// Issue 26: nothing moved while the model thought. Now a spinner with the seconds so far, on a line
// of its own, erased when the reply starts: nothing of it is left on the screen.
TEST_F(Chat, ASpinnerWithTheTimeShowsWhileTheModelThinksAndLeavesNothingBehind) {
  json::value slow = json::parse(reply("After a while."));
  slow.as_object()["delay_ms"] = 1500;
  json::value then = json::parse(reply("Second answer."));
  then.as_object()["delay_ms"] = 1500;
  serve({json::serialize(slow), action("agentc.ping"), json::serialize(then)});
  ASSERT_EQ(oppx({"permissions", "allow", "agentc.ping"}).exit_code, 0);
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("think");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("thinking… 1 s (Ctrl-C cancels)")) << t.screen();
  ASSERT_TRUE(t.wait_for("After a while.")) << t.screen();
  // After an action too, while the model thinks again.
  t.type("ping");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("ran (")) << t.screen();
  ASSERT_TRUE(t.wait_for("thinking… 1 s (Ctrl-C cancels)")) << t.screen();
  ASSERT_TRUE(t.wait_for("Second answer.")) << t.screen();
  std::string s = t.screen();
  EXPECT_EQ(s.find("thinking"), std::string::npos) << s;
  for (std::string_view frame : {"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"})
    EXPECT_EQ(s.find(frame), std::string::npos) << s;
  EXPECT_NE(s.find("› think\n\nAfter a while.\n"), std::string::npos) << "no line left where it was: " << s;
}

// Issue 26: `a` at the browser_evaluate question (asked every time) ran it once without a word.
// The question says that always is not available, and so does the answer to `a`.
TEST_F(Chat, BrowserEvaluateSaysAlwaysIsNotAvailableAtTheQuestionAndWhenAIsTyped) {
  link_engine(home);
  serve({action("browser"), action("playwright.browser_evaluate"), says(R"({"function":"() => 40 + 2"})"),
         reply("It is 42."), action("playwright.browser_evaluate"), says(R"({"function":"() => 1"})"),
         reply("Asked again.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("evaluate it");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Start a headless browser (Playwright) for this session?")) << t.screen();
  t.type("y");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Call playwright.browser_evaluate", 1, 60s)) << t.screen();
  ASSERT_TRUE(t.wait_for("answer ›", 2)) << t.screen();
  std::string s = t.screen();
  auto question = s.find("Call playwright.browser_evaluate");
  EXPECT_NE(s.find("[y] yes · [N] no · or type what to do instead (always is not available here)", question),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("[a] always", question), std::string::npos) << s;
  t.type("a");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("It is 42.")) << t.screen();
  EXPECT_NE(t.screen().find("Always is not available here: it is asked every time. Yes, this once."), std::string::npos)
      << t.screen();
  // And asked again the next time.
  t.type("again");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("answer ›", 3)) << t.screen();
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Asked again.")) << t.screen();
}

// Issue 26: a browser call's line said "### Page" or "### Error". Now what happened.
TEST_F(Chat, ABrowserCallsLineSaysWhatHappened) {
  link_engine(home);
  Page page;
  ASSERT_FALSE(page.url.empty()) << page.server.err();
  serve({action("browser"), action("playwright.browser_navigate"),
         says(json::serialize(json::object{{"url", page.url}})), action("playwright.browser_navigate"),
         says(R"({"url":"http://127.0.0.1:9/"})"), reply("Seen both.")});
  Terminal t(home, model->url());
  ASSERT_TRUE(ready(t)) << t.screen();
  t.type("look at it");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Start a headless browser (Playwright) for this session?")) << t.screen();
  t.type("y");
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for("Seen both.", 1, 60s)) << t.screen();
  std::string s = t.screen();
  EXPECT_NE(s.find("ran ("), std::string::npos) << s;
  EXPECT_NE(s.find("): navigated to " + page.url), std::string::npos) << s;
  EXPECT_NE(s.find("): error: "), std::string::npos) << s;
  EXPECT_EQ(s.find("###"), std::string::npos) << s;
}

}  // namespace
}  // namespace oppx::test
