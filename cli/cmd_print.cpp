// oppx -p MESSAGE [--json] [--plan] [-c]: one turn of the agent loop, headless. The reply streams
// to stdout as the model writes it (or one JSON object with --json); notices go to stderr. Print
// mode cannot ask: what it would ask is declined, and the exit status says so.
#include "chat/agent.h"
#include "cli/agent_client.h"
#include "cli/agent_setup.h"
#include "chat/browser.h"
#include "cli/browser.h"
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/output.h"
#include "cli/probe.h"
#include "common/text.h"
#include "common/tool_text.h"
#include "proto/agent_api.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
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
void tell_not_offered(const std::vector<chat::ConnectorNote>& notes) {
  for (const auto& c : notes) {
    if (c.state == "waiting") {
      fmt::print(stderr, "oppx: {} (this repository's connector) waits for your consent and is not offered{}\n",
                 escape_controls(c.name),
                 c.approve.empty() ? std::string() : ": run `" + escape_controls(c.approve) + "` to approve it");
    } else if (c.state == "failed" || c.state == "stopped" || c.state == "login") {
      fmt::print(stderr, "oppx: {} is {} and not offered: {}\n", escape_controls(c.name),
                 c.state == "login" ? "waiting for a login" : c.state, escape_controls(c.reason));
    } else if (c.state == "starting") {
      fmt::print(stderr, "oppx: {} is still starting and not offered yet; it joins once it runs\n",
                 escape_controls(c.name));
    } else if (c.state == "unsupported") {
      fmt::print(stderr, "oppx: {} cannot be used: {}\n", escape_controls(c.name), escape_controls(c.reason));
    }
  }
}

namespace {

// What the daemon's agent says as the turn goes (agent/event): the reply streams to stdout (the
// output filter, cli/output.h, escapes what it must), notices and declined actions go to stderr.
// Print mode cannot ask.
class PrintEvents : public chat::FrontEnd {
 public:
  explicit PrintEvents(bool as_json) : as_json_(as_json) {}
  void reply_text(std::string_view text) override {
    if (as_json_ || text.empty()) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    ends_with_newline_ = text.back() == '\n';
    wrote_ = true;
  }
  void notice(std::string_view text) override { fmt::print(stderr, "oppx: {}\n", text); }
  void action_done(const chat::ActionRecord& a) override {
    if (a.status == "declined") fmt::print(stderr, "oppx: {} {}\n", escape_controls(a.name), escape_controls(a.text));
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

// agent/open's error: printed, with the exit status it gives.
int open_failed(const AgentClient::Failure& e, bool as_json, json::object out) {
  if (e.model) return model_failed(*e.model, as_json, out);
  if (e.no_conversation) {
    fmt::print(stderr, "oppx: {}; start one without -c\n", escape_controls(e.message));
    return e.exit_code;
  }
  fmt::print(stderr, "oppx: {}\n", escape_controls(e.message));
  return e.exit_code;
}

int print_turn(Context& ctx) {
  auto started = std::chrono::steady_clock::now();
  bool as_json = take_flag(ctx.args, "--json");
  bool plan = take_flag(ctx.args, "--plan");
  bool cont = take_flag(ctx.args, "-c") || take_flag(ctx.args, "--continue");
  const Command& self = *find_command("", "-p");
  // What a connector's server asks the user: declined (print mode cannot ask), unless
  // --elicit accept-defaults says to accept a form with its defaults.
  std::string elicit = "decline";
  if (auto e = std::find(ctx.args.begin(), ctx.args.end(), "--elicit"); e != ctx.args.end()) {
    elicit = e + 1 != ctx.args.end() ? *(e + 1) : "";
    if (elicit != "decline" && elicit != "accept-defaults")
      return usage_error(self, "--elicit takes decline or accept-defaults (print mode cannot ask)");
    ctx.args.erase(e, e + 2);
  }
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
  PrintEvents events(as_json);
  // The agent runs in the daemon (agent/open, agent/turn); print mode cannot ask.
  AgentClient agent(ctx.socket, {cwd, plan ? "plan" : "print", false, cont, {}, std::nullopt, elicit}, events);
  auto info = agent.open();
  if (!info) return open_failed(info.error(), as_json, out);
  for (const auto& n : info->notices) fmt::print(stderr, "oppx: {}\n", escape_controls(n));
  std::vector<chat::ConnectorNote> notes;
  for (const auto& c : info->not_offered) notes.push_back({c.name, c.state, c.reason, c.approve, c.steps});
  tell_not_offered(notes);
  // At start only a heavy list is worth a word: a small window alone would repeat every run.
  for (const auto& w : info->warnings)
    if (w.kind == "HEAVY_SHARE") fmt::print(stderr, "oppx: warning: {}\n", w.message);

  AgentClient::Turn turned = agent.turn(message);
  events.finish();
  if (turned.cut || (!turned.why.empty() && !turned.result.error)) {
    fmt::print(stderr, "oppx: {}\n", escape_controls(turned.why));
    return turned.cut ? kExitNoDaemon : kExitFailed;
  }
  const proto::AgentTurnResult* turn = &turned.result;

  out["reply"] = turn->reply;
  json::array actions;
  for (const auto& a : turn->actions)
    actions.push_back(
        json::object{{"name", a.name}, {"arguments", a.arguments}, {"status", a.status}, {"text", a.text}});
  out["actions"] = std::move(actions);
  out["connectors_down"] = json::value_from(turn->connectors_down);
  if (!turn->usage.empty()) out["usage"] = turn->usage;
  out["duration_ms"] =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  if (turn->error) return model_failed(model_error_of(*turn->error), as_json, out);
  if (as_json) fmt::print("{}", json_line(out));
  if (turn->declined) return kExitDeclined;
  if (turn->step_bound || !turn->connectors_down.empty()) return kExitShort;
  return kExitOk;
}

}  // namespace

std::vector<Command> print_commands() {
  return {{"", "-p", "[MESSAGE] [--json] [--plan] [-c] [--elicit HOW]",
           "Run one turn of the agent headless and print its reply.",
           "The message is the arguments, or stdin when there are none (`echo … | oppx -p`). The model\n"
           "server is config.json's \"server\" and \"model\" (or OPPX_SERVER and OPPX_MODEL); the key is\n"
           "read from the variable config.json's \"api_key_env\" names. The reply streams to stdout;\n"
           "notices (a connector down, one waiting for consent, an action declined) go to stderr.\n"
           "Print mode cannot ask: a call that needs permission is declined (`oppx permissions allow`\n"
           "lets it run), and it has the browser only with `oppx browser on` (it starts with the\n"
           "session, before the first request). A question a connector's server asks during a call (a\n"
           "form, or an address to open) is declined, and said on stderr.\n"
           "  --json      print one JSON object: reply, actions (name, arguments, status, text),\n"
           "              connectors_down, usage, duration_ms (docs/protocol.md, \"oppx -p --json\")\n"
           "  --plan      plan mode: only actions that read are offered\n"
           "  -c          continue the last conversation of this folder\n"
           "  --elicit accept-defaults\n"
           "              accept such a form with the defaults its server gives (declined when they\n"
           "              do not complete it); --elicit decline is the default\n"
           "Exit status: 0 a reply and nothing declined; 3 no daemon; 5 the model server failed;\n"
           "6 an action was declined; 7 the turn stopped short (a connector was down, or the bound\n"
           "of 25 steps).",
           print_turn}};
}

}  // namespace oppx::cli
