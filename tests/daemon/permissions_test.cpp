// daemon/permissions: the rules and their order (deny over everything, then allow, then a tool the
// connector marks read-only, else ask), command prefixes that never let a chained command through,
// the file kept 0600 in user state and set aside when it cannot be trusted; and as a user meets
// them: `oppx permissions` and permissions/judge over the socket with a real connector.
#include "daemon/permissions.h"
#include "tests/support/harness.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace oppx::test {
namespace {

namespace json = boost::json;
using daemon::PermissionStore;
using daemon::Rules;
using daemon::Verdict;

TEST(PermissionRules, FormsAndRefusals) {
  for (const char* ok : {"linear.save_issue", "linear.*", "my-conn_2.tool.with.dots", "run:git status", "run:npm test"})
    EXPECT_FALSE(daemon::rule_problem(ok)) << ok;
  for (const char* bad : {"linear", ".tool", "linear.", "run:", "run:   ", "bad name.tool", "x.tool name", "*.*"})
    EXPECT_TRUE(daemon::rule_problem(bad)) << bad;
}

struct Store : ::testing::Test {
  TempHome home;
  std::string path = home.root() + "/state/oppx/permissions.json";
  PermissionStore store{path};
  const std::string project = "/work/repo";
  using Answer = boost::system::result<bool, std::string>;
  // Without a worker the store writes at once: the answer is there when the call returns.
  Answer add(const std::string& rule, bool allow) {
    Answer out = std::string("no answer");
    store.add(project, rule, allow, [&](Answer r) { out = std::move(r); });
    return out;
  }
  Answer remove(const std::string& rule) {
    Answer out = std::string("no answer");
    store.remove(project, rule, [&](Answer r) { out = std::move(r); });
    return out;
  }
  void SetUp() override {
    ::mkdir((home.root() + "/state").c_str(), 0700);
    ::mkdir((home.root() + "/state/oppx").c_str(), 0700);
  }
};

TEST_F(Store, ADenyRuleWinsOverReadOnlyAndOverAnyAllow) {
  EXPECT_EQ(store.judge_tool(project, "linear", "get_issue", true).verdict, Verdict::kAllow);
  EXPECT_EQ(store.judge_tool(project, "linear", "save_issue", false).verdict, Verdict::kAsk);
  ASSERT_TRUE(add("linear.*", true));
  EXPECT_EQ(store.judge_tool(project, "linear", "save_issue", false).verdict, Verdict::kAllow);
  EXPECT_EQ(store.judge_tool(project, "github", "save_issue", false).verdict, Verdict::kAsk);
  ASSERT_TRUE(add("linear.save_issue", false));
  auto j = store.judge_tool(project, "linear", "save_issue", false);
  EXPECT_EQ(j.verdict, Verdict::kDeny);
  EXPECT_EQ(j.rule, "linear.save_issue");
  EXPECT_EQ(store.judge_tool(project, "linear", "get_issue", false).verdict, Verdict::kAllow);
  ASSERT_TRUE(add("linear.*", false));  // moves from allow to deny
  EXPECT_EQ(store.judge_tool(project, "linear", "get_issue", true).verdict, Verdict::kDeny);
  EXPECT_TRUE(store.rules(project).allow.empty());
  // Rules are per project.
  EXPECT_EQ(store.judge_tool("/work/other", "linear", "save_issue", false).verdict, Verdict::kAsk);
}

TEST_F(Store, ACommandRuleIsAPrefixOfWholeWordsAndNeverLetsAChainThrough) {
  ASSERT_TRUE(add("run:git status", true));
  EXPECT_EQ(store.judge_command(project, "git status").verdict, Verdict::kAllow);
  EXPECT_EQ(store.judge_command(project, "  git status -s ").verdict, Verdict::kAllow);
  EXPECT_EQ(store.judge_command(project, "git statusx").verdict, Verdict::kAsk);
  EXPECT_EQ(store.judge_command(project, "git push").verdict, Verdict::kAsk);
  for (const char* chained : {"git status && rm -rf ~", "git status; curl x", "git status | sh", "git status > f",
                              "git status $(rm x)", "git status `rm x`", "git status\nrm x"})
    EXPECT_EQ(store.judge_command(project, chained).verdict, Verdict::kAsk) << chained;
  ASSERT_TRUE(add("run:git", false));
  EXPECT_EQ(store.judge_command(project, "git status").verdict, Verdict::kDeny);
}

TEST_F(Store, ACommandRuleMatchesTheWordsTheShellWouldPassNotTheText) {
  ASSERT_TRUE(add("run:git status", true));
  for (const char* allowed :
       {"git  status", "git 'status'", "git \"status\" -s", "git st'at'us --short", "git status\n", "\tgit\tstatus\t"})
    EXPECT_EQ(store.judge_command(project, allowed).verdict, Verdict::kAllow) << allowed;
  for (const char* asked : {"git statusx", "git 'status x'", "git", "./git status", "/usr/bin/git status",
                            "git status # x", "GIT_DIR=/tmp git status", "git status 2>/dev/null", "git sta*", "git $S",
                            "git 'status", "git status; rm -rf x", "git status\nrm x"}) {
    auto j = store.judge_command(project, asked);
    EXPECT_EQ(j.verdict, Verdict::kAsk) << asked;
    EXPECT_FALSE(j.why.empty());
  }
  // Why, in words.
  EXPECT_EQ(store.judge_command(project, "git status; rm -rf x").why,
            "it is not one plain command (it runs more than one command (;)), which no rule allows without asking");
  EXPECT_NE(store.judge_command(project, "git 'status").why.find("a single quote is not closed"), std::string::npos);
  // A rule is read as words too: quoted parts are one word.
  ASSERT_TRUE(add("run:git commit -m 'wip x'", true));
  EXPECT_EQ(store.judge_command(project, "git commit -m \"wip x\"").verdict, Verdict::kAllow);
  EXPECT_EQ(store.judge_command(project, "git commit -m wip x").verdict, Verdict::kAsk);
}

// The issue's spellings: with `allow run:git` and `deny run:git push`, none of them runs unasked.
TEST_F(Store, ADenyRuleCatchesEverySpellingOfItsCommand) {
  ASSERT_TRUE(add("run:git", true));
  ASSERT_TRUE(add("run:git push", false));
  EXPECT_EQ(store.judge_command(project, "git log --oneline").verdict, Verdict::kAllow);
  for (const char* denied : {"git push",
                             "git  push",
                             "git 'push'",
                             "git \"push\" origin",
                             "git p\\ush",
                             "git -c x=y push",
                             "git --no-pager push",
                             "git -C dir push",
                             "git --git-dir=.git push -f",
                             "/usr/bin/git push",
                             "git push > log",
                             "true && git push",
                             "git status; git push",
                             "echo $(git push)",
                             "echo `git push`",
                             "sh -c 'git push'",
                             "bash -lc \"git push --force\"",
                             "eval git push",
                             "sudo git push",
                             "env A=1 git push",
                             "A=1 git push",
                             "timeout 5 git push",
                             "xargs git push < list",
                             "(git push)",
                             "git status\ngit push"}) {
    auto j = store.judge_command(project, denied);
    EXPECT_EQ(j.verdict, Verdict::kDeny) << denied << ": " << j.why;
    EXPECT_EQ(j.rule, "run:git push") << denied;
  }
  // A value of a global option is not the subcommand.
  EXPECT_EQ(store.judge_command(project, "git -C push status").verdict, Verdict::kAsk) << "-C is never allowed";
  EXPECT_NE(store.judge_command(project, "git -C push status").verdict, Verdict::kDeny);
  // An alias set on the command line runs a shell command under run:git: asked, never allowed.
  auto alias = store.judge_command(project, "git -c \"alias.pw=!touch /tmp/pwned\" pw");
  EXPECT_EQ(alias.verdict, Verdict::kAsk);
  EXPECT_NE(alias.why.find("`git -c` can make it run another program"), std::string::npos) << alias.why;
  // What cannot be read whole is never allowed: asked.
  EXPECT_EQ(store.judge_command(project, "git 'pu").verdict, Verdict::kAsk);
  EXPECT_EQ(store.judge_command(project, "git log $(cat <<EOF\nx\nEOF\n)").verdict, Verdict::kAsk);
}

TEST_F(Store, OptionsThatChangeWhatAProgramRunsAreNeverAllowedByARule) {
  for (const char* rule :
       {"run:git", "run:ssh", "run:find", "run:rg", "run:tar", "run:sh", "run:bash", "run:env", "run:xargs", "run:sudo",
        "run:timeout", "run:sed", "run:awk", "run:rsync", "run:npm", "run:make", "run:python3"})
    ASSERT_TRUE(add(rule, true)) << rule;
  for (const char* asked : {"git -c core.pager=sh log",
                            "git --config-env=core.pager=X log",
                            "git --exec-path=/tmp log",
                            "git --git-dir=/tmp/evil/.git status",
                            "git --work-tree /tmp status",
                            "git -C /tmp/evil status",
                            "git fetch --upload-pack='touch x' origin",
                            "git fetch --upload-p=x origin",
                            "git fetch -u x origin",
                            "git clone -u x url",
                            "git ls-remote --upload-pack x url",
                            "git push --receive-pack=x",
                            "git clone -c core.hooksPath=/tmp url",
                            "git rebase -x 'make test' main",
                            "git difftool --extcmd=x",
                            "git grep -O less x",
                            "git submodule foreach rm -rf .",
                            "git bisect run ./x",
                            "git config alias.x !sh",
                            "ssh -o ProxyCommand=x host",
                            "ssh -oProxyCommand=x host",
                            "ssh -vo LocalCommand=x host",
                            "ssh -F cfg h",
                            "find . -exec rm '{}' +",
                            "find . -execdir x +",
                            "find . -ok x +",
                            "find . -okdir x +",
                            "find . -delete",
                            "rg --pre ./x foo",
                            "rg --pre=./x foo",
                            "tar --to-command=sh -xf a.tar",
                            "tar -I ./x -xf a",
                            "tar --use-compress-program=./x -xf a",
                            "sh -c 'rm x'",
                            "bash -lc x",
                            "env rm -rf x",
                            "xargs rm",
                            "sudo rm x",
                            "timeout 5 rm x",
                            "sed -n p f",
                            "awk 1 f",
                            "rsync -e ./x a b",
                            "python3 -c 'import os'"}) {
    auto j = store.judge_command(project, asked);
    EXPECT_EQ(j.verdict, Verdict::kAsk) << asked;
    EXPECT_NE(j.why.find("which no rule allows"), std::string::npos) << asked << ": " << j.why;
  }
  for (const char* allowed :
       {"git log -c", "git grep -c x", "git fetch origin", "git clone url", "ssh host uptime", "find . -name x",
        "rg foo", "tar -xf a.tar", "sh ./build.sh", "npm test", "make -j4", "python3 tool.py"})
    EXPECT_EQ(store.judge_command(project, allowed).verdict, Verdict::kAllow) << allowed;
}

TEST_F(Store, TheFileIsPrivateAndOneThatCannotBeTrustedGrantsNothing) {
  ASSERT_TRUE(add("linear.*", true));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  auto again = add("linear.*", true);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again) << "already there";
  // Another store on the same file (a restarted daemon) reads the same rules.
  EXPECT_EQ(PermissionStore(path).rules(project).allow, std::vector<std::string>{"linear.*"});
  // Made writable by others: whoever can write it could allow anything; it is set aside.
  ::chmod(path.c_str(), 0666);
  EXPECT_EQ(store.judge_tool(project, "linear", "save_issue", false).verdict, Verdict::kAsk);
  EXPECT_NE(store.problem().find("can be read or written by others"), std::string::npos) << store.problem();
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "moved aside";
  // Not JSON: the same.
  std::ofstream(path) << "{not json";
  ::chmod(path.c_str(), 0600);
  EXPECT_TRUE(store.rules(project).allow.empty());
  EXPECT_NE(store.problem().find("is not valid JSON"), std::string::npos) << store.problem();
  ASSERT_TRUE(remove("nothing.here").has_value());
  EXPECT_FALSE(*remove("nothing.here"));
}

// Deny fails closed: a file set aside because others could write it still denies what it denied
// (its deny rules are written anew, 0600), and allows nothing; the problem says so.
TEST_F(Store, AFileThatCannotBeTrustedKeepsItsDenyRulesAndDropsItsAllowRules) {
  ASSERT_TRUE(add("run:git", true));
  ASSERT_TRUE(add("run:git push", false));
  ASSERT_TRUE(add("linear.*", true));
  ASSERT_TRUE(add("linear.delete_issue", false));
  ::chmod(path.c_str(), 0644);
  auto j = store.judge_command(project, "git  push");
  EXPECT_EQ(j.verdict, Verdict::kDeny) << j.why;
  EXPECT_EQ(store.judge_tool(project, "linear", "delete_issue", true).verdict, Verdict::kDeny);
  EXPECT_EQ(store.judge_tool(project, "linear", "save_issue", false).verdict, Verdict::kAsk) << "allow dropped";
  EXPECT_EQ(store.judge_command(project, "git status").verdict, Verdict::kAsk);
  EXPECT_NE(store.problem().find("can be read or written by others (mode 0644"), std::string::npos) << store.problem();
  EXPECT_NE(store.problem().find("its 2 deny rules still apply"), std::string::npos) << store.problem();
  EXPECT_NE(store.problem().find("none of its allow rules do"), std::string::npos) << store.problem();
  // Written anew, 0600: a restarted daemon reads the same deny rules and no allow rule.
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  Rules kept = PermissionStore(path).rules(project);
  EXPECT_EQ(kept.deny, (std::vector<std::string>{"run:git push", "linear.delete_issue"}));
  EXPECT_TRUE(kept.allow.empty());
  // The problem is said until the user writes a rule.
  EXPECT_FALSE(store.problem().empty());
  ASSERT_TRUE(add("run:git", true));
  EXPECT_TRUE(store.problem().empty());
  EXPECT_EQ(store.judge_command(project, "git -c a=b push").verdict, Verdict::kDeny);
}

// As a user meets them: the CLI for the project of the current folder, and the daemon's verdict
// on a real connector's tools (read-only as the connector says, not as a client claims).
struct Permissions : ::testing::Test {
  TempHome home;
  InRepository in_repo{home};
  const std::string& repo = in_repo.root();
  std::optional<SyncClient> c;  // connect(): the test's own connection, after hello
  void TearDown() override { oppx({"daemon", "stop"}); }
  void connect() {
    auto r = SyncClient::connect(home.socket());
    ASSERT_TRUE(r);
    c.emplace(std::move(*r));
    ASSERT_TRUE(c->call("hello", json::object{{"protocol", 1}}, 5s));
  }
  SyncClient::RequestResult call(std::string_view method, json::object params) {
    params["cwd"] = repo;
    return c->call(method, params, 20s);
  }
  json::object judge(json::object params) {
    params["cwd"] = repo;
    auto c = SyncClient::connect(home.socket());
    EXPECT_TRUE(c);
    if (!c) return {};
    EXPECT_TRUE(c->call("hello", json::object{{"protocol", 1}}, 5s));
    auto r = c->call("permissions/judge", params, 20s);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->as_object() : json::object{};
  }
};

TEST_F(Permissions, RulesFromTheCommandLineDecideTheDaemonsVerdict) {
  home.write_mcp_config(stdio_entry("fake", FAKE_MCP_SERVER, {"tools", home.root()}));
  // `mcp tools` waits for the start (`mcp list` answers while it starts): read-only is known then.
  ASSERT_EQ(oppx({"mcp", "tools", "fake"}).exit_code, 0);
  Result empty = oppx({"permissions"});
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_NE(empty.out.find("Permission rules for " + repo + "\n  allow: none\n  deny: none"), std::string::npos)
      << empty.out;
  // read: readOnlyHint in the connector's own list; write: none.
  auto read = judge({{"connector", "fake"}, {"tool", "read"}});
  EXPECT_EQ(read.at("decision"), "allow");
  EXPECT_EQ(read.at("read_only"), true);
  EXPECT_EQ(judge({{"connector", "fake"}, {"tool", "write"}}).at("decision"), "ask");

  Result allow = oppx({"permissions", "allow", "fake.*"});
  ASSERT_EQ(allow.exit_code, 0) << allow.err;
  EXPECT_NE(allow.out.find("Allowed fake.*"), std::string::npos) << allow.out;
  EXPECT_EQ(judge({{"connector", "fake"}, {"tool", "write"}}).at("decision"), "allow");
  Result deny = oppx({"permissions", "deny", "fake.read"});
  ASSERT_EQ(deny.exit_code, 0) << deny.err;
  auto denied = judge({{"connector", "fake"}, {"tool", "read"}});
  EXPECT_EQ(denied.at("decision"), "deny");
  EXPECT_EQ(denied.at("rule"), "fake.read");

  Result listed = oppx({"permissions", "list", "--json"});
  ASSERT_EQ(listed.exit_code, 0);
  auto o = json::parse(listed.out).as_object();
  EXPECT_EQ(o.at("allow"), json::parse(R"(["fake.*"])"));
  EXPECT_EQ(o.at("deny"), json::parse(R"(["fake.read"])"));
  EXPECT_EQ(o.at("project"), json::value(repo));

  Result bad = oppx({"permissions", "allow", "no rule"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("is not a rule"), std::string::npos) << bad.err;
  Result missing = oppx({"permissions", "remove", "fake.nothing"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("has no rule fake.nothing"), std::string::npos) << missing.err;
  Result removed = oppx({"permissions", "remove", "fake.read"});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(judge({{"connector", "fake"}, {"tool", "read"}}).at("decision"), "allow");

  // A repository cannot allow itself anything: the rules live in user state only.
  std::ofstream(repo + "/.mcp.json") << R"({"permissions": {"allow": ["run:rm"]}})";
  EXPECT_EQ(judge({{"command", "rm -rf build"}}).at("decision"), "ask");
}

TEST_F(Permissions, ASessionsAllowsLastAsLongAsItsConnectionAndAreNeverSaved) {
  home.write_mcp_config(stdio_entry("fake", FAKE_MCP_SERVER, {"tools", home.root()}));
  ASSERT_EQ(oppx({"mcp", "list", "--json"}).exit_code, 0);
  ASSERT_NO_FATAL_FAILURE(connect());
  auto early = call("permissions/allow", {{"rule", "fake.write"}, {"session", true}});
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().kind, "no_session");

  auto opened = call("session/open", {{"mode", "chat"}});
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_EQ(opened->at("project"), json::value(repo));
  auto allowed = call("permissions/allow", {{"rule", "fake.write"}, {"session", true}});
  ASSERT_TRUE(allowed) << allowed.error().message;
  EXPECT_EQ(allowed->at("session_allow"), json::parse(R"(["fake.write"])"));
  auto j = call("permissions/judge", {{"connector", "fake"}, {"tool", "write"}});
  ASSERT_TRUE(j);
  EXPECT_EQ(j->at("decision"), "allow");
  EXPECT_EQ(j->at("why"), "allowed for this session by the rule fake.write");
  // Another connection (another chat) is not allowed by it, and the file holds nothing.
  EXPECT_EQ(judge({{"connector", "fake"}, {"tool", "write"}}).at("decision"), "ask");
  auto saved = json::parse(oppx({"permissions", "list", "--json"}).out).as_object();
  EXPECT_TRUE(saved.at("allow").as_array().empty());
  // A deny rule still wins over it.
  ASSERT_EQ(oppx({"permissions", "deny", "fake.*"}).exit_code, 0);
  EXPECT_EQ(call("permissions/judge", {{"connector", "fake"}, {"tool", "write"}})->at("decision"), "deny");
  ASSERT_EQ(oppx({"permissions", "remove", "fake.*"}).exit_code, 0);
  // Removing takes it off the session.
  ASSERT_TRUE(call("permissions/remove", {{"rule", "fake.write"}}));
  EXPECT_EQ(call("permissions/judge", {{"connector", "fake"}, {"tool", "write"}})->at("decision"), "ask");
  // The connection closes: a new one, even after session/open, starts with none.
  ASSERT_TRUE(call("permissions/allow", {{"rule", "fake.write"}, {"session", true}}));
  ASSERT_NO_FATAL_FAILURE(connect());
  ASSERT_TRUE(call("session/open", {{"mode", "print"}}));
  EXPECT_EQ(call("permissions/judge", {{"connector", "fake"}, {"tool", "write"}})->at("decision"), "ask");
}

// The daemon decides: a session's tools/call that the rules would ask about reaches the connector
// only once that session answers yes to permissions/ask; a deny rule holds for every client.
TEST_F(Permissions, ASessionsCallTheRulesWouldAskAboutRunsOnlyOnItsYes) {
  home.write_mcp_config(stdio_entry("fake", FAKE_MCP_SERVER, {"tools", home.root()}));
  ASSERT_EQ(oppx({"mcp", "tools", "fake"}).exit_code, 0);
  ASSERT_NO_FATAL_FAILURE(connect());
  std::vector<json::value> asked;
  std::string answer = "no";
  c->on_request([&](const std::string& method, const json::value& params) -> SyncClient::RequestResult {
    EXPECT_EQ(method, "permissions/ask");
    asked.push_back(params);
    return json::value(json::object{{"answer", answer}});
  });
  auto invocations = [&] {
    std::string text = read_file(home.root() + "/invocations");
    return std::count(text.begin(), text.end(), '\n');
  };
  auto write = [&] {
    return call("tools/call", {{"connector", "fake"}, {"tool", "write"}, {"arguments", {{"n", 1}}}});
  };
  ASSERT_TRUE(call("session/open", {{"mode", "editor"}}));

  // No: declined, and nothing reached the connector.
  auto no = write();
  ASSERT_FALSE(no);
  EXPECT_EQ(no.error().kind, "declined");
  EXPECT_EQ(no.error().message, "fake.write was not run: the session said no");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0], json::parse(R"({"connector":"fake","tool":"write","arguments":{"n":1},
      "why":"it may change something and no rule allows it","rule":"fake.write","read_only":false})"));
  EXPECT_EQ(invocations(), 0);

  // A read-only tool is not asked about.
  call("tools/call", {{"connector", "fake"}, {"tool", "read"}});
  EXPECT_EQ(asked.size(), 1u);
  EXPECT_EQ(invocations(), 2) << "it crashed the first time, and a read-only call is repeated once";

  // Yes: it runs (and the fake crashes in it, as it always does).
  answer = "yes";
  auto yes = write();
  EXPECT_EQ(asked.size(), 2u);
  EXPECT_EQ(invocations(), 3);
  ASSERT_FALSE(yes);
  EXPECT_NE(yes.error().kind, "declined");

  // Session: asked once, then allowed for this connection only, never saved.
  answer = "session";
  ASSERT_TRUE(call("mcp/reconnect", {{"name", "fake"}}));
  write();
  ASSERT_TRUE(call("mcp/reconnect", {{"name", "fake"}}));
  write();
  EXPECT_EQ(asked.size(), 3u);
  EXPECT_EQ(invocations(), 5);
  EXPECT_TRUE(json::parse(oppx({"permissions", "list", "--json"}).out).at("allow").as_array().empty());

  // Plan mode: a tool that is not read-only is refused without asking.
  ASSERT_TRUE(call("session/open", {{"mode", "plan"}}));
  auto plan = write();
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().kind, "denied");
  EXPECT_NE(plan.error().message.find("plan mode"), std::string::npos) << plan.error().message;

  // Always: saved as a rule; the next session is not asked.
  ASSERT_TRUE(call("session/open", {{"mode", "chat"}}));
  answer = "always";
  ASSERT_TRUE(call("mcp/reconnect", {{"name", "fake"}}));
  write();
  EXPECT_EQ(asked.size(), 4u);
  EXPECT_EQ(invocations(), 6);
  EXPECT_EQ(json::parse(oppx({"permissions", "list", "--json"}).out).at("allow"), json::parse(R"(["fake.write"])"));

  // A deny rule holds for every client, a session or a command the user typed.
  ASSERT_EQ(oppx({"permissions", "deny", "fake.write"}).exit_code, 0);
  auto denied = write();
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().kind, "denied");
  EXPECT_EQ(denied.error().message,
            "fake.write was not run: denied by the rule fake.write; `oppx permissions remove fake.write` lifts it");
  Result typed = oppx({"mcp", "call", "fake", "write"});
  EXPECT_NE(typed.exit_code, 0);
  EXPECT_NE(typed.err.find("denied by the rule fake.write"), std::string::npos) << typed.err;
  EXPECT_EQ(asked.size(), 4u);
  EXPECT_EQ(invocations(), 6);
}

TEST_F(Permissions, ASessionWhoseClientCannotBeAskedIsDeclinedWithTheRuleToAllowIt) {
  home.write_mcp_config(stdio_entry("fake", FAKE_MCP_SERVER, {"tools", home.root()}));
  ASSERT_EQ(oppx({"mcp", "tools", "fake"}).exit_code, 0);
  ASSERT_NO_FATAL_FAILURE(connect());
  ASSERT_TRUE(call("session/open", {{"mode", "editor"}}));
  auto r = call("tools/call", {{"connector", "fake"}, {"tool", "write"}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "declined");
  EXPECT_NE(r.error().message.find("this session's client cannot be asked; allow it with `oppx permissions allow "
                                   "fake.write`"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(::access((home.root() + "/invocations").c_str(), F_OK), 0) << "nothing reached the connector";
}

}  // namespace
}  // namespace oppx::test
