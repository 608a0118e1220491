// oppx -p MESSAGE [--json] [--plan] [-c]: one turn of the agent loop, headless. The reply streams
// to stdout as the model writes it (or one JSON object with --json); notices go to stderr. Print
// mode cannot ask: what it would ask is declined, and the exit status says so.
#include "chat/agent.h"
#include "chat/sandbox.h"
#include "chat/conversations.h"
#include "cli/agent_setup.h"
#include "chat/browser.h"
#include "cli/browser.h"
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/output.h"
#include "cli/probe.h"
#include "common/text.h"
#include "common/tool_text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <map>

#include <climits>
#include <unistd.h>

extern char** environ;

namespace oppx::cli {

namespace json = boost::json;

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (auto eq = kv.find('='); eq != std::string_view::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

void print_model_error(const chat::ModelError& e) {
  fmt::print(stderr, "oppx: {}\n", e.message);
  for (std::size_t i = 0; i < e.steps.size(); ++i) fmt::print(stderr, "  {}. {}\n", i + 1, escape_controls(e.steps[i]));
}

namespace {

int model_failed(const chat::ModelError& e, bool as_json, json::object out) {
  print_model_error(e);
  if (as_json) {
    json::array steps;
    for (const auto& s : e.steps) steps.emplace_back(s);
    out["error"] = json::object{{"kind", e.kind}, {"message", e.message}, {"steps", std::move(steps)}};
    fmt::print("{}", json_line(out));
  }
  return kExitModel;
}

}  // namespace

// A repository's connectors waiting for consent, and those not running, once, on stderr.
std::string start_browser_if_on(chat::DaemonTools& daemon) {
  if (!chat::browser_auto()) return {};
  if (std::string why = prepare_browser(); !why.empty()) return why;
  return daemon.browser_start();
}

void tell_not_offered(const chat::Agent& agent) {
  for (const auto& c : agent.not_offered()) {
    if (c.state == "waiting") {
      fmt::print(stderr, "oppx: {} (this repository's connector) waits for your consent and is not offered{}\n",
                 escape_controls(c.name),
                 c.approve.empty() ? std::string() : ": run `" + escape_controls(c.approve) + "` to approve it");
    } else if (c.state == "failed" || c.state == "stopped") {
      fmt::print(stderr, "oppx: {} is {} and not offered: {}\n", escape_controls(c.name), c.state,
                 escape_controls(c.reason));
    } else if (c.state == "unsupported") {
      fmt::print(stderr, "oppx: {} cannot be used: {}\n", escape_controls(c.name), escape_controls(c.reason));
    }
  }
}

void warn_cost(const chat::Agent& agent, bool only_heavy) {
  if (!agent.context().tokens) return;
  std::string lines;
  for (const auto& t : agent.tools()) lines += t.line + "\n";
  for (const auto& [kind, message] :
       cost_warnings(estimate_tokens(lines), *agent.context().tokens, "The connectors' tool lists take",
                     "`oppx mcp remove <name>` drops one")) {
    // At start only a heavy list is worth a word: a small window alone would repeat every run.
    if (!only_heavy || kind == "HEAVY_SHARE") fmt::print(stderr, "oppx: warning: {}\n", message);
  }
}

namespace {

class PrintFront : public chat::FrontEnd {
 public:
  explicit PrintFront(bool as_json) : as_json_(as_json) {}
  // The model's text, as it streams; the output filter (cli/output.h) escapes what it must.
  void reply_text(std::string_view piece) override {
    if (as_json_ || piece.empty()) return;
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    ends_with_newline_ = piece.back() == '\n';
    wrote_ = true;
  }
  void notice(std::string_view text) override { fmt::print(stderr, "oppx: {}\n", text); }
  void action_done(const chat::ActionRecord& r) override {
    if (r.status == "declined") fmt::print(stderr, "oppx: {} {}\n", escape_controls(r.name), escape_controls(r.text));
  }
  bool can_ask() const override { return false; }
  chat::Answer ask(const chat::Question&) override { return {}; }
  void finish() const {
    if (wrote_ && !ends_with_newline_) std::fputc('\n', stdout);
  }

 private:
  bool as_json_;
  bool wrote_ = false, ends_with_newline_ = false;
};

json::value action_json(const chat::ActionRecord& a) {
  return json::object{{"name", a.name}, {"arguments", a.arguments}, {"status", a.status}, {"text", a.text}};
}

int print_turn(Context& ctx) {
  auto started = std::chrono::steady_clock::now();
  bool as_json = take_flag(ctx.args, "--json");
  bool plan = take_flag(ctx.args, "--plan");
  bool cont = take_flag(ctx.args, "-c") || take_flag(ctx.args, "--continue");
  const Command& self = *find_command("", "-p");
  std::string message;
  for (const auto& a : ctx.args) {
    if (a.rfind("-", 0) == 0 && a != "-") return usage_error(self, "unknown option " + a);
    if (a == "-") continue;
    message += (message.empty() ? "" : " ") + a;
  }
  if (message.empty()) {
    if (::isatty(0) == 1) return usage_error(self, "give the message as an argument, or on stdin");
    message.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
    if (message.empty()) return usage_error(self, "the message on stdin is empty");
  }
  std::string cwd;
  if (char buf[PATH_MAX]; ::getcwd(buf, sizeof buf)) cwd = buf;

  json::object out{{"reply", ""}, {"actions", json::array{}}, {"connectors_down", json::array{}}};
  auto cfg = chat::load_model_config(environment());
  if (!cfg) return model_failed(cfg.error(), as_json, out);
  chat::ModelClient model(*cfg);
  if (auto m = model.resolve_model(); !m) return model_failed(m.error(), as_json, out);

  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  chat::DaemonTools daemon(conn->client, cwd);
  if (std::string why = daemon.open_session(plan ? "plan" : "print"); !why.empty()) {
    fmt::print(stderr, "oppx: the daemon did not open a session: {}\n", escape_controls(why));
    return kExitNoDaemon;
  }
  PrintFront front(as_json);
  chat::AgentOptions options{plan ? "plan" : "print"};
  std::string sandbox_problem;
  options.sandbox = chat::sandbox_policy_from_config(cwd, sandbox_problem);
  if (!sandbox_problem.empty()) fmt::print(stderr, "oppx: {}\n", escape_controls(sandbox_problem));
  chat::Agent agent(model, daemon, front, options);
  chat::Conversation conversation{{}, cwd, {}};
  if (cont) {
    auto last = chat::last_conversation(cwd);
    if (!last) {
      fmt::print(stderr, "oppx: {}; start one without -c\n", escape_controls(last.error()));
      return kExitFailed;
    }
    conversation = std::move(*last);
    agent.restore(conversation.messages);
  }
  if (std::string why = start_browser_if_on(daemon); !why.empty())
    fmt::print(stderr, "oppx: the browser is on but did not start: {}\n", escape_controls(why));
  if (std::string why = agent.start(); !why.empty()) {
    fmt::print(stderr, "oppx: the daemon did not list the connectors: {}\n", escape_controls(why));
    return kExitNoDaemon;
  }
  tell_not_offered(agent);
  warn_cost(agent, true);

  chat::TurnResult turn = agent.turn(message);
  front.finish();
  conversation.messages = agent.conversation();
  if (std::string why = chat::save_conversation(conversation); !why.empty())
    fmt::print(stderr, "oppx: warning: the conversation was not saved ({}); `-c` will not find it\n",
               escape_controls(why));

  out["reply"] = turn.reply;
  json::array actions, down;
  for (const auto& a : turn.actions) actions.push_back(action_json(a));
  for (const auto& c : turn.connectors_down) down.emplace_back(c);
  out["actions"] = std::move(actions);
  out["connectors_down"] = std::move(down);
  if (!turn.usage.empty()) out["usage"] = turn.usage;
  out["duration_ms"] =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  if (turn.error) return model_failed(*turn.error, as_json, out);
  if (as_json) fmt::print("{}", json_line(out));
  if (turn.declined()) return kExitDeclined;
  if (turn.step_bound || !turn.connectors_down.empty()) return kExitShort;
  return kExitOk;
}

}  // namespace

std::vector<Command> print_commands() {
  return {{"", "-p", "[MESSAGE] [--json] [--plan] [-c]", "Run one turn of the agent headless and print its reply.",
           "The message is the arguments, or stdin when there are none (`echo … | oppx -p`). The model\n"
           "server is config.json's \"server\" and \"model\" (or OPPX_SERVER and OPPX_MODEL); the key is\n"
           "read from the variable config.json's \"api_key_env\" names. The reply streams to stdout;\n"
           "notices (a connector down, one waiting for consent, an action declined) go to stderr.\n"
           "Print mode cannot ask: a call that needs permission is declined (`oppx permissions allow`\n"
           "lets it run), and it has the browser only with `oppx browser on` (it starts with the\n"
           "session, before the first request).\n"
           "  --json      print one JSON object: reply, actions (name, arguments, status, text),\n"
           "              connectors_down, usage, duration_ms (docs/protocol.md, \"oppx -p --json\")\n"
           "  --plan      plan mode: only actions that read are offered\n"
           "  -c          continue the last conversation of this folder\n"
           "Exit status: 0 a reply and nothing declined; 3 no daemon; 5 the model server failed;\n"
           "6 an action was declined; 7 the turn stopped short (a connector was down, or the bound\n"
           "of 25 steps).",
           print_turn}};
}

}  // namespace oppx::cli
