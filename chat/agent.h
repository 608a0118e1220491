// The agent loop (SPEC §4): one turn is a series of steps, each one request to the model server
// for one action (reply, read, grep, run, browser, or a connector tool), then, for a tool with
// arguments, a second request constrained by that tool's own schema. Tools are never sent as the
// `tools` parameter; every tool call, and the verdict on it, goes through oppxd. The front ends
// (print mode, the terminal chat) show the reply as it streams, notices, and answer questions.
#pragma once

#include "chat/browser.h"
#include "chat/daemon_tools.h"
#include "chat/deferred_tools.h"
#include "chat/model_client.h"
#include "chat/sandbox.h"
#include "proto/elicitation.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace oppx::chat {

struct Answer {
  enum Kind { kYes, kAlwaysTool, kAlwaysConnector, kNo, kText } kind = kNo;
  std::string text;  // kText: what to do instead
};

struct Question {
  // "<connector>.<tool>", "run", "browser" (start the session's browser), or "login" (log in to
  // arguments.connector again with a wider permission, `why` says which, then repeat the call)
  std::string action;
  std::string command;  // for run
  boost::json::object arguments;
  bool read_only = false;
  std::string why;  // the daemon's verdict in words
  // The browser's tools: allowed for the session only, browser_evaluate asked every time; an
  // "always" answer counts as a yes and no rule is saved.
  bool once_only = false;
  // Asked because the conversation holds something read that must not leave (`why` names it).
  bool exposed = false;
};

// One action of a turn, as `--json` lists it.
struct ActionRecord {
  std::string name;  // as in the action enum: reply, read, grep, run, <connector>.<tool>
  boost::json::object arguments;
  std::string status;          // ran | failed | declined | repeat | refused | down
  std::string text;            // the result or the error
  bool could_not_ask = false;  // declined because the front end cannot ask (print mode)
};

class FrontEnd {
 public:
  virtual ~FrontEnd() = default;
  virtual void reply_text(std::string_view piece) = 0;  // the reply, as it streams
  virtual void notice(std::string_view text) = 0;       // a connector down, an uncached request, …
  virtual void action_started(const std::string& /*name*/, const boost::json::object& /*arguments*/) {}
  virtual void action_done(const ActionRecord& /*record*/) {}
  // A long call's progress, as its connector reports it.
  virtual void progress(double /*progress*/, std::optional<double> /*total*/, const std::string& /*message*/) {}
  virtual bool can_ask() const = 0;
  // For "browser", kAlwaysTool or kAlwaysConnector means always (`browser_auto`).
  virtual Answer ask(const Question& q) = 0;
  // Before the browser starts: install it when it is not (with progress); "" or why it cannot
  // start (no Node.js, the install failed), with what to do.
  virtual std::string prepare_browser() { return {}; }
  // A connector's server asks the user something during a call (a form, or an address to open):
  // asked by the front end, or answered by its policy. Never the model's to answer.
  virtual proto::ElicitAnswer elicit(const proto::ElicitQuestion& /*q*/) { return {}; }
};

struct TurnResult {
  std::string reply;
  std::vector<ActionRecord> actions;
  std::vector<std::string> connectors_down;
  boost::json::object usage;        // the server's counts, summed over the turn's requests
  bool step_bound = false;          // stopped at the bound of steps
  bool cancelled = false;           // the user cancelled it (Agent::cancel)
  std::optional<ModelError> error;  // the model server failed
  bool declined() const;
};

struct AgentOptions {
  std::string mode = "chat";  // chat | print | plan
  int max_steps = 25;
  std::size_t result_cap = 12'000;  // characters of a read, grep or run result
  bool browser = true;              // the `browser` action may be offered (when the front end can ask)
  SandboxPolicy sandbox;            // run's (config.json "sandbox", "sandbox_network"); workspace: the cwd
  ToolSearchSettings tool_search;   // config.json "tool_search", "tool_search_share" (chat/deferred_tools.h)
};

class Agent {
 public:
  Agent(ModelClient& model, DaemonTools& daemon, FrontEnd& front, AgentOptions options);

  // Lists the tools (DaemonTools::list) and builds the system prompt; "" or why not.
  std::string start();
  // Lists the tools again (a connector came up or changed its list); a changed list rebuilds the
  // system prompt once, and the front end is told that the next request is uncached.
  std::string refresh();
  // The model's context length, when known (asked at start()).
  const ContextInfo& context() const { return context_; }
  const std::vector<ToolInfo>& tools() const { return tools_; }
  const std::vector<ConnectorNote>& not_offered() const { return others_; }
  const std::string& system_prompt() const { return system_; }
  // Whether the model searches for tools (search_tools) rather than seeing them all listed.
  const DeferredTools& deferred() const { return deferred_; }

  TurnResult turn(const std::string& message);
  // From another thread, while turn() runs: the model request is aborted, a call in flight is
  // cancelled through the daemon, and turn() returns with `cancelled` at once. The conversation
  // notes who ended it: the user, or the daemon stopping.
  enum class CancelledBy { kUser, kDaemon };
  void cancel(CancelledBy by = CancelledBy::kUser);
  // Plan or ask mode (only what reads) or back to "chat"; the prompt is rebuilt when it changes.
  void set_mode(const std::string& mode);
  const std::string& mode() const { return options_.mode; }
  // The session's browser: running (its tools are listed), or offered as the `browser` action.
  bool browser_running() const;
  bool browser_offered() const;
  // Starts it without asking (/browser start), or stops it; the tool list is fetched again and the
  // prompt rebuilt. `always` also saves browser_auto. "" or why not.
  std::string start_browser(bool always = false);
  std::string stop_browser();
  // The sandbox of `run` (the chat's /sandbox). commands_sandboxed(): false when the mode is off or
  // bubblewrap cannot run here (sandbox_support()): then a command may reach the network, so it is
  // asked once the conversation holds something read (and, without bubblewrap, every command is).
  const SandboxPolicy& sandbox() const { return options_.sandbox; }
  void set_sandbox(SandboxPolicy policy) { options_.sandbox = std::move(policy); }
  bool commands_sandboxed() const { return options_.sandbox.mode != SandboxMode::kOff && sandbox_support().available; }
  // Forgets the conversation (the chat's /clear).
  void clear() { messages_.clear(); }

  // The conversation without the system prompt: {"role", "content"} objects, saved and restored
  // by the front end (`-c`).
  boost::json::array conversation() const;
  void restore(const boost::json::array& messages);

 private:
  struct Message {
    std::string role, content;
    bool result = false;  // a tool's or built-in's result: shortened first when space runs out
    bool shortened = false;
    // What this message holds that must not leave unasked: "<path> (outside the workspace)",
    // "<path> (looks secret)"; "" for none. Kept with the conversation (`-c`).
    std::string exposed = {};
  };
  // What the conversation the model sees holds that must not leave unasked (exposed messages), in
  // words; "" when nothing. Once such a message is dropped to fit the context, it no longer counts.
  std::string exposure() const;
  // A call that could send data out (any connector tool, the browser, `run` with network) while
  // the conversation holds something exposed: the verdict becomes ask, saying what was read.
  void guard_exposure(DaemonTools::Verdict& v) const;
  std::vector<const ToolInfo*> offered() const;
  // A connector tool the model may name now (running, and in plan mode one that reads); null when
  // there is none.
  const ToolInfo* callable(const std::string& name) const;
  void rebuild_prompt(bool say_uncached);
  boost::json::object action_schema() const;
  boost::json::array request_messages(const std::vector<Message>& extra) const;
  void fit_context(std::size_t extra_chars);
  ModelResult<Completion> ask_model(boost::json::object body, bool stream_reply, TurnResult& out);
  void run_tool(const ToolInfo& tool, TurnResult& out);
  void run_builtin(const std::string& name, const boost::json::object& action, TurnResult& out);
  void run_browser(TurnResult& out);
  void run_search(const std::string& query, TurnResult& out);
  bool permitted(const Question& q, const DaemonTools::Verdict& v, const std::string& tool_rule,
                 const std::string& connector_rule, ActionRecord& rec);
  // `exposed`: what the result holds that must not leave unasked (Message::exposed).
  void record(ActionRecord rec, const std::string& model_text, TurnResult& out, std::string exposed = {});
  // `outcome`: what became of the call, said to the user with the notice.
  void connector_down(const ToolInfo& tool, const DaemonTools::CallResult& r, const std::string& outcome,
                      TurnResult& out);

  ModelClient& model_;
  DaemonTools& daemon_;
  FrontEnd& front_;
  AgentOptions options_;
  ContextInfo context_;
  std::vector<ToolInfo> tools_;
  std::vector<ConnectorNote> others_;
  std::vector<std::string> denied_;  // "connector.tool" a deny rule covers: never offered
  std::set<std::string> down_;       // connectors down in this conversation
  DeferredTools deferred_;
  std::string turn_message_;
  std::set<std::string> kept_results_;  // files oppxd kept cut results of this session's calls in  // the user's
                                        // message of this turn (search_tools reads it too)
  std::string system_;
  bool prompt_built_ = false;
  bool told_trimmed_ = false;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> cancel_claimed_{false};
  std::atomic<CancelledBy> cancelled_by_{CancelledBy::kUser};
  RunControl run_control_;  // Agent::cancel() ends a running `run` with it
  bool streamed_ = false;   // the last request's reply text went to the front end as it came
  std::vector<Message> messages_;
  std::set<std::string> turn_calls_;                 // this turn's calls: a second is a repeat
  std::map<std::string, std::string> failed_calls_;  // call → its error: refused when made again
  std::vector<std::string> down_steps_;              // this turn's, passed on in the reply
  PageGuard page_guard_;                             // the browser's calls in this turn
  bool browser_declined_ = false;                    // the user said no: it holds for the session
  std::string browser_failed_;                       // it could not start: not offered again
};

// The visible results of a read, grep or run, cut at `cap` characters with a marker.
std::string cut_text(std::string text, std::size_t cap);

}  // namespace oppx::chat
