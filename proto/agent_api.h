// Wire structs of the agent's methods (docs/protocol.md, "The agent"): agent/open, agent/turn,
// agent/cancel, the agent/event notifications a turn streams and the agent/ask request the daemon
// sends when it needs an answer. Decoders in proto/decode.h's form, encoders as tag_invoke for
// boost::json::value_from. Kinds and answers are enums here and strings on the wire.
#pragma once

#include "proto/decode.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oppx::proto {

// agent/open: the connection's agent (one per connection; opening again replaces it).
struct AgentOpenParams {
  std::string cwd;              // the working folder, absolute; absent: the client's (hello)
  std::string mode = "chat";    // chat | print | plan
  bool can_ask = false;         // the client answers agent/ask; else what needs asking is declined
  bool resume = false;          // continue this folder's last conversation
  std::string conversation;     // continue this saved conversation (a file of this folder's; wins over resume)
  std::optional<bool> browser;  // offer the `browser` action (default: when it can ask)
  // What a connector's server asks the user during a call (mcp/elicit): "ask" sends it to this
  // client (needs can_ask); "decline" (the default without can_ask); "accept-defaults" accepts a
  // form when its defaults complete it, else declines.
  std::string elicit;
};

// A connector the agent does not offer now, and why.
struct AgentConnectorNote {
  std::string name, state, reason, approve;
  std::vector<std::string> steps;
};

struct AgentWarning {
  std::string kind;  // SMALL_CONTEXT | HEAVY_SHARE
  std::string message;
};

struct AgentOpenResult {
  std::string model;
  std::optional<std::int64_t> context_tokens;
  std::vector<std::string> tools;  // the offered tools' lines: `<connector>.<tool>: <first sentence>`
  std::vector<AgentConnectorNote> not_offered;
  std::vector<AgentWarning> warnings;
  std::vector<std::string> notices;   // the sandbox's problem, the browser that did not start, …
  std::int64_t resumed_messages = 0;  // with resume: the messages of the conversation taken up
};

// The model server's failure: agent/open's and agent/turn's error data (kind `model`).
struct AgentModelProblem {
  std::string kind;  // unreachable | login | no_model | timeout | refused | bad_reply | config | no_action
  std::string message;
  std::vector<std::string> steps;
  std::int64_t http_status = 0;
};

struct AgentTurnParams {
  std::string message;
  std::optional<std::string> mode;  // chat | plan: changes the agent's mode from this turn on
};

// One action of a turn, as `oppx -p --json` lists it.
struct AgentAction {
  std::string name;
  boost::json::object arguments;
  std::string status;  // started (events only) | ran | failed | declined | repeat | refused | down
  std::string text;
  bool could_not_ask = false;
};

struct AgentTurnResult {
  std::string reply;
  std::vector<AgentAction> actions;
  std::vector<std::string> connectors_down;
  boost::json::object usage;
  bool step_bound = false;
  bool cancelled = false;
  bool declined = false;
  std::optional<AgentModelProblem> error;
  std::string conversation;  // the file the conversation was saved to ("" when it was not)
};

// agent/event: what a turn does as it goes.
enum class AgentEventKind { kText, kNotice, kAction, kProgress };
struct AgentEvent {
  AgentEventKind kind = AgentEventKind::kText;
  std::string text;                   // kText: a piece of the reply; kNotice: the notice
  std::optional<AgentAction> action;  // kAction: started, then done with its status
  double progress = 0;                // kProgress: a long call's, as its connector reports it
  std::optional<double> total;
  std::string message;
};

// agent/ask (daemon → client): permission for a call, or to start the browser.
struct AgentQuestion {
  std::string action;  // "<connector>.<tool>", "run" or "browser"
  std::string command;
  boost::json::object arguments;
  bool read_only = false;
  std::string why;
  bool once_only = false;  // "always" is not offered: the answer counts once
  bool exposed = false;    // asked because the conversation holds something read that must not leave
};
enum class AgentAnswerKind { kYes, kAlwaysTool, kAlwaysConnector, kNo, kText };
struct AgentAnswer {
  AgentAnswerKind answer = AgentAnswerKind::kNo;
  std::string text;  // kText: what to do instead
};

// agent/state: the agent's settings and what it offers, after the changes asked (none: as it is).
// Refused while a turn runs (agent_busy).
struct AgentStateParams {
  std::optional<std::string> mode;     // chat | plan
  std::optional<std::string> sandbox;  // read-only | workspace-write | off: how `run` runs, for this session
  std::optional<bool> network;         // the sandbox's network, for this session
  bool clear = false;                  // a new conversation (the old one stays saved)
  bool refresh = false;                // the connectors' tools read again
  std::optional<std::string> browser;  // start | stop: the session's browser
};

struct AgentTool {
  std::string connector;
  std::string line;  // `<connector>.<tool>: <first sentence>`, as the model sees it
};

struct AgentState {
  std::string model, server;
  std::optional<std::int64_t> context_tokens;
  std::string context_note;  // why the context length is unknown
  std::string mode;          // chat | print | plan
  std::string sandbox;       // read-only | workspace-write | off
  bool network = false;
  std::string sandbox_text;  // the sandbox said in words, with what it cannot do here
  std::vector<AgentTool> tools;
  std::vector<AgentConnectorNote> not_offered;
  std::string conversation;                                 // its file; "" until the first turn is saved
  std::int64_t system_tokens = 0, conversation_tokens = 0;  // estimates, about 4 characters a token
  bool browser_running = false, browser_offered = false;
  std::string problem;  // what a change could not do (the browser did not start, the list failed)
};

// agent/conversations: the saved conversations of a folder, the newest first.
struct AgentConversationsParams {
  std::string cwd;          // absolute; absent: the client's (hello)
  std::int64_t limit = 20;  // at most this many
};
struct AgentConversation {
  std::string conversation;  // its file: agent/open's `conversation` continues it
  std::string first;         // the first message's first line, cut at 80 bytes
  std::int64_t messages = 0;
};
struct AgentConversationsResult {
  std::vector<AgentConversation> conversations;
};

struct AgentCancelResult {
  bool cancelled = false;  // a turn was running
};

Decoded<AgentOpenParams> decode(const boost::json::value& v, std::type_identity<AgentOpenParams>);
Decoded<AgentConnectorNote> decode(const boost::json::value& v, std::type_identity<AgentConnectorNote>);
Decoded<AgentWarning> decode(const boost::json::value& v, std::type_identity<AgentWarning>);
Decoded<AgentOpenResult> decode(const boost::json::value& v, std::type_identity<AgentOpenResult>);
Decoded<AgentModelProblem> decode(const boost::json::value& v, std::type_identity<AgentModelProblem>);
Decoded<AgentTurnParams> decode(const boost::json::value& v, std::type_identity<AgentTurnParams>);
Decoded<AgentAction> decode(const boost::json::value& v, std::type_identity<AgentAction>);
Decoded<AgentTurnResult> decode(const boost::json::value& v, std::type_identity<AgentTurnResult>);
Decoded<AgentEvent> decode(const boost::json::value& v, std::type_identity<AgentEvent>);
Decoded<AgentQuestion> decode(const boost::json::value& v, std::type_identity<AgentQuestion>);
Decoded<AgentAnswer> decode(const boost::json::value& v, std::type_identity<AgentAnswer>);
Decoded<AgentCancelResult> decode(const boost::json::value& v, std::type_identity<AgentCancelResult>);
Decoded<AgentConversationsParams> decode(const boost::json::value& v, std::type_identity<AgentConversationsParams>);
Decoded<AgentConversation> decode(const boost::json::value& v, std::type_identity<AgentConversation>);
Decoded<AgentConversationsResult> decode(const boost::json::value& v, std::type_identity<AgentConversationsResult>);
Decoded<AgentStateParams> decode(const boost::json::value& v, std::type_identity<AgentStateParams>);
Decoded<AgentTool> decode(const boost::json::value& v, std::type_identity<AgentTool>);
Decoded<AgentState> decode(const boost::json::value& v, std::type_identity<AgentState>);

void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentOpenParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentConnectorNote& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentWarning& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentOpenResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentModelProblem& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentTurnParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentAction& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentTurnResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentEvent& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentQuestion& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentAnswer& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentCancelResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentConversationsParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentConversation& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentConversationsResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentStateParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentTool& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const AgentState& v);

// The method names, declared once for the router and the clients.
inline constexpr std::string_view kAgentOpen = "agent/open";
inline constexpr std::string_view kAgentTurn = "agent/turn";
inline constexpr std::string_view kAgentCancel = "agent/cancel";
inline constexpr std::string_view kAgentState = "agent/state";
inline constexpr std::string_view kAgentConversations = "agent/conversations";
inline constexpr std::string_view kAgentEvent = "agent/event";
inline constexpr std::string_view kAgentAsk = "agent/ask";
// agent/open's and agent/turn's error kinds.
namespace kind {
inline constexpr std::string_view kModel = "model";           // the model server failed: data is an AgentModelProblem
inline constexpr std::string_view kNoAgent = "no_agent";      // agent/turn before agent/open
inline constexpr std::string_view kAgentBusy = "agent_busy";  // a turn of this connection is running
inline constexpr std::string_view kNoConversation = "no_conversation";  // the conversation asked for cannot be read
}  // namespace kind

}  // namespace oppx::proto
