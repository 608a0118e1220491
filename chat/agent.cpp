// The agent loop: steps of one action each, the guards (repeat, refused, step bound), asking
// through the front end with the daemon's verdict, a connector down in the turn, and a
// conversation kept inside the model's context. What the model named is checked, and a tool's
// arguments asked for, in action_checks.cpp.
#include "chat/agent.h"
#include "proto/decode.h"

#include "chat/action_checks.h"
#include "chat/builtins.h"
#include "chat/mentions.h"
#include "chat/workspace.h"
#include "common/shell_words.h"
#include "common/text.h"
#include "common/tool_text.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

namespace oppx::chat {

namespace json = boost::json;

namespace {

constexpr std::chrono::milliseconds kRunLimit{120'000};
constexpr int kMaxStepUps = 2;  // wider logins asked for one call
constexpr std::string_view kContinue = "once it is back, ask me to continue";

using proto::string_field;

// The rule `c` answers with: every tool of the connector.
std::string c_rule(const ToolInfo& t) { return t.connector + ".*"; }

std::string numbered(const std::vector<std::string>& steps) {
  std::string s;
  for (std::size_t i = 0; i < steps.size(); ++i) s += fmt::format("\n  {}. {}", i + 1, steps[i]);
  return s;
}

void add_usage(json::object& sum, const std::optional<json::object>& usage) {
  if (!usage) return;
  for (const auto& [k, v] : *usage) {
    if (!v.is_int64() && !v.is_uint64()) continue;
    std::int64_t n = v.is_int64() ? v.as_int64() : static_cast<std::int64_t>(v.as_uint64());
    json::value& slot = sum[k];
    slot = (slot.is_int64() ? slot.as_int64() : 0) + n;
  }
}

// Arguments as a message shows them: cut at a few hundred characters (the whole of them stays in
// the action's record).
constexpr std::size_t kShownArguments = 300;
std::string shown(const json::object& args) { return cut_text(proto::json_text(args), kShownArguments); }

}  // namespace

bool TurnResult::declined() const {
  return std::any_of(actions.begin(), actions.end(), [](const ActionRecord& a) { return a.status == "declined"; });
}

// ---- the loop ----

Agent::Agent(ModelClient& model, DaemonTools& daemon, FrontEnd& front, AgentOptions options)
    : model_(model), daemon_(daemon), front_(front), options_(std::move(options)), deferred_(options_.tool_search) {}

std::string Agent::start() {
  context_ = model_.context_length();
  if (std::string why = daemon_.list(tools_, others_, denied_); !why.empty()) return why;
  rebuild_prompt(false);
  return {};
}

std::string Agent::refresh() {
  std::vector<ToolInfo> tools;
  std::vector<ConnectorNote> others;
  std::vector<std::string> denied;
  if (std::string why = daemon_.list(tools, others, denied); !why.empty()) return why;
  // A connector that runs again is offered again.
  for (const auto& t : tools) down_.erase(t.connector);
  tools_ = std::move(tools);
  others_ = std::move(others);
  denied_ = std::move(denied);
  rebuild_prompt(true);
  return {};
}

bool Agent::browser_running() const {
  if (down_.count(std::string(kBrowserConnector))) return false;
  return std::any_of(tools_.begin(), tools_.end(), [](const ToolInfo& t) { return t.connector == kBrowserConnector; });
}

bool Agent::browser_offered() const {
  return options_.browser && front_.can_ask() && options_.mode != "plan" && !browser_declined_ &&
         browser_failed_.empty() && !browser_running();
}

std::string Agent::start_browser(bool always) {
  if (browser_running()) return {};
  if (std::string why = front_.prepare_browser(); !why.empty()) return why;
  if (std::string why = daemon_.browser_start(); !why.empty()) return why;
  if (always) {
    if (auto saved = set_browser_auto(true); !saved)
      front_.notice("The browser started, but `always` was not saved: " + saved.error());
  }
  browser_declined_ = false;
  browser_failed_.clear();
  return refresh();  // its tools join the list: the prompt is rebuilt once
}

std::string Agent::stop_browser() {
  if (std::string why = daemon_.browser_stop(); !why.empty()) return why;
  return refresh();
}

std::vector<const ToolInfo*> Agent::offered() const {
  std::vector<const ToolInfo*> out;
  for (const auto& t : tools_) {
    if (down_.count(t.connector)) continue;
    if (options_.mode == "plan" && !t.read_only) continue;
    out.push_back(&t);
  }
  return out;
}

const ToolInfo* Agent::callable(const std::string& name) const {
  for (const auto& t : tools_) {
    if (t.full_name() != name) continue;
    if (down_.count(t.connector) || (options_.mode == "plan" && !t.read_only)) return nullptr;
    return &t;
  }
  return nullptr;
}

void Agent::rebuild_prompt(bool say_uncached) {
  std::string s = fmt::format(
      "You are oppx, a coding agent working in the folder {} on the user's machine, one action at a time.\n"
      "Answer every time with one JSON object: {{\"action\": <one of the actions below>, and that action's "
      "fields}}.\n\nActions:\n"
      "- reply: answer the user and end the turn; the whole answer goes in \"text\".\n"
      "- read: read a file; \"path\" (relative to the working folder), and \"offset\" (optional: the character to "
      "start from, to read on where a long file or result was cut).\n"
      "- grep: search the files for a regular expression; \"pattern\", and \"path\" (a folder or file, "
      "optional).\n",
      daemon_.cwd());
  if (options_.mode != "plan") s += "- run: run a shell command in the working folder; \"command\".\n";
  if (browser_offered())
    s += "- browser: start a headless browser for this session, to open a page (a local dev server or any URL), "
         "click, type, and read the page and its console errors; the user is asked first.\n";
  auto tools = offered();
  bool was_searching = deferred_.searching();
  deferred_.plan(tools, context_.tokens);
  if (deferred_.searching()) {
    s += deferred_.prompt_text(tools);
    if (!was_searching && options_.tool_search.mode == ToolSearchSettings::Mode::kAuto)
      front_.notice(fmt::format(
          "The {} connector tools would take about {} tokens, over {}% of the model's context: the model finds "
          "the ones it needs with {} instead (config.json \"tool_search\": \"never\" lists them all).",
          tools.size(), token_count(deferred_.list_tokens()), options_.tool_search.share_percent, kSearchAction));
  } else if (!tools.empty()) {
    s += "\nConnector tools (pick one by its name as the action; you are asked for its arguments next):\n";
    for (const ToolInfo* t : tools) s += "- " + t->line + "\n";
  }
  if (!denied_.empty()) {
    s += "\nDenied by the user's rules, so not offered (say so if the user asks for them): ";
    for (std::size_t i = 0; i < denied_.size(); ++i) s += (i ? ", " : "") + denied_[i];
    s += ".\n";
  }
  s += fmt::format("\nResults of actions come back marked as {}.\n", kUntrusted);
  if (options_.mode == "plan")
    s += "This is plan mode: only actions that read are offered. Look around, then reply with a plan; change "
         "nothing.\n";
  if (options_.mode == "print")
    s += "The user is not at the keyboard: an action that needs their permission is declined.\n";
  if (s == system_) return;
  if (prompt_built_ && say_uncached)
    front_.notice(
        "The tool list changed, so the system prompt was rebuilt: the next request is not served from "
        "the model server's prefix cache.");
  system_ = std::move(s);
  prompt_built_ = true;
}

json::object Agent::action_schema() const {
  json::array names{"reply", "read", "grep"};
  if (options_.mode != "plan") names.emplace_back("run");
  if (browser_offered()) names.emplace_back("browser");
  if (deferred_.searching()) names.emplace_back(kSearchAction);
  for (const ToolInfo* t : offered())
    if (deferred_.listed(*t)) names.emplace_back(t->full_name());
  json::object props{{"action", json::object{{"type", "string"}, {"enum", std::move(names)}}},
                     {"text", json::object{{"type", "string"}}},
                     {"path", json::object{{"type", "string"}}},
                     {"pattern", json::object{{"type", "string"}}},
                     {"offset", json::object{{"type", "integer"}}}};
  if (options_.mode != "plan") props["command"] = json::object{{"type", "string"}};
  if (deferred_.searching()) props["query"] = json::object{{"type", "string"}};
  return json::object{{"type", "object"},
                      {"properties", std::move(props)},
                      {"required", json::array{"action"}},
                      {"additionalProperties", false}};
}

json::array Agent::request_messages(const std::vector<Message>& extra) const {
  json::array a;
  a.push_back(json::object{{"role", "system"}, {"content", system_}});
  for (const auto* list : {&messages_, &extra}) {
    for (const auto& m : *list) a.push_back(json::object{{"role", m.role}, {"content", m.content}});
  }
  return a;
}

void Agent::fit_context(std::size_t extra_chars) {
  if (!context_.tokens || *context_.tokens <= 0) return;
  std::int64_t limit = *context_.tokens - std::min<std::int64_t>(2048, *context_.tokens / 4);
  auto total = [&] {
    std::size_t chars = system_.size() + extra_chars;
    for (const auto& m : messages_) chars += m.content.size() + 16;
    return static_cast<std::int64_t>((chars + 3) / 4);  // about 4 characters a token, as the probe counts
  };
  if (total() <= limit) return;
  bool changed = false;
  // The oldest results first, then (when that is not enough) the oldest messages, never the last.
  for (std::size_t i = 0; i + 1 < messages_.size() && total() > limit; ++i) {
    Message& m = messages_[i];
    if (!m.result || m.shortened || m.content.size() <= 400) continue;
    std::size_t was = m.content.size();
    m.content = cut_text(m.content.substr(0, 300), 300) +
                fmt::format("\n[… shortened from {} characters to make room in the model's context]", was);
    m.shortened = true;
    changed = true;
  }
  while (messages_.size() > 1 && total() > limit) {
    messages_.erase(messages_.begin());
    changed = true;
  }
  if (changed && !told_trimmed_) {
    told_trimmed_ = true;
    front_.notice(
        fmt::format("The conversation no longer fits the model's context ({} tokens): the oldest tool "
                    "results were shortened to make room.",
                    *context_.tokens));
  }
}

ModelResult<Completion> Agent::ask_model(json::object body, bool stream_reply, TurnResult& out) {
  body["model"] = model_.config().model;
  StreamingField action_field("action"), text_field("text");
  std::string action, pending;
  bool streaming = false;
  // A reply's leading blanks are held until its text shows: a blank reply is no reply.
  std::string blanks;
  bool shown_text = false;
  auto on_delta = [&](std::string_view piece) {
    if (!stream_reply) return;
    if (!action_field.done()) action += action_field.feed(piece);
    std::string text = text_field.feed(piece);
    if (!streaming && action_field.done()) {
      if (action != "reply") return;
      streaming = true;
      text = pending + text;
      pending.clear();
    }
    if (streaming) {
      if (!shown_text) {
        if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
          blanks += text;
          return;
        }
        text = std::exchange(blanks, {}) + text;
        shown_text = true;
      }
      if (!text.empty()) front_.reply_text(text);
    } else {
      pending += text;
    }
  };
  auto r = model_.complete(std::move(body), on_delta);
  if (r) add_usage(out.usage, r->usage);
  streamed_ = shown_text;
  return r;
}

void Agent::record(ActionRecord rec, const std::string& model_text, TurnResult& out, std::string exposed) {
  messages_.push_back({"user", model_text, rec.status == "ran" || rec.status == "failed", false, std::move(exposed)});
  front_.action_done(rec);
  out.actions.push_back(std::move(rec));
}

std::string Agent::exposure() const {
  std::vector<std::string> what;
  for (const auto& m : messages_) {
    if (!m.exposed.empty() && std::find(what.begin(), what.end(), m.exposed) == what.end()) what.push_back(m.exposed);
  }
  std::string s;
  for (std::size_t i = 0; i < what.size(); ++i) s += (i ? ", " : "") + what[i];
  return s;
}

void Agent::guard_exposure(DaemonTools::Verdict& v) const {
  if (v.decision == "deny") return;
  std::string what = exposure();
  if (what.empty()) return;
  v.decision = "ask";
  v.rule.clear();
  v.exposed = true;
  v.why = fmt::format("the conversation holds what was read from {}, and this call could send it out", what);
}

bool Agent::permitted(const Question& q, const DaemonTools::Verdict& v, const std::string& tool_rule,
                      const std::string& connector_rule, ActionRecord& rec) {
  if (v.decision == "allow") return true;
  rec.status = "declined";
  if (v.decision == "deny") {
    rec.text = denied_text(v);
    return false;
  }
  if (!front_.can_ask()) {
    rec.could_not_ask = true;
    if (v.exposed) {
      rec.text = fmt::format("not run: {}; print mode cannot ask, so nothing left; do it in the chat", v.why);
    } else if (!tool_rule.empty()) {
      rec.text = fmt::format(
          "not run: it needs your permission ({}) and print mode cannot ask; allow it with `oppx permissions allow "
          "{}`, or do it in the chat",
          v.why, shell_quote(tool_rule));
    } else {
      rec.text =
          fmt::format("not run: it needs your permission ({}) and print mode cannot ask; do it in the chat", v.why);
    }
    return false;
  }
  Answer a = front_.ask(q);
  if (q.once_only && (a.kind == Answer::kAlwaysTool || a.kind == Answer::kAlwaysConnector)) a.kind = Answer::kYes;
  switch (a.kind) {
    case Answer::kYes:
      return true;
    case Answer::kAlwaysTool:
    case Answer::kAlwaysConnector: {
      const std::string& rule = a.kind == Answer::kAlwaysTool || connector_rule.empty() ? tool_rule : connector_rule;
      if (std::string why = daemon_.allow(rule, false); !why.empty())
        front_.notice(fmt::format("The rule {} could not be saved: {}", rule, why));
      return true;
    }
    case Answer::kNo:
      rec.text = "not run: the user declined it";
      return false;
    case Answer::kText:
      rec.text = "not run: the user declined it and said what to do instead: " + a.text;
      return false;
  }
  return false;
}

void Agent::connector_down(const ToolInfo& tool, const DaemonTools::CallResult& r, const std::string& outcome,
                           TurnResult& out) {
  const std::string& c = tool.connector;
  down_.insert(c);
  out.connectors_down.push_back(c);
  down_steps_.insert(down_steps_.end(), r.steps.begin(), r.steps.end());
  front_.notice(fmt::format("{} is down: {}\n{}.{}", c, r.text, outcome, numbered(r.steps)));
  rebuild_prompt(true);
}

void Agent::run_tool(const ToolInfo& tool, TurnResult& out) {
  const std::string name = tool.full_name();
  messages_.push_back({"assistant", fmt::format("I'll call {} now.", name)});
  ActionRecord rec{name, {}, "", "", false};
  DaemonTools::Verdict v = daemon_.judge_tool(tool);
  if (v.decision == "deny") {
    permitted({}, v, name, c_rule(tool), rec);
    return record(rec, fmt::format("{} was not run: {}. Do not try it again.", name, rec.text), out);
  }
  ArgumentsModel model{[this](const std::string& ask) {
                         return request_messages({{"user", ask}});
                       },
                       [this](std::size_t extra_chars) { fit_context(extra_chars); },
                       [&](json::object body) { return ask_model(std::move(body), false, out); }};
  WrittenArguments written = write_arguments(tool, model);
  if (written.error) {
    out.error = std::move(written.error);
    return;
  }
  const std::optional<json::object>& args = written.arguments;
  if (!args) {
    rec.status = "failed";
    rec.text = "the model did not write usable arguments: " + written.problem;
    return record(rec, fmt::format("{} failed: {}.", name, rec.text), out);
  }
  rec.arguments = *args;
  std::string key = call_key(name, *args);
  const bool stateful = tool.connector == kBrowserConnector;
  if (auto f = failed_calls_.find(key); !stateful && f != failed_calls_.end()) {
    rec.status = "refused";
    rec.text = "this call failed before with the same arguments: " + f->second;
    return record(
        rec, fmt::format("{} was not run again: {}. Change the arguments or do something else.", name, rec.text), out);
  }
  if (std::string why = repeated(tool, key, turn_calls_, page_guard_); !why.empty()) {
    rec.status = why.find("loop") != std::string::npos ? "refused" : "repeat";
    rec.text = why;
    return record(rec, fmt::format("{} was not run: {}.", name, rec.text), out);
  }
  guard_exposure(v);
  Question q{name, "", *args, tool.read_only && !v.exposed, v.why, stateful, v.exposed};
  if (!permitted(q, v, name, c_rule(tool), rec)) {
    return record(rec, fmt::format("{} was not run: {}. Do not make this call again in this turn.", name, rec.text),
                  out);
  }
  if (stateful) {
    page_guard_.ran(key, tool.read_only);
  } else {
    turn_calls_.insert(key);
  }
  front_.action_started(name, *args);
  auto progress = [this](double p, std::optional<double> total, const std::string& m) { front_.progress(p, total, m); };
  // What the server asks the user during the call goes to the front end, never to the model.
  DaemonTools::Elicit elicit = [this](const proto::ElicitQuestion& q) { return front_.elicit(q); };
  DaemonTools::CallResult r = daemon_.call(tool, *args, progress, elicit);
  // A tool whose server wants a wider login (HTTP 403 insufficient_scope): the user, never the
  // model, is asked to log in again in place; the front end runs the login, and the call is
  // repeated, at most kMaxStepUps times.
  for (int round = 0; r.step_up && front_.can_ask() && round < kMaxStepUps; ++round) {
    Question login{"login", "", json::object{{"connector", tool.connector}}, false, r.text};
    if (front_.ask(login).kind != Answer::kYes) break;
    r = daemon_.call(tool, *args, progress, elicit);
  }
  std::string shown_args = shown(*args);
  if (r.down) {
    rec.status = "down";
    // The daemon repeats a call its connector dropped only when the tool only reads; any other
    // may have done its work before the program stopped (`oppx mcp call` says the same).
    std::string outcome =
        tool.read_only ? fmt::format("{} only reads (its connector says so), so it changed nothing", name)
                       : fmt::format(
                             "{} may or may not have run: {} went down while it was called, and a call that may "
                             "change something is not repeated; check whether it took effect before doing it again",
                             name, tool.connector);
    rec.text = fmt::format("{}: {}{}", outcome, r.text, numbered(r.steps));
    connector_down(tool, r, outcome, out);
    return record(rec,
                  fmt::format("{} is down ({}); its tools are gone for now. {}. Do not retry it or work around it. "
                              "In your reply: open with what was not done{}, pass on these steps to the user:{}\nand "
                              "end with \"{}\".",
                              tool.connector, r.text, outcome,
                              tool.read_only ? "" : fmt::format(", say that {} may or may not have run", name),
                              numbered(r.steps), kContinue),
                  out);
  }
  if (cancelled_) {
    rec.status = "failed";
    rec.text = "cancelled by the user (the connector was told); it may or may not have run";
    return record(rec, fmt::format("{} was cancelled by the user.", name), out);
  }
  if (!r.ok || r.is_error) {
    rec.status = "failed";
    rec.text = r.text;
    if (!stateful) failed_calls_[key] = r.text;
    return record(rec, fmt::format("{} failed with the arguments {} ({}):\n{}", name, shown_args, kUntrusted, r.text),
                  out);
  }
  rec.status = "ran";
  rec.text = r.text;
  kept_results_.insert(r.kept.begin(), r.kept.end());
  std::string exposed = looks_sensitive("", r.text) || looks_sensitive("", r.structured)
                            ? "the result of " + name + " (it looks secret)"
                            : "";
  // A structured result is given as its JSON (the text repeats it for display).
  if (!r.structured.empty()) {
    record(rec,
           fmt::format("Result of {} with the arguments {} ({}), as JSON:\n{}", name, shown_args, kUntrusted,
                       r.structured),
           out, std::move(exposed));
    return;
  }
  record(rec, fmt::format("Result of {} with the arguments {} ({}):\n{}", name, shown_args, kUntrusted, r.text), out,
         std::move(exposed));
}

void Agent::run_browser(TurnResult& out) {
  messages_.push_back({"assistant", proto::json_text(json::object{{"action", "browser"}})});
  ActionRecord rec{"browser", {}, "", "", false};
  Answer a = front_.ask(Question{"browser", "", {}, false, "it starts Chromium for this session"});
  if (a.kind == Answer::kNo) {
    browser_declined_ = true;
    rec.status = "declined";
    rec.text = "the user does not want a browser in this session";
    rebuild_prompt(true);  // the action leaves the list
    return record(rec,
                  "The browser was not started: the user said no, and that holds for this session. Do not ask for "
                  "it again; carry on without it.",
                  out);
  }
  if (a.kind == Answer::kText) {
    rec.status = "declined";
    rec.text = "not started; the user said instead: " + a.text;
    return record(rec, fmt::format("The browser was not started. The user said instead: {}", a.text), out);
  }
  front_.action_started("browser", {});
  bool always = a.kind == Answer::kAlwaysTool || a.kind == Answer::kAlwaysConnector;
  if (std::string why = start_browser(always); !why.empty()) {
    browser_failed_ = why;
    rec.status = "failed";
    rec.text = why;
    rebuild_prompt(true);
    return record(rec, fmt::format("The browser could not start: {}. Carry on without it.", why), out);
  }
  rec.status = "ran";
  rec.text = fmt::format("started; its tools ({}.browser_navigate and the others) are in the list", kBrowserConnector);
  record(rec,
         fmt::format("The browser started. Its tools ({}.browser_navigate, {}.browser_click, {}.browser_snapshot "
                     "and the others) are now actions you can take.",
                     kBrowserConnector, kBrowserConnector, kBrowserConnector),
         out);
}

void Agent::run_search(const std::string& query, TurnResult& out) {
  json::object args{{"query", query}};
  messages_.push_back({"assistant", proto::json_text(json::object{{"action", kSearchAction}, {"query", query}})});
  ActionRecord rec{std::string(kSearchAction), args, "", "", false};
  front_.action_started(rec.name, args);
  auto found = deferred_.search(daemon_, query, turn_message_, [this](const std::string& n) { return callable(n); });
  rec.status = found.error.empty() ? "ran" : "failed";
  rec.text = found.names.empty() ? found.model_text : "found " + fmt::format("{}", fmt::join(found.names, ", "));
  record(rec, found.model_text, out);
}

void Agent::run_builtin(const std::string& name, const json::object& action, TurnResult& out) {
  messages_.push_back({"assistant", proto::json_text(action)});
  ActionRecord rec{name, {}, "", "", false};
  for (const char* k : {"path", "pattern", "command"}) {
    if (std::string v = string_field(action, k); !v.empty()) rec.arguments[k] = v;
  }
  std::size_t offset = 0;
  if (const json::value* o = action.if_contains("offset"); name == "read" && o && o->is_int64() && o->as_int64() > 0) {
    offset = static_cast<std::size_t>(o->as_int64());
    rec.arguments["offset"] = o->as_int64();
  }
  std::string key = call_key(name, rec.arguments);
  bool outside_allowed = false;
  std::optional<Workspace> ws;
  SandboxPolicy policy;  // run's: the session's, with the project's sandbox:network rule
  // A file oppxd kept a cut result of this session's calls in: read where the daemon put it.
  const bool kept = name == "read" && kept_results_.count(string_field(action, "path"));
  if ((name == "read" || name == "grep") && !kept) {
    ws.emplace(Workspace::of(daemon_.cwd()));
    if (std::string path = string_field(action, "path"); !path.empty()) {
      PathCheck c = ws->check(path);
      if (c.place == Place::kDenied) {
        rec.status = "declined";
        rec.text = "not read: " + c.why;
        return record(rec, fmt::format("{} was not done: {}. Do not try it again, by any path.", name, c.why), out);
      }
      if (c.place == Place::kOutside) {
        // Asked each time (a yes is for this path, now); print mode declines.
        DaemonTools::Verdict v{"ask", c.why, ""};
        Question q{name, "", rec.arguments, true, c.why, true};
        if (!permitted(q, v, "", "", rec)) {
          return record(rec, fmt::format("{} was not done: {}. Do not try it again in this turn.", name, rec.text),
                        out);
        }
        outside_allowed = true;
      }
    }
  }
  if (name == "run") {
    std::string command = string_field(action, "command");
    DaemonTools::Verdict v = daemon_.judge_command(command);
    // The project's `sandbox:network` rule: allow gives commands the network, deny takes it.
    policy = options_.sandbox;
    if (auto net = daemon_.rule_says("sandbox:network")) policy.network = *net;
    bool contained = policy.mode == SandboxMode::kOff || sandbox_support().available;
    if (v.decision == "allow" && !contained) {
      v.decision = "ask";
      v.why = "commands cannot be sandboxed here (" + sandbox_support().reason + "), so each one is asked";
    }
    // A command with the network can send out what the conversation holds.
    if (policy.network || !commands_sandboxed()) guard_exposure(v);
    Question q{"run", command, rec.arguments, false, v.why, false, v.exposed};
    // The hint names a rule only for a plain command (no other can be allowed by one), quoted
    // for the shell it is pasted into.
    std::string rule = parse_shell(command).plain() ? "run:" + command : "";
    if (!command.empty() && !permitted(q, v, rule, "", rec)) {
      return record(rec, fmt::format("The command was not run: {}. Do not run it again in this turn.", rec.text), out);
    }
  }
  if (turn_calls_.count(key)) {
    rec.status = "repeat";
    rec.text = "the same action was already taken in this turn; its result is above";
    return record(rec, fmt::format("{} was not done again: {}.", name, rec.text), out);
  }
  turn_calls_.insert(key);
  front_.action_started(name, rec.arguments);
  BuiltinResult r;
  if (kept) {
    r = read_kept_result(string_field(action, "path"), options_.result_cap, offset);
  } else if (name == "read") {
    r = read_action(*ws, string_field(action, "path"), options_.result_cap, outside_allowed, offset);
  } else if (name == "grep") {
    r = grep_action(*ws, string_field(action, "pattern"), string_field(action, "path"), options_.result_cap,
                    outside_allowed);
  } else {
    r = run_action(daemon_.cwd(), string_field(action, "command"), kRunLimit, options_.result_cap, policy,
                   &run_control_);
  }
  rec.status = r.ok ? "ran" : "failed";
  rec.text = r.text;
  std::string what = shown(rec.arguments);
  std::string exposed;
  std::string source = r.resolved.empty() ? string_field(action, "path") : r.resolved;
  if (source.empty()) source = name == "run" ? "the output of a command" : "the workspace";
  if (r.ok && r.outside) {
    exposed = source + " (outside the workspace)";
  } else if (r.ok && (r.sensitive || looks_sensitive("", r.text))) {
    exposed = source + " (it looks secret)";
  }
  record(rec,
         fmt::format("{} {} {} ({}):\n{}", r.ok ? "Result of" : "Failed:", name, what,
                     name == "run" ? "its output" : kUntrusted, r.text),
         out, std::move(exposed));
}

void Agent::cancel(CancelledBy by) {
  if (!cancel_claimed_.exchange(true)) cancelled_by_ = by;  // the first cancel says who
  cancelled_ = true;
  run_control_.cancel();
  model_.cancel();
  daemon_.interrupt();
}

void Agent::set_mode(const std::string& mode) {
  options_.mode = mode;
  rebuild_prompt(true);
}

TurnResult Agent::turn(const std::string& message) {
  TurnResult out;
  turn_calls_.clear();
  down_steps_.clear();
  page_guard_.clear();
  cancelled_ = false;
  cancel_claimed_ = false;
  run_control_.reset();
  model_.uncancel();
  turn_message_ = message;
  // A connector's prompt as the message, its resources attached (chat/mentions.h).
  std::set<std::string> connectors;
  for (const auto& t : tools_) connectors.insert(t.connector);
  for (const auto& c : others_) connectors.insert(c.name);
  ExpandedMessage expanded = expand_message(message, connectors, daemon_);
  for (const auto& n : expanded.notices) front_.notice(n);
  if (!expanded.error.empty()) {
    out.reply = expanded.error;
    front_.reply_text(out.reply);
    return out;
  }
  std::string content = std::move(expanded.content);
  if ((browser_offered() || browser_running()) && needs_running_page(message))
    content += "\n\n" + browser_hint(browser_running());
  messages_.push_back({"user", std::move(content), false, false,
                       expanded.sensitive ? "a resource attached to the message (it looks secret)" : ""});
  auto stopped = [&] {
    if (!cancelled_) return false;
    out.cancelled = true;
    out.error.reset();
    messages_.push_back({"user", cancelled_by_ == CancelledBy::kDaemon ? "(This turn was cut: oppxd stopped.)"
                                                                       : "(The user cancelled this turn.)"});
    return true;
  };
  for (int step = 0; step < options_.max_steps; ++step) {
    if (stopped()) return out;
    bool last = step == options_.max_steps - 1;
    json::object schema = action_schema();
    if (last) {
      schema["properties"].as_object()["action"] = json::object{{"type", "string"}, {"enum", json::array{"reply"}}};
      out.step_bound = true;
      front_.notice(
          fmt::format("This turn reached its bound of {} steps: the model is asked to reply now with what "
                      "is done and what is left.",
                      options_.max_steps));
      messages_.push_back({"user", fmt::format("You have used {} steps, the most a turn may take. Reply now: say "
                                               "what was done and what is left.",
                                               options_.max_steps - 1)});
    }
    // An answer that is not a usable action (a server that does not enforce the schema, a small
    // model) is asked again once, saying what was wrong; a second one ends the turn with an error.
    const std::size_t asked_at = messages_.size();
    std::optional<json::value> parsed;
    std::string name;
    for (int attempt = 0;; ++attempt) {
      fit_context(proto::json_text(schema).size());
      json::object body{
          {"messages", request_messages({})},
          {"response_format",
           json::object{{"type", "json_schema"},
                        {"json_schema", json::object{{"name", "action"}, {"schema", schema}, {"strict", true}}}}}};
      auto r = ask_model(std::move(body), true, out);
      if (stopped()) return out;
      if (!r) {
        out.error = r.error();
        return out;
      }
      const std::string& content = r->content;
      parsed = find_object(content);
      name = parsed && parsed->is_object() ? string_field(parsed->as_object(), "action") : std::string();
      if (!parsed && !content.empty() && content.find('{') == std::string::npos) {
        // Structured output accepted but not enforced: plain prose is taken as the reply.
        parsed = json::object{{"action", "reply"}, {"text", content}};
        name = "reply";
      }
      const ActionsOffered can_name{
          options_.mode != "plan", browser_offered(), deferred_.searching(),
          [this](const std::string& n) { return callable(n) != nullptr || is_denied(denied_, n); }};
      std::string problem = unusable(parsed, name, can_name);
      if (problem.empty()) break;
      if (attempt > 0) {
        // The exchange is not kept: `-c` continues from the user's message.
        messages_.erase(messages_.begin() + static_cast<std::ptrdiff_t>(asked_at), messages_.end());
        out.error = ModelError{
            "bad_reply",
            fmt::format("the model did not answer with a usable action, twice in a row (the second time: {})",
                        escape_controls(problem)),
            {"Ask again: a small model sometimes misses the action format.",
             "If it keeps happening, use a larger model, or a model server that enforces the JSON schema of "
             "response_format."},
            0};
        return out;
      }
      messages_.push_back({"assistant", content});
      messages_.push_back(
          {"user",
           fmt::format("That answer was not a usable action: {}. Answer again with one JSON object.", problem)});
    }
    if (name == "reply") {
      std::string text = reply_of(parsed->as_object());
      if (!streamed_) front_.reply_text(text);
      if (!down_steps_.empty() && lower(text).find(kContinue) == std::string::npos) {
        std::string ending = fmt::format("\n\nOnce it is back, ask me to continue.");
        front_.reply_text(ending);
        text += ending;
      }
      messages_.push_back({"assistant", proto::json_text(json::object{{"action", "reply"}, {"text", text}})});
      out.reply = std::move(text);
      if (!last) out.step_bound = false;
      return out;
    }
    if (name == "browser" && browser_offered()) {
      run_browser(out);
      if (stopped() || out.error) return out;
      continue;
    }
    if (name == kSearchAction && deferred_.searching()) {
      run_search(string_field(parsed->as_object(), "query"), out);
      if (stopped() || out.error) return out;
      continue;
    }
    if (name == "read" || name == "grep" || (name == "run" && options_.mode != "plan")) {
      run_builtin(name, parsed->as_object(), out);
      if (stopped() || out.error) return out;
      continue;
    }
    if (is_denied(denied_, name)) {
      Refusal r = refuse_denied(name, daemon_);
      if (r.offered_again) refresh();  // the next step offers it
      record(std::move(r.record), r.model_text, out);
      continue;
    }
    run_tool(*callable(name), out);  // unusable() found it
    if (stopped() || out.error) return out;
  }
  // The last step did not reply (a server that does not enforce the schema).
  out.reply = fmt::format("I stopped after {} steps without finishing.", options_.max_steps);
  front_.reply_text(out.reply);
  return out;
}

}  // namespace oppx::chat
