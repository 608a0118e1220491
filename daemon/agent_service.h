// The agent as a service of oppxd (docs/protocol.md, "The agent"): agent/open, agent/turn,
// agent/cancel, agent/state and agent/conversations. Each connection that opens an agent gets one AgentSession: the
// loop of chat/agent.h on a thread of its own, so that a model that streams slowly, a large grep or a question waiting
// for its answer never holds the daemon's event loop. The session reaches the daemon the way any
// client does, over a socketpair the server serves like an accepted connection (its own hello and
// session/open), so that every call it makes is judged by the same handlers; what it says to its
// front end travels back as agent/event notifications and agent/ask requests, posted to the loop.
#pragma once

#include "common/jsonrpc_peer.h"
#include "proto/agent_api.h"

#include <cstdint>
#include <map>
#include <memory>

namespace oppx::daemon {

class Server;
struct Client;
class AgentSession;

class AgentService {
 public:
  explicit AgentService(Server& server);
  ~AgentService();  // ends every session (stop()) and joins their threads
  AgentService(const AgentService&) = delete;
  AgentService& operator=(const AgentService&) = delete;

  void open(const proto::AgentOpenParams& params, Reply reply, Client& client);
  void turn(const proto::AgentTurnParams& params, Reply reply, Client& client);
  void cancel(Reply reply, Client& client);
  void state(const proto::AgentStateParams& params, Reply reply, Client& client);
  // Read on the daemon's worker thread: a folder of long conversations never holds the loop.
  void conversations(const proto::AgentConversationsParams& params, Reply reply, const Client& client);
  // The client's connection closed: its turn is cancelled and its session ends.
  void client_gone(std::uint64_t client);
  // The daemon stops: every turn is cancelled and every session's thread ends (joined at destruction).
  void stop();
  std::size_t sessions() const { return sessions_.size(); }

 private:
  Server& server_;
  std::map<std::uint64_t, std::shared_ptr<AgentSession>> sessions_;
  std::shared_ptr<AgentService*> alive_ = std::make_shared<AgentService*>(this);  // for posts that may outlive it
};

}  // namespace oppx::daemon
