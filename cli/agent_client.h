// The terminal chat's agent, which runs in oppxd (docs/protocol.md, "The agent"): agent/open,
// agent/turn with its agent/event notifications and agent/ask questions handed to a
// chat::FrontEnd, agent/cancel from another thread, and agent/state for what the slash commands
// show and change. When the daemon restarts or dies, reconnect() starts one if needed and opens
// the agent again on the conversation as it was last saved.
#pragma once

#include "chat/agent.h"
#include "cli/daemon_client.h"
#include "proto/agent_api.h"

#include <boost/system/result.hpp>

#include <optional>
#include <string>

namespace oppx::cli {

// The model server's failure as the daemon's agent reported it.
chat::ModelError model_error_of(const proto::AgentModelProblem& p);

class AgentClient {
 public:
  // Why the agent could not open: the message and the exit status; `model` when the model server
  // failed (its steps), `no_conversation` when the conversation asked for could not be read.
  struct Failure {
    std::string message;
    int exit_code = 0;
    std::optional<chat::ModelError> model;
    bool no_conversation = false;
  };
  // What a turn gave; `cut` when the connection ended before its answer (the daemon stopped).
  struct Turn {
    proto::AgentTurnResult result;
    bool cut = false;
    std::string why;  // when cut, or when the daemon refused the turn
  };

  // `front` is told the agent's events (a turn's, and the notices of a change such as a rebuilt
  // prompt) and asked its questions.
  AgentClient(std::string socket, proto::AgentOpenParams params, chat::FrontEnd& front);
  AgentClient(const AgentClient&) = delete;  // its connection's handlers hold `this`
  AgentClient& operator=(const AgentClient&) = delete;

  // Connects (starting a daemon when none runs) and opens the agent; state() is not read (update()).
  boost::system::result<proto::AgentOpenResult, Failure> open();
  // This folder's saved conversations, the newest first (connecting first when it is not).
  boost::system::result<std::vector<proto::AgentConversation>, Failure> conversations(std::int64_t limit);
  // The next open() continues this saved conversation.
  void continue_conversation(std::string path) { params_.conversation = std::move(path); }
  // The next open() starts a new conversation (the one asked for could not be read).
  void start_new() {
    params_.resume = false;
    params_.conversation.clear();
  }
  // One turn: its events go to the front end as they come, its questions to its ask().
  Turn turn(const std::string& message);
  // From another thread while turn() waits: the turn ends as cancelled (the model request aborted,
  // calls in flight cancelled).
  void cancel();
  // The changes asked, then the agent's state, kept as state(). "" or why it could not be read.
  std::string update(const proto::AgentStateParams& changes = {});
  const proto::AgentState& state() const { return state_; }
  // False when the daemon closed the connection (it stopped, restarted or died).
  bool alive() const;
  // After the daemon went away: connects again and opens the agent on the conversation last saved,
  // in the same mode and sandbox. "" or why not.
  std::string reconnect();
  // The daemon's socket, for the chat's other connection (mcp/changed).
  const std::string& socket() const { return socket_; }

 private:
  std::optional<Failure> connect();  // a new connection, its handlers set
  void listen();                     // the connection's handlers of agent/event and agent/ask
  std::string socket_;
  proto::AgentOpenParams params_;
  chat::FrontEnd* front_;
  std::vector<proto::AgentAction> ran_;  // the turn's actions done so far, should it be cut
  std::optional<Connection> conn_;
  proto::AgentState state_;
  bool opened_once_ = false;  // the connection made for conversations() is used by the first open
};

}  // namespace oppx::cli
