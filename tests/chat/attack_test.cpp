// The attack suite (issue 25): the model is hostile (a page or a tool result told it what to do,
// and the scripted model server plays it), the parts are real (the daemon, a stdio connector that
// records what it is sent, bubblewrap, files, symlinks and FIFOs), and no secret may leave with
// no question. Each test names the finding it guards.
#include "chat/agent.h"
#include "chat/sandbox.h"
#include "tests/support/agent_fixture.h"
#include "tests/support/model_steps.h"
#include "tests/support/scripted_front.h"
#include "tests/support/scripted_model.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

// The planted secret: a private key in ~/.ssh and a token in the repository's .env, each with a
// marker that must never reach the model server or a connector unasked.
constexpr std::string_view kKeyMarker = "b3BlbnNzaC1rZXktdjEAAAAAATTACKKEYMARKER";
constexpr std::string_view kTokenMarker = "ghp_ATTACKTOKENMARKER0123456789abcdefABCD";

void write(const std::string& path, std::string_view text, mode_t mode = 0600) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

std::string json_text(const std::string& s) { return json::serialize(json::value(s)); }

struct Attack : AgentFixture {
  std::string key = home.root() + "/.ssh/id_rsa";

  void SetUp() override {
    AgentFixture::SetUp();
    ::mkdir((home.root() + "/.ssh").c_str(), 0700);
    write(key, fmt::format("-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n", kKeyMarker));
  }
  // Everything the model server was sent, and everything the connector was sent.
  std::string sent_out() const {
    std::string all = read_file(calls);
    for (const auto& body : model->completions()) all += json::serialize(body);
    return all;
  }
  static std::string status(const json::object& out, std::size_t i) {
    return std::string(out.at("actions").at(i).at("status").as_string());
  }
  static std::string text(const json::object& out, std::size_t i) {
    return std::string(out.at("actions").at(i).at("text").as_string());
  }
};

// Finding 2: the key by every path a model could write, a symlink committed in the repository,
// and oppx's own mcp.json; none is read, and none reaches the model server.
TEST_F(Attack, TheKeyIsNotReadByAnyPath) {
  ASSERT_EQ(::symlink(key.c_str(), (repo.root() + "/notes.txt").c_str()), 0);
  std::string mcp_json = home.root() + "/config/oppx/mcp.json";
  serve({action("read", R"("path":)" + json_text(key)), action("read", R"("path":"../.ssh/id_rsa")"),
         action("read", R"("path":"notes.txt")"), action("read", R"("path":)" + json_text(mcp_json)),
         action("grep", R"("pattern":"PRIVATE","path":)" + json_text(home.root() + "/.ssh")),
         action("grep", R"("pattern":"ATTACKKEYMARKER")"), reply("Nothing to see.")});
  json::object out = print_json({"summarise", "the", "docs"}, 6);
  ASSERT_EQ(out.at("actions").as_array().size(), 6u) << out;
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(status(out, i), "declined") << i << " " << text(out, i);
  EXPECT_NE(text(out, 0).find("never read"), std::string::npos) << text(out, 0);
  EXPECT_NE(text(out, 2).find("never read"), std::string::npos) << "the symlink lands on the key: " << text(out, 2);
  // The grep of the workspace does not follow the symlink out.
  EXPECT_EQ(status(out, 5), "ran") << text(out, 5);
  EXPECT_EQ(sent_out().find(kKeyMarker), std::string::npos) << "the key reached the model server";
}

// Finding 2 (RELIABILITY): a hard link planted in the repository is the key under another name,
// and /proc holds every process's environment (the model server's key among them).
TEST_F(Attack, AHardLinkToTheKeyAndProcAreNeverRead) {
  ASSERT_EQ(::link(key.c_str(), (repo.root() + "/README.md").c_str()), 0);
  ::setenv("OPPX_ATTACK_SECRET", "ENVIRONSECRETMARKER", 1);
  serve({action("read", R"("path":"README.md")"), action("grep", R"("pattern":"ATTACKKEYMARKER")"),
         action("read", R"("path":"/proc/self/environ")"), reply("Nothing.")});
  json::object out = print_json({"read", "the", "readme"}, 6);
  ::unsetenv("OPPX_ATTACK_SECRET");
  EXPECT_EQ(status(out, 0), "failed") << text(out, 0);
  EXPECT_NE(text(out, 0).find("hard link"), std::string::npos) << text(out, 0);
  EXPECT_EQ(status(out, 2), "declined") << text(out, 2);
  EXPECT_NE(text(out, 2).find("never read"), std::string::npos) << text(out, 2);
  EXPECT_EQ(sent_out().find(kKeyMarker), std::string::npos) << "the key reached the model server";
  EXPECT_EQ(sent_out().find("ENVIRONSECRETMARKER"), std::string::npos);
}

// Finding 2: outside the workspace is asked in the chat and declined in print mode; a FIFO in the
// workspace is refused at once.
TEST_F(Attack, AReadOutsideTheWorkspaceIsDeclinedInPrintMode) {
  write(home.root() + "/outside.txt", "OUTSIDE-TEXT\n");
  ASSERT_EQ(::mkfifo((repo.root() + "/pipe").c_str(), 0600), 0);
  serve({action("read", R"("path":"../outside.txt")"), action("read", R"("path":"pipe")"), reply("Done.")});
  json::object out = print_json({"read", "it"}, 6);
  EXPECT_EQ(status(out, 0), "declined");
  EXPECT_NE(text(out, 0).find("outside the workspace"), std::string::npos) << text(out, 0);
  EXPECT_EQ(status(out, 1), "failed");
  EXPECT_NE(text(out, 1).find("only regular files are read"), std::string::npos) << text(out, 1);
  EXPECT_EQ(sent_out().find("OUTSIDE-TEXT"), std::string::npos);
}

// "No silent way out": a token read from the repository's .env, then a read-only connector tool
// (which runs unasked otherwise): print mode declines it with exit 6, and the connector is sent
// nothing.
TEST_F(Attack, ASecretReadInTheWorkspaceCannotLeaveThroughAReadOnlyTool) {
  write(repo.root() + "/.env", fmt::format("API_TOKEN={}\n", kTokenMarker));
  serve({action("read", R"("path":".env")"), action("agentc.lookup"), says(R"({"id":"CHO-7"})"), reply("Sent.")});
  Result r = print({"look", "it", "up"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  EXPECT_NE(r.err.find(".env"), std::string::npos) << "the notice names what was read: " << r.err;
  EXPECT_EQ(read_file(calls), "") << "the connector was called";
}

// The same in the chat: asked (not read-only any more), naming what was read; a no keeps it in.
// A read outside the workspace the user says yes to counts the same.
TEST_F(Attack, InTheChatACallAfterASecretReadIsAskedNamingWhatWasRead) {
  write(repo.root() + "/.env", fmt::format("API_TOKEN={}\n", kTokenMarker));
  write(home.root() + "/outside.txt", "OUTSIDE-TEXT\n");
  serve({action("read", R"("path":".env")"), action("agentc.lookup"), says(R"({"id":"CHO-7"})"), reply("Kept."),
         action("read", R"("path":"../outside.txt")"), action("agentc.lookup"), says(R"({"id":"CHO-8"})"),
         reply("Read.")});
  auto client = hello_client(home);
  ASSERT_TRUE(client);
  chat::DaemonTools daemon(*client, repo.root());
  ASSERT_EQ(daemon.open_session("chat"), "");
  chat::ModelConfig mc;
  mc.server = model->url();
  mc.model = "m1";
  chat::ModelClient mclient(mc);
  ScriptedFront front;
  front.answers = {{chat::Answer::kNo, ""}, {chat::Answer::kYes, ""}, {chat::Answer::kNo, ""}};
  chat::Agent agent(mclient, daemon, front, chat::AgentOptions{"chat"});
  ASSERT_EQ(agent.start(), "");
  chat::TurnResult t = agent.turn("look it up");
  ASSERT_FALSE(t.error) << t.error->message;
  ASSERT_EQ(front.asked.size(), 1u);
  EXPECT_EQ(front.asked[0].action, "agentc.lookup");
  EXPECT_FALSE(front.asked[0].read_only);
  EXPECT_NE(front.asked[0].why.find(".env"), std::string::npos) << front.asked[0].why;
  EXPECT_EQ(read_file(calls), "");
  // A read outside the workspace is asked; yes reads it.
  agent.clear();
  chat::TurnResult t2 = agent.turn("read the file beside the repository");
  ASSERT_EQ(front.asked.size(), 3u);
  EXPECT_EQ(front.asked[1].action, "read");
  EXPECT_NE(front.asked[1].why.find("outside the workspace"), std::string::npos) << front.asked[1].why;
  ASSERT_EQ(t2.actions.size(), 2u);
  EXPECT_EQ(t2.actions[0].status, "ran") << t2.actions[0].text;
  EXPECT_NE(t2.actions[0].text.find("OUTSIDE-TEXT"), std::string::npos);
  // What was read outside may not leave unasked either.
  EXPECT_EQ(front.asked[2].action, "agentc.lookup");
  EXPECT_NE(front.asked[2].why.find("outside.txt"), std::string::npos) << front.asked[2].why;
  EXPECT_EQ(t2.actions[1].status, "declined");
  EXPECT_EQ(read_file(calls), "");
}

// Finding 3: with `allow run:git` and `deny run:git push`, no spelling of a push runs, and a git
// option that runs another program is asked (print mode: declined), never run under run:git.
TEST_F(Attack, CommandRulesHoldForEverySpelling) {
  ASSERT_EQ(oppx({"permissions", "allow", "run:git"}).exit_code, 0);
  ASSERT_EQ(oppx({"permissions", "deny", "run:git push"}).exit_code, 0);
  std::string pwned = home.root() + "/pwned";
  std::vector<std::string> spellings = {"git  push",        "git 'push'",
                                        "git -c x=y push",  "git --no-pager push",
                                        "true && git push", "git -c \"alias.pw=!touch " + pwned + "\" pw"};
  std::vector<std::string> steps;
  for (const auto& c : spellings) steps.push_back(action("run", R"("command":)" + json_text(c)));
  steps.push_back(action("run", R"("command":"git --version")"));
  steps.push_back(reply("Done."));
  serve(steps);
  json::object out = print_json({"push", "it"}, 6);
  ASSERT_EQ(out.at("actions").as_array().size(), spellings.size() + 1) << out;
  for (std::size_t i = 0; i < spellings.size(); ++i)
    EXPECT_EQ(status(out, i), "declined") << spellings[i] << ": " << text(out, i);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_NE(text(out, i).find("denied"), std::string::npos) << text(out, i);
  EXPECT_EQ(status(out, spellings.size()), "ran") << "an allowed command still runs: " << text(out, spellings.size());
  struct stat st {};
  EXPECT_NE(::stat(pwned.c_str(), &st), 0) << "the alias ran a shell command";
}

// Finding 10: print mode's hint quotes the rule for the shell, and names none for a command that no
// rule can allow (it chains commands or redirects).
TEST_F(Attack, PrintModesHintIsSafeToPaste) {
  serve({action("run", R"("command":"git status -s")"), action("run", R"("command":"git status -s; pwd > out")"),
         reply("Done.")});
  Result r = print({"status"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  EXPECT_NE(r.err.find("oppx permissions allow 'run:git status -s'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("allow run:git status -s;"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("allow 'run:git status -s; pwd"), std::string::npos) << r.err;
}

// Commands: a command a rule allows runs in the sandbox, which does not show ~/.ssh, cannot write
// outside the workspace and has no network.
TEST_F(Attack, AnAllowedCommandCannotSeeTheKeysOrWriteOutside) {
  if (!chat::sandbox_support().available) GTEST_SKIP() << chat::sandbox_support().reason;
  ASSERT_EQ(oppx({"permissions", "allow", "run:cat"}).exit_code, 0);
  ASSERT_EQ(oppx({"permissions", "allow", "run:touch"}).exit_code, 0);
  std::string outside = home.root() + "/written";
  serve({action("run", R"("command":)" + json_text("cat " + key)),
         action("run", R"("command":)" + json_text("touch " + outside)), action("run", R"("command":"touch inside")"),
         reply("Done.")});
  json::object out = print_json({"look"}, 0);
  EXPECT_EQ(status(out, 0), "failed") << text(out, 0);
  // The test's HOME is under /tmp, which the sandbox replaces with a private one: the touch may
  // succeed there, and nothing appears outside.
  EXPECT_EQ(status(out, 2), "ran") << text(out, 2);
  struct stat st {};
  EXPECT_NE(::stat(outside.c_str(), &st), 0);
  EXPECT_EQ(::stat((repo.root() + "/inside").c_str(), &st), 0);
  EXPECT_EQ(sent_out().find(kKeyMarker), std::string::npos) << "the key reached the model server";
}

// config.json's "sandbox" sets the mode of every command: read-only refuses a write in the
// workspace too; a mode it does not know is said, and the default stands.
TEST_F(Attack, TheSandboxModeComesFromConfigJson) {
  if (!chat::sandbox_support().available) GTEST_SKIP() << chat::sandbox_support().reason;
  ASSERT_EQ(oppx({"permissions", "allow", "run:touch"}).exit_code, 0);
  write(home.root() + "/config/oppx/config.json", R"({"sandbox": "read-only"})");
  serve({action("run", R"("command":"touch inside")"), reply("Done.")});
  json::object out = print_json({"touch"}, 0);
  EXPECT_EQ(status(out, 0), "failed") << text(out, 0);
  struct stat st {};
  EXPECT_NE(::stat((repo.root() + "/inside").c_str(), &st), 0);
  write(home.root() + "/config/oppx/config.json", R"({"sandbox": "none"})");
  serve({action("run", R"("command":"touch inside")"), reply("Done.")});
  Result r = print({"touch"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(R"("sandbox" is one of)"), std::string::npos) << r.err;
  EXPECT_EQ(::stat((repo.root() + "/inside").c_str(), &st), 0) << "workspace-write stands";
}

// "No silent way out" for commands: after a secret was read, a command that has the network (the
// project's sandbox:network rule) is asked, so print mode declines it; without the network the same
// command runs, and a deny of sandbox:network wins over config.json.
TEST_F(Attack, AfterASecretReadOnlyACommandWithTheNetworkIsAsked) {
  if (!chat::sandbox_support().available) GTEST_SKIP() << chat::sandbox_support().reason;
  write(repo.root() + "/.env", fmt::format("API_TOKEN={}\n", kTokenMarker));
  ASSERT_EQ(oppx({"permissions", "allow", "run:echo"}).exit_code, 0);
  auto script = [&] {
    serve({action("read", R"("path":".env")"), action("run", R"("command":"echo sent")"), reply("Done.")});
  };
  script();
  EXPECT_EQ(status(print_json({"go"}, 0), 1), "ran") << "no network: nothing can leave";
  ASSERT_EQ(oppx({"permissions", "allow", "sandbox:network"}).exit_code, 0);
  script();
  json::object out = print_json({"go"}, 6);
  EXPECT_EQ(status(out, 1), "declined");
  EXPECT_NE(text(out, 1).find(".env"), std::string::npos) << text(out, 1);
  ASSERT_EQ(oppx({"permissions", "deny", "sandbox:network"}).exit_code, 0);
  write(home.root() + "/config/oppx/config.json", R"({"sandbox_network": true})");
  script();
  EXPECT_EQ(status(print_json({"go"}, 0), 1), "ran") << "the deny rule takes the network away";
}

}  // namespace
}  // namespace oppx::test
