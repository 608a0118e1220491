// The checks the loop (agent.cpp) makes on what the model named at a step, before anything runs:
// whether its answer is a usable action, a denied tool named anyway, the arguments step of a
// connector tool (asked under the tool's schema, checked against it, asked again unconstrained)
// and the repeat guard. They hold no state of the loop: it passes what they need.
// write_arguments blocks on the model; the others do not block.
#pragma once

#include "chat/agent.h"
#include "chat/daemon_tools.h"
#include "chat/model_client.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::chat {

// The first JSON object in a text that may wrap it in prose or a code fence.
std::optional<boost::json::value> find_object(std::string_view text);

// A reply's text ("reply" when a model put it there); "" when it has none, or only blanks.
std::string reply_of(const boost::json::object& action);

// What the model may name at a step besides reply, read and grep.
struct ActionsOffered {
  bool run = false;      // not in plan mode
  bool browser = false;  // the `browser` action (Agent::browser_offered)
  bool search = false;   // the `search_tools` action (chat/deferred_tools.h)
  // A connector tool it may name: one offered now, or one denied (which the loop refuses with its
  // rule rather than as a malformed answer).
  std::function<bool(const std::string&)> tool;
};

// What makes the model's answer unusable as an action (not an object, an action not offered, a
// field the action needs missing or empty), in words; "" when it is usable. The schema requires
// only "action", and not every server enforces even that, so each action's own fields are checked
// here.
std::string unusable(const std::optional<boost::json::value>& answer, const std::string& name,
                     const ActionsOffered& offered);

// `denied`: the "connector.tool" names a deny rule covers (never offered).
bool is_denied(const std::vector<std::string>& denied, const std::string& name);

// A call a deny rule refuses, in the words of its record: the rule and how to lift it.
std::string denied_text(const DaemonTools::Verdict& verdict);

// A denied tool the model named anyway (a server that does not enforce the schema): declined with
// the rule the daemon names. When the rule went away since the step's list was made, it is
// declined this once and `offered_again` is set: the loop lists the tools again, and the next
// step offers it.
struct Refusal {
  ActionRecord record;
  std::string model_text;  // what the model is told
  bool offered_again = false;
};
Refusal refuse_denied(const std::string& name, DaemonTools& daemon);

// What the arguments step needs of the loop.
struct ArgumentsModel {
  // The request's messages: the conversation (which ends with "I'll call <tool> now."), then `ask`
  // as the user's.
  std::function<boost::json::array(const std::string& ask)> messages;
  // Makes room in the model's context for `extra_chars` more.
  std::function<void(std::size_t extra_chars)> fit_context;
  // One request (the model is filled in), not streamed to the front end.
  std::function<ModelResult<Completion>(boost::json::object body)> complete;
};

struct WrittenArguments {
  std::optional<boost::json::object> arguments;  // usable ones: {} for a tool that takes none
  std::string problem;                           // else why not, for the record
  std::optional<ModelError> error;               // the model server failed: the turn ends
};

// A connector tool's arguments: asked under the tool's (simplified) schema, cleaned and checked
// against its own; a server that refuses the schema, or an answer that fails the check, is asked
// again without a schema, twice at most.
WrittenArguments write_arguments(const ToolInfo& tool, const ArgumentsModel& model);

// A call as the repeat guard knows it: its name and its arguments with the object keys sorted at
// every level, so that the same arguments in another order are the same call.
std::string call_key(const std::string& name, const boost::json::object& arguments);

// The repeat guard of a connector tool: "" to run, else why not. The same call twice in a turn
// (`turn_calls`) is a repeat; the browser's calls change the page, so its page guard judges them
// instead (a read with nothing changed since, a loop).
std::string repeated(const ToolInfo& tool, const std::string& key, const std::set<std::string>& turn_calls,
                     const PageGuard& page_guard);

}  // namespace oppx::chat
